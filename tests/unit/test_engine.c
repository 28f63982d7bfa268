/*
 * test_engine.c - unit tests for the event engine (sim/sim.c, sim/coll.c)
 * through its public interface, sim/sim.h, on a topology defined here.
 *
 * The test topology is the smallest the engine accepts: every rank is its
 * own node, with one rail, and routes are one of
 *   pairs  every ordered pair of ranks has its own link, created on first use
 *          (so no two flows between different pairs ever share a link);
 *   star   every rank has one transmit and one receive link, so a route
 *          src -> dst is [tx(src), rx(dst)] and flows into one rank share;
 *   bus    one link that every route crosses.
 * Every route has latency alpha and bandwidth W. The expected times below are
 * the α-β closed forms of SPEC.md; transfers move in chunks whose wire times
 * are rounded to picoseconds, so comparisons allow one picosecond per chunk.
 *
 * Nothing here reads the wall clock: every figure is simulated time.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/coll.h"
#include "sim/sim.h"
#include "tests/testlib.h"
#include "tests/checkmain.h"

/* ---- the test topology ----------------------------------------------------- */

enum tt_kind { TT_PAIRS, TT_STAR, TT_BUS };

enum { TT_TAG_PAIR = 1, TT_TAG_TX, TT_TAG_RX, TT_TAG_BUS };
#define TT_TAG(kind, i) (((uint32_t)(kind) << 28) | (uint32_t)(i))
#define TT_NONE UINT32_MAX

struct ttopo {
	enum tt_kind kind;
	uint32_t nranks;
	sim_ps alpha_ps;
	double bw_Bps;
	uint32_t *link;     /* pairs: [src * n + dst]; star: [2 * rank + rx] */
	uint32_t created;   /* links made so far                             */
	uint32_t per_node;  /* ranks a node (0: 1)                           */
};

static void ttopo_init(struct ttopo *t, enum tt_kind kind, uint32_t nranks,
		       double alpha_s, double bw_Bps)
{
	size_t n = kind == TT_PAIRS ? (size_t)nranks * nranks
		 : kind == TT_STAR ? 2 * (size_t)nranks : 1;
	*t = (struct ttopo){
		.kind = kind, .nranks = nranks, .alpha_ps = sim_ps_from_s(alpha_s),
		.bw_Bps = bw_Bps, .link = malloc(n * sizeof(uint32_t)),
	};
	ck_assert_ptr_nonnull(t->link);
	for (size_t i = 0; i < n; i++)
		t->link[i] = TT_NONE;
}

static void ttopo_clear(struct ttopo *t)
{
	free(t->link);
	t->link = NULL;
}

/* The link in slot i, made now if this is its first use. */
static uint32_t tt_link(struct ttopo *t, struct sim *sim, size_t i, uint32_t tag)
{
	if (t->link[i] == TT_NONE) {
		t->link[i] = sim_link_add(sim, t->bw_Bps, tag);
		t->created++;
	}
	return t->link[i];
}

static void tt_route(void *topo, struct sim *sim, uint32_t src, uint32_t dst,
		     struct sim_route *out)
{
	struct ttopo *t = topo;
	ck_assert_msg(src < t->nranks && dst < t->nranks && src != dst,
		      "route %u -> %u on %u ranks", src, dst, t->nranks);
	*out = (struct sim_route){ .alpha_ps = t->alpha_ps, .bw_Bps = t->bw_Bps };
	if (t->kind == TT_PAIRS) {
		size_t i = (size_t)src * t->nranks + dst;
		out->link[out->n++] = tt_link(t, sim, i, TT_TAG(TT_TAG_PAIR, i));
	} else if (t->kind == TT_BUS) {
		out->link[out->n++] = tt_link(t, sim, 0, TT_TAG(TT_TAG_BUS, 0));
	} else {
		out->link[out->n++] = tt_link(t, sim, 2 * (size_t)src, TT_TAG(TT_TAG_TX, src));
		out->link[out->n++] = tt_link(t, sim, 2 * (size_t)dst + 1, TT_TAG(TT_TAG_RX, dst));
	}
}

static uint32_t tt_node_of(void *topo, uint32_t rank)
{
	const struct ttopo *t = topo;
	return t->per_node > 1 ? rank / t->per_node : rank;
}

static uint32_t tt_rails(void *topo)
{
	(void)topo;
	return 1;
}

static void tt_link_name(void *topo, uint32_t tag, char *buf, size_t len)
{
	const struct ttopo *t = topo;
	uint32_t i = tag & 0x0fffffffu;
	switch (tag >> 28) {
	case TT_TAG_PAIR:
		snprintf(buf, len, "r%u->r%u", i / t->nranks, i % t->nranks);
		break;
	case TT_TAG_TX:
		snprintf(buf, len, "r%u.tx", i);
		break;
	case TT_TAG_BUS:
		snprintf(buf, len, "bus");
		break;
	default:
		snprintf(buf, len, "r%u.rx", i);
		break;
	}
}

static const struct sim_topo_ops tt_ops = {
	.route = tt_route,
	.node_of = tt_node_of,
	.rails = tt_rails,
	.link_name = tt_link_name,
};

/* ---- a recorder ---------------------------------------------------------------- */

enum { REC_MAX = 1024 };

struct rec_entry {
	uint32_t rank;
	const struct sim_op *op;
	sim_ps start, end;
};

struct rec {
	struct rec_entry e[REC_MAX];
	uint32_t n;
};

static void rec_op_done(void *ctx, uint32_t rank, const struct sim_op *op,
			sim_ps start, sim_ps end)
{
	struct rec *r = ctx;
	ck_assert_msg(r->n < REC_MAX, "more than %d ops recorded", REC_MAX);
	r->e[r->n++] = (struct rec_entry){ rank, op, start, end };
}

static const struct sim_recorder_ops rec_ops = { .op_done = rec_op_done };

/* The record of the op of that name on that rank (exactly one). */
static const struct rec_entry *rec_find(const struct rec *r, uint32_t rank, const char *name)
{
	const struct rec_entry *found = NULL;
	for (uint32_t i = 0; i < r->n; i++)
		if (r->e[i].rank == rank && strcmp(r->e[i].op->name, name) == 0) {
			ck_assert_msg(!found, "op '%s' of rank %u recorded twice", name, rank);
			found = &r->e[i];
		}
	ck_assert_msg(found != NULL, "op '%s' of rank %u not recorded (%u records)", name,
		      rank, r->n);
	return found;
}

/* ---- a sim on the test topology ---------------------------------------------------- */

struct tsim {
	struct ttopo topo;
	struct sim *sim;
	uint32_t world;
	struct rec *rec;
};

static void tsim_init_f(struct tsim *ts, enum tt_kind kind, uint32_t nranks, double alpha_s,
			double bw_Bps, double chunk_bytes, enum sim_fidelity f)
{
	struct sim_config cfg;
	sim_config_init(&cfg);
	cfg.fidelity = f;
	if (chunk_bytes > 0)
		cfg.chunk_bytes = chunk_bytes;
	cfg.algos = coll_algos;
	ttopo_init(&ts->topo, kind, nranks, alpha_s, bw_Bps);
	ts->sim = sim_new(&cfg, nranks, &tt_ops, &ts->topo);
	ck_assert_ptr_nonnull(ts->sim);
	ck_assert_uint_eq(sim_nranks(ts->sim), nranks);
	uint32_t *ranks = malloc(nranks * sizeof(uint32_t));
	ck_assert_ptr_nonnull(ranks);
	for (uint32_t r = 0; r < nranks; r++)
		ranks[r] = r;
	ts->world = sim_group_add(ts->sim, ranks, nranks);
	free(ranks);
	ts->rec = calloc(1, sizeof(*ts->rec));
	ck_assert_ptr_nonnull(ts->rec);
	sim_set_recorder(ts->sim, &rec_ops, ts->rec);
}

static void tsim_init(struct tsim *ts, enum tt_kind kind, uint32_t nranks, double alpha_s,
		      double bw_Bps, double chunk_bytes)
{
	tsim_init_f(ts, kind, nranks, alpha_s, bw_Bps, chunk_bytes, SIM_FIDELITY_FLOW);
}

static void tsim_clear(struct tsim *ts)
{
	sim_free(ts->sim);
	ttopo_clear(&ts->topo);
	free(ts->rec);
}

/* Start rank with prog, its group slot 0 being the world. */
static void tsim_start(struct tsim *ts, uint32_t rank, const struct sim_program *prog)
{
	sim_rank_start(ts->sim, rank, prog, &ts->world, 1);
}

static void tsim_run_ok(struct tsim *ts)
{
	int rc = sim_run(ts->sim);
	ck_assert_msg(rc == 0, "sim_run = %d: %s", rc,
		      sim_error(ts->sim) ? sim_error(ts->sim) : "(no error text)");
}

static const sim_ps US = 1000000;  /* picoseconds in a microsecond */

/* got within tol picoseconds of want. */
#define ASSERT_PS_NEAR(got, want, tol, what) do {				\
	sim_ps g_ = (got), w_ = (want), t_ = (tol);				\
	ck_assert_msg(g_ >= w_ - t_ && g_ <= w_ + t_,				\
		      "%s: %lld ps, expected %lld ps (+-%lld)", (what),		\
		      (long long)g_, (long long)w_, (long long)t_);		\
} while (0)

#define ASSERT_RECORD(r, rank, name, want_start, want_end) do {		\
	const struct rec_entry *e_ = rec_find((r), (rank), (name));		\
	ck_assert_msg(e_->start == (want_start) && e_->end == (want_end),	\
		      "rank %u op '%s': [%lld, %lld] ps, expected [%lld, %lld]",	\
		      (unsigned)(rank), (name), (long long)e_->start,		\
		      (long long)e_->end, (long long)(want_start),		\
		      (long long)(want_end));					\
} while (0)

/* Chunks a message of n bytes moves in. */
static sim_ps nchunks(double n, double chunk)
{
	sim_ps c = (sim_ps)(n / chunk);
	return (double)c * chunk < n ? c + 1 : c;
}

/* ---- compute and streams --------------------------------------------------------- */

START_TEST(test_compute_back_to_back)
{
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 1, 10e-6, 50e9, 0);
	struct sim_program *p = sim_program_new();
	sim_program_compute(p, 0, "a", 1 * US, 1e9, 0);
	sim_program_compute(p, 0, "b", 2 * US, 2e9, 0);
	sim_program_compute(p, 0, "c", 3 * US, 3e9, 0);
	tsim_start(&ts, 0, p);
	tsim_run_ok(&ts);
	ASSERT_RECORD(ts.rec, 0, "a", 0, 1 * US);
	ASSERT_RECORD(ts.rec, 0, "b", 1 * US, 3 * US);
	ASSERT_RECORD(ts.rec, 0, "c", 3 * US, 6 * US);
	ck_assert_int_eq(sim_rank_end(ts.sim, 0), 6 * US);
	ck_assert_int_eq(sim_now(ts.sim), 6 * US);
	ck_assert_uint_eq(ts.rec->n, 3);
	sim_program_free(p);
	tsim_clear(&ts);
}
END_TEST

START_TEST(test_deps_across_streams)
{
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 1, 10e-6, 50e9, 0);
	struct sim_program *p = sim_program_new();
	uint32_t a = sim_program_compute(p, 0, "a", 5 * US, 0, 0);
	uint32_t b = sim_program_compute(p, 1, "b", 2 * US, 0, 0);
	sim_program_dep(p, a);                 /* b waits for a */
	sim_program_compute(p, 1, "c", 1 * US, 0, 0);
	sim_program_compute(p, 2, "d", 1 * US, 0, 0);  /* free to start at once */
	sim_program_compute(p, 3, "e", 1 * US, 0, 0);
	sim_program_dep(p, a);
	sim_program_dep(p, b);                 /* e waits for a and b */
	tsim_start(&ts, 0, p);
	tsim_run_ok(&ts);
	ASSERT_RECORD(ts.rec, 0, "a", 0, 5 * US);
	ASSERT_RECORD(ts.rec, 0, "b", 5 * US, 7 * US);
	ASSERT_RECORD(ts.rec, 0, "c", 7 * US, 8 * US);
	ASSERT_RECORD(ts.rec, 0, "d", 0, 1 * US);
	ASSERT_RECORD(ts.rec, 0, "e", 7 * US, 8 * US);
	ck_assert_int_eq(sim_rank_end(ts.sim, 0), 8 * US);
	sim_program_free(p);
	tsim_clear(&ts);
}
END_TEST

START_TEST(test_streams_overlap)
{
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 1, 10e-6, 50e9, 0);
	struct sim_program *p = sim_program_new();
	sim_program_compute(p, 0, "long", 5 * US, 0, 0);
	sim_program_compute(p, 1, "short", 3 * US, 0, 0);
	tsim_start(&ts, 0, p);
	tsim_run_ok(&ts);
	ASSERT_RECORD(ts.rec, 0, "long", 0, 5 * US);
	ASSERT_RECORD(ts.rec, 0, "short", 0, 3 * US);
	ck_assert_int_eq(sim_rank_end(ts.sim, 0), 5 * US);
	sim_program_free(p);
	tsim_clear(&ts);
}
END_TEST

START_TEST(test_zero_compute)
{
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 2, 10e-6, 50e9, 0);
	struct sim_program *p = sim_program_new(), *q = sim_program_new();
	sim_program_compute(p, 0, "z0", 0, 0, 0);
	sim_program_compute(p, 0, "z1", 0, 0, 0);
	sim_program_compute(p, 0, "one", 1 * US, 0, 0);
	sim_program_compute(p, 0, "z2", 0, 0, 0);
	sim_program_compute(q, 0, "only", 0, 0, 0);   /* a rank of one empty op */
	tsim_start(&ts, 0, p);
	tsim_start(&ts, 1, q);
	tsim_run_ok(&ts);
	ASSERT_RECORD(ts.rec, 0, "z0", 0, 0);
	ASSERT_RECORD(ts.rec, 0, "z1", 0, 0);
	ASSERT_RECORD(ts.rec, 0, "one", 0, 1 * US);
	ASSERT_RECORD(ts.rec, 0, "z2", 1 * US, 1 * US);
	ASSERT_RECORD(ts.rec, 1, "only", 0, 0);
	ck_assert_int_eq(sim_rank_end(ts.sim, 0), 1 * US);
	ck_assert_int_eq(sim_rank_end(ts.sim, 1), 0);
	sim_program_free(p);
	sim_program_free(q);
	tsim_clear(&ts);
}
END_TEST

/*
 * Compute runs (sim.c): back-to-back compute ops nobody else waits for run as
 * one event, and still record every op with its own times. A run ends at an
 * op another stream waits for (here "b", so "x" on stream 1 starts exactly
 * when b ends), at a memory change ("c" allocates) and at a mark ("d"):
 * a b | c | d | e f is four events. The memory peak and the mark see the
 * times of their own ops.
 */
START_TEST(test_compute_runs)
{
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 1, 10e-6, 50e9, 0);
	struct sim_program *p = sim_program_new();
	sim_program_compute(p, 0, "a", 1 * US, 0, 0);
	uint32_t b = sim_program_compute(p, 0, "b", 2 * US, 0, 0);
	sim_program_compute(p, 0, "c", 3 * US, 0, 0);
	sim_program_mem(p, 1, 100);
	sim_program_compute(p, 0, "d", 4 * US, 0, 0);
	sim_program_flags(p, SIM_OP_MARK);
	sim_program_compute(p, 0, "e", 5 * US, 0, 0);
	sim_program_compute(p, 0, "f", 6 * US, 0, 0);
	sim_program_mem(p, 1, -100);
	sim_program_compute(p, 1, "x", 1 * US, 0, 0);
	sim_program_dep(p, b);
	tsim_start(&ts, 0, p);
	tsim_run_ok(&ts);
	ASSERT_RECORD(ts.rec, 0, "a", 0, 1 * US);
	ASSERT_RECORD(ts.rec, 0, "b", 1 * US, 3 * US);
	ASSERT_RECORD(ts.rec, 0, "x", 3 * US, 4 * US);
	ASSERT_RECORD(ts.rec, 0, "c", 3 * US, 6 * US);
	ASSERT_RECORD(ts.rec, 0, "d", 6 * US, 10 * US);
	ASSERT_RECORD(ts.rec, 0, "e", 10 * US, 15 * US);
	ASSERT_RECORD(ts.rec, 0, "f", 15 * US, 21 * US);
	ck_assert_uint_eq(ts.rec->n, 7);
	/* Events: the runs a+b, c, d, e+f and x. */
	ck_assert_msg(sim_events(ts.sim) == 5, "%llu events, expected 5",
		      (unsigned long long)sim_events(ts.sim));
	const struct sim_rank_stats *st = sim_rank_stats(ts.sim, 0);
	ck_assert_msg(st->mark_ps == 10 * US && st->mark_compute_ps == 10 * US,
		      "mark at %lld ps with %lld ps of compute", (long long)st->mark_ps,
		      (long long)st->mark_compute_ps);
	ck_assert_msg(st->mem_peak == 100 && st->mem_now[1] == 0, "peak %g, now %g",
		      st->mem_peak, st->mem_now[1]);
	ck_assert_int_eq(st->compute_ps, 21 * US);
	sim_program_free(p);
	tsim_clear(&ts);
}
END_TEST

/* A recorder for long programs: counts the ops and checks that each starts
 * where the one before ended, and lasts 3 ps. */
struct rec_chain {
	uint32_t n;
	sim_ps last_end;
};

static void rec_chain_done(void *ctx, uint32_t rank, const struct sim_op *op, sim_ps start,
			   sim_ps end)
{
	struct rec_chain *c = ctx;
	(void)rank, (void)op;
	ck_assert_msg(start == c->last_end && end == start + 3, "op %u: %lld-%lld after %lld",
		      c->n, (long long)start, (long long)end, (long long)c->last_end);
	c->last_end = end;
	c->n++;
}

/*
 * A run stands for at most 65,535 ops (a rank keeps its length in 16 bits):
 * 70,000 kernels nobody waits for are two runs and two events; they end,
 * and are recorded, as one run would have them.
 */
START_TEST(test_compute_run_cut)
{
	static const struct sim_recorder_ops chain_ops = { .op_done = rec_chain_done };
	struct rec_chain chain = { 0 };
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 1, 10e-6, 50e9, 0);
	sim_set_recorder(ts.sim, &chain_ops, &chain);
	struct sim_program *p = sim_program_new();
	for (uint32_t i = 0; i < 70000; i++)
		sim_program_compute(p, 0, "k", 3, 0, 0);
	tsim_start(&ts, 0, p);
	tsim_run_ok(&ts);
	ck_assert_int_eq(sim_rank_end(ts.sim, 0), 3 * 70000);
	ck_assert_uint_eq(chain.n, 70000);
	ck_assert_msg(sim_events(ts.sim) == 2, "%llu events, expected 2",
		      (unsigned long long)sim_events(ts.sim));
	sim_program_free(p);
	tsim_clear(&ts);
}
END_TEST

/* ---- point-to-point ------------------------------------------------------------- */

static const double chunk_sizes[] = { 64.0 * 1024, 1024.0 * 1024, SIM_DEFAULT_CHUNK_BYTES, 1e9 };

/* 10 MB from rank 0 to rank 1: alpha + n/W whatever the chunk size. */
/* A compute scale: twice as long on rank 0, and counted per call. */
static unsigned scale_calls;

static double double_rank0(void *ctx, uint32_t rank, const struct sim_op *op)
{
	(void)ctx, (void)op;
	scale_calls++;
	return rank == 0 ? 2.0 : 1.0;
}

/* sim_set_compute_scale: every compute op is scaled when it starts, one op
 * per event (the runs of test_compute_runs are not coalesced). */
START_TEST(test_compute_scale)
{
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 2, 10e-6, 50e9, 0);
	struct sim_program *p = sim_program_new();
	sim_program_compute(p, 0, "a", 1 * US, 0, 0);
	sim_program_compute(p, 0, "b", 2 * US, 0, 0);
	sim_program_compute(p, 0, "c", 3 * US, 0, 0);
	scale_calls = 0;
	sim_set_compute_scale(ts.sim, double_rank0, NULL);
	tsim_start(&ts, 0, p);
	tsim_start(&ts, 1, p);
	tsim_run_ok(&ts);
	ASSERT_RECORD(ts.rec, 0, "a", 0, 2 * US);
	ASSERT_RECORD(ts.rec, 0, "b", 2 * US, 6 * US);
	ASSERT_RECORD(ts.rec, 0, "c", 6 * US, 12 * US);
	ASSERT_RECORD(ts.rec, 1, "c", 3 * US, 6 * US);
	ck_assert_uint_eq(scale_calls, 6);
	ck_assert_uint_eq(sim_events(ts.sim), 6);
	ck_assert_int_eq(sim_rank_end(ts.sim, 0), 12 * US);
	ck_assert_int_eq(sim_rank_stats(ts.sim, 0)->compute_ps, 12 * US);
	sim_program_free(p);
	tsim_clear(&ts);
}
END_TEST

/* sim_set_rank_done: each rank starts its program again from an event
 * its done call schedules, three times in all, on its own clock: rank 0
 * (1 us programs) does not wait for rank 1 (2 us programs). */
struct again {
	struct tsim *ts;
	struct again_rank {
		struct sim_event ev;     /* starts the rank's program again */
		struct again *a;
		uint32_t rank;
		const struct sim_program *prog;
		unsigned runs;
		sim_ps done_at[3];
	} r[2];
};

static void again_done(void *ctx, struct sim *sim, uint32_t rank)
{
	struct again_rank *r = &((struct again *)ctx)->r[rank];
	r->done_at[r->runs++] = sim_now(sim);
	if (r->runs < 3)
		sim_schedule(sim, sim_now(sim), &r->ev);
}

static void again_fire(struct sim *sim, struct sim_event *ev)
{
	struct again_rank *r = container_of(ev, struct again_rank, ev);
	(void)sim;
	tsim_start(r->a->ts, r->rank, r->prog);
}

START_TEST(test_rank_done)
{
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 2, 10e-6, 50e9, 0);
	struct sim_program *p0 = sim_program_new(), *p1 = sim_program_new();
	sim_program_compute(p0, 0, "a", 1 * US, 0, 0);
	sim_program_compute(p1, 0, "b", 2 * US, 0, 0);
	struct again a = { .ts = &ts };
	for (uint32_t i = 0; i < 2; i++)
		a.r[i] = (struct again_rank){ .ev.fire = again_fire, .a = &a, .rank = i,
					      .prog = i ? p1 : p0 };
	sim_set_rank_done(ts.sim, again_done, &a);
	tsim_start(&ts, 0, p0);
	tsim_start(&ts, 1, p1);
	tsim_run_ok(&ts);
	for (unsigned k = 0; k < 3; k++) {
		ck_assert_msg(a.r[0].done_at[k] == (k + 1) * US &&
			      a.r[1].done_at[k] == 2 * (k + 1) * US,
			      "run %u ended at %lld and %lld ps", k, (long long)a.r[0].done_at[k],
			      (long long)a.r[1].done_at[k]);
	}
	ck_assert_uint_eq(a.r[0].runs, 3);
	ck_assert_uint_eq(a.r[1].runs, 3);
	ck_assert_int_eq(sim_rank_end(ts.sim, 1), 6 * US);
	sim_program_free(p0);
	sim_program_free(p1);
	tsim_clear(&ts);
}
END_TEST

/* sim_set_rank_speed: rank 0 at half speed; its three ops stay one run (one
 * event), recorded back to back at double their times. */
START_TEST(test_rank_speed)
{
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 2, 10e-6, 50e9, 0);
	struct sim_program *p = sim_program_new();
	sim_program_compute(p, 0, "a", 1 * US, 0, 0);
	sim_program_compute(p, 0, "b", 2 * US, 0, 0);
	sim_program_compute(p, 0, "c", 3 * US, 0, 0);
	const double speed[2] = { 2.0, 1.0 };
	sim_set_rank_speed(ts.sim, speed);
	tsim_start(&ts, 0, p);
	tsim_start(&ts, 1, p);
	tsim_run_ok(&ts);
	ASSERT_RECORD(ts.rec, 0, "a", 0, 2 * US);
	ASSERT_RECORD(ts.rec, 0, "b", 2 * US, 6 * US);
	ASSERT_RECORD(ts.rec, 0, "c", 6 * US, 12 * US);
	ASSERT_RECORD(ts.rec, 1, "c", 3 * US, 6 * US);
	ck_assert_uint_eq(sim_events(ts.sim), 2);
	ck_assert_int_eq(sim_rank_end(ts.sim, 0), 12 * US);
	ck_assert_int_eq(sim_rank_stats(ts.sim, 0)->compute_ps, 12 * US);
	/* With a scale too, each op is scaled by both, one event each. */
	tsim_clear(&ts);
	tsim_init(&ts, TT_PAIRS, 2, 10e-6, 50e9, 0);
	sim_set_rank_speed(ts.sim, speed);
	sim_set_compute_scale(ts.sim, double_rank0, NULL);
	tsim_start(&ts, 0, p);
	tsim_start(&ts, 1, p);
	tsim_run_ok(&ts);
	ASSERT_RECORD(ts.rec, 0, "c", 12 * US, 24 * US);
	ck_assert_uint_eq(sim_events(ts.sim), 6);
	sim_program_free(p);
	tsim_clear(&ts);
}
END_TEST

START_TEST(test_send_recv_time)
{
	const double alpha = 10e-6, W = 50e9, n = 10e6, chunk = chunk_sizes[_i];
	for (int kind = TT_PAIRS; kind <= TT_STAR; kind++) {
		struct tsim ts;
		tsim_init(&ts, (enum tt_kind)kind, 2, alpha, W, chunk);
		struct sim_program *s = sim_program_new(), *r = sim_program_new();
		sim_program_send(s, 0, "send", 0, 1, n);
		sim_program_recv(r, 0, "recv", 0, 0, n);
		tsim_start(&ts, 0, s);
		tsim_start(&ts, 1, r);
		tsim_run_ok(&ts);
		sim_ps want = sim_ps_from_s(alpha + n / W);  /* 210 us */
		char what[96];
		snprintf(what, sizeof what, "%s topology, chunk %.0f B: receiver end",
			 kind == TT_PAIRS ? "pairs" : "star", chunk);
		ASSERT_PS_NEAR(sim_rank_end(ts.sim, 1), want, nchunks(n, chunk), what);
		/* The send finishes when the message has arrived, as NCCL's does. */
		ck_assert_int_eq(sim_rank_end(ts.sim, 0), sim_rank_end(ts.sim, 1));
		const struct rec_entry *e = rec_find(ts.rec, 1, "recv");
		ck_assert_int_eq(e->start, 0);
		/* Alone on its links, the message is one bulk reservation: one
		 * event (its arrival) whatever the number of chunks. */
		ck_assert_msg(sim_events(ts.sim) == 1, "%llu events for one message of %lld chunks",
			      (unsigned long long)sim_events(ts.sim), (long long)nchunks(n, chunk));
		/* Every link of the route carried the message once. */
		ck_assert_uint_eq(sim_nlinks(ts.sim), kind == TT_PAIRS ? 1 : 2);
		for (uint32_t l = 0; l < sim_nlinks(ts.sim); l++) {
			struct sim_link_stats st;
			sim_link_stats(ts.sim, l, &st);
			ck_assert_double_eq_tol(st.bytes, n, 1e-6);
			ck_assert_double_eq_tol(st.bw_Bps, W, 1e-3);
			ASSERT_PS_NEAR(st.busy_ps, sim_ps_from_s(n / W), nchunks(n, chunk),
				       "link busy time");
		}
		sim_program_free(s);
		sim_program_free(r);
		tsim_clear(&ts);
	}
}
END_TEST

/* One side is late by 5 us: the transfer starts at the rendezvous, either way. */
START_TEST(test_recv_before_or_after_send)
{
	const double alpha = 10e-6, W = 50e9, n = 10e6;
	sim_ps end[2][2];
	for (int late = 0; late < 2; late++) {  /* 0: the sender is late; 1: the receiver */
		struct tsim ts;
		tsim_init(&ts, TT_PAIRS, 2, alpha, W, 0);
		struct sim_program *s = sim_program_new(), *r = sim_program_new();
		sim_program_compute(late == 0 ? s : r, 0, "wait", 5 * US, 0, 0);
		sim_program_send(s, 0, "send", 0, 1, n);
		sim_program_recv(r, 0, "recv", 0, 0, n);
		tsim_start(&ts, 0, s);
		tsim_start(&ts, 1, r);
		tsim_run_ok(&ts);
		end[late][0] = sim_rank_end(ts.sim, 0);
		end[late][1] = sim_rank_end(ts.sim, 1);
		const struct rec_entry *es = rec_find(ts.rec, 0, "send");
		const struct rec_entry *er = rec_find(ts.rec, 1, "recv");
		/* The early side posts at 0 and waits; the late one posts at 5 us. */
		ck_assert_int_eq(late == 0 ? es->start : er->start, 5 * US);
		ck_assert_int_eq(late == 0 ? er->start : es->start, 0);
		sim_program_free(s);
		sim_program_free(r);
		tsim_clear(&ts);
	}
	sim_ps want = 5 * US + sim_ps_from_s(alpha + n / W);
	for (int late = 0; late < 2; late++)
		for (int side = 0; side < 2; side++) {
			char what[64];
			snprintf(what, sizeof what, "%s late, rank %d end",
				 late ? "receiver" : "sender", side);
			ASSERT_PS_NEAR(end[late][side], want, nchunks(n, SIM_DEFAULT_CHUNK_BYTES), what);
		}
	ck_assert_msg(end[0][0] == end[1][0] && end[0][1] == end[1][1],
		      "recv before send: %lld/%lld ps, after: %lld/%lld ps",
		      (long long)end[1][0], (long long)end[1][1], (long long)end[0][0],
		      (long long)end[0][1]);
}
END_TEST

/*
 * Two flows 0 -> 2 and 1 -> 2. On the star both cross rx(2): each takes about
 * twice as long (SPEC C8's rule, on one link), both finishing within one
 * chunk's wire time of alpha + 2n/W. On the pairs topology they share nothing.
 * Rank 2 receives on two streams, so neither receive waits for the other.
 */
static void two_into_one_late(enum tt_kind kind, double chunk, sim_ps late, sim_ps *end0,
			      sim_ps *end1, uint64_t *events, double *busy_shared);

static void two_into_one(enum tt_kind kind, double chunk, sim_ps *end0, sim_ps *end1)
{
	two_into_one_late(kind, chunk, 0, end0, end1, NULL, NULL);
}

/*
 * The same, rank 1 sending `late` after rank 0 (a compute op first), and
 * reporting the events and the busy time of the link that carried both
 * messages (0 if none did). Every link carries one message or both.
 */
static void two_into_one_late(enum tt_kind kind, double chunk, sim_ps late, sim_ps *end0,
			      sim_ps *end1, uint64_t *events, double *busy_shared)
{
	const double alpha = 10e-6, W = 50e9, n = 10e6;
	struct tsim ts;
	tsim_init(&ts, kind, 3, alpha, W, chunk);
	struct sim_program *s0 = sim_program_new(), *s1 = sim_program_new();
	struct sim_program *r = sim_program_new();
	sim_program_send(s0, 0, "send", 0, 2, n);
	if (late > 0)
		sim_program_compute(s1, 0, "wait", late, 0, 0);
	sim_program_send(s1, 0, "send", 0, 2, n);
	sim_program_recv(r, 0, "from0", 0, 0, n);
	sim_program_recv(r, 1, "from1", 0, 1, n);
	tsim_start(&ts, 0, s0);
	tsim_start(&ts, 1, s1);
	tsim_start(&ts, 2, r);
	tsim_run_ok(&ts);
	*end0 = rec_find(ts.rec, 2, "from0")->end;
	*end1 = rec_find(ts.rec, 2, "from1")->end;
	ck_assert_int_eq(rec_find(ts.rec, 0, "send")->end, *end0);
	ck_assert_int_eq(rec_find(ts.rec, 1, "send")->end, *end1);
	if (events)
		*events = sim_events(ts.sim);
	for (uint32_t l = 0; busy_shared && l < sim_nlinks(ts.sim); l++) {
		struct sim_link_stats ls;
		sim_link_stats(ts.sim, l, &ls);
		ck_assert_msg(ls.bytes == n || ls.bytes == 2 * n, "link %u carried %.0f B", l,
			      ls.bytes);
		*busy_shared = ls.bytes == 2 * n ? (double)ls.busy_ps : *busy_shared;
	}
	sim_program_free(s0);
	sim_program_free(s1);
	sim_program_free(r);
	tsim_clear(&ts);
}

START_TEST(test_shared_link_halves)
{
	const double alpha = 10e-6, W = 50e9, n = 10e6, chunk = chunk_sizes[_i];
	sim_ps e0, e1;
	two_into_one(TT_STAR, chunk, &e0, &e1);
	sim_ps want = sim_ps_from_s(alpha + 2 * n / W);
	sim_ps one_chunk = sim_ps_from_s(chunk / W) + 2 * nchunks(n, chunk);
	char what[96];
	snprintf(what, sizeof what, "star, chunk %.0f B, flow 0 -> 2", chunk);
	ASSERT_PS_NEAR(e0, want, one_chunk, what);
	snprintf(what, sizeof what, "star, chunk %.0f B, flow 1 -> 2", chunk);
	ASSERT_PS_NEAR(e1, want, one_chunk, what);
	/* The pairs topology joins 0 -> 2 and 1 -> 2 by different links. */
	two_into_one(TT_PAIRS, chunk, &e0, &e1);
	want = sim_ps_from_s(alpha + n / W);
	ASSERT_PS_NEAR(e0, want, nchunks(n, chunk), "pairs, flow 0 -> 2");
	ASSERT_PS_NEAR(e1, want, nchunks(n, chunk), "pairs, flow 1 -> 2");
}
END_TEST

/*
 * Bulk reservations (sim.c): a message whose links are free sends all its
 * chunks at once (one event), and a flow that arrives later splits it into
 * chunks again. Here 0 -> 2 starts alone at 0; 1 -> 2 joins at 50 us on the
 * shared receive link of rank 2. Until then the first moves at W, then the
 * two alternate chunk by chunk at W/2 each: the first has 7.5 MB left at
 * 50 us and ends near 50 + 2 * 7.5 MB / W = 350 us, the second has sent as
 * much by then and ends near 350 + 2.5 MB / W = 400 us (both + alpha, within
 * a chunk). The links' totals are exact whatever the splitting, and the
 * second run of the same input gives the same picoseconds.
 */
START_TEST(test_bulk_split)
{
	const double alpha = 10e-6, W = 50e9, n = 10e6;
	sim_ps e0, e1, f0, f1;
	uint64_t ev, ev2;
	double busy = 0, busy2 = 0;
	two_into_one_late(TT_STAR, 0, 50 * US, &e0, &e1, &ev, &busy);
	sim_ps chunk = sim_ps_from_s(SIM_DEFAULT_CHUNK_BYTES / W);
	ASSERT_PS_NEAR(e0, sim_ps_from_s(alpha + 50e-6 + 2 * (n - 50e-6 * W) / W), chunk,
		       "the first flow, split at 50 us");
	/* The shared link is busy from 0 to the end: 2n / W. */
	ASSERT_PS_NEAR(e1, sim_ps_from_s(alpha + 2 * n / W), chunk, "the late flow");
	/* The shared link carried both messages: 2n / W of wire time. */
	ck_assert_msg(fabs(busy - 2 * n / W * 1e12) <= 2 * nchunks(n, SIM_DEFAULT_CHUNK_BYTES),
		      "shared link busy %.0f ps, expected %.0f", busy, 2 * n / W * 1e12);
	/* Fewer events than chunks: the first flow's chunks before 50 us were
	 * one bulk reservation (and the late flow's last ones one more). */
	ck_assert_msg(ev < 2 * (uint64_t)nchunks(n, SIM_DEFAULT_CHUNK_BYTES),
		      "%llu events for %lld chunks", (unsigned long long)ev,
		      (long long)(2 * nchunks(n, SIM_DEFAULT_CHUNK_BYTES)));
	two_into_one_late(TT_STAR, 0, 50 * US, &f0, &f1, &ev2, &busy2);
	ck_assert_msg(e0 == f0 && e1 == f1 && ev == ev2 && busy == busy2,
		      "second run: %lld %lld %llu, first %lld %lld %llu", (long long)f0,
		      (long long)f1, (unsigned long long)ev2, (long long)e0, (long long)e1,
		      (unsigned long long)ev);
}
END_TEST

/* 0 -> 1 and 2 -> 3 on the star share no link: each takes the time of one. */
START_TEST(test_disjoint_links_full_speed)
{
	const double alpha = 10e-6, W = 50e9, n = 10e6;
	struct tsim ts;
	tsim_init(&ts, TT_STAR, 4, alpha, W, 0);
	/* Peers differ by rank: one program each. */
	struct sim_program *s = sim_program_new(), *r = sim_program_new();
	struct sim_program *s2 = sim_program_new(), *r3 = sim_program_new();
	sim_program_send(s, 0, "send", 0, 1, n);
	sim_program_recv(r, 0, "recv", 0, 0, n);
	sim_program_send(s2, 0, "send", 0, 3, n);
	sim_program_recv(r3, 0, "recv", 0, 2, n);
	tsim_start(&ts, 0, s);
	tsim_start(&ts, 1, r);
	tsim_start(&ts, 2, s2);
	tsim_start(&ts, 3, r3);
	tsim_run_ok(&ts);
	sim_ps want = sim_ps_from_s(alpha + n / W);
	for (uint32_t rank = 0; rank < 4; rank++) {
		char what[32];
		snprintf(what, sizeof what, "rank %u end", rank);
		ASSERT_PS_NEAR(sim_rank_end(ts.sim, rank), want,
			       nchunks(n, SIM_DEFAULT_CHUNK_BYTES), what);
	}
	sim_program_free(s);
	sim_program_free(r);
	sim_program_free(s2);
	sim_program_free(r3);
	tsim_clear(&ts);
}
END_TEST

/* Sends and receives of one pair match in program order. */
START_TEST(test_p2p_program_order)
{
	const double alpha = 1e-6, W = 1e9;
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 2, alpha, W, 0);
	struct sim_program *s = sim_program_new(), *r = sim_program_new();
	sim_program_send(s, 0, "s1", 0, 1, 1e3);
	sim_program_send(s, 0, "s2", 0, 1, 1e6);
	sim_program_recv(r, 0, "r1", 0, 0, 1e3);
	sim_program_recv(r, 0, "r2", 0, 0, 1e6);
	tsim_start(&ts, 0, s);
	tsim_start(&ts, 1, r);
	tsim_run_ok(&ts);
	sim_ps t1 = sim_ps_from_s(alpha + 1e3 / W);
	sim_ps t2 = t1 + sim_ps_from_s(alpha + 1e6 / W);
	ASSERT_PS_NEAR(rec_find(ts.rec, 1, "r1")->end, t1, 2, "first message");
	ASSERT_PS_NEAR(rec_find(ts.rec, 1, "r2")->end, t2, 4, "second message");
	sim_program_free(s);
	sim_program_free(r);
	tsim_clear(&ts);
}
END_TEST

/*
 * Several posts of one kind waiting on one conversation meet the other
 * side's in the order they were posted (a FIFO per (src, dst, tag)).
 * Rank 0 posts three sends at once, on streams 0, 1 and 2 (in that order),
 * of 1 KB, 1 MB and 10 KB; rank 1 receives one after another on one stream
 * after 10 us of compute: its receives take the sends' sizes in that
 * order. Then the other way: rank 1 posts two receives at once (streams 3
 * and 4) and rank 0 sends one after another, 5 ms later: the receive of
 * stream 3 gets the first send.
 */
START_TEST(test_p2p_waiters_fifo)
{
	const double alpha = 1e-6, W = 1e9;
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 2, alpha, W, 0);
	struct sim_program *s = sim_program_new(), *r = sim_program_new();
	sim_program_send(s, 0, "sa", 0, 1, 1e3);
	uint32_t b = sim_program_send(s, 1, "sb", 0, 1, 1e6);
	uint32_t c = sim_program_send(s, 2, "sc", 0, 1, 1e4);
	sim_program_compute(s, 0, "later", 5000 * US, 0, 0);
	sim_program_dep(s, b), sim_program_dep(s, c);
	sim_program_send(s, 0, "sd", 0, 1, 2e3);
	sim_program_send(s, 0, "se", 0, 1, 3e3);
	sim_program_compute(r, 0, "k", 10 * US, 0, 0);
	sim_program_recv(r, 0, "r1", 0, 0, 1e3);
	sim_program_recv(r, 0, "r2", 0, 0, 1e6);
	uint32_t r3 = sim_program_recv(r, 0, "r3", 0, 0, 1e4);
	sim_program_recv(r, 3, "rd", 0, 0, 2e3);
	sim_program_dep(r, r3);
	sim_program_recv(r, 4, "re", 0, 0, 3e3);
	sim_program_dep(r, r3);
	tsim_start(&ts, 0, s);
	tsim_start(&ts, 1, r);
	tsim_run_ok(&ts);
	sim_ps t1 = 10 * US + sim_ps_from_s(alpha + 1e3 / W);
	sim_ps t2 = t1 + sim_ps_from_s(alpha + 1e6 / W);
	sim_ps t3 = t2 + sim_ps_from_s(alpha + 1e4 / W);
	ASSERT_PS_NEAR(rec_find(ts.rec, 1, "r1")->end, t1, 2, "r1 meets sa");
	ASSERT_PS_NEAR(rec_find(ts.rec, 1, "r2")->end, t2, 4, "r2 meets sb");
	ASSERT_PS_NEAR(rec_find(ts.rec, 1, "r3")->end, t3, 6, "r3 meets sc");
	/* rd and re wait from t3 (posted in that order); sd comes 5 ms later
	 * and meets rd, then se meets re. */
	sim_ps t4 = t3 + 5000 * US + sim_ps_from_s(alpha + 2e3 / W);
	sim_ps t5 = t4 + sim_ps_from_s(alpha + 3e3 / W);
	ASSERT_PS_NEAR(rec_find(ts.rec, 1, "rd")->end, t4, 8, "rd meets sd");
	ASSERT_PS_NEAR(rec_find(ts.rec, 1, "re")->end, t5, 10, "re meets se");
	sim_program_free(s);
	sim_program_free(r);
	tsim_clear(&ts);
}
END_TEST

/* ---- failures ----------------------------------------------------------------- */

static void expect_failure(struct tsim *ts, const char *needle)
{
	int rc = sim_run(ts->sim);
	const char *err = sim_error(ts->sim);
	ck_assert_msg(rc == -1, "sim_run = %d, expected -1 (error: %s)", rc, err ? err : "none");
	ck_assert_msg(err != NULL && strstr(err, needle) != NULL,
		      "sim_error = \"%s\", expected \"%s\" in it", err ? err : "(null)", needle);
}

START_TEST(test_deadlock_unmatched_recv)
{
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 2, 10e-6, 50e9, 0);
	struct sim_program *p = sim_program_new(), *q = sim_program_new();
	sim_program_compute(p, 0, "work", 3 * US, 0, 0);
	sim_program_recv(q, 0, "lonely recv", 0, 0, 1e6);
	tsim_start(&ts, 0, p);
	tsim_start(&ts, 1, q);
	expect_failure(&ts, "deadlock");
	ck_assert_msg(strstr(sim_error(ts.sim), "lonely recv") != NULL,
		      "sim_error = \"%s\" does not name the stuck op", sim_error(ts.sim));
	sim_program_free(p);
	sim_program_free(q);
	tsim_clear(&ts);
}
END_TEST

/* Both ranks receive first: the classic cycle. */
START_TEST(test_deadlock_cycle)
{
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 2, 10e-6, 50e9, 0);
	struct sim_program *p = sim_program_new(), *q = sim_program_new();
	sim_program_recv(p, 0, "recv", 0, 1, 1e6);
	sim_program_send(p, 0, "send", 0, 1, 1e6);
	sim_program_recv(q, 0, "recv", 0, 0, 1e6);
	sim_program_send(q, 0, "send", 0, 0, 1e6);
	tsim_start(&ts, 0, p);
	tsim_start(&ts, 1, q);
	expect_failure(&ts, "deadlock");
	sim_program_free(p);
	sim_program_free(q);
	tsim_clear(&ts);
}
END_TEST

/* A collective that one member never joins. */
START_TEST(test_deadlock_collective)
{
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 3, 10e-6, 50e9, 0);
	struct sim_program *p = sim_program_new(), *q = sim_program_new();
	sim_program_coll(p, 1, "ar", SIM_COLL_ALLREDUCE, &coll_ring, 0, 1e6, 0, 0);
	sim_program_compute(q, 0, "work", 1 * US, 0, 0);
	tsim_start(&ts, 0, p);
	tsim_start(&ts, 1, p);
	tsim_start(&ts, 2, q);
	expect_failure(&ts, "deadlock");
	sim_program_free(p);
	sim_program_free(q);
	tsim_clear(&ts);
}
END_TEST

/* Members that disagree on the collective are reported, not run. */
START_TEST(test_collective_mismatch)
{
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 2, 10e-6, 50e9, 0);
	struct sim_program *p = sim_program_new(), *q = sim_program_new();
	sim_program_coll(p, 1, "ar", SIM_COLL_ALLREDUCE, &coll_ring, 0, 1e6, 0, 0);
	sim_program_coll(q, 1, "ar", SIM_COLL_ALLREDUCE, &coll_ring, 0, 2e6, 0, 0);
	tsim_start(&ts, 0, p);
	tsim_start(&ts, 1, q);
	expect_failure(&ts, "joined");
	sim_program_free(p);
	sim_program_free(q);
	tsim_clear(&ts);
}
END_TEST

/* An algorithm that refuses the group size fails the run with its reason. */
START_TEST(test_collective_refused)
{
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 3, 10e-6, 50e9, 0);
	char err[256] = "";
	unsigned c = 0;
	const struct sim_coll_algo *a = sim_coll_check(ts.sim, ts.world, SIM_COLL_ALLREDUCE,
						       &coll_hd, 1e6, &c, err, sizeof err);
	ck_assert_msg(a == NULL && strstr(err, "power") != NULL,
		      "hd on 3 ranks: algo %s, err \"%s\"", a ? a->name : "NULL", err);
	/* auto still finds one. */
	c = 0;
	a = sim_coll_check(ts.sim, ts.world, SIM_COLL_ALLREDUCE, NULL, 1e6, &c, err, sizeof err);
	ck_assert_msg(a != NULL, "auto on 3 ranks: %s", err);
	struct sim_program *p = sim_program_new();
	sim_program_coll(p, 1, "ar", SIM_COLL_ALLREDUCE, &coll_hd, 0, 1e6, 0, 0);
	for (uint32_t r = 0; r < 3; r++)
		tsim_start(&ts, r, p);
	expect_failure(&ts, "power");
	sim_program_free(p);
	tsim_clear(&ts);
}
END_TEST

/*
 * A run that fails while a transfer is in flight leaves its events queued:
 * sim_free must drain them before it frees the transfers they live in
 * (under AddressSanitizer a use after free fails this test). Ranks 0 and
 * 1 exchange 10 MB on stream 0 (210 us); at 1 us all three start an hd
 * all-reduce on 3 ranks, which is refused and fails the run.
 */
START_TEST(test_free_after_failure_in_flight)
{
	for (int kind = TT_PAIRS; kind <= TT_STAR; kind++) {
		struct tsim ts;
		tsim_init(&ts, (enum tt_kind)kind, 3, 10e-6, 50e9, 0);
		struct sim_program *p[3];
		for (uint32_t r = 0; r < 3; r++) {
			p[r] = sim_program_new();
			if (r == 0)
				sim_program_send(p[r], 0, "send", 0, 1, 10e6);
			else if (r == 1)
				sim_program_recv(p[r], 0, "recv", 0, 0, 10e6);
			sim_program_compute(p[r], 1, "work", 1 * US, 0, 0);
			sim_program_coll(p[r], 1, "ar", SIM_COLL_ALLREDUCE, &coll_hd, 0, 1e6, 0, 0);
			tsim_start(&ts, r, p[r]);
		}
		expect_failure(&ts, "power");
		ck_assert_msg(sim_now(ts.sim) < 210 * US, "failed at %lld ps, after the transfer",
			      (long long)sim_now(ts.sim));
		tsim_clear(&ts);  /* sim_free with the transfer still queued */
		for (uint32_t r = 0; r < 3; r++)
			sim_program_free(p[r]);
	}
}
END_TEST

/* ---- collectives on the test topology ------------------------------------------ */

/* SPEC C1 on the pairs topology: 2(p-1)(alpha + n/(pW)), flow and analytic. */
/* A program of one ring all-reduce of n bytes on stream 1 of group slot 0. */
static struct sim_program *ring_allreduce(double n)
{
	struct sim_program *prog = sim_program_new();
	sim_program_coll(prog, 1, "ar", SIM_COLL_ALLREDUCE, &coll_ring, 0, n, 0, 0);
	return prog;
}

/* The fidelities, for loops over both. */
static const enum sim_fidelity fidelities[] = { SIM_FIDELITY_FLOW, SIM_FIDELITY_ANALYTIC };

START_TEST(test_ring_allreduce_closed_form)
{
	const double alpha = 10e-6, W = 50e9, n = 1e6;
	const uint32_t p = 4;
	for (size_t f = 0; f < ARRAY_SIZE(fidelities); f++) {
		struct tsim ts;
		enum sim_fidelity fid = fidelities[f];
		tsim_init_f(&ts, TT_PAIRS, p, alpha, W, 0, fid);
		struct sim_program *prog = ring_allreduce(n);
		for (uint32_t r = 0; r < p; r++)
			tsim_start(&ts, r, prog);
		tsim_run_ok(&ts);
		double want = 2.0 * (p - 1) * (alpha + n / p / W);   /* 90 us */
		for (uint32_t r = 0; r < p; r++) {
			double got = sim_ps_to_s(sim_rank_end(ts.sim, r));
			ck_assert_msg(rel_err(got, want) < 1e-6, "%s: rank %u ends at %.9g s, "
				      "expected %.9g s", sim_fidelity_name(fid), r, got, want);
		}
		double closed = sim_coll_time_s(ts.sim, ts.world, &coll_ring, SIM_COLL_ALLREDUCE,
						n, 0);
		ck_assert_msg(rel_err(closed, want) < 1e-9, "sim_coll_time_s = %.9g, expected %.9g",
			      closed, want);
		sim_program_free(prog);
		tsim_clear(&ts);
	}
}
END_TEST

/*
 * Interference: a compute op that starts while the rank's collective (2
 * channels) runs takes 1 + 0.1 x 2 of its time; one that starts after it
 * ends takes its own. The time added is the rank's interference_ps. Both
 * fidelities: 4 ranks, a 100 MB all-reduce of about 3 ms.
 */
static unsigned interf_blocks_seen;
static double interf_tenth(void *ctx, uint32_t rank, const struct sim_op *op, unsigned blocks)
{
	(void)ctx, (void)rank, (void)op;
	if (blocks > interf_blocks_seen)
		interf_blocks_seen = blocks;
	return 1 + 0.1 * blocks;
}

START_TEST(test_interference)
{
	for (size_t f = 0; f < ARRAY_SIZE(fidelities); f++) {
		struct tsim ts;
		tsim_init_f(&ts, TT_PAIRS, 4, 10e-6, 50e9, 0, fidelities[f]);
		struct sim_program *p = sim_program_new();
		uint32_t ar = sim_program_coll(p, 1, "ar", SIM_COLL_ALLREDUCE, &coll_ring, 0, 1e8, 2,
					       0);
		sim_program_compute(p, 0, "pre", 0, 0, 0);
		sim_program_compute(p, 0, "a", 10 * US, 0, 0);
		sim_program_compute(p, 0, "b", 100 * US, 0, 0);
		sim_program_compute(p, 0, "c", 10 * US, 0, 0);
		sim_program_dep(p, ar);
		interf_blocks_seen = 0;
		sim_set_interference(ts.sim, interf_tenth, NULL, NULL);
		for (uint32_t r = 0; r < 4; r++)
			tsim_start(&ts, r, p);
		tsim_run_ok(&ts);
		const struct rec_entry *e = rec_find(ts.rec, 0, "ar");
		ck_assert_msg(e->end > 200 * US, "the all-reduce ends at %lld ps", (long long)e->end);
		ASSERT_RECORD(ts.rec, 0, "a", 0, 12 * US);
		ASSERT_RECORD(ts.rec, 0, "b", 12 * US, 132 * US);
		ASSERT_RECORD(ts.rec, 0, "c", e->end, e->end + 10 * US);
		ck_assert_uint_eq(interf_blocks_seen, 2);
		ck_assert_int_eq(sim_rank_stats(ts.sim, 0)->interference_ps, 22 * US);
		sim_program_free(p);
		tsim_clear(&ts);
	}
}
END_TEST

/*
 * A run of kernels begun without communication is cut where communication
 * begins, so that each op still takes the factor of its own start: rank 0
 * runs a, b, c (10 us each, one run) while its receive waits for rank 1's
 * send, posted after rank 1's 15 us op. The message moves from 15 us (1 MB,
 * 20 us on the wire, 10 us latency), so b (in progress then) keeps 10-20
 * and c, starting beside one block, takes 1.1 x: 20 to 31 us, 1 us added.
 * Both fidelities; the same with jitter-free runs disabled by a scale of 1.
 */
static double scale_one(void *ctx, uint32_t rank, const struct sim_op *op)
{
	(void)ctx, (void)rank, (void)op;
	return 1;
}

START_TEST(test_interference_run_cut)
{
	for (size_t f = 0; f < ARRAY_SIZE(fidelities); f++)
		for (int per_op = 0; per_op < 2; per_op++) {
			struct tsim ts;
			tsim_init_f(&ts, TT_PAIRS, 2, 10e-6, 50e9, 0, fidelities[f]);
			struct sim_program *p0 = sim_program_new(), *p1 = sim_program_new();
			sim_program_compute(p0, 0, "a", 10 * US, 0, 0);
			sim_program_compute(p0, 0, "b", 10 * US, 0, 0);
			sim_program_compute(p0, 0, "c", 10 * US, 0, 0);
			sim_program_recv(p0, 1, "recv", 0, 1, 1e6);
			uint32_t w = sim_program_compute(p1, 0, "w", 15 * US, 0, 0);
			sim_program_send(p1, 1, "send", 0, 0, 1e6);
			sim_program_dep(p1, w);
			sim_set_interference(ts.sim, interf_tenth, NULL, NULL);
			if (per_op)
				sim_set_compute_scale(ts.sim, scale_one, NULL);
			tsim_start(&ts, 0, p0);
			tsim_start(&ts, 1, p1);
			tsim_run_ok(&ts);
			ASSERT_RECORD(ts.rec, 0, "a", 0, 10 * US);
			ASSERT_RECORD(ts.rec, 0, "b", 10 * US, 20 * US);
			ASSERT_RECORD(ts.rec, 0, "c", 20 * US, 31 * US);
			ck_assert_int_eq(sim_rank_stats(ts.sim, 0)->interference_ps, 1 * US);
			sim_program_free(p0);
			sim_program_free(p1);
			tsim_clear(&ts);
		}
}
END_TEST

/*
 * Communication slowed by compute: a compute op of 1 ms runs on rank 0 as
 * the two ranks start an all-reduce of n = 10 MB on one channel (n / W =
 * 200 us, two steps of n/2 and a = 10 us each: 220 us alone). In one node
 * the all-reduce's bandwidth falls by the factor, 2: 2a + 2 (n/2) 2 / W =
 * 420 us in both fidelities. In two nodes it runs alone. The factor is
 * asked with the blocks of the collective (1); the compute op, started
 * before it, is not slowed.
 */
static unsigned comm_blocks_seen;
static double comm_double(void *ctx, uint32_t rank, const struct sim_op *beside, unsigned blocks)
{
	(void)ctx, (void)rank;
	ck_assert_str_eq(beside->name, "big");
	if (blocks > comm_blocks_seen)
		comm_blocks_seen = blocks;
	return 2;
}

START_TEST(test_interference_comm)
{
	for (size_t f = 0; f < ARRAY_SIZE(fidelities); f++)
		for (uint32_t per_node = 1; per_node <= 2; per_node++) {
			struct tsim ts;
			tsim_init_f(&ts, TT_PAIRS, 2, 10e-6, 50e9, 0, fidelities[f]);
			ts.topo.per_node = per_node;
			struct sim_program *p = sim_program_new();
			sim_program_compute(p, 0, "big", 1000 * US, 0, 0);
			sim_program_coll(p, 1, "ar", SIM_COLL_ALLREDUCE, &coll_ring, 0, 1e7, 1, 0);
			comm_blocks_seen = 0;
			sim_set_interference(ts.sim, interf_tenth, comm_double, NULL);
			for (uint32_t r = 0; r < 2; r++)
				tsim_start(&ts, r, p);
			tsim_run_ok(&ts);
			sim_ps want = per_node == 2 ? 420 * US : 220 * US;
			for (uint32_t r = 0; r < 2; r++) {
				const struct rec_entry *e = rec_find(ts.rec, r, "ar");
				ck_assert_msg(llabs((long long)(e->end - want)) <= 2,
					      "%s, %u a node: rank %u's all-reduce ends at %lld ps, "
					      "expected %lld", sim_fidelity_name(fidelities[f]),
					      per_node, r, (long long)e->end, (long long)want);
			}
			ASSERT_RECORD(ts.rec, 0, "big", 0, 1000 * US);
			ck_assert_int_eq(sim_rank_stats(ts.sim, 0)->interference_ps, 0);
			ck_assert_uint_le(comm_blocks_seen, 1);
			if (per_node == 2)
				ck_assert_uint_eq(comm_blocks_seen, 1);
			sim_program_free(p);
			tsim_clear(&ts);
		}
}
END_TEST

/*
 * The host issues each op at its cost (5 us a kernel, 20 us a collective)
 * in op order: a (1 us) is issued at 5 us and runs to 6; b (100 us) at 10,
 * to 110; the all-reduce on its own stream at 30 and starts then (not at 0,
 * when its stream was free); c, issued at 35 but behind b, starts at 110.
 * Both fidelities; two ranks.
 */
static double host_cost(void *ctx, const struct sim_op *op)
{
	(void)ctx;
	return op->kind == SIM_OP_COLL ? 20e-6 : 5e-6;
}

START_TEST(test_host)
{
	for (size_t f = 0; f < ARRAY_SIZE(fidelities); f++) {
		struct tsim ts;
		tsim_init_f(&ts, TT_PAIRS, 2, 10e-6, 50e9, 0, fidelities[f]);
		struct sim_program *p = sim_program_new();
		sim_program_compute(p, 0, "a", 1 * US, 0, 0);
		sim_program_compute(p, 0, "b", 100 * US, 0, 0);
		sim_program_coll(p, 1, "ar", SIM_COLL_ALLREDUCE, &coll_ring, 0, 1e6, 1, 0);
		sim_program_compute(p, 0, "c", 1 * US, 0, 0);
		sim_set_host(ts.sim, host_cost, NULL);
		for (uint32_t r = 0; r < 2; r++)
			tsim_start(&ts, r, p);
		tsim_run_ok(&ts);
		for (uint32_t r = 0; r < 2; r++) {
			ASSERT_RECORD(ts.rec, r, "a", 5 * US, 6 * US);
			ASSERT_RECORD(ts.rec, r, "b", 10 * US, 110 * US);
			ASSERT_RECORD(ts.rec, r, "c", 110 * US, 111 * US);
			const struct rec_entry *e = rec_find(ts.rec, r, "ar");
			ck_assert_int_eq(e->start, 30 * US);
		}
		sim_program_free(p);
		tsim_clear(&ts);
	}
}
END_TEST

/*
 * Closed forms share links (share.c). On the bus, ranks {0,1} and {2,3} are
 * two groups, each with a ring all-reduce of n = 100 MB on one channel: two
 * messages of n/2 a step, two steps. Alone a step is a + (n/2)/(W/2), so
 * TA = 2a + 2n/W = 4.02 ms; with the other group's two messages on the bus
 * too, TS = 2a + 4n/W = 8.02 ms. Started together both end at TS; in flow
 * within 1 % (one group's latency overlaps the other's wire time). Group
 * B starting s = 1 ms later: A runs alone to s, then at rate TA/TS, and ends
 * at eA = s + (TA - s) TS / TA; by then B
 * has done TA - s of its closed form, and ends alone s later, at eA + s.
 * With sim.analytic_sharing off each ends TA after its start.
 */
static struct sim_program *delayed_allreduce(double n, sim_ps delay)
{
	struct sim_program *p = sim_program_new();
	uint32_t w = sim_program_compute(p, 0, "w", delay, 0, 0);
	sim_program_coll(p, 1, "ar", SIM_COLL_ALLREDUCE, &coll_ring, 0, n, 1, 0);
	sim_program_dep(p, w);
	return p;
}

/*
 * auto as NCCL can (sim_config.auto_nccl): on 8 ranks, 4 to a node, a
 * 64 KiB all-gather or reduce-scatter runs by ring, where the fastest closed
 * form is another (rd: 3 steps against the ring's 7 latencies); one rank a
 * node, it takes the fastest as before; an all-reduce is never restricted.
 */
START_TEST(test_auto_nccl)
{
	static const enum sim_coll_op ops[] = { SIM_COLL_ALLGATHER, SIM_COLL_REDUCESCATTER,
						SIM_COLL_ALLREDUCE };
	for (uint32_t per_node = 1; per_node <= 4; per_node *= 4)
		for (size_t o = 0; o < ARRAY_SIZE(ops); o++) {
			const struct sim_coll_algo *got[2];
			for (int nccl = 0; nccl < 2; nccl++) {
				struct sim_config cfg;
				sim_config_init(&cfg);
				cfg.algos = coll_algos;
				cfg.auto_nccl = nccl;
				struct ttopo t;
				ttopo_init(&t, TT_PAIRS, 8, 10e-6, 50e9);
				t.per_node = per_node;
				struct sim *sim = sim_new(&cfg, 8, &tt_ops, &t);
				uint32_t all[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
				uint32_t g = sim_group_add(sim, all, 8);
				unsigned ch = 0;
				char err[256];
				got[nccl] = sim_coll_check(sim, g, ops[o], NULL, 65536, &ch, err,
							   sizeof(err));
				ck_assert_msg(got[nccl] != NULL, "%s", err);
				sim_free(sim);
				ttopo_clear(&t);
			}
			const char *want = per_node > 1 && ops[o] != SIM_COLL_ALLREDUCE
						   ? "ring" : got[0]->name;
			ck_assert_msg(strcmp(got[0]->name, "ring") != 0 || ops[o] == SIM_COLL_ALLREDUCE,
				      "%s: the fastest is the ring", sim_coll_op_name(ops[o]));
			ck_assert_msg(!strcmp(got[1]->name, want), "%s, %u a node: nccl took %s, "
				      "expected %s", sim_coll_op_name(ops[o]), per_node, got[1]->name,
				      want);
		}
}
END_TEST

/* Run groups {0,1} (no delay) and {2,3} (delay) on the bus; their ends. */
static void bus_pair(enum sim_fidelity fid, int sharing, sim_ps delay, sim_ps *ea, sim_ps *eb)
{
	struct sim_config cfg;
	sim_config_init(&cfg);
	cfg.fidelity = fid;
	cfg.algos = coll_algos;
	cfg.analytic_sharing = sharing;
	struct ttopo t;
	ttopo_init(&t, TT_BUS, 4, 10e-6, 50e9);
	struct sim *sim = sim_new(&cfg, 4, &tt_ops, &t);
	uint32_t a[2] = { 0, 1 }, b[2] = { 2, 3 };
	uint32_t ga = sim_group_add(sim, a, 2), gb = sim_group_add(sim, b, 2);
	struct sim_program *pa = delayed_allreduce(1e8, 0), *pb = delayed_allreduce(1e8, delay);
	for (uint32_t r = 0; r < 4; r++)
		sim_rank_start(sim, r, r < 2 ? pa : pb, r < 2 ? &ga : &gb, 1);
	ck_assert_msg(sim_run(sim) == 0, "sim_run: %s", sim_error(sim));
	*ea = sim_rank_end(sim, 0), *eb = sim_rank_end(sim, 2);
	ck_assert_int_eq(sim_rank_end(sim, 1), *ea);
	ck_assert_int_eq(sim_rank_end(sim, 3), *eb);
	sim_program_free(pa);
	sim_program_free(pb);
	sim_free(sim);
	ttopo_clear(&t);
}

START_TEST(test_analytic_sharing)
{
	const double TA = 4.02e-3, TS = 8.02e-3, s = 1e-3;
	sim_ps ea, eb, fa, fb;
	bus_pair(SIM_FIDELITY_ANALYTIC, 1, 0, &ea, &eb);
	ck_assert_msg(rel_err(sim_ps_to_s(ea), TS) < 1e-9 && ea == eb,
		      "together: %lld and %lld ps, expected %.9g s", (long long)ea, (long long)eb, TS);
	bus_pair(SIM_FIDELITY_FLOW, 1, 0, &fa, &fb);
	ck_assert_msg(rel_err(sim_ps_to_s(fa), TS) < 0.01 && rel_err(sim_ps_to_s(fb), TS) < 0.01,
		      "flow together: %lld and %lld ps, expected %.9g s", (long long)fa,
		      (long long)fb, TS);
	bus_pair(SIM_FIDELITY_ANALYTIC, 1, sim_ps_from_s(s), &ea, &eb);
	double want_a = s + (TA - s) * TS / TA;
	ck_assert_msg(rel_err(sim_ps_to_s(ea), want_a) < 1e-9, "staggered: A ends at %.9g s, "
		      "expected %.9g s", sim_ps_to_s(ea), want_a);
	ck_assert_msg(rel_err(sim_ps_to_s(eb), want_a + s) < 1e-9, "staggered: B ends at %.9g s, "
		      "expected %.9g s", sim_ps_to_s(eb), want_a + s);
	bus_pair(SIM_FIDELITY_FLOW, 1, sim_ps_from_s(s), &fa, &fb);
	ck_assert_msg(rel_err(sim_ps_to_s(fa), want_a) < 0.05 &&
		      rel_err(sim_ps_to_s(fb), want_a + s) < 0.05, "staggered in flow: %.9g and "
		      "%.9g s, analytic %.9g and %.9g s", sim_ps_to_s(fa), sim_ps_to_s(fb), want_a,
		      want_a + s);
	bus_pair(SIM_FIDELITY_ANALYTIC, 0, sim_ps_from_s(s), &ea, &eb);
	ck_assert_msg(rel_err(sim_ps_to_s(ea), TA) < 1e-9 && rel_err(sim_ps_to_s(eb), s + TA) < 1e-9,
		      "sharing off: %.9g and %.9g s, expected %.9g and %.9g s", sim_ps_to_s(ea),
		      sim_ps_to_s(eb), TA, s + TA);
}
END_TEST

/*
 * The clock ends at SIM_PS_MAX (about 106.75 days): a run that would go
 * past it fails with a message naming what and the limit, and
 * sim_failed_clock says so, whichever way the time got there: a compute op
 * of a saturated duration, two ops whose sum passes it (no signed
 * overflow), a message too slow for the clock (whose events are still
 * queued when the sim is freed) and a collective's closed form.
 */
static void expect_clock(struct tsim *ts, const char *what)
{
	ck_assert_int_eq(sim_run(ts->sim), -1);
	ck_assert_msg(sim_failed_clock(ts->sim), "not a clock failure: %s", sim_error(ts->sim));
	ck_assert_msg(strstr(sim_error(ts->sim), what) != NULL &&
		      strstr(sim_error(ts->sim), "106.75 days") != NULL, "error: %s",
		      sim_error(ts->sim));
}

START_TEST(test_clock_limit)
{
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 1, 10e-6, 50e9, 0);
	struct sim_program *p = sim_program_new();
	sim_program_compute(p, 0, "forever", sim_ps_from_s(1e30), 0, 0);
	tsim_start(&ts, 0, p);
	expect_clock(&ts, "rank 0's op 'forever'");
	sim_program_free(p);
	tsim_clear(&ts);

	tsim_init(&ts, TT_PAIRS, 1, 10e-6, 50e9, 0);
	p = sim_program_new();
	sim_program_compute(p, 0, "first half", SIM_PS_MAX / 2 + 1, 0, 0);
	sim_program_compute(p, 1, "second half", SIM_PS_MAX / 2 + 1, 0, 0);
	sim_program_dep(p, 0);
	tsim_start(&ts, 0, p);
	expect_clock(&ts, "'second half' (started at 4.61169e+06 s)");
	ck_assert_int_eq(sim_now(ts.sim), SIM_PS_MAX / 2 + 1);
	sim_program_free(p);
	tsim_clear(&ts);

	/* 1 MB at 1e-7 B/s: 1e13 s. */
	tsim_init(&ts, TT_PAIRS, 2, 10e-6, 1e-7, 0);
	struct sim_program *s = sim_program_new(), *r = sim_program_new();
	sim_program_send(s, 0, "send", 0, 1, 1e6);
	sim_program_recv(r, 0, "recv", 0, 0, 1e6);
	tsim_start(&ts, 0, s);
	tsim_start(&ts, 1, r);
	expect_clock(&ts, "a transfer of 1000000 bytes from rank 0 to rank 1");
	sim_program_free(s);
	sim_program_free(r);
	tsim_clear(&ts);

	tsim_init_f(&ts, TT_PAIRS, 4, 10e-6, 1e-7, 0, SIM_FIDELITY_ANALYTIC);
	p = ring_allreduce(1e6);
	for (uint32_t k = 0; k < 4; k++)
		tsim_start(&ts, k, p);
	expect_clock(&ts, "collective 'ar'");
	sim_program_free(p);
	tsim_clear(&ts);
}
END_TEST

/*
 * Symmetry collapse: with ranks 2 and 3 absent, ranks 0 and 1 run the
 * 4-member ring all-reduce alone; it ends after its closed form for all 4,
 * in both fidelities (as one event: the flow is not simulated), the second
 * member arriving 5 us late. A message to an absent rank never arrives.
 */
START_TEST(test_absent_members)
{
	const double alpha = 10e-6, W = 50e9, n = 1e6;
	const uint32_t p = 4;
	for (const enum sim_fidelity *fid = fidelities; fid < fidelities + 2; fid++) {
		struct tsim ts;
		tsim_init_f(&ts, TT_PAIRS, p, alpha, W, 0, *fid);
		struct sim_program *prog = ring_allreduce(n), *late = sim_program_new();
		sim_program_compute(late, 0, "wait", 5 * US, 0, 0);
		sim_program_coll(late, 1, "ar", SIM_COLL_ALLREDUCE, &coll_ring, 0, n, 0, 0);
		sim_program_dep(late, 0);
		sim_rank_absent(ts.sim, 2);
		sim_rank_absent(ts.sim, 3);
		ck_assert(sim_rank_present(ts.sim, 0) && !sim_rank_present(ts.sim, 3));
		tsim_start(&ts, 0, prog);
		tsim_start(&ts, 1, late);
		tsim_run_ok(&ts);
		double want = 5e-6 + 2.0 * (p - 1) * (alpha + n / p / W);
		for (uint32_t r = 0; r < 2; r++) {
			double got = sim_ps_to_s(sim_rank_end(ts.sim, r));
			ck_assert_msg(rel_err(got, want) < 1e-6, "%s: rank %u ends at %.9g s, "
				      "expected %.9g s", sim_fidelity_name(*fid), r, got, want);
		}
		ck_assert_msg(sim_events(ts.sim) == 2, "%s: %llu events", sim_fidelity_name(*fid),
			      (unsigned long long)sim_events(ts.sim));
		ck_assert_int_eq(sim_rank_end(ts.sim, 3), 0);
		sim_program_free(prog);
		sim_program_free(late);
		tsim_clear(&ts);
	}
	/* A send to an absent rank: the sender is stuck, and says so. */
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 2, alpha, W, 0);
	struct sim_program *s = sim_program_new();
	sim_program_send(s, 0, "to the absent", 0, 1, n);
	sim_rank_absent(ts.sim, 1);
	tsim_start(&ts, 0, s);
	ck_assert_int_eq(sim_run(ts.sim), -1);
	ck_assert_msg(strstr(sim_error(ts.sim), "to the absent") != NULL, "error: %s",
		      sim_error(ts.sim));
	sim_program_free(s);
	tsim_clear(&ts);
}
END_TEST

/*
 * A chain of collectives on one group, costed in closed form (analytic):
 * three all-reduces in a row on stream 1, after a 2 us kernel, then a
 * kernel that waits for the last. Every member runs one program, so the
 * chain is one event; each op is recorded with the times one event per op
 * gives, and the step ends the same. Ranks of two programs (the same ops)
 * do not chain: one event per all-reduce, the same times.
 */
static struct sim_program *chain_program(const double *n)
{
	struct sim_program *p = sim_program_new();
	uint32_t w = sim_program_compute(p, 0, "w", 2 * US, 0, 0);
	static const char *const names[3] = { "a", "b", "c" };
	uint32_t last = 0;
	for (int k = 0; k < 3; k++) {
		last = sim_program_coll(p, 1, names[k], SIM_COLL_ALLREDUCE, &coll_ring, 0, n[k], 0,
					0);
		if (k == 0)
			sim_program_dep(p, w);
	}
	sim_program_compute(p, 0, "after", 1 * US, 0, 0);
	sim_program_dep(p, last);
	return p;
}

START_TEST(test_coll_chain)
{
	const double n[3] = { 1e6, 4e6, 2e5 };
	for (int two = 0; two < 2; two++) {
		struct tsim ts;
		tsim_init_f(&ts, TT_PAIRS, 4, 10e-6, 50e9, 0, SIM_FIDELITY_ANALYTIC);
		struct sim_program *p = chain_program(n), *q = chain_program(n);
		for (uint32_t r = 0; r < 4; r++)
			tsim_start(&ts, r, two && r >= 2 ? q : p);
		tsim_run_ok(&ts);
		sim_ps t = 2 * US;
		static const char *const names[3] = { "a", "b", "c" };
		for (int k = 0; k < 3; k++) {
			sim_ps d = sim_ps_from_s(sim_coll_time_s(ts.sim, ts.world, &coll_ring,
								 SIM_COLL_ALLREDUCE, n[k], 0));
			for (uint32_t r = 0; r < 4; r++)
				ASSERT_RECORD(ts.rec, r, names[k], t, t + d);
			t += d;
		}
		for (uint32_t r = 0; r < 4; r++) {
			ASSERT_RECORD(ts.rec, r, "after", t, t + 1 * US);
			ck_assert_int_eq(sim_rank_end(ts.sim, r), t + 1 * US);
		}
		/* w on 4 ranks, the all-reduces (one chain, or three), after on 4 */
		ck_assert_msg(sim_events(ts.sim) == (two ? 11u : 9u), "%s: %llu events",
			      two ? "two programs" : "one program",
			      (unsigned long long)sim_events(ts.sim));
		sim_program_free(p);
		sim_program_free(q);
		tsim_clear(&ts);
	}
}
END_TEST

/*
 * Streams whose ops end at one time, scheduled one after another, share a
 * heap entry (a bundle) but finish as separate events would: in the order
 * they were scheduled, counted one event each. Rank 3 starts first with a
 * longer kernel, then ranks 0-2 with equal ones (one bundle); their second
 * kernels, scheduled as each finishes, bundle again; rank 3 ends last.
 */
START_TEST(test_bundle_order)
{
	struct tsim ts;
	tsim_init_f(&ts, TT_PAIRS, 4, 10e-6, 50e9, 0, SIM_FIDELITY_ANALYTIC);
	struct sim_program *p = sim_program_new(), *q = sim_program_new();
	sim_program_compute(p, 0, "k1", 3 * US, 0, 0);
	sim_program_compute(p, 1, "k2", 1 * US, 0, 0);
	sim_program_dep(p, 0);
	sim_program_compute(q, 0, "long", 7 * US, 0, 0);
	tsim_start(&ts, 3, q);
	for (uint32_t r = 0; r < 3; r++)
		tsim_start(&ts, r, p);
	tsim_run_ok(&ts);
	static const struct { uint32_t rank; const char *name; sim_ps end; } want[] = {
		{ 0, "k1", 3 * US }, { 1, "k1", 3 * US }, { 2, "k1", 3 * US },
		{ 0, "k2", 4 * US }, { 1, "k2", 4 * US }, { 2, "k2", 4 * US },
		{ 3, "long", 7 * US },
	};
	ck_assert_uint_eq(ts.rec->n, ARRAY_SIZE(want));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		ck_assert_msg(ts.rec->e[i].rank == want[i].rank &&
			      !strcmp(ts.rec->e[i].op->name, want[i].name) &&
			      ts.rec->e[i].end == want[i].end,
			      "record %zu: rank %u '%s' ending at %lld ps", i, ts.rec->e[i].rank,
			      ts.rec->e[i].op->name, (long long)ts.rec->e[i].end);
	ck_assert_uint_eq(sim_events(ts.sim), 7);
	sim_program_free(p);
	sim_program_free(q);
	tsim_clear(&ts);
}
END_TEST

/* A collective on a group of one finishes when it starts. */
START_TEST(test_collective_one_member)
{
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 2, 10e-6, 50e9, 0);
	uint32_t me = 0;
	uint32_t solo = sim_group_add(ts.sim, &me, 1);
	ck_assert_uint_eq(sim_group_size(ts.sim, solo), 1);
	struct sim_program *p = sim_program_new();
	sim_program_coll(p, 1, "ar0", SIM_COLL_ALLREDUCE, NULL, 0, 1e9, 0, 0);
	sim_program_compute(p, 1, "work", 3 * US, 0, 0);
	sim_program_coll(p, 1, "ar1", SIM_COLL_ALLREDUCE, NULL, 0, 1e9, 0, 0);
	sim_program_coll(p, 1, "ag", SIM_COLL_ALLGATHER, &coll_ring, 0, 1e9, 0, 0);
	sim_rank_start(ts.sim, 0, p, &solo, 1);
	tsim_run_ok(&ts);
	ASSERT_RECORD(ts.rec, 0, "ar0", 0, 0);
	ASSERT_RECORD(ts.rec, 0, "work", 0, 3 * US);
	ASSERT_RECORD(ts.rec, 0, "ar1", 3 * US, 3 * US);
	ASSERT_RECORD(ts.rec, 0, "ag", 3 * US, 3 * US);
	ck_assert_int_eq(sim_rank_end(ts.sim, 0), 3 * US);
	sim_program_free(p);
	tsim_clear(&ts);
}
END_TEST

/* ---- recorder, determinism, independence ------------------------------------------ */

/*
 * A mixed program on p ranks: rank-dependent compute, an all-reduce chosen by
 * auto, a ring shift of point-to-point messages on another stream, an
 * all-to-all after both. One program per rank (the compute differs).
 */
static struct sim_program *mixed_program(uint32_t rank, uint32_t p)
{
	struct sim_program *prog = sim_program_new();
	uint32_t c = sim_program_compute(prog, 0, "fwd", (sim_ps)(rank + 1) * 7 * US, 1e12, 1e9);
	sim_program_coll(prog, 1, "allreduce", SIM_COLL_ALLREDUCE, NULL, 0, 4.3e6, 0, 0);
	sim_program_dep(prog, c);
	uint32_t sd = sim_program_send(prog, 2, "shift send", 0, (rank + 1) % p, 3e6);
	sim_program_recv(prog, 3, "shift recv", 0, (rank + p - 1) % p, 3e6);
	sim_program_compute(prog, 0, "bwd", 11 * US, 2e12, 1e9);
	sim_program_coll(prog, 1, "alltoall", SIM_COLL_ALLTOALL, NULL, 0, 2e6, 0, 0);
	sim_program_dep(prog, sd);
	return prog;
}

struct mixed_result {
	sim_ps end[8];
	uint64_t events;
	uint32_t records;
	uint32_t nlinks;
};

static void run_mixed(enum tt_kind kind, uint32_t p, struct mixed_result *out)
{
	struct tsim ts;
	struct sim_program *progs[8];
	ck_assert_uint_le(p, 8);
	tsim_init(&ts, kind, p, 3e-6, 25e9, 256 * 1024);
	for (uint32_t r = 0; r < p; r++) {
		progs[r] = mixed_program(r, p);
		tsim_start(&ts, r, progs[r]);
	}
	tsim_run_ok(&ts);
	memset(out, 0, sizeof *out);
	for (uint32_t r = 0; r < p; r++)
		out->end[r] = sim_rank_end(ts.sim, r);
	out->events = sim_events(ts.sim);
	out->records = ts.rec->n;
	out->nlinks = sim_nlinks(ts.sim);
	/* Every op of every rank recorded exactly once, start <= end. */
	uint32_t total = 0;
	for (uint32_t r = 0; r < p; r++) {
		total += progs[r]->nops;
		for (uint32_t i = 0; i < progs[r]->nops; i++) {
			const struct sim_op *op = &progs[r]->ops[i];
			uint32_t seen = 0;
			for (uint32_t k = 0; k < ts.rec->n; k++) {
				const struct rec_entry *e = &ts.rec->e[k];
				if (e->op != op)
					continue;
				seen++;
				ck_assert_msg(e->rank == r, "op '%s' of rank %u recorded as rank %u",
					      op->name, r, e->rank);
				ck_assert_msg(e->start <= e->end && e->end <= out->end[r],
					      "rank %u op '%s': start %lld, end %lld, rank end %lld",
					      r, op->name, (long long)e->start, (long long)e->end,
					      (long long)out->end[r]);
			}
			ck_assert_msg(seen == 1, "rank %u op '%s' recorded %u times", r, op->name,
				      seen);
		}
	}
	ck_assert_uint_eq(ts.rec->n, total);
	/* Program order on each stream, and the dependencies. */
	for (uint32_t r = 0; r < p; r++) {
		const struct rec_entry *fwd = rec_find(ts.rec, r, "fwd");
		const struct rec_entry *bwd = rec_find(ts.rec, r, "bwd");
		const struct rec_entry *arr = rec_find(ts.rec, r, "allreduce");
		const struct rec_entry *a2a = rec_find(ts.rec, r, "alltoall");
		const struct rec_entry *sd = rec_find(ts.rec, r, "shift send");
		ck_assert_msg(bwd->start == fwd->end, "rank %u: bwd starts %lld, fwd ends %lld",
			      r, (long long)bwd->start, (long long)fwd->end);
		ck_assert_msg(arr->start >= fwd->end, "rank %u: all-reduce starts %lld before "
			      "fwd ends %lld", r, (long long)arr->start, (long long)fwd->end);
		ck_assert_msg(a2a->start >= arr->end && a2a->start >= sd->end,
			      "rank %u: all-to-all starts %lld; all-reduce ends %lld, send %lld",
			      r, (long long)a2a->start, (long long)arr->end, (long long)sd->end);
	}
	for (uint32_t r = 0; r < p; r++)
		sim_program_free(progs[r]);
	tsim_clear(&ts);
}

START_TEST(test_recorder_and_determinism)
{
	for (int kind = TT_PAIRS; kind <= TT_STAR; kind++) {
		struct mixed_result a, b;
		run_mixed((enum tt_kind)kind, 6, &a);
		run_mixed((enum tt_kind)kind, 6, &b);
		ck_assert_msg(a.events == b.events, "events %llu then %llu",
			      (unsigned long long)a.events, (unsigned long long)b.events);
		ck_assert_uint_eq(a.records, b.records);
		ck_assert_uint_eq(a.nlinks, b.nlinks);
		for (uint32_t r = 0; r < 6; r++)
			ck_assert_msg(a.end[r] == b.end[r], "rank %u ends at %lld then %lld", r,
				      (long long)a.end[r], (long long)b.end[r]);
		ck_assert_msg(a.events > 100, "only %llu events", (unsigned long long)a.events);
	}
}
END_TEST

/* Two sims alive at once, with different links, started before either runs. */
START_TEST(test_two_sims_independent)
{
	const double n = 10e6;
	struct tsim A, B;
	tsim_init(&A, TT_PAIRS, 2, 10e-6, 50e9, 0);
	tsim_init(&B, TT_STAR, 3, 2e-6, 25e9, 64 * 1024);
	struct sim_program *s = sim_program_new(), *r = sim_program_new(), *x = sim_program_new();
	sim_program_send(s, 0, "send", 0, 1, n);
	sim_program_recv(r, 0, "recv", 0, 0, n);
	sim_program_compute(x, 0, "idle", 1 * US, 0, 0);
	tsim_start(&A, 0, s);
	tsim_start(&B, 0, s);
	tsim_start(&A, 1, r);
	tsim_start(&B, 1, r);
	tsim_start(&B, 2, x);
	tsim_run_ok(&B);  /* B first: A's pending events must stay A's */
	ck_assert_int_eq(sim_now(A.sim), 0);
	ck_assert_uint_eq(sim_events(A.sim), 0);
	tsim_run_ok(&A);
	sim_ps wa = sim_ps_from_s(10e-6 + n / 50e9), wb = sim_ps_from_s(2e-6 + n / 25e9);
	ASSERT_PS_NEAR(sim_rank_end(A.sim, 1), wa, nchunks(n, SIM_DEFAULT_CHUNK_BYTES), "sim A");
	ASSERT_PS_NEAR(sim_rank_end(B.sim, 1), wb, nchunks(n, 64 * 1024), "sim B");
	ck_assert_int_eq(sim_rank_end(B.sim, 2), 1 * US);
	ck_assert_uint_eq(sim_nlinks(A.sim), 1);
	ck_assert_uint_eq(sim_nlinks(B.sim), 2);
	ck_assert_uint_eq(A.rec->n, 2);
	ck_assert_uint_eq(B.rec->n, 3);
	/* Each alone gives the same. */
	struct tsim C;
	tsim_init(&C, TT_PAIRS, 2, 10e-6, 50e9, 0);
	tsim_start(&C, 0, s);
	tsim_start(&C, 1, r);
	tsim_run_ok(&C);
	ck_assert_int_eq(sim_rank_end(C.sim, 1), sim_rank_end(A.sim, 1));
	ck_assert_uint_eq(sim_events(C.sim), sim_events(A.sim));
	tsim_clear(&C);
	tsim_clear(&A);
	tsim_clear(&B);
	sim_program_free(s);
	sim_program_free(r);
	sim_program_free(x);
}
END_TEST

/* A rank may run a second program once the first has finished. */
START_TEST(test_rank_restart)
{
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 1, 10e-6, 50e9, 0);
	struct sim_program *p = sim_program_new();
	sim_program_compute(p, 0, "step", 4 * US, 0, 0);
	tsim_start(&ts, 0, p);
	tsim_run_ok(&ts);
	ck_assert_int_eq(sim_rank_end(ts.sim, 0), 4 * US);
	tsim_start(&ts, 0, p);
	tsim_run_ok(&ts);
	ck_assert_int_eq(sim_rank_end(ts.sim, 0), 8 * US);
	ck_assert_uint_eq(ts.rec->n, 2);
	ck_assert_int_eq(ts.rec->e[1].start, 4 * US);
	sim_program_free(p);
	tsim_clear(&ts);
}
END_TEST

/*
 * Collectives are matched by count across programs: the n-th collective a
 * member joins on a group is one instance, however many programs it took.
 */
START_TEST(test_collective_across_restarts)
{
	const double alpha = 10e-6, W = 50e9, n = 1e6;
	const uint32_t p = 4;
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, p, alpha, W, 0);
	struct sim_program *prog = sim_program_new();
	sim_program_coll(prog, 1, "ar", SIM_COLL_ALLREDUCE, &coll_ring, 0, n, 0, 0);
	double one = 2.0 * (p - 1) * (alpha + n / p / W);
	for (int round = 1; round <= 3; round++) {
		for (uint32_t r = 0; r < p; r++)
			tsim_start(&ts, r, prog);
		tsim_run_ok(&ts);
		for (uint32_t r = 0; r < p; r++) {
			double got = sim_ps_to_s(sim_rank_end(ts.sim, r));
			ck_assert_msg(rel_err(got, round * one) < 1e-6, "round %d: rank %u ends at "
				      "%.9g s, expected %.9g s", round, r, got, round * one);
		}
	}
	ck_assert_uint_eq(ts.rec->n, 3 * p);
	sim_program_free(prog);
	tsim_clear(&ts);
}
END_TEST

/* A group added after some ranks started; ranks started later use both. */
START_TEST(test_group_added_later)
{
	const double alpha = 10e-6, W = 50e9, n = 1e6;
	struct tsim ts;
	tsim_init(&ts, TT_PAIRS, 3, alpha, W, 0);
	struct sim_program *solo = sim_program_new(), *pair = sim_program_new();
	sim_program_compute(solo, 0, "work", 50 * US, 0, 0);
	sim_program_coll(solo, 1, "world ar", SIM_COLL_ALLREDUCE, &coll_ring, 0, n, 0, 0);
	sim_program_dep(solo, 0);
	tsim_start(&ts, 0, solo);
	uint32_t members[2] = { 1, 2 };
	uint32_t sub = sim_group_add(ts.sim, members, 2);
	uint32_t slots[2] = { ts.world, sub };
	/* Ranks 1, 2: an all-reduce among themselves, then the world's. */
	sim_program_coll(pair, 1, "pair ar", SIM_COLL_ALLREDUCE, &coll_ring, 1, n, 0, 0);
	sim_program_coll(pair, 1, "world ar", SIM_COLL_ALLREDUCE, &coll_ring, 0, n, 0, 0);
	sim_rank_start(ts.sim, 1, pair, slots, 2);
	sim_rank_start(ts.sim, 2, pair, slots, 2);
	tsim_run_ok(&ts);
	double t_pair = 2.0 * (alpha + n / 2 / W);
	double t_world = 4.0 * (alpha + n / 3 / W);
	double got = sim_ps_to_s(rec_find(ts.rec, 1, "pair ar")->end);
	ck_assert_msg(rel_err(got, t_pair) < 1e-6, "pair all-reduce ends at %.9g s, expected "
		      "%.9g s", got, t_pair);
	for (uint32_t r = 0; r < 3; r++) {
		got = sim_ps_to_s(sim_rank_end(ts.sim, r));
		ck_assert_msg(rel_err(got, 50e-6 + t_world) < 1e-6, "rank %u ends at %.9g s, "
			      "expected %.9g s", r, got, 50e-6 + t_world);
	}
	sim_program_free(solo);
	sim_program_free(pair);
	tsim_clear(&ts);
}
END_TEST

START_TEST(test_link_names)
{
	struct tsim ts;
	tsim_init(&ts, TT_STAR, 2, 1e-6, 1e9, 0);
	struct sim_route rt;
	tt_ops.route(&ts.topo, ts.sim, 0, 1, &rt);
	ck_assert_uint_eq(rt.n, 2);
	struct sim_link_stats a, b;
	sim_link_stats(ts.sim, rt.link[0], &a);
	sim_link_stats(ts.sim, rt.link[1], &b);
	char na[32], nb[32];
	tt_ops.link_name(&ts.topo, a.tag, na, sizeof na);
	tt_ops.link_name(&ts.topo, b.tag, nb, sizeof nb);
	ck_assert_str_eq(na, "r0.tx");
	ck_assert_str_eq(nb, "r1.rx");
	tsim_clear(&ts);
}
END_TEST

static Suite *engine_suite(void)
{
	Suite *s = suite_create("engine");
	TCase *tc = tcase_create("streams");
	tcase_add_test(tc, test_compute_back_to_back);
	tcase_add_test(tc, test_deps_across_streams);
	tcase_add_test(tc, test_streams_overlap);
	tcase_add_test(tc, test_zero_compute);
	tcase_add_test(tc, test_compute_runs);
	tcase_add_test(tc, test_compute_run_cut);
	tcase_add_test(tc, test_compute_scale);
	tcase_add_test(tc, test_interference);
	tcase_add_test(tc, test_interference_comm);
	tcase_add_test(tc, test_interference_run_cut);
	tcase_add_test(tc, test_host);
	tcase_add_test(tc, test_auto_nccl);
	tcase_add_test(tc, test_analytic_sharing);
	tcase_add_test(tc, test_rank_speed);
	tcase_add_test(tc, test_rank_done);
	tcase_add_test(tc, test_coll_chain);
	tcase_add_test(tc, test_bundle_order);
	tcase_add_test(tc, test_rank_restart);
	suite_add_tcase(s, tc);

	tc = tcase_create("p2p");
	tcase_add_loop_test(tc, test_send_recv_time, 0, (int)(sizeof chunk_sizes / sizeof chunk_sizes[0]));
	tcase_add_test(tc, test_recv_before_or_after_send);
	tcase_add_loop_test(tc, test_shared_link_halves, 0, 3);
	tcase_add_test(tc, test_disjoint_links_full_speed);
	tcase_add_test(tc, test_bulk_split);
	tcase_add_test(tc, test_p2p_program_order);
	tcase_add_test(tc, test_p2p_waiters_fifo);
	tcase_add_test(tc, test_link_names);
	suite_add_tcase(s, tc);

	tc = tcase_create("failures");
	tcase_add_test(tc, test_deadlock_unmatched_recv);
	tcase_add_test(tc, test_deadlock_cycle);
	tcase_add_test(tc, test_deadlock_collective);
	tcase_add_test(tc, test_collective_mismatch);
	tcase_add_test(tc, test_collective_refused);
	tcase_add_test(tc, test_free_after_failure_in_flight);
	suite_add_tcase(s, tc);

	tc = tcase_create("collectives");
	tcase_add_test(tc, test_ring_allreduce_closed_form);
	tcase_add_test(tc, test_collective_one_member);
	tcase_add_test(tc, test_absent_members);
	tcase_add_test(tc, test_clock_limit);
	tcase_add_test(tc, test_collective_across_restarts);
	tcase_add_test(tc, test_group_added_later);
	suite_add_tcase(s, tc);

	tc = tcase_create("runs");
	tcase_add_test(tc, test_recorder_and_determinism);
	tcase_add_test(tc, test_two_sims_independent);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(engine_suite());
}
