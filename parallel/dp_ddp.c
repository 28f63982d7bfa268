/*
 * dp_ddp.c - PyTorch DDP: parameters and optimizer states replicated;
 * gradients all-reduced bucket by bucket (dp_bucket.c), each bucket as it
 * fills while the backward goes on with parallel.ddp.overlap, else all after
 * the backward; only the last micro-batch reduces (no_sync before it).
 * Closed forms: the all-reduces of the buckets, chunk by chunk, exposed
 * less what the chunk's backward (with overlap) and the stage's compute
 * after it hide (par_dpb_plan_reduce); memory:
 * the model states unsharded (SPEC C12: 16Ψ with Adam) and two buckets.
 */
#include <math.h>

#include "parallel/dp-int.h"

static void init(struct builder *b);
static double exposed_s(const struct par_dp_costs *c);
static double busy_s(const struct par_dp_costs *c);
static double beside_s(const struct par_dp_costs *c, uint32_t j);
static void plan_memory(const struct par_dp_costs *c, struct par_dp_mem *m);

const struct par_dp_strategy par_dp_ddp = {
	.name = "ddp",
	.title = "DDP",
	.help = "PyTorch DDP: parameters and optimizer replicated, gradients all-reduced in "
		"buckets (parallel.ddp.*)",
	.flags = PAR_DP_PIPELINE | PAR_DP_MOE | PAR_DP_ALIAS_ZERO,
	.init = init,
	.fini = par_dpb_fini,
	.memory = par_dpb_memory,
	.grads = par_dpb_grads,
	.backward_end = par_dpb_backward_end,
	.exposed_s = exposed_s,
	.plan_memory = plan_memory,
	.busy_s = busy_s,
	.beside_s = beside_s,
};

static void init(struct builder *b)
{
	const struct dp_bucket_policy p = {
		.reduce = SIM_COLL_ALLREDUCE, .overlap = b->t->layout->ddp.overlap,
	};
	par_dpb_init(b, &p);
}

static double exposed_s(const struct par_dp_costs *c)
{
	return par_dpb_plan_reduce(c, SIM_COLL_ALLREDUCE, 0, c->layout->ddp.overlap, NULL);
}

static double busy_s(const struct par_dp_costs *c)
{
	double busy;
	par_dpb_plan_reduce(c, SIM_COLL_ALLREDUCE, 0, 0, &busy);
	return busy;
}

static double beside_s(const struct par_dp_costs *c, uint32_t j)
{
	return c->layout->ddp.overlap ? par_dpb_plan_chunk_s(c, SIM_COLL_ALLREDUCE, j) : 0;
}

static void plan_memory(const struct par_dp_costs *c, struct par_dp_mem *m)
{
	par_dpb_plan_memory(c, 0, m);
}
