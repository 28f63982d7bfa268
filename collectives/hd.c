/*
 * hd.c - Rabenseifner's halving-doubling all-reduce: a reduce-scatter by
 * recursive halving (distance p/2, p/4, ..., 1; the block halves each step)
 * followed by an all-gather by recursive doubling (distance 1, 2, ..., p/2;
 * the block doubles). Time 2 log2(p) α + 2(p-1)/p nβ: the ring's bandwidth
 * with the butterfly's latency (SPEC C4). Powers of two only.
 */
#include "collectives/coll.h"
#include "collectives/coll-int.h"

#include <stdio.h>

static int hd_plan(struct sim_coll_plan *plan, char *err, size_t errlen);
static void hd_step(const struct sim_coll_plan *plan, uint32_t v, uint32_t k,
		    struct sim_coll_step *out);
static uint32_t hd_pattern(const struct sim_coll_plan *plan, uint32_t k);
static double hd_time_s(const struct sim_coll_plan *plan, const struct sim_coll_linkset *ls);

const struct sim_coll_algo coll_hd = {
	.name = "hd",
	.help = "Rabenseifner halving-doubling all-reduce (powers of two)",
	.ops = 1u << SIM_COLL_ALLREDUCE,
	.flags = 0,
	.plan = hd_plan,
	.step = hd_step,
	.pattern = hd_pattern,
	.time_s = hd_time_s,
};

static int hd_plan(struct sim_coll_plan *plan, char *err, size_t errlen)
{
	if (!coll_is_pow2(plan->p)) {
		snprintf(err, errlen, "hd all-reduce needs a power-of-two number of ranks "
			 "(got %u): use ring or rd", plan->p);
		return -1;
	}
	plan->nsteps = 2 * coll_log2(plan->p);
	return 0;
}

/* Step k: partner distance and block size (as a fraction of n). */
static void hd_shape(const struct sim_coll_plan *plan, uint32_t k, uint32_t *dist, double *frac)
{
	uint32_t L = plan->nsteps / 2;
	if (k < L) {                       /* halving: p/2 .. 1, n/2 .. n/p */
		*dist = plan->p >> (k + 1);
		*frac = 1.0 / (double)(2u << k);
	} else {                           /* doubling: 1 .. p/2, n/p .. n/2 */
		uint32_t j = k - L;
		*dist = 1u << j;
		*frac = (double)(1u << j) / plan->p;
	}
}

static void hd_step(const struct sim_coll_plan *plan, uint32_t v, uint32_t k,
		    struct sim_coll_step *out)
{
	uint32_t dist;
	double frac, b;
	hd_shape(plan, k, &dist, &frac);
	b = COLL_CHANNEL_BYTES(plan) * frac;
	*out = (struct sim_coll_step){
		.send_to = (int32_t)(v ^ dist), .recv_from = (int32_t)(v ^ dist),
		.send_bytes = b, .recv_bytes = b,
	};
}

static uint32_t hd_pattern(const struct sim_coll_plan *plan, uint32_t k)
{
	uint32_t dist;
	double frac;
	hd_shape(plan, k, &dist, &frac);
	return dist;  /* the same partners on the way down and up */
}

static double hd_time_s(const struct sim_coll_plan *plan, const struct sim_coll_linkset *ls)
{
	double t = 0;
	for (uint32_t k = 0; k < plan->nsteps; k++) {
		uint32_t dist;
		double frac;
		hd_shape(plan, k, &dist, &frac);
		t += sim_coll_step_s(sim_coll_linkset_at(ls, dist), COLL_CHANNEL_BYTES(plan) * frac);
	}
	return t;
}
