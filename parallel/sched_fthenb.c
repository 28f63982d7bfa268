/*
 * sched_fthenb.c - all forwards, then all backwards: the reference
 * schedule that shows the recipe of schedule.c (one file, one registry
 * line, one Makefile.am line, its test). It runs GPipe's order, so its
 * timeline and step equal GPipe's (tests/unit/test_schedule.c checks it).
 */
#include "parallel/schedule.h"

static size_t fthenb_nactions(uint32_t p, uint32_t s, uint32_t m, uint32_t v)
{
	(void)p, (void)s, (void)v;
	return 2 * (size_t)m;
}

static void fthenb_actions(uint32_t p, uint32_t s, uint32_t m, uint32_t v,
			   struct par_action *out)
{
	(void)p, (void)s, (void)v;
	size_t n = 0;
	for (uint32_t i = 0; i < m; i++)
		out[n++] = (struct par_action){ .kind = PAR_ACT_FORWARD, .mb = i };
	for (uint32_t i = 0; i < m; i++)
		out[n++] = (struct par_action){ .kind = PAR_ACT_BACKWARD, .mb = i };
}

/* Stage s's last forward ends (p - 1 - s) f after the first stage's, its
 * first backward (p - 1 - s) b before the first stage's: the first stage
 * waits (p - 1)(f + b) in all. */
static double fthenb_bubble_s(uint32_t p, uint32_t m, uint32_t v, const struct par_stage_cost *c)
{
	(void)m, (void)v;
	return (double)(p - 1) * (c->fwd_s + c->bwd_s);
}

static double fthenb_pipeline_s(uint32_t p, uint32_t m, uint32_t v,
				const struct par_stage_cost *c)
{
	(void)v;
	return (m + (double)(p - 1)) * (c->fwd_s + c->bwd_s);
}

static double fthenb_in_flight(uint32_t p, uint32_t s, uint32_t m, uint32_t v)
{
	(void)p, (void)s, (void)v;
	return m;
}

const struct par_schedule_ops par_sched_fthenb = {
	.name = "fthenb",
	.help = "reference: all forwards, then all backwards (GPipe's order)",
	.check = par_sched_check_one_chunk,
	.nactions = fthenb_nactions,
	.actions = fthenb_actions,
	.bubble_s = fthenb_bubble_s,
	.pipeline_s = fthenb_pipeline_s,
	.in_flight = fthenb_in_flight,
};
