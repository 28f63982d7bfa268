/*
 * sched_1f1b.c - one forward, one backward (PipeDream-Flush; Megatron's
 * default). The reference schedule plug-in: copy this file to add one (the
 * recipe is in schedule.c).
 *
 * Stage s runs min(p - s - 1, m) forwards (the warm-up), then alternates one
 * forward and one backward, then drains the backwards: at most p - s
 * micro-batches in flight on stage s (SPEC C23). Same bubble as GPipe,
 * (p-1)/(m+p-1) of the pipeline phase (SPEC C22): (p - 1)(f + b) for
 * stages of forward f and backward b per micro-batch.
 */
#include "parallel/schedule.h"

static size_t f1b1_nactions(uint32_t p, uint32_t s, uint32_t m, uint32_t v);
static void f1b1_actions(uint32_t p, uint32_t s, uint32_t m, uint32_t v, struct par_action *out);
static double f1b1_bubble_s(uint32_t p, uint32_t m, uint32_t v, const struct par_stage_cost *c);
static double f1b1_pipeline_s(uint32_t p, uint32_t m, uint32_t v,
			      const struct par_stage_cost *c);
static double f1b1_in_flight(uint32_t p, uint32_t s, uint32_t m, uint32_t v);

const struct par_schedule_ops par_sched_1f1b = {
	.name = "1f1b",
	.help = "one forward, one backward after a warm-up of p - s - 1 forwards: "
		"at most p - s micro-batches in flight on stage s",
	.check = par_sched_check_one_chunk,
	.nactions = f1b1_nactions,
	.actions = f1b1_actions,
	.bubble_s = f1b1_bubble_s,
	.pipeline_s = f1b1_pipeline_s,
	.in_flight = f1b1_in_flight,
};

static uint32_t warm_up(uint32_t p, uint32_t s, uint32_t m)
{
	return p - s - 1 < m ? p - s - 1 : m;
}

static size_t f1b1_nactions(uint32_t p, uint32_t s, uint32_t m, uint32_t v)
{
	(void)p, (void)s, (void)v;
	return 2 * (size_t)m;
}

static void f1b1_actions(uint32_t p, uint32_t s, uint32_t m, uint32_t v, struct par_action *out)
{
	(void)v;
	uint32_t warm = warm_up(p, s, m), n = 0;
	for (uint32_t i = 0; i < warm; i++)
		out[n++] = (struct par_action){ .kind = PAR_ACT_FORWARD, .mb = i };
	for (uint32_t i = 0; i + warm < m; i++) {
		out[n++] = (struct par_action){ .kind = PAR_ACT_FORWARD, .mb = warm + i };
		out[n++] = (struct par_action){ .kind = PAR_ACT_BACKWARD, .mb = i };
	}
	for (uint32_t i = m - warm; i < m; i++)
		out[n++] = (struct par_action){ .kind = PAR_ACT_BACKWARD, .mb = i };
}

static double f1b1_bubble_s(uint32_t p, uint32_t m, uint32_t v, const struct par_stage_cost *c)
{
	(void)m, (void)v;
	return (double)(p - 1) * (c->fwd_s + c->bwd_s);
}

static double f1b1_pipeline_s(uint32_t p, uint32_t m, uint32_t v,
			      const struct par_stage_cost *c)
{
	(void)v;
	return (m + (double)(p - 1)) * (c->fwd_s + c->bwd_s);
}

/* The warm-up's forwards and the steady state's one. */
static double f1b1_in_flight(uint32_t p, uint32_t s, uint32_t m, uint32_t v)
{
	(void)v;
	return p - s < m ? p - s : m;
}
