/*
 * test_heap.c - unit tests for the event heap (sim/heap.c): pop order by
 * time, first-in first-out among equal times, interleaved pushes and pops
 * against a reference (a linear scan for the least key), the empty heap and
 * growth past the first allocation of a bucket.
 *
 * Events are tagged by their index in a fixed array, so the order they pop in
 * can be compared with the order they were pushed in. Pseudo-random inputs
 * come from a fixed-seed LCG: every run sees the same sequence.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/heap-int.h"
#include "tests/checkmain.h"

/* ---- helpers ------------------------------------------------------------ */

/* Numerical Recipes' 64-bit LCG; the high bits are the usable ones. */
struct lcg {
	uint64_t x;
};

static uint32_t lcg_next(struct lcg *g)
{
	g->x = g->x * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(g->x >> 33);
}

enum { NEV = 4096 };

/* Events whose index in this array identifies them. */
static struct sim_event evs[NEV];

static uint32_t ev_index(const struct sim_event *ev)
{
	ck_assert_msg(ev >= evs && ev < evs + NEV, "popped an event %p not from the test array",
		      (const void *)ev);
	return (uint32_t)(ev - evs);
}

/* ---- tests ---------------------------------------------------------------- */

START_TEST(test_empty_pop)
{
	struct sim_heap h;
	struct sim_heap_entry e = { .t = 123, .seq = 456, .ev = NULL };
	sim_heap_init(&h);
	ck_assert_uint_eq(sim_heap_size(&h), 0);
	ck_assert_int_eq(sim_heap_pop(&h, &e), 0);
	/* One in, one out, then empty again. */
	sim_heap_push(&h, 7, &evs[0]);
	ck_assert_uint_eq(sim_heap_size(&h), 1);
	ck_assert_int_eq(sim_heap_pop(&h, &e), 1);
	ck_assert_msg(e.t == 7 && e.ev == &evs[0], "popped t=%lld ev=%p, expected t=7 ev=%p",
		      (long long)e.t, (void *)e.ev, (void *)&evs[0]);
	ck_assert_int_eq(sim_heap_pop(&h, &e), 0);
	ck_assert_uint_eq(sim_heap_size(&h), 0);
	sim_heap_clear(&h);
	ck_assert_int_eq(sim_heap_pop(&h, &e), 0);
	sim_heap_clear(&h);  /* clearing twice is harmless */
}
END_TEST

START_TEST(test_pop_order_by_time)
{
	static const sim_ps times[] = { 50, 10, 40, 30, 20, 0, 60, 5, 45, 35 };
	static const sim_ps sorted[] = { 0, 5, 10, 20, 30, 35, 40, 45, 50, 60 };
	struct sim_heap h;
	sim_heap_init(&h);
	for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
		sim_heap_push(&h, times[i], &evs[i]);
	for (size_t i = 0; i < sizeof sorted / sizeof sorted[0]; i++) {
		struct sim_heap_entry e;
		ck_assert_int_eq(sim_heap_pop(&h, &e), 1);
		ck_assert_msg(e.t == sorted[i], "pop %zu: t=%lld, expected %lld", i,
			      (long long)e.t, (long long)sorted[i]);
		uint32_t k = ev_index(e.ev);
		ck_assert_msg(times[k] == e.t, "pop %zu: event %u was pushed at t=%lld, popped "
			      "with t=%lld", i, k, (long long)times[k], (long long)e.t);
	}
	ck_assert_uint_eq(sim_heap_size(&h), 0);
	sim_heap_clear(&h);
}
END_TEST

/* 1000 events over 4 distinct times: ties pop in push order. */
START_TEST(test_ties_fifo)
{
	enum { N = 1000 };
	struct sim_heap h;
	struct lcg g = { 42 };
	sim_ps t_of[N];
	sim_heap_init(&h);
	for (uint32_t i = 0; i < N; i++) {
		t_of[i] = (sim_ps)(lcg_next(&g) % 4) * 1000;
		sim_heap_push(&h, t_of[i], &evs[i]);
	}
	ck_assert_uint_eq(sim_heap_size(&h), N);
	struct sim_heap_entry prev = { .t = -1, .seq = 0, .ev = NULL };
	uint32_t prev_idx = 0;
	for (uint32_t i = 0; i < N; i++) {
		struct sim_heap_entry e;
		ck_assert_int_eq(sim_heap_pop(&h, &e), 1);
		uint32_t k = ev_index(e.ev);
		ck_assert_msg(e.t == t_of[k], "pop %u: event %u popped with t=%lld, pushed with "
			      "t=%lld", i, k, (long long)e.t, (long long)t_of[k]);
		if (i > 0) {
			ck_assert_msg(e.t > prev.t || (e.t == prev.t && e.seq > prev.seq),
				      "pop %u: key (t=%lld, seq=%llu) after (t=%lld, seq=%llu)",
				      i, (long long)e.t, (unsigned long long)e.seq,
				      (long long)prev.t, (unsigned long long)prev.seq);
			if (e.t == prev.t)
				ck_assert_msg(k > prev_idx, "pop %u: t=%lld: event %u (pushed "
					      "%u-th) after event %u: not FIFO", i,
					      (long long)e.t, k, k, prev_idx);
		}
		prev = e;
		prev_idx = k;
	}
	struct sim_heap_entry e;
	ck_assert_int_eq(sim_heap_pop(&h, &e), 0);
	sim_heap_clear(&h);
}
END_TEST

/*
 * Interleaved pushes and pops against a reference: an array of live
 * (t, push index) pairs whose least element is found by a linear scan, ties
 * broken by push index. Times never go below the last popped one, as in the
 * engine (events are scheduled at t >= now).
 */
START_TEST(test_interleaved_reference)
{
	enum { OPS = 20000 };
	struct ref {
		sim_ps t;
		uint32_t idx;    /* push order: the tie-break */
		uint32_t ev;     /* index of its event in evs */
	};
	static struct ref live[NEV];
	static sim_ps t_of[NEV];
	static uint8_t in_use[NEV];
	uint32_t nlive = 0, pushed = 0, popped = 0, ev_next = 0;
	sim_ps now = 0;
	struct sim_heap h;
	struct lcg g = { 20240601 };
	sim_heap_init(&h);
	/* Event structs are reused round-robin, skipping those still in the
	 * heap (fewer than NEV / 2 ever are); live[].idx is the event index. */
	for (uint32_t op = 0; op < OPS; op++) {
		uint32_t r = lcg_next(&g);
		int do_push = nlive == 0 || (nlive < NEV / 2 && r % 100 < 55);
		if (do_push) {
			sim_ps t = now + (sim_ps)(lcg_next(&g) % 50);
			while (in_use[ev_next])
				ev_next = (ev_next + 1) % NEV;
			uint32_t idx = ev_next;
			ev_next = (ev_next + 1) % NEV;
			in_use[idx] = 1;
			t_of[idx] = t;
			sim_heap_push(&h, t, &evs[idx]);
			live[nlive++] = (struct ref){ t, pushed, idx };
			pushed++;
			continue;
		}
		uint32_t best = 0;
		for (uint32_t i = 1; i < nlive; i++)
			if (live[i].t < live[best].t ||
			    (live[i].t == live[best].t && live[i].idx < live[best].idx))
				best = i;
		struct sim_heap_entry e;
		ck_assert_int_eq(sim_heap_pop(&h, &e), 1);
		uint32_t k = ev_index(e.ev);
		ck_assert_msg(e.t == live[best].t && k == live[best].ev,
			      "op %u (pop %u): heap gave (t=%lld, event %u), reference "
			      "(t=%lld, event %u)", op, popped, (long long)e.t, k,
			      (long long)live[best].t, live[best].ev);
		in_use[k] = 0;
		ck_assert_msg(t_of[k] == e.t, "event %u: pushed t=%lld, popped t=%lld", k,
			      (long long)t_of[k], (long long)e.t);
		now = e.t;
		live[best] = live[--nlive];
		popped++;
		ck_assert_uint_eq(sim_heap_size(&h), nlive);
	}
	/* Drain the rest in reference order. */
	while (nlive) {
		uint32_t best = 0;
		for (uint32_t i = 1; i < nlive; i++)
			if (live[i].t < live[best].t ||
			    (live[i].t == live[best].t && live[i].idx < live[best].idx))
				best = i;
		struct sim_heap_entry e;
		ck_assert_int_eq(sim_heap_pop(&h, &e), 1);
		ck_assert_msg(e.t == live[best].t && ev_index(e.ev) == live[best].ev,
			      "drain: heap gave (t=%lld, event %u), reference (t=%lld, event %u)",
			      (long long)e.t, ev_index(e.ev), (long long)live[best].t,
			      live[best].ev);
		live[best] = live[--nlive];
	}
	struct sim_heap_entry e;
	ck_assert_int_eq(sim_heap_pop(&h, &e), 0);
	ck_assert_msg(pushed > 1000 && popped > 1000, "pushed %u, popped %u: the mix is too thin",
		      pushed, popped);
	sim_heap_clear(&h);
}
END_TEST

/* Growth: buckets start at 64 entries and double; they never shrink. */
START_TEST(test_growth)
{
	enum { N = 3000 };
	struct sim_heap h;
	sim_heap_init(&h);
	/* Decreasing times, all pushed before any pop. */
	for (uint32_t i = 0; i < N; i++) {
		sim_heap_push(&h, (sim_ps)(N - i), &evs[i]);
		ck_assert_uint_eq(sim_heap_size(&h), i + 1);
	}
	for (uint32_t i = 0; i < N; i++) {
		struct sim_heap_entry e;
		ck_assert_int_eq(sim_heap_pop(&h, &e), 1);
		ck_assert_msg(e.t == (sim_ps)(i + 1) && ev_index(e.ev) == N - 1 - i,
			      "pop %u: (t=%lld, event %u), expected (t=%u, event %u)", i,
			      (long long)e.t, ev_index(e.ev), i + 1, N - 1 - i);
	}
	/* Refill after the pops (times above the last popped) and drain again. */
	for (uint32_t i = 0; i < N; i++)
		sim_heap_push(&h, (sim_ps)(2 * N - i), &evs[i]);
	for (unsigned k = 0; k < SIM_HEAP_BUCKETS; k++)
		ck_assert_msg(h.b[k].cap >= h.b[k].n && (h.b[k].cap == 0 || h.b[k].cap % 64 == 0),
			      "bucket %u: cap %u, %u entries", k, h.b[k].cap, h.b[k].n);
	ck_assert_uint_eq(sim_heap_size(&h), N);
	for (uint32_t i = 0; i < N; i++) {
		struct sim_heap_entry e;
		ck_assert_int_eq(sim_heap_pop(&h, &e), 1);
		ck_assert_msg(e.t == (sim_ps)(N + 1 + i), "refill pop %u: t=%lld, expected %u", i,
			      (long long)e.t, N + 1 + i);
	}
	sim_heap_clear(&h);
	for (unsigned k = 0; k < SIM_HEAP_BUCKETS; k++)
		ck_assert_msg(h.b[k].a == NULL && h.b[k].n == 0 && h.b[k].cap == 0,
			      "clear left bucket %u with a=%p n=%u cap=%u", k, (void *)h.b[k].a,
			      h.b[k].n, h.b[k].cap);
}
END_TEST

/* Sequence numbers keep counting across pops: a later push of an equal time
 * still pops after an earlier one. */
START_TEST(test_seq_monotonic)
{
	struct sim_heap h;
	sim_heap_init(&h);
	sim_heap_push(&h, 5, &evs[0]);
	sim_heap_push(&h, 5, &evs[1]);
	struct sim_heap_entry a, b, c;
	ck_assert_int_eq(sim_heap_pop(&h, &a), 1);
	sim_heap_push(&h, 5, &evs[2]);
	ck_assert_int_eq(sim_heap_pop(&h, &b), 1);
	ck_assert_int_eq(sim_heap_pop(&h, &c), 1);
	ck_assert_msg(ev_index(a.ev) == 0 && ev_index(b.ev) == 1 && ev_index(c.ev) == 2,
		      "popped events %u %u %u, expected 0 1 2", ev_index(a.ev), ev_index(b.ev),
		      ev_index(c.ev));
	ck_assert_msg(a.seq < b.seq && b.seq < c.seq, "seqs %llu %llu %llu not increasing",
		      (unsigned long long)a.seq, (unsigned long long)b.seq,
		      (unsigned long long)c.seq);
	sim_heap_clear(&h);
}
END_TEST

static Suite *heap_suite(void)
{
	Suite *s = suite_create("heap");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_empty_pop);
	tcase_add_test(tc, test_pop_order_by_time);
	tcase_add_test(tc, test_ties_fifo);
	tcase_add_test(tc, test_interleaved_reference);
	tcase_add_test(tc, test_growth);
	tcase_add_test(tc, test_seq_monotonic);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(heap_suite());
}
