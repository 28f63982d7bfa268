/*
 * dp_zero3.c - ZeRO stage 3: parameters sharded too, in units of one layer
 * (dp_shard.c): each is all-gathered before its forward and again before
 * its backward (prefetched one unit ahead), freed after use, and its
 * gradients reduce-scattered after its backward, every micro-batch. SPEC
 * C18: 3Ψ of communication.
 * Closed forms: the two all-gathers and the reduce-scatter (1.5 times the
 * all-reduce's time) less what the micro-batches' compute hides; memory:
 * 16Ψ/N (SPEC C12), no buckets.
 */
#include <math.h>

#include "parallel/dp-int.h"

static void init(struct builder *b);
static double exposed_s(const struct par_dp_costs *c);
static void plan_memory(const struct par_dp_costs *c, struct par_dp_mem *m);

const struct par_dp_strategy par_dp_zero3 = {
	.name = "zero3",
	.title = "ZeRO-3",
	.help = "ZeRO-3: parameters sharded too, each layer all-gathered before use "
		"(prefetched) and freed after",
	.flags = PAR_DP_SHARDS_OPTIMIZER | PAR_DP_SHARDS_GRADS | PAR_DP_SHARDS_PARAMS |
		 PAR_DP_REDUCE_EVERY_MB | PAR_DP_ALIAS_ZERO,
	.init = init,
	.fini = par_dps_fini,
	.memory = par_dps_memory,
	.layer_begin = par_dps_layer_begin,
	.layer_end = par_dps_layer_end,
	.exposed_s = exposed_s,
	.plan_memory = plan_memory,
};

static void init(struct builder *b)
{
	const struct dp_shard_policy p = { .unit_layers = 1, .prefetch = 1, .reshard = 1 };
	par_dps_init(b, &p);
}

static double exposed_s(const struct par_dp_costs *c)
{
	return fmax(0, 1.5 * c->allreduce_s - c->micro_batches * c->stage_s);
}

static void plan_memory(const struct par_dp_costs *c, struct par_dp_mem *m)
{
	m->states = par_dp_plan_states(c, 3);
	m->buffers = 0;
}
