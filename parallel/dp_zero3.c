/*
 * dp_zero3.c - DeepSpeed ZeRO stage 3: parameters sharded too, gathered by
 * module (dp_shard.c, "modules"): each weight GEMM all-gathered when it is
 * reached, the coming ones prefetched in calls of at least
 * parallel.zero3.prefetch_bucket elements (at most parallel.zero3.max_live
 * gathered), freed after use; norms and biases under
 * parallel.zero3.persistence elements never gathered; gradients
 * reduce-scattered in buckets of parallel.zero3.reduce_bucket elements
 * across layers, every micro-batch. SPEC C18: 3Ψ of communication.
 * Closed forms: the two all-gathers and the reduce-scatter (1.5 times the
 * all-reduce's time) plus the latency of every call of the longer of the
 * gather and reduce streams, less what the
 * micro-batches' compute hides (module by module where the planner gives
 * the modules' compute: par_dps_plan_fetch_wait), and never less than the
 * first gather and the last reduce-scatter (par_dps_plan_edges); memory:
 * 16Ψ/N (SPEC C12), no buckets.
 */
#include <math.h>

#include "parallel/dp-int.h"

static void init(struct builder *b);
static double exposed_s(const struct par_dp_costs *c);
static double busy_s(const struct par_dp_costs *c);
static void plan_memory(const struct par_dp_costs *c, struct par_dp_mem *m);

const struct par_dp_strategy par_dp_zero3 = {
	.name = "zero3",
	.title = "ZeRO-3",
	.help = "ZeRO-3: parameters sharded too, each module all-gathered before use "
		"(prefetched: parallel.zero3.*) and freed after",
	.flags = PAR_DP_SHARDS_OPTIMIZER | PAR_DP_SHARDS_GRADS | PAR_DP_SHARDS_PARAMS |
		 PAR_DP_REDUCE_EVERY_MB | PAR_DP_ALIAS_ZERO,
	.init = init,
	.fini = par_dps_fini,
	.memory = par_dps_memory,
	.layer_begin = par_dps_layer_begin,
	.layer_end = par_dps_layer_end,
	.kernel_begin = par_dps_kernel_begin,
	.kernel_end = par_dps_kernel_end,
	.grads = par_dps_grads,
	.backward_end = par_dps_backward_end,
	.exposed_s = exposed_s,
	.plan_memory = plan_memory,
	.busy_s = busy_s,
};

static void init(struct builder *b)
{
	const struct par_zero3 *z = &b->t->layout->zero3;
	const struct dp_shard_policy p = {
		.unit_layers = 1, .prefetch = 1, .reshard = 1, .modules = 1,
		.prefetch_bucket = z->prefetch_bucket, .reduce_bucket = z->reduce_bucket,
		.max_live = z->max_live, .persistence = z->persistence,
	};
	par_dps_init(b, &p);
}

/*
 * Every micro-batch gathers the parameters for its forward and backward
 * (and the recomputed forward) and reduce-scatters its gradients, each an
 * all-reduce's half, and pays the group's latency per call (its gathers,
 * c->gather_calls, a pass's share in each, and reduce buckets). Gathers
 * and reduce-scatters run on two streams: their bytes share the group's
 * links, their latencies overlap (the longer stream's count). A
 * micro-batch waits for the longest of: all of it beside its compute; the
 * forward's gathers beside the forward; the backward's gathers beside the
 * backward (the gathers run at most max_live ahead, so neither phase
 * lends its slack to the other's; the reduce-scatters may run on into the
 * next micro-batch). Where the costs carry the modules (c->fetch), the
 * two phases' waits are the modules' own: each module's compute waits for
 * its call, the calls run one at a time as DeepSpeed issues them, and in
 * the backward they share the links with the reduce-scatters (a module's
 * gather larger than the compute before it is not hidden by the phase's
 * other modules); the kernels stretched as the interference stretched
 * the stage.
 */
struct phases {
	double all, fwd, bwd;   /* communication time, and the gathers of each phase */
};

static struct phases phases(const struct par_dp_costs *c)
{
	const struct par_zero3 *z = &c->layout->zero3;
	double rs = ceil(c->params / fmax(1, z->reduce_bucket));
	double passes = c->gather_passes > 0 ? c->gather_passes : 2;
	double calls = c->gather_calls / passes, pass = c->allreduce_s / 2;
	return (struct phases){
		.all = (passes + 1) * pass + fmax(c->gather_calls, rs) * c->call_s,
		.fwd = pass + calls * c->call_s,
		.bwd = (passes - 1) * (pass + calls * c->call_s),
	};
}

static double busy_s(const struct par_dp_costs *c)
{
	return c->micro_batches * phases(c).all + par_dps_plan_edges(c, c->last_reduce_bytes);
}

static double exposed_s(const struct par_dp_costs *c)
{
	struct phases k = phases(c);
	double wait = fmax(k.fwd - (c->stage_s - c->backward_s), k.bwd - c->backward_s);
	const struct par_dps_fetch *f = c->fetch;
	if (f && f->kernels_s > 0)
		wait = par_dps_plan_fetch_wait(f, c, 1 + (c->stage_s - f->stage_s) / f->kernels_s);
	double per_mb = fmax(fmax(0, k.all - c->stage_s), wait);
	return fmax(par_dps_plan_edges(c, c->last_reduce_bytes), c->micro_batches * per_mb);
}

static void plan_memory(const struct par_dp_costs *c, struct par_dp_mem *m)
{
	m->states = par_dp_plan_states(c, 3);
	m->buffers = 0;
}
