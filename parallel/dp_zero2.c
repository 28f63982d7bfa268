/*
 * dp_zero2.c - ZeRO stage 2: gradients sharded too. Every micro-batch
 * reduce-scatters its buckets (each as it fills with parallel.ddp.overlap,
 * else after the backward) and the shard accumulates; the rank steps on
 * its shard and all-gathers the updated parameters in buckets (during the
 * next forward with ddp.overlap_param_gather).
 * Closed forms: every micro-batch's reduce-scatters of its buckets, less
 * what its backward (with overlap) and the next micro-batch hide, the last
 * one's chunk by chunk (par_dpb_plan_reduce), and the parameter
 * all-gathers (par_dpb_plan_gather); memory: 2Ψ + 14Ψ/N (SPEC
 * C12) and two buckets.
 */
#include <math.h>

#include "parallel/dp-int.h"

static void init(struct builder *b);
static double exposed_s(const struct par_dp_costs *c);
static double busy_s(const struct par_dp_costs *c);
static void plan_memory(const struct par_dp_costs *c, struct par_dp_mem *m);

const struct par_dp_strategy par_dp_zero2 = {
	.name = "zero2",
	.title = "ZeRO-2",
	.help = "ZeRO-2: gradients sharded too, reduce-scattered bucket by bucket every "
		"micro-batch; parameters all-gathered after the step",
	.flags = PAR_DP_SHARDS_OPTIMIZER | PAR_DP_SHARDS_GRADS | PAR_DP_REDUCE_EVERY_MB |
		 PAR_DP_OFFLOAD | PAR_DP_PARAM_GATHER | PAR_DP_ALIAS_ZERO,
	.init = init,
	.fini = par_dpb_fini,
	.memory = par_dpb_memory,
	.layer_begin = par_dpb_layer_begin,
	.grads = par_dpb_grads,
	.backward_end = par_dpb_backward_end,
	.after_step = par_dpb_after_step,
	.check_program = par_dpb_check_gathers,
	.exposed_s = exposed_s,
	.plan_memory = plan_memory,
	.busy_s = busy_s,
};

static void init(struct builder *b)
{
	const struct par_ddp *d = &b->t->layout->ddp;
	const struct dp_bucket_policy p = {
		.reduce = SIM_COLL_REDUCESCATTER, .overlap = d->overlap, .gather_params = 1,
		.gather_ahead = d->overlap_param_gather && b->dpn > 1,
	};
	par_dpb_init(b, &p);
}

static double exposed_s(const struct par_dp_costs *c)
{
	/* The gradients are reduce-scattered every micro-batch (from its
	 * backward on with overlap, after it without), the next micro-batch's
	 * compute running beside; the parameters are gathered once after. */
	double rs, m = c->micro_batches;
	int overlap = c->layout->ddp.overlap;
	double last = par_dpb_plan_reduce(c, SIM_COLL_REDUCESCATTER, 0, overlap, &rs);
	double own = overlap ? c->backward_s : 0;
	return par_dpb_plan_gather(c, NULL) + last + (m - 1) * fmax(0, rs - own - c->stage_s);
}

static double busy_s(const struct par_dp_costs *c)
{
	double rs, g;
	par_dpb_plan_reduce(c, SIM_COLL_REDUCESCATTER, 0, 0, &rs);
	par_dpb_plan_gather(c, &g);
	return c->micro_batches * rs + g;
}

static void plan_memory(const struct par_dp_costs *c, struct par_dp_mem *m)
{
	par_dpb_plan_memory(c, 2, m);
}
