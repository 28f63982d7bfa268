/*
 * dp_fsdp.c - PyTorch FSDP: parameters sharded in units of
 * parallel.fsdp.unit_layers layers (dp_shard.c), gathered ahead with
 * fsdp.prefetch, freed after the forward with fsdp.reshard (else kept for
 * the backward: 2Ψ of communication instead of 3Ψ). HSDP (fsdp.hsdp) is
 * this strategy with the shard group inside a node: the unit's
 * reduce-scatter inside the node is followed by an all-reduce of the shard
 * across nodes (an option of FSDP's, not a strategy: the same hooks over
 * another group).
 * Closed forms: the gathers and the reduce-scatter (1.5 or, without
 * resharding, 1 times the all-reduce's time) less what the micro-batches'
 * compute hides (nothing without prefetch), and with prefetch never less
 * than the first unit's gather and the last one's reduce-scatter (the
 * embedding's and head's: par_dps_plan_edges); memory: 16Ψ/N, no buckets.
 */
#include <math.h>

#include "parallel/dp-int.h"

static int check_layout(const struct par_layout *l, char *err, size_t errlen);
static int check(const struct par_dp_env *e, char *err, size_t errlen);
static uint32_t shard(const struct par_layout *l, const struct topo_config *cl, uint32_t dpn);
static void init(struct builder *b);
static double exposed_s(const struct par_dp_costs *c);
static double busy_s(const struct par_dp_costs *c);
static void plan_memory(const struct par_dp_costs *c, struct par_dp_mem *m);

const struct par_dp_strategy par_dp_fsdp = {
	.name = "fsdp",
	.title = "FSDP",
	.help = "PyTorch FSDP: parameters sharded in units of parallel.fsdp.unit_layers layers "
		"(fsdp.prefetch, fsdp.reshard; fsdp.hsdp shards inside a node)",
	.flags = PAR_DP_SHARDS_OPTIMIZER | PAR_DP_SHARDS_GRADS | PAR_DP_SHARDS_PARAMS |
		 PAR_DP_REDUCE_EVERY_MB | PAR_DP_ALIAS_FSDP,
	.check_layout = check_layout,
	.check = check,
	.shard = shard,
	.init = init,
	.fini = par_dps_fini,
	.memory = par_dps_memory,
	.layer_begin = par_dps_layer_begin,
	.layer_end = par_dps_layer_end,
	.exposed_s = exposed_s,
	.plan_memory = plan_memory,
	.busy_s = busy_s,
};

static int check_layout(const struct par_layout *l, char *err, size_t errlen)
{
	if (l->fsdp.hsdp && l->tp * l->cp * l->pp > 1)
		return sim_errf(err, errlen, "parallel.fsdp.hsdp: HSDP is simulated with data "
				"parallelism only (tp, cp and pp 1)");
	return 0;
}

static int check(const struct par_dp_env *e, char *err, size_t errlen)
{
	const struct topo_config *cl = e->cluster;
	if (e->layout->fsdp.hsdp && (cl->kind == TOPO_IDEAL || e->dp % cl->gpus_per_node ||
				     cl->gpus_per_node < 2))
		return sim_errf(err, errlen, "parallel.fsdp.hsdp: sharding inside a node needs "
				"nodes of several GPUs, all in the data-parallel group");
	return 0;
}

/* HSDP shards over the GPUs of a node. */
static uint32_t shard(const struct par_layout *l, const struct topo_config *cl, uint32_t dpn)
{
	return l->fsdp.hsdp ? (uint32_t)topo_config_gpus_per_node(cl) : dpn;
}

static void init(struct builder *b)
{
	const struct par_fsdp *f = &b->t->layout->fsdp;
	const struct dp_shard_policy p = {
		.unit_layers = f->unit_layers, .prefetch = f->prefetch, .reshard = f->reshard,
	};
	par_dps_init(b, &p);
}

/* Per micro-batch: the forward's gathers, the backward's again when
 * resharded, the gradients' reduce-scatter (all-reduce halves). */
static double comm_s(const struct par_dp_costs *c)
{
	return (c->layout->fsdp.reshard ? 1.5 : 1) * c->allreduce_s;
}

static double busy_s(const struct par_dp_costs *c)
{
	return c->micro_batches * comm_s(c);
}

static double exposed_s(const struct par_dp_costs *c)
{
	const struct par_fsdp *f = &c->layout->fsdp;
	double comm = comm_s(c);
	if (!f->prefetch)
		return c->micro_batches * comm;
	double grads = par_grad_bytes(c->precision, c->layout->ddp.fp32_grads) * c->edge_params;
	return fmax(par_dps_plan_edges(c, grads), c->micro_batches * fmax(0, comm - c->stage_s));
}

static void plan_memory(const struct par_dp_costs *c, struct par_dp_mem *m)
{
	m->states = par_dp_plan_states(c, 3);
	m->buffers = 0;
}
