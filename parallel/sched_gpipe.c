/*
 * sched_gpipe.c - GPipe (Huang et al. 2019): every forward, then every
 * backward. Each stage holds all m micro-batches' activations (SPEC C23);
 * the bubble is (p-1)/(m+p-1) of the pipeline phase (SPEC C22), (p - 1)
 * (f + b) for stages of forward f and backward b per micro-batch.
 */
#include "parallel/schedule.h"

static size_t gpipe_nactions(uint32_t p, uint32_t s, uint32_t m, uint32_t v);
static void gpipe_actions(uint32_t p, uint32_t s, uint32_t m, uint32_t v, struct par_action *out);
static double gpipe_bubble_s(uint32_t p, uint32_t m, uint32_t v, const struct par_stage_cost *c);
static double gpipe_pipeline_s(uint32_t p, uint32_t m, uint32_t v,
			       const struct par_stage_cost *c);
static double gpipe_in_flight(uint32_t p, uint32_t s, uint32_t m, uint32_t v);

const struct par_schedule_ops par_sched_gpipe = {
	.name = "gpipe",
	.help = "every forward, then every backward: all m micro-batches in flight on every stage",
	.check = par_sched_check_one_chunk,
	.nactions = gpipe_nactions,
	.actions = gpipe_actions,
	.bubble_s = gpipe_bubble_s,
	.pipeline_s = gpipe_pipeline_s,
	.in_flight = gpipe_in_flight,
};

static size_t gpipe_nactions(uint32_t p, uint32_t s, uint32_t m, uint32_t v)
{
	(void)p, (void)s, (void)v;
	return 2 * (size_t)m;
}

static void gpipe_actions(uint32_t p, uint32_t s, uint32_t m, uint32_t v, struct par_action *out)
{
	(void)p, (void)s, (void)v;
	for (uint32_t i = 0; i < m; i++) {
		out[i] = (struct par_action){ .kind = PAR_ACT_FORWARD, .mb = i };
		out[m + i] = (struct par_action){ .kind = PAR_ACT_BACKWARD, .mb = i };
	}
}

static double gpipe_bubble_s(uint32_t p, uint32_t m, uint32_t v, const struct par_stage_cost *c)
{
	(void)m, (void)v;
	return (double)(p - 1) * (c->fwd_s + c->bwd_s);
}

static double gpipe_pipeline_s(uint32_t p, uint32_t m, uint32_t v,
			       const struct par_stage_cost *c)
{
	(void)v;
	return (m + (double)(p - 1)) * (c->fwd_s + c->bwd_s);
}

static double gpipe_in_flight(uint32_t p, uint32_t s, uint32_t m, uint32_t v)
{
	(void)p, (void)s, (void)v;
	return m;
}
