/*
 * pairwise.c - pairwise-exchange all-to-all: p-1 steps; at step k member v
 * sends its block for v+k+1 and receives the block of v-k-1 (one partner per
 * step, one message at a time per rank). SPEC C5: (p-1)α + (p-1)/p nβ, with
 * n the bytes each rank holds.
 */
#include "collectives/coll.h"
#include "collectives/coll-int.h"

#include <stdio.h>

static int pw_plan(struct sim_coll_plan *plan, char *err, size_t errlen);
static void pw_step(const struct sim_coll_plan *plan, uint32_t v, uint32_t k,
		    struct sim_coll_step *out);
static uint32_t pw_pattern(const struct sim_coll_plan *plan, uint32_t k);
static double pw_time_s(const struct sim_coll_plan *plan, const struct sim_coll_linkset *ls);

const struct sim_coll_algo coll_pairwise = {
	.name = "pairwise",
	.help = "pairwise-exchange all-to-all, one partner per step",
	.ops = 1u << SIM_COLL_ALLTOALL,
	.flags = 0,
	.plan = pw_plan,
	.step = pw_step,
	.pattern = pw_pattern,
	.time_s = pw_time_s,
};

static int pw_plan(struct sim_coll_plan *plan, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	plan->nsteps = plan->p - 1;
	return 0;
}

static void pw_step(const struct sim_coll_plan *plan, uint32_t v, uint32_t k,
		    struct sim_coll_step *out)
{
	uint32_t p = plan->p, d = k + 1;
	double b = COLL_CHANNEL_BYTES(plan) / p;
	*out = (struct sim_coll_step){
		.send_to = (int32_t)((v + d) % p), .recv_from = (int32_t)((v + p - d) % p),
		.send_bytes = b, .recv_bytes = b,
	};
}

static uint32_t pw_pattern(const struct sim_coll_plan *plan, uint32_t k)
{
	(void)plan;
	return k;
}

static double pw_time_s(const struct sim_coll_plan *plan, const struct sim_coll_linkset *ls)
{
	double t = 0, b = COLL_CHANNEL_BYTES(plan) / plan->p;
	for (uint32_t k = 0; k < plan->nsteps; k++)
		t += sim_coll_step_s(sim_coll_linkset_at(ls, k), b);
	return t;
}
