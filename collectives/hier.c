/*
 * hier.c - hierarchical all-reduce over N nodes of g members each (SPEC C7):
 *   1. reduce-scatter inside each node, a ring over its g members
 *      (g-1 steps of n/g over NVLink);
 *   2. all-reduce across nodes of each member's n/g shard, a ring over the
 *      N members of equal local position, all g rings at once, one per NIC
 *      rail (2(N-1) steps of n/(gN));
 *   3. all-gather inside each node (g-1 steps of n/g).
 * Time 2[(g-1)α₁ + (g-1)/g·n/W₁] + 2(N-1)α₂ + 2(N-1)/N·(n/g)/W₂.
 * Members are laid out node by node (v = x·g + j); every node must hold
 * the same number of members.
 */
#include "collectives/coll.h"
#include "collectives/coll-int.h"

#include <stdio.h>

static int hier_plan(struct sim_coll_plan *plan, char *err, size_t errlen);
static void hier_step(const struct sim_coll_plan *plan, uint32_t v, uint32_t k,
		      struct sim_coll_step *out);
static uint32_t hier_pattern(const struct sim_coll_plan *plan, uint32_t k);
static double hier_time_s(const struct sim_coll_plan *plan, const struct sim_coll_linkset *ls);

const struct sim_coll_algo coll_hier = {
	.name = "hier",
	.help = "hierarchical all-reduce: reduce-scatter in the node, all-reduce "
		"across nodes on every NIC, all-gather in the node",
	.ops = 1u << SIM_COLL_ALLREDUCE,
	.flags = 0,
	.plan = hier_plan,
	.step = hier_step,
	.pattern = hier_pattern,
	.time_s = hier_time_s,
};

enum { PHASE_RS, PHASE_AR, PHASE_AG };

static int hier_plan(struct sim_coll_plan *plan, char *err, size_t errlen)
{
	if (!plan->per_node) {
		snprintf(err, errlen, "hier needs the same number of ranks on every node "
			 "(%u ranks on %u nodes are uneven): use ring", plan->p, plan->nodes);
		return -1;
	}
	uint32_t g = plan->per_node, N = plan->nodes;
	plan->nsteps = 2 * (g - 1) + 2 * (N - 1);
	return 0;
}

/* Which phase step k is in, and its index inside the phase. */
static int hier_phase(const struct sim_coll_plan *plan, uint32_t k, uint32_t *i)
{
	uint32_t g = plan->per_node, N = plan->nodes;
	if (k < g - 1)
		return *i = k, PHASE_RS;
	if (k < g - 1 + 2 * (N - 1))
		return *i = k - (g - 1), PHASE_AR;
	return *i = k - (g - 1) - 2 * (N - 1), PHASE_AG;
}

static void hier_step(const struct sim_coll_plan *plan, uint32_t v, uint32_t k,
		      struct sim_coll_step *out)
{
	uint32_t g = plan->per_node, N = plan->nodes, x = v / g, j = v % g, i;
	double shard = COLL_CHANNEL_BYTES(plan) / g;
	uint32_t to, from;
	double b;
	if (hier_phase(plan, k, &i) == PHASE_AR) {
		to = ((x + 1) % N) * g + j;
		from = ((x + N - 1) % N) * g + j;
		b = shard / N;
	} else {
		to = x * g + (j + 1) % g;
		from = x * g + (j + g - 1) % g;
		b = shard;
	}
	*out = (struct sim_coll_step){
		.send_to = (int32_t)to, .recv_from = (int32_t)from,
		.send_bytes = b, .recv_bytes = b,
	};
}

static uint32_t hier_pattern(const struct sim_coll_plan *plan, uint32_t k)
{
	uint32_t i;
	return hier_phase(plan, k, &i) == PHASE_AR ? 1 : 0;
}

static double hier_time_s(const struct sim_coll_plan *plan, const struct sim_coll_linkset *ls)
{
	const struct sim_coll_links *l = &ls->all;  /* phases use one class each */
	uint32_t g = plan->per_node, N = plan->nodes;
	double shard = COLL_CHANNEL_BYTES(plan) / g, t = 0;
	if (g > 1)
		t += 2.0 * (g - 1) * (l->alpha_intra_s + shard / l->bw_intra_Bps);
	if (N > 1)
		t += 2.0 * (N - 1) * (l->alpha_inter_s + shard / N / l->bw_inter_Bps);
	return t;
}
