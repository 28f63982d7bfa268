/*
 * sched_zbh1.c - ZB-H1 (Qi et al. 2023, Zero Bubble Pipeline Parallelism):
 * 1F1B with each backward split into its input-gradient pass B, which
 * sends the gradient on, and its weight-gradient pass W, which nothing
 * downstream waits for. Stage s warms up with 1F1B's p - s - 1 forwards,
 * then runs F, B and, s micro-batches late, W; the drain runs B and the
 * oldest W after it, then the W left. The W deferred fill the waits of the
 * drain, so the bubble is (p - 1)(F + B - 2W) for stages of forward F,
 * whole backward B and weight gradients W <= F (SPEC C29; (p - 1)(B - W)
 * when W > F: the input-gradient chain alone), against 1F1B's
 * (p - 1)(F + B). A micro-batch's activations stay until its W: stage s
 * holds its warm-up's, one more and the s deferred, p on every stage, as
 * 1F1B's first (SPEC C29). Needs m >= p micro-batches (the deferral
 * assumes a full steady state).
 */
#include "parallel/schedule.h"

#include <math.h>

#include "sim/util.h"

static int zbh1_check(uint32_t p, uint32_t m, uint32_t v, char *err, size_t errlen);
static size_t zbh1_nactions(uint32_t p, uint32_t s, uint32_t m, uint32_t v);
static void zbh1_actions(uint32_t p, uint32_t s, uint32_t m, uint32_t v, struct par_action *out);
static double zbh1_bubble_s(uint32_t p, uint32_t m, uint32_t v, const struct par_stage_cost *c);
static double zbh1_pipeline_s(uint32_t p, uint32_t m, uint32_t v,
			      const struct par_stage_cost *c);
static double zbh1_in_flight(uint32_t p, uint32_t s, uint32_t m, uint32_t v);

const struct par_schedule_ops par_sched_zbh1 = {
	.name = "zb-h1",
	.help = "zero-bubble ZB-H1 (Qi et al. 2023): 1F1B with each backward split into its "
		"input and weight gradients, the weight gradients deferred into the drain: "
		"bubble (p-1)(F+B-2W), p micro-batches in flight on every stage; m >= pp",
	.splits = 1,
	.check = zbh1_check,
	.nactions = zbh1_nactions,
	.actions = zbh1_actions,
	.bubble_s = zbh1_bubble_s,
	.pipeline_s = zbh1_pipeline_s,
	.in_flight = zbh1_in_flight,
};

static int zbh1_check(uint32_t p, uint32_t m, uint32_t v, char *err, size_t errlen)
{
	if (par_sched_check_one_chunk(p, m, v, err, errlen) < 0)
		return -1;
	if (m < p)
		return sim_errf(err, errlen, "parallel.schedule: zb-h1 needs at least as many "
				"micro-batches per replica as stages: %u for parallel.pp %u (raise "
				"training.global_batch or lower training.micro_batch)", m, p);
	return 0;
}

static uint32_t warm_up(uint32_t p, uint32_t s, uint32_t m)
{
	return p - s - 1 < m ? p - s - 1 : m;
}

static size_t zbh1_nactions(uint32_t p, uint32_t s, uint32_t m, uint32_t v)
{
	(void)p, (void)s, (void)v;
	return 3 * (size_t)m;
}

static void zbh1_actions(uint32_t p, uint32_t s, uint32_t m, uint32_t v, struct par_action *out)
{
	(void)v;
	uint32_t warm = warm_up(p, s, m), n = 0, wnext = 0;   /* the oldest W not run */
	for (uint32_t i = 0; i < warm; i++)
		out[n++] = (struct par_action){ .kind = PAR_ACT_FORWARD, .mb = i };
	for (uint32_t i = 0; i + warm < m; i++) {
		out[n++] = (struct par_action){ .kind = PAR_ACT_FORWARD, .mb = warm + i };
		out[n++] = (struct par_action){ .kind = PAR_ACT_BACKWARD_INPUT, .mb = i };
		if (i >= s)   /* s weight passes deferred */
			out[n++] = (struct par_action){ .kind = PAR_ACT_BACKWARD_WEIGHT,
							.mb = wnext++ };
	}
	for (uint32_t i = m - warm; i < m; i++) {
		out[n++] = (struct par_action){ .kind = PAR_ACT_BACKWARD_INPUT, .mb = i };
		out[n++] = (struct par_action){ .kind = PAR_ACT_BACKWARD_WEIGHT, .mb = wnext++ };
	}
	while (wnext < m)
		out[n++] = (struct par_action){ .kind = PAR_ACT_BACKWARD_WEIGHT, .mb = wnext++ };
}

static double zbh1_bubble_s(uint32_t p, uint32_t m, uint32_t v, const struct par_stage_cost *c)
{
	(void)m, (void)v;
	return (double)(p - 1) * (c->fwd_s + c->bwd_s - c->wgt_s - fmin(c->fwd_s, c->wgt_s));
}

static double zbh1_pipeline_s(uint32_t p, uint32_t m, uint32_t v,
			      const struct par_stage_cost *c)
{
	return m * (c->fwd_s + c->bwd_s) + zbh1_bubble_s(p, m, v, c);
}

/* The warm-up's forwards, the steady state's one and the s deferred W. */
static double zbh1_in_flight(uint32_t p, uint32_t s, uint32_t m, uint32_t v)
{
	(void)s, (void)v;
	return p < m ? p : m;
}
