/*
 * dp_zero1.c - ZeRO stage 1 (DeepSpeed; Megatron's distributed optimizer):
 * optimizer states sharded over the data-parallel group. The buckets of the
 * last micro-batch are reduce-scattered after its backward (during it with
 * parallel.ddp.overlap_grad_reduce or overlap_param_gather, which implies
 * it), the rank steps on its shard, the
 * updated parameters are all-gathered in buckets after the step (with
 * overlap_param_gather: during the next step's forward). SPEC C18: 2Ψ of
 * communication, as DDP's all-reduce.
 * Closed forms: the buckets' reduce-scatters chunk by chunk, less what the
 * stage's compute after each chunk's last backward hides (and the chunk's
 * backward with overlap_param_gather), and the parameter all-gathers
 * (par_dpb_plan_gather); memory:
 * 4Ψ + 12Ψ/N (SPEC C12) and two buckets.
 */
#include "parallel/dp-int.h"

static void init(struct builder *b);
static double exposed_s(const struct par_dp_costs *c);
static double busy_s(const struct par_dp_costs *c);
static double beside_s(const struct par_dp_costs *c, uint32_t j);
static void plan_memory(const struct par_dp_costs *c, struct par_dp_mem *m);

const struct par_dp_strategy par_dp_zero1 = {
	.name = "zero1",
	.title = "ZeRO-1",
	.help = "ZeRO-1: optimizer states sharded; gradients reduce-scattered after the last "
		"backward, parameters all-gathered after the step",
	.flags = PAR_DP_SHARDS_OPTIMIZER | PAR_DP_PIPELINE | PAR_DP_MOE | PAR_DP_OFFLOAD |
		 PAR_DP_PARAM_GATHER | PAR_DP_ALIAS_ZERO,
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
	.beside_s = beside_s,
};

/* The buckets reduce-scattered during the last backward. */
static int reduce_in_backward(const struct par_ddp *d)
{
	return d->overlap_grad_reduce || d->overlap_param_gather;
}

static void init(struct builder *b)
{
	const struct par_ddp *d = &b->t->layout->ddp;
	const struct dp_bucket_policy p = {
		.reduce = SIM_COLL_REDUCESCATTER, .overlap = reduce_in_backward(d),
		.gather_params = 1, .gather_ahead = d->overlap_param_gather && b->dpn > 1,
	};
	par_dpb_init(b, &p);
}

static double exposed_s(const struct par_dp_costs *c)
{
	int overlap = reduce_in_backward(&c->layout->ddp);
	return par_dpb_plan_reduce(c, SIM_COLL_REDUCESCATTER, 0, overlap, NULL) +
	       par_dpb_plan_gather(c, NULL);
}

static double busy_s(const struct par_dp_costs *c)
{
	double rs, g;
	par_dpb_plan_reduce(c, SIM_COLL_REDUCESCATTER, 0, 0, &rs);
	par_dpb_plan_gather(c, &g);
	return rs + g;
}

static double beside_s(const struct par_dp_costs *c, uint32_t j)
{
	return reduce_in_backward(&c->layout->ddp)
		       ? par_dpb_plan_chunk_s(c, SIM_COLL_REDUCESCATTER, j) : 0;
}

static void plan_memory(const struct par_dp_costs *c, struct par_dp_mem *m)
{
	par_dpb_plan_memory(c, 1, m);
}
