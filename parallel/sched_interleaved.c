/*
 * sched_interleaved.c - Megatron's interleaved 1F1B (Narayanan et al.
 * 2021): each stage holds v model chunks (virtual stage c p + s);
 * micro-batches go through the chunks in groups of p. Stage s warms up with
 * 2(p - s - 1) + (v - 1)p chunk forwards (all of them when m = p), then
 * alternates one chunk forward and one chunk backward. The bubble is
 * (p-1)/(vm+p-1) of the pipeline phase (SPEC C22), (p - 1)(f + b) / v for
 * stages of forward f and backward b per micro-batch; stage s holds the
 * warm-up's chunk passes and one more, p + (p-1)/v micro-batches on the
 * first stage. Megatron requires m to be a multiple of p.
 */
#include "parallel/schedule.h"

#include "sim/util.h"

static int interleaved_check(uint32_t p, uint32_t m, uint32_t v, char *err, size_t errlen);
static size_t interleaved_nactions(uint32_t p, uint32_t s, uint32_t m, uint32_t v);
static void interleaved_actions(uint32_t p, uint32_t s, uint32_t m, uint32_t v,
				struct par_action *out);
static double interleaved_bubble_s(uint32_t p, uint32_t m, uint32_t v,
				   const struct par_stage_cost *c);
static double interleaved_pipeline_s(uint32_t p, uint32_t m, uint32_t v,
				     const struct par_stage_cost *c);
static double interleaved_in_flight(uint32_t p, uint32_t s, uint32_t m, uint32_t v);

const struct par_schedule_ops par_sched_interleaved = {
	.name = "interleaved",
	.help = "Megatron's interleaved 1F1B over parallel.vpp model chunks per stage: the "
		"bubble / vpp; micro-batches a multiple of pp",
	.check = interleaved_check,
	.nactions = interleaved_nactions,
	.actions = interleaved_actions,
	.bubble_s = interleaved_bubble_s,
	.pipeline_s = interleaved_pipeline_s,
	.in_flight = interleaved_in_flight,
};

static int interleaved_check(uint32_t p, uint32_t m, uint32_t v, char *err, size_t errlen)
{
	if (p < 2)
		return sim_errf(err, errlen, "parallel.schedule: interleaved needs parallel.pp >= 2");
	if (m % p)
		return sim_errf(err, errlen, "parallel.schedule: interleaved needs the micro-batches "
				"per replica (%u) to be a multiple of parallel.pp (%u), as Megatron "
				"does", m, p);
	(void)v;
	return 0;
}

/* Chunk forwards before stage s's first backward. */
static uint32_t warm_up(uint32_t p, uint32_t s, uint32_t m, uint32_t v)
{
	uint32_t total = m * v, warm = m == p ? total : (p - s - 1) * 2 + (v - 1) * p;
	return warm > total ? total : warm;
}

static size_t interleaved_nactions(uint32_t p, uint32_t s, uint32_t m, uint32_t v)
{
	(void)p, (void)s;
	return 2 * (size_t)m * v;
}

/* The k-th forward (or backward) pass of the interleaved order. */
static struct par_action interleaved_at(uint32_t p, uint32_t v, uint32_t k, int backward)
{
	uint32_t group = k / (p * v), chunk = (k / p) % v;
	return (struct par_action){
		.kind = backward ? PAR_ACT_BACKWARD : PAR_ACT_FORWARD, .mb = group * p + k % p,
		.chunk = backward ? v - 1 - chunk : chunk,
	};
}

static void interleaved_actions(uint32_t p, uint32_t s, uint32_t m, uint32_t v,
				struct par_action *out)
{
	uint32_t total = m * v, n = 0, warm = warm_up(p, s, m, v);
	for (uint32_t k = 0; k < warm; k++)
		out[n++] = interleaved_at(p, v, k, 0);
	for (uint32_t i = 0; i + warm < total; i++) {
		out[n++] = interleaved_at(p, v, warm + i, 0);
		out[n++] = interleaved_at(p, v, i, 1);
	}
	for (uint32_t k = total - warm; k < total; k++)
		out[n++] = interleaved_at(p, v, k, 1);
}

static double interleaved_bubble_s(uint32_t p, uint32_t m, uint32_t v,
				   const struct par_stage_cost *c)
{
	(void)m;
	return (double)(p - 1) / v * (c->fwd_s + c->bwd_s);
}

static double interleaved_pipeline_s(uint32_t p, uint32_t m, uint32_t v,
				     const struct par_stage_cost *c)
{
	return (m + (double)(p - 1) / v) * (c->fwd_s + c->bwd_s);
}

/* The warm-up's chunk forwards and the steady state's one, v to a
 * micro-batch. */
static double interleaved_in_flight(uint32_t p, uint32_t s, uint32_t m, uint32_t v)
{
	uint32_t total = m * v, held = warm_up(p, s, m, v) + 1;
	return (double)(held < total ? held : total) / v;
}
