/*
 * ring.c - ring collectives: all-reduce, reduce-scatter, all-gather and a
 * pipelined broadcast. The reference plug-in: copy this file to add one.
 *
 * The members form one ring per channel (the engine snakes it through nodes
 * so that channel c crosses between nodes on NIC rail c) and each channel
 * carries 1/c of the data. At every step member v sends one block to v+1 and
 * receives one from v-1:
 *   all-reduce      2(p-1) steps of n/(cp)      (reduce-scatter, all-gather)
 *   reduce-scatter   (p-1) steps of n/(cp)
 *   all-gather       (p-1) steps of n/(cp)
 *   broadcast       S+p-2 steps of n/(cS): the buffer is cut into S slices
 *                   that follow each other down the ring from the root.
 * SPEC C1 and C2 are the closed forms of the first three.
 */
#include "collectives/coll.h"
#include "collectives/coll-int.h"

#include <math.h>
#include <stdio.h>

static int ring_plan(struct sim_coll_plan *plan, char *err, size_t errlen);
static void ring_step(const struct sim_coll_plan *plan, uint32_t v, uint32_t k,
		      struct sim_coll_step *out);
static uint32_t ring_pattern(const struct sim_coll_plan *plan, uint32_t k);
static double ring_time_s(const struct sim_coll_plan *plan, const struct sim_coll_linkset *ls);

const struct sim_coll_algo coll_ring = {
	.name = "ring",
	.help = "ring over all members, one ring per channel (NCCL's default)",
	.ops = 1u << SIM_COLL_ALLREDUCE | 1u << SIM_COLL_REDUCESCATTER |
	       1u << SIM_COLL_ALLGATHER | 1u << SIM_COLL_BROADCAST,
	.flags = SIM_COLL_SNAKE | SIM_COLL_CHANNELS,
	.plan = ring_plan,
	.step = ring_step,
	.pattern = ring_pattern,
	.time_s = ring_time_s,
};

/* Most slices a broadcast is cut into, and the smallest slice (bytes). */
#define RING_MAX_SLICES 1024
#define RING_MIN_SLICE 65536.0

/*
 * Slices of a pipelined broadcast: S minimises (S + p - 2)(α + nβ/S), so
 * S* = sqrt((p-2) nβ / α), rounded to the better neighbour; with α = 0 as
 * many slices of at least 64 KiB as the cap allows.
 */
static uint32_t bcast_slices(const struct sim_coll_plan *plan)
{
	double n = COLL_CHANNEL_BYTES(plan), p = plan->p;
	double most = fmin(RING_MAX_SLICES, fmax(1.0, floor(n / RING_MIN_SLICE)));
	if (p <= 2 || plan->beta_s <= 0)
		return 1;
	if (plan->alpha_s <= 0)
		return (uint32_t)most;
	double s = sqrt((p - 2) * n * plan->beta_s / plan->alpha_s);
	double lo = fmax(1.0, fmin(most, floor(s))), hi = fmin(most, lo + 1);
	double tlo = (lo + p - 2) * (plan->alpha_s + n * plan->beta_s / lo);
	double thi = (hi + p - 2) * (plan->alpha_s + n * plan->beta_s / hi);
	return (uint32_t)(thi < tlo ? hi : lo);
}

static int ring_plan(struct sim_coll_plan *plan, char *err, size_t errlen)
{
	uint32_t p = plan->p;
	switch (plan->op) {
	case SIM_COLL_ALLREDUCE:
		plan->nsteps = 2 * (p - 1);
		break;
	case SIM_COLL_REDUCESCATTER:
	case SIM_COLL_ALLGATHER:
		plan->nsteps = p - 1;
		break;
	case SIM_COLL_BROADCAST:
		plan->slices = bcast_slices(plan);
		plan->nsteps = p > 1 ? plan->slices + p - 2 : 0;
		break;
	default:
		snprintf(err, errlen, "ring does not implement %s", sim_coll_op_name(plan->op));
		return -1;
	}
	return 0;
}

static void ring_step(const struct sim_coll_plan *plan, uint32_t v, uint32_t k,
		      struct sim_coll_step *out)
{
	uint32_t p = plan->p;
	if (plan->op != SIM_COLL_BROADCAST) {
		double b = COLL_CHANNEL_BYTES(plan) / p;
		*out = (struct sim_coll_step){
			.send_to = (int32_t)((v + 1) % p), .recv_from = (int32_t)((v + p - 1) % p),
			.send_bytes = b, .recv_bytes = b,
		};
		return;
	}
	/* Member r (distance from the root) forwards slice j at step j + r. */
	uint32_t r = (v + p - plan->root) % p, S = plan->slices;
	double b = COLL_CHANNEL_BYTES(plan) / S;
	*out = (struct sim_coll_step){ .send_to = -1, .recv_from = -1 };
	if (r + 2 <= p && k >= r && k - r < S) {
		out->send_to = (int32_t)((v + 1) % p);
		out->send_bytes = b;
	}
	if (r >= 1 && k + 1 >= r && k + 1 - r < S) {
		out->recv_from = (int32_t)((v + p - 1) % p);
		out->recv_bytes = b;
	}
}

/*
 * Every step sends to the next member, but a broadcast's early steps use only
 * the first hops from the root: step k <= p-2 is its own pattern there (step
 * r is the first to use hop r -> r+1), and later steps use a subset of step
 * p-2's hops. O(p^2) routes for the link scan of a broadcast, O(p) otherwise.
 */
static uint32_t ring_pattern(const struct sim_coll_plan *plan, uint32_t k)
{
	if (plan->op != SIM_COLL_BROADCAST)
		return 0;
	return k < plan->p - 2 ? k : plan->p - 2;
}

static double ring_time_s(const struct sim_coll_plan *plan, const struct sim_coll_linkset *ls)
{
	double n = COLL_CHANNEL_BYTES(plan), p = plan->p, t = 0;
	if (plan->op != SIM_COLL_BROADCAST)
		return plan->nsteps * sim_coll_step_s(&ls->all, n / p);
	for (uint32_t k = 0; k < plan->nsteps; k++)
		t += sim_coll_step_s(sim_coll_linkset_at(ls, ring_pattern(plan, k)),
				     n / plan->slices);
	return t;
}
