/*
 * schedule.c - the pipeline schedules (SPEC C22, C23).
 *
 *   gpipe        every forward, then every backward: each stage holds all m
 *                micro-batches' activations.
 *   1f1b         stage s runs min(p - s - 1, m) forwards, then alternates one
 *                forward and one backward, then drains: at most p - s
 *                micro-batches in flight on stage s. Same bubble as GPipe:
 *                (p-1)/(m+p-1) of the pipeline phase.
 *   interleaved  Megatron's interleaved 1F1B: each stage holds v model chunks
 *                (virtual stage c*p + s); micro-batches go through the chunks
 *                in groups of p. Warm-up of 2(p - s - 1) + (v - 1)p forwards;
 *                bubble (p-1)/(vm+p-1). Megatron requires m to be a multiple
 *                of p.
 *
 * To add a schedule: write its check and actions here, add an entry to the
 * table and to the parallel.schedule key (scenarios/keys.c), and a case to
 * tests/conformance/test_pipeline_spec.c.
 */
#include "parallel/schedule.h"

#include <stdio.h>

#include "sim/util.h"

static int one_chunk(uint32_t p, uint32_t m, uint32_t v, char *err, size_t errlen)
{
	(void)p, (void)m;
	if (v != 1)
		return sim_errf(err, errlen, "parallel.vpp: %u chunks need parallel.schedule: "
				"interleaved", v);
	return 0;
}

static void gpipe_actions(uint32_t p, uint32_t s, uint32_t m, uint32_t v, struct par_action *out)
{
	(void)p, (void)s, (void)v;
	for (uint32_t i = 0; i < m; i++) {
		out[i] = (struct par_action){ .backward = 0, .mb = i };
		out[m + i] = (struct par_action){ .backward = 1, .mb = i };
	}
}

static void f1b1_actions(uint32_t p, uint32_t s, uint32_t m, uint32_t v, struct par_action *out)
{
	(void)v;
	uint32_t warm = p - s - 1 < m ? p - s - 1 : m, n = 0;
	for (uint32_t i = 0; i < warm; i++)
		out[n++] = (struct par_action){ .backward = 0, .mb = i };
	for (uint32_t i = 0; i + warm < m; i++) {
		out[n++] = (struct par_action){ .backward = 0, .mb = warm + i };
		out[n++] = (struct par_action){ .backward = 1, .mb = i };
	}
	for (uint32_t i = m - warm; i < m; i++)
		out[n++] = (struct par_action){ .backward = 1, .mb = i };
}

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

/* The k-th forward (or backward) pass of the interleaved order. */
static struct par_action interleaved_at(uint32_t p, uint32_t v, uint32_t k, int backward)
{
	uint32_t group = k / (p * v), chunk = (k / p) % v;
	return (struct par_action){
		.backward = (uint8_t)backward, .mb = group * p + k % p,
		.chunk = backward ? v - 1 - chunk : chunk,
	};
}

static void interleaved_actions(uint32_t p, uint32_t s, uint32_t m, uint32_t v,
				struct par_action *out)
{
	uint32_t total = m * v, n = 0;
	uint32_t warm = m == p ? total : (p - s - 1) * 2 + (v - 1) * p;
	if (warm > total)
		warm = total;
	for (uint32_t k = 0; k < warm; k++)
		out[n++] = interleaved_at(p, v, k, 0);
	for (uint32_t i = 0; i + warm < total; i++) {
		out[n++] = interleaved_at(p, v, warm + i, 0);
		out[n++] = interleaved_at(p, v, i, 1);
	}
	for (uint32_t k = total - warm; k < total; k++)
		out[n++] = interleaved_at(p, v, k, 1);
}

static const struct par_schedule_ops schedules[] = {
	[PAR_SCHED_1F1B] = { .name = "1f1b", .check = one_chunk, .actions = f1b1_actions },
	[PAR_SCHED_GPIPE] = { .name = "gpipe", .check = one_chunk, .actions = gpipe_actions },
	[PAR_SCHED_INTERLEAVED] = { .name = "interleaved", .check = interleaved_check,
				    .actions = interleaved_actions },
};

const struct par_schedule_ops *par_schedule(enum par_schedule s)
{
	BUG_ON((unsigned)s >= ARRAY_SIZE(schedules));
	return &schedules[s];
}
