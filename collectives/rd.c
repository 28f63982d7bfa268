/*
 * rd.c - recursive doubling (butterfly) collectives.
 *
 *   all-reduce      log2(p) steps; at step k member v swaps the whole buffer
 *                   with v XOR 2^k (SPEC C3: log2(p)(α + nβ)). For p not a
 *                   power of two, with p' the largest power of two below p,
 *                   members p'..p-1 first fold their data into v - p' and
 *                   get the result back at the end: two extra steps.
 *   reduce-scatter  recursive halving: at step k swap half of what is left
 *                   with v XOR p/2^(k+1): log2(p) α + (p-1)/p nβ.
 *   all-gather      recursive doubling: at step k swap 2^k/p of the buffer
 *                   with v XOR 2^k: log2(p) α + (p-1)/p nβ.
 * Reduce-scatter and all-gather need a power of two and refuse other counts.
 */
#include "collectives/coll.h"
#include "collectives/coll-int.h"

#include <stdio.h>

static int rd_plan(struct sim_coll_plan *plan, char *err, size_t errlen);
static void rd_step(const struct sim_coll_plan *plan, uint32_t v, uint32_t k,
		    struct sim_coll_step *out);
static uint32_t rd_pattern(const struct sim_coll_plan *plan, uint32_t k);
static double rd_time_s(const struct sim_coll_plan *plan, const struct sim_coll_linkset *ls);

const struct sim_coll_algo coll_rd = {
	.name = "rd",
	.help = "recursive doubling (halving for reduce-scatter); fast for small messages",
	.ops = 1u << SIM_COLL_ALLREDUCE | 1u << SIM_COLL_REDUCESCATTER | 1u << SIM_COLL_ALLGATHER,
	.flags = 0,
	.plan = rd_plan,
	.step = rd_step,
	.pattern = rd_pattern,
	.time_s = rd_time_s,
};

static int rd_plan(struct sim_coll_plan *plan, char *err, size_t errlen)
{
	uint32_t p = plan->p, L = coll_log2(p);
	if (plan->op == SIM_COLL_ALLREDUCE) {
		plan->nsteps = coll_is_pow2(p) ? L : L + 2;
		return 0;
	}
	if (!coll_is_pow2(p)) {
		snprintf(err, errlen, "rd %s needs a power-of-two number of ranks (got %u): "
			 "use ring", sim_coll_op_name(plan->op), p);
		return -1;
	}
	plan->nsteps = L;
	return 0;
}

static void swap_with(struct sim_coll_step *out, uint32_t peer, double bytes)
{
	*out = (struct sim_coll_step){
		.send_to = (int32_t)peer, .recv_from = (int32_t)peer,
		.send_bytes = bytes, .recv_bytes = bytes,
	};
}

/* All-reduce on any p: fold-in, butterfly over p' members, fold-out. */
static void allreduce_step(const struct sim_coll_plan *plan, uint32_t v, uint32_t k,
			   struct sim_coll_step *out)
{
	uint32_t p = plan->p, pp = 1u << coll_log2(p), extra = p - pp;
	double n = COLL_CHANNEL_BYTES(plan);
	*out = (struct sim_coll_step){ .send_to = -1, .recv_from = -1 };
	if (!extra) {
		swap_with(out, v ^ (1u << k), n);
		return;
	}
	uint32_t last = plan->nsteps - 1;
	if (k == 0 || k == last) {
		int fold_in = k == 0;
		if (v >= pp) {          /* an extra member: out, then back in */
			if (fold_in)
				out->send_to = (int32_t)(v - pp), out->send_bytes = n;
			else
				out->recv_from = (int32_t)(v - pp), out->recv_bytes = n;
		} else if (v < extra) { /* its partner */
			if (fold_in)
				out->recv_from = (int32_t)(v + pp), out->recv_bytes = n;
			else
				out->send_to = (int32_t)(v + pp), out->send_bytes = n;
		}
		return;
	}
	if (v < pp)
		swap_with(out, v ^ (1u << (k - 1)), n);
}

static void rd_step(const struct sim_coll_plan *plan, uint32_t v, uint32_t k,
		    struct sim_coll_step *out)
{
	double n = COLL_CHANNEL_BYTES(plan);
	switch (plan->op) {
	case SIM_COLL_ALLREDUCE:
		allreduce_step(plan, v, k, out);
		break;
	case SIM_COLL_REDUCESCATTER:
		swap_with(out, v ^ (plan->p >> (k + 1)), n / (double)(2u << k));
		break;
	default: /* all-gather */
		swap_with(out, v ^ (1u << k), n * (double)(1u << k) / plan->p);
		break;
	}
}

static uint32_t rd_pattern(const struct sim_coll_plan *plan, uint32_t k)
{
	(void)plan;
	return k;  /* a new partner every step */
}

/* Each step costs its message on the routes of that step's partners. */
static double rd_time_s(const struct sim_coll_plan *plan, const struct sim_coll_linkset *ls)
{
	double n = COLL_CHANNEL_BYTES(plan), t = 0;
	for (uint32_t k = 0; k < plan->nsteps; k++) {
		const struct sim_coll_links *l = sim_coll_linkset_at(ls, k);
		if (plan->op == SIM_COLL_ALLREDUCE)
			t += sim_coll_step_s(l, n);
		else if (plan->op == SIM_COLL_REDUCESCATTER)
			t += sim_coll_step_s(l, n / (double)(2u << k));
		else
			t += sim_coll_step_s(l, n * (double)(1u << k) / plan->p);
	}
	return t;
}
