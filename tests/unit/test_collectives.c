/*
 * test_collectives.c - unit tests for collectives/: the registry, op names and
 * bus-bandwidth factors, and every algorithm's plan() and step() taken by
 * themselves, without the engine.
 *
 * For every algorithm, every op it implements and a range of group sizes the
 * plan is built by hand (as sim/coll.c would build it), then the steps are
 * checked against the contract of struct sim_coll_algo in sim/sim.h:
 *   - if v sends to d at step k, d receives from v at step k, the same bytes,
 *     and the other way round (step consistency);
 *   - every member receives, over all steps, the bytes the algorithm's closed
 *     form moves (2(p-1)/p n for a ring all-reduce, and so on);
 *   - sizes an algorithm cannot handle are refused with a message.
 * A last group runs whole collectives through coll_bench (tests/testlib.h):
 * on the ideal cluster the flow and analytic fidelities must agree.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/coll.h"
#include "sim/sim.h"
#include "tests/testlib.h"
#include "tests/checkmain.h"

static const uint32_t sizes[] = { 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32 };
enum { NSIZES = sizeof sizes / sizeof sizes[0], PMAX = 32 };

static const double N_BYTES = 1e6;

static int is_pow2(uint32_t p) { return p && !(p & (p - 1)); }

static uint32_t log2u(uint32_t p)
{
	uint32_t l = 0;
	while (p >>= 1)
		l++;
	return l;
}

/* The plan sim/coll.c would hand the algorithm, by hand. */
static struct sim_coll_plan make_plan(enum sim_coll_op op, uint32_t p)
{
	struct sim_coll_plan plan = {
		.op = op, .p = p, .bytes = N_BYTES, .channels = 1, .root = 0,
		.alpha_s = 1e-5, .beta_s = 2e-11,
	};
	if (p % 4 == 0)
		plan.nodes = p / 4, plan.per_node = 4;
	else
		plan.nodes = p, plan.per_node = 1;
	return plan;
}

/* Is this (algorithm, op, p) documented as refused? */
static int documented_refusal(const struct sim_coll_algo *a, enum sim_coll_op op, uint32_t p)
{
	if (a == &coll_hd)
		return !is_pow2(p);
	if (a == &coll_rd)
		return op != SIM_COLL_ALLREDUCE && !is_pow2(p);
	return 0;
}

/* Bytes member v receives in all on one channel, by the closed forms. */
static double expected_recv(const struct sim_coll_algo *a, const struct sim_coll_plan *pl,
			    uint32_t v)
{
	double n = pl->bytes / pl->channels, p = pl->p;
	switch (pl->op) {
	case SIM_COLL_ALLREDUCE:
		if (a == &coll_rd) {
			uint32_t pp = 1u << log2u(pl->p), extra = pl->p - pp, L = log2u(pl->p);
			if (v >= pp)
				return n;                 /* out at the fold, back at the end */
			return (L + (v < extra ? 1 : 0)) * n;
		}
		if (a == &coll_hier) {
			double g = pl->per_node, N = pl->nodes;
			return 2 * (g - 1) / g * n + 2 * (N - 1) / (g * N) * n;
		}
		return 2 * (p - 1) / p * n;               /* ring, hd */
	case SIM_COLL_REDUCESCATTER:
	case SIM_COLL_ALLGATHER:
	case SIM_COLL_ALLTOALL:
		return (p - 1) / p * n;
	case SIM_COLL_BROADCAST:
		return v == pl->root ? 0 : n;
	default:
		return NAN;
	}
}

/* Steps the plan should have (0: not pinned here). */
static uint32_t expected_nsteps(const struct sim_coll_algo *a, const struct sim_coll_plan *pl)
{
	uint32_t p = pl->p, L = log2u(p);
	if (a == &coll_ring)
		return pl->op == SIM_COLL_ALLREDUCE ? 2 * (p - 1)
		     : pl->op == SIM_COLL_BROADCAST ? pl->slices + p - 2 : p - 1;
	if (a == &coll_rd)
		return pl->op == SIM_COLL_ALLREDUCE && !is_pow2(p) ? L + 2 : L;
	if (a == &coll_hd)
		return 2 * L;
	if (a == &coll_hier)
		return 2 * (pl->per_node - 1) + 2 * (pl->nodes - 1);
	if (a == &coll_pairwise)
		return p - 1;
	return 0;
}

/*
 * Check every step of a planned collective: peers in range and not the
 * member itself, sends matched by receives of equal bytes both ways, and the
 * bytes each member receives in all.
 */
static void check_steps(const struct sim_coll_algo *a, const struct sim_coll_plan *pl)
{
	static struct sim_coll_step st[PMAX];
	double recv_total[PMAX] = { 0 }, send_total = 0, recv_sum = 0;
	const char *opn = sim_coll_op_name(pl->op);
	uint32_t p = pl->p;
	ck_assert_uint_le(p, PMAX);
	for (uint32_t k = 0; k < pl->nsteps; k++) {
		for (uint32_t v = 0; v < p; v++) {
			memset(&st[v], 0x5a, sizeof st[v]);
			a->step(pl, v, k, &st[v]);
			int32_t s = st[v].send_to, r = st[v].recv_from;
			ck_assert_msg(s >= -1 && s < (int32_t)p && s != (int32_t)v &&
				      r >= -1 && r < (int32_t)p && r != (int32_t)v,
				      "%s %s p=%u step %u member %u: send_to %d, recv_from %d",
				      a->name, opn, p, k, v, s, r);
			ck_assert_msg(s < 0 || (st[v].send_bytes > 0 && isfinite(st[v].send_bytes)),
				      "%s %s p=%u step %u member %u sends %g B", a->name, opn, p,
				      k, v, st[v].send_bytes);
		}
		for (uint32_t v = 0; v < p; v++) {
			int32_t d = st[v].send_to, s = st[v].recv_from;
			if (d >= 0) {
				ck_assert_msg(st[d].recv_from == (int32_t)v,
					      "%s %s p=%u step %u: %u sends to %d, which receives "
					      "from %d", a->name, opn, p, k, v, d, st[d].recv_from);
				ck_assert_msg(st[d].recv_bytes == st[v].send_bytes,
					      "%s %s p=%u step %u: %u sends %.17g B to %d, which "
					      "expects %.17g B", a->name, opn, p, k, v,
					      st[v].send_bytes, d, st[d].recv_bytes);
				send_total += st[v].send_bytes;
			}
			if (s >= 0) {
				ck_assert_msg(st[s].send_to == (int32_t)v,
					      "%s %s p=%u step %u: %u receives from %d, which "
					      "sends to %d", a->name, opn, p, k, v, s, st[s].send_to);
				recv_total[v] += st[v].recv_bytes;
				recv_sum += st[v].recv_bytes;
			}
		}
	}
	for (uint32_t v = 0; v < p; v++) {
		double want = expected_recv(a, pl, v);
		ck_assert_msg(rel_err(recv_total[v], want) < 1e-12,
			      "%s %s p=%u (nodes %u x %u): member %u receives %.17g B in all, "
			      "expected %.17g B", a->name, opn, p, pl->nodes, pl->per_node, v,
			      recv_total[v], want);
	}
	ck_assert_msg(rel_err(send_total, recv_sum) < 1e-12, "%s %s p=%u: %.17g B sent, "
		      "%.17g B received", a->name, opn, p, send_total, recv_sum);
}

/* ---- the registry, names, factors ---------------------------------------------------- */

START_TEST(test_registry)
{
	ck_assert_ptr_eq(coll_find("ring"), &coll_ring);
	ck_assert_ptr_eq(coll_find("rd"), &coll_rd);
	ck_assert_ptr_eq(coll_find("hd"), &coll_hd);
	ck_assert_ptr_eq(coll_find("hier"), &coll_hier);
	ck_assert_ptr_eq(coll_find("pairwise"), &coll_pairwise);
	ck_assert_ptr_null(coll_find("nope"));
	ck_assert_ptr_null(coll_find(""));
	ck_assert_ptr_null(coll_find("Ring"));
	size_t n = 0;
	for (const struct sim_coll_algo *const *a = coll_algos; *a; a++, n++) {
		const struct sim_coll_algo *x = *a;
		ck_assert_msg(x->name && x->name[0] && x->help && x->help[0],
			      "algorithm %zu lacks a name or help", n);
		ck_assert_msg(x->plan && x->step && x->time_s, "algorithm %s lacks plan, step "
			      "or time_s", x->name);
		ck_assert_msg(x->ops != 0 && (x->ops >> SIM_COLL_NOPS) == 0,
			      "algorithm %s: ops 0x%x", x->name, x->ops);
		ck_assert_ptr_eq(coll_find(x->name), x);
		ck_assert_msg(strstr(coll_names(), x->name) != NULL, "coll_names() \"%s\" "
			      "lacks %s", coll_names(), x->name);
		for (const struct sim_coll_algo *const *b = coll_algos; b != a; b++)
			ck_assert_msg(strcmp((*b)->name, x->name) != 0, "two algorithms named %s",
				      x->name);
	}
	ck_assert_uint_eq(n, 5);
	/* Every op has at least one algorithm. */
	for (int op = 0; op < SIM_COLL_NOPS; op++) {
		int have = 0;
		for (const struct sim_coll_algo *const *a = coll_algos; *a; a++)
			have |= ((*a)->ops >> op) & 1;
		ck_assert_msg(have, "no algorithm implements %s", sim_coll_op_name(op));
	}
}
END_TEST

START_TEST(test_op_names)
{
	static const char *const names[SIM_COLL_NOPS] = {
		"allreduce", "reducescatter", "allgather", "alltoall", "broadcast",
	};
	for (int op = 0; op < SIM_COLL_NOPS; op++) {
		const char *n = sim_coll_op_name(op);
		ck_assert_str_eq(n, names[op]);
		ck_assert_int_eq(sim_coll_op_parse(n), op);
	}
	ck_assert_int_eq(sim_coll_op_parse("nope"), -1);
	ck_assert_int_eq(sim_coll_op_parse(""), -1);
	ck_assert_int_eq(sim_coll_op_parse("AllReduce"), -1);
	ck_assert_str_eq(sim_coll_op_name(SIM_COLL_NOPS), "?");
}
END_TEST

START_TEST(test_busbw_factor)
{
	static const struct {
		enum sim_coll_op op;
		uint32_t p;
		double want;
	} cases[] = {
		{ SIM_COLL_ALLREDUCE, 8, 1.75 },
		{ SIM_COLL_ALLREDUCE, 2, 1.0 },
		{ SIM_COLL_ALLREDUCE, 1, 0.0 },
		{ SIM_COLL_ALLREDUCE, 32, 62.0 / 32 },
		{ SIM_COLL_REDUCESCATTER, 8, 0.875 },
		{ SIM_COLL_ALLGATHER, 8, 0.875 },
		{ SIM_COLL_ALLGATHER, 3, 2.0 / 3 },
		{ SIM_COLL_ALLTOALL, 8, 0.875 },
		{ SIM_COLL_ALLTOALL, 1, 0.0 },
		{ SIM_COLL_BROADCAST, 8, 1.0 },
		{ SIM_COLL_BROADCAST, 1, 1.0 },
		{ SIM_COLL_ALLREDUCE, 0, 0.0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		double got = sim_coll_busbw_factor(cases[i].op, cases[i].p);
		ck_assert_msg(fabs(got - cases[i].want) < 1e-15, "busbw factor of %s on %u = "
			      "%.17g, expected %.17g", sim_coll_op_name(cases[i].op), cases[i].p,
			      got, cases[i].want);
	}
}
END_TEST

/* ---- plans and steps ------------------------------------------------------------------- */

/* _i indexes coll_algos. */
START_TEST(test_steps_consistent)
{
	const struct sim_coll_algo *a = coll_algos[_i];
	uint32_t planned = 0;
	for (int op = 0; op < SIM_COLL_NOPS; op++) {
		if (!(a->ops & (1u << op)))
			continue;
		for (size_t i = 0; i < NSIZES; i++) {
			uint32_t p = sizes[i];
			struct sim_coll_plan pl = make_plan(op, p);
			char err[256] = "";
			int rc = a->plan(&pl, err, sizeof err);
			int refuse = documented_refusal(a, op, p);
			if (rc < 0) {
				ck_assert_msg(rc == -1 && err[0] != 0, "%s %s p=%u refused (%d) "
					      "without a message", a->name, sim_coll_op_name(op),
					      p, rc);
				ck_assert_msg(refuse, "%s %s p=%u refused: %s", a->name,
					      sim_coll_op_name(op), p, err);
				continue;
			}
			ck_assert_msg(rc == 0 && !refuse, "%s %s p=%u: plan() = %d, expected a "
				      "refusal", a->name, sim_coll_op_name(op), p, rc);
			uint32_t want = expected_nsteps(a, &pl);
			ck_assert_msg(pl.nsteps == want, "%s %s p=%u: %u steps, expected %u",
				      a->name, sim_coll_op_name(op), p, pl.nsteps, want);
			check_steps(a, &pl);
			planned++;
		}
	}
	ck_assert_msg(planned > 0, "%s: no plan accepted", a->name);
}
END_TEST

/* Broadcast from other roots and over several channels. */
START_TEST(test_broadcast_roots)
{
	for (size_t i = 0; i < NSIZES; i++)
		for (uint32_t root = 0; root < sizes[i]; root += 3)
			for (uint32_t c = 1; c <= 4; c *= 2) {
				struct sim_coll_plan pl = make_plan(SIM_COLL_BROADCAST, sizes[i]);
				pl.root = root;
				pl.channels = c;
				pl.bytes = 64e6;   /* enough for several slices */
				char err[256] = "";
				ck_assert_msg(coll_ring.plan(&pl, err, sizeof err) == 0,
					      "ring broadcast p=%u: %s", sizes[i], err);
				ck_assert_msg(pl.slices >= 1 && pl.slices <= 1024, "p=%u: %u slices",
					      sizes[i], pl.slices);
				check_steps(&coll_ring, &pl);
			}
}
END_TEST

/* The documented refusals and the fold-in/fold-out of rd on 6 ranks. */
START_TEST(test_refusals)
{
	char err[256];
	struct sim_coll_plan pl;
	static const uint32_t odd[] = { 3, 5, 6, 7, 12, 24 };
	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
		uint32_t p = odd[i];
		pl = make_plan(SIM_COLL_ALLREDUCE, p);
		err[0] = 0;
		ck_assert_int_eq(coll_hd.plan(&pl, err, sizeof err), -1);
		ck_assert_msg(strstr(err, "power") != NULL, "hd p=%u: \"%s\"", p, err);
		for (int op = SIM_COLL_REDUCESCATTER; op <= SIM_COLL_ALLGATHER; op++) {
			pl = make_plan(op, p);
			err[0] = 0;
			ck_assert_int_eq(coll_rd.plan(&pl, err, sizeof err), -1);
			ck_assert_msg(strstr(err, "power") && strstr(err, sim_coll_op_name(op)),
				      "rd %s p=%u: \"%s\"", sim_coll_op_name(op), p, err);
		}
	}
	pl = make_plan(SIM_COLL_ALLREDUCE, 6);
	err[0] = 0;
	ck_assert_msg(coll_rd.plan(&pl, err, sizeof err) == 0, "rd allreduce p=6: %s", err);
	ck_assert_uint_eq(pl.nsteps, 4);
	/* Step 0 folds 4, 5 into 0, 1; the last step sends the result back. */
	struct sim_coll_step st;
	coll_rd.step(&pl, 4, 0, &st);
	ck_assert_msg(st.send_to == 0 && st.recv_from == -1, "rd p=6 step 0 member 4: "
		      "send_to %d recv_from %d", st.send_to, st.recv_from);
	coll_rd.step(&pl, 2, 0, &st);
	ck_assert_msg(st.send_to == -1 && st.recv_from == -1, "rd p=6 step 0 member 2: "
		      "send_to %d recv_from %d", st.send_to, st.recv_from);
	coll_rd.step(&pl, 5, 3, &st);
	ck_assert_msg(st.send_to == -1 && st.recv_from == 1, "rd p=6 step 3 member 5: "
		      "send_to %d recv_from %d", st.send_to, st.recv_from);
	coll_rd.step(&pl, 4, 1, &st);
	ck_assert_msg(st.send_to == -1 && st.recv_from == -1, "rd p=6 step 1 member 4 (out): "
		      "send_to %d recv_from %d", st.send_to, st.recv_from);
	/* hier refuses uneven nodes. */
	pl = make_plan(SIM_COLL_ALLREDUCE, 12);
	pl.per_node = 0;
	pl.nodes = 2;
	err[0] = 0;
	ck_assert_int_eq(coll_hier.plan(&pl, err, sizeof err), -1);
	ck_assert_msg(err[0] != 0, "hier on uneven nodes refused without a message");
}
END_TEST

/* Steps of equal pattern() use the same peers wherever both send. */
START_TEST(test_patterns)
{
	for (const struct sim_coll_algo *const *ap = coll_algos; *ap; ap++) {
		const struct sim_coll_algo *a = *ap;
		if (!a->pattern)
			continue;
		for (int op = 0; op < SIM_COLL_NOPS; op++) {
			if (!(a->ops & (1u << op)))
				continue;
			for (size_t i = 0; i < NSIZES; i++) {
				struct sim_coll_plan pl = make_plan(op, sizes[i]);
				char err[256];
				if (a->plan(&pl, err, sizeof err) < 0)
					continue;
				for (uint32_t k1 = 0; k1 < pl.nsteps; k1++)
					for (uint32_t k2 = k1 + 1; k2 < pl.nsteps; k2++) {
						if (a->pattern(&pl, k1) != a->pattern(&pl, k2))
							continue;
						for (uint32_t v = 0; v < pl.p; v++) {
							struct sim_coll_step s1, s2;
							a->step(&pl, v, k1, &s1);
							a->step(&pl, v, k2, &s2);
							ck_assert_msg(s1.send_to < 0 || s2.send_to < 0 ||
								      s1.send_to == s2.send_to,
								      "%s %s p=%u: steps %u and %u share "
								      "a pattern; member %u sends to %d "
								      "and %d", a->name,
								      sim_coll_op_name(op), pl.p, k1, k2,
								      v, s1.send_to, s2.send_to);
						}
					}
			}
		}
	}
}
END_TEST

/* time_s on uniform links (alpha, W) against the SPEC closed forms. */
START_TEST(test_closed_forms)
{
	const double a = 10e-6, W = 50e9, n = 1e9, b = 1 / W;
	struct sim_coll_linkset l = { .all = { .alpha_intra_s = a, .bw_intra_Bps = W } };
	struct {
		const struct sim_coll_algo *algo;
		enum sim_coll_op op;
		uint32_t p;
		double want;
	} cases[] = {
		{ &coll_ring, SIM_COLL_ALLREDUCE, 8, 14 * a + 14.0 / 8 * n * b },     /* C1 */
		{ &coll_ring, SIM_COLL_REDUCESCATTER, 8, 7 * a + 7.0 / 8 * n * b },   /* C2 */
		{ &coll_ring, SIM_COLL_ALLGATHER, 6, 5 * a + 5.0 / 6 * n * b },
		{ &coll_rd, SIM_COLL_ALLREDUCE, 8, 3 * (a + n * b) },                 /* C3 */
		{ &coll_rd, SIM_COLL_ALLREDUCE, 6, 4 * (a + n * b) },
		{ &coll_rd, SIM_COLL_REDUCESCATTER, 8, 3 * a + 7.0 / 8 * n * b },
		{ &coll_rd, SIM_COLL_ALLGATHER, 16, 4 * a + 15.0 / 16 * n * b },
		{ &coll_hd, SIM_COLL_ALLREDUCE, 8, 6 * a + 14.0 / 8 * n * b },        /* C4 */
		{ &coll_pairwise, SIM_COLL_ALLTOALL, 8, 7 * a + 7.0 / 8 * n * b },    /* C5 */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct sim_coll_plan pl = make_plan(cases[i].op, cases[i].p);
		pl.bytes = n;
		char err[256] = "";
		ck_assert_msg(cases[i].algo->plan(&pl, err, sizeof err) == 0, "%s: %s",
			      cases[i].algo->name, err);
		double got = cases[i].algo->time_s(&pl, &l);
		ck_assert_msg(rel_err(got, cases[i].want) < 1e-12, "%s %s p=%u: %.9g s, "
			      "expected %.9g s", cases[i].algo->name,
			      sim_coll_op_name(cases[i].op), cases[i].p, got, cases[i].want);
	}
	/* SPEC C1's example: 35.140 ms. */
	struct sim_coll_plan pl = make_plan(SIM_COLL_ALLREDUCE, 8);
	pl.bytes = n;
	char err[256];
	ck_assert_int_eq(coll_ring.plan(&pl, err, sizeof err), 0);
	ck_assert_double_eq_tol(coll_ring.time_s(&pl, &l), 35.140e-3, 1e-9);
	/* C7: hier over 4 nodes of 8, NVLink 3 us 450 GB/s, network 10 us 50 GB/s. */
	struct sim_coll_linkset h = { .all = { .alpha_intra_s = 3e-6, .bw_intra_Bps = 450e9,
					       .alpha_inter_s = 10e-6, .bw_inter_Bps = 50e9 } };
	pl = make_plan(SIM_COLL_ALLREDUCE, 32);
	pl.nodes = 4, pl.per_node = 8, pl.bytes = n;
	ck_assert_int_eq(coll_hier.plan(&pl, err, sizeof err), 0);
	double want = 2 * (7 * 3e-6 + 7.0 / 8 * n / 450e9) + 6 * 10e-6 + 6.0 / 4 * (n / 8) / 50e9;
	ck_assert_msg(rel_err(coll_hier.time_s(&pl, &h), want) < 1e-12 &&
		      fabs(want - 7.741e-3) < 0.5e-6, "hier C7: %.9g s, expected %.9g s "
		      "(7.741 ms)", coll_hier.time_s(&pl, &h), want);
}
END_TEST

/* ---- whole collectives through coll_bench ----------------------------------------------- */

/* On the ideal cluster the event-driven time equals the closed form. */
START_TEST(test_flow_equals_analytic_ideal)
{
	static const uint32_t ps[] = { 2, 3, 4, 5, 8 };
	for (const struct sim_coll_algo *const *ap = coll_algos; *ap; ap++)
		for (int op = 0; op < SIM_COLL_NOPS; op++) {
			if (!((*ap)->ops & (1u << op)))
				continue;
			for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
				if (documented_refusal(*ap, op, ps[i]))
					continue;
				double tf = bench_time("ideal", ps[i], 0, op, (*ap)->name, 4e6, 0,
						       SIM_FIDELITY_FLOW);
				double ta = bench_time("ideal", ps[i], 0, op, (*ap)->name, 4e6, 0,
						       SIM_FIDELITY_ANALYTIC);
				ck_assert_msg(rel_err(tf, ta) < 1e-6, "%s %s p=%u on ideal: flow "
					      "%.9g s, analytic %.9g s", (*ap)->name,
					      sim_coll_op_name(op), ps[i], tf, ta);
			}
		}
}
END_TEST

/*
 * sim_coll_links() is documented to return "the slowest route inside a node
 * and across nodes among the routes the algorithm's steps use". A ring
 * broadcast over two DGX nodes crosses the network (the ring goes from one
 * node to the other and back), so the links must include an inter-node
 * route, and the analytic time must not be far below the flow time.
 */
START_TEST(test_broadcast_links_across_nodes)
{
	struct topo_config cfg;
	char err[512] = "";
	ck_assert_int_eq(scn_cluster_preset(&cfg, "dgx-h100", err, sizeof err), 0);
	cfg.nodes = 2;
	struct coll_bench_config bc = {
		.cluster = cfg, .nranks = 16, .op = SIM_COLL_BROADCAST, .algo = &coll_ring,
		.fidelity = SIM_FIDELITY_ANALYTIC,
	};
	struct coll_bench *b = coll_bench_new(&bc, err, sizeof err);
	ck_assert_msg(b != NULL, "coll_bench_new: %s", err);
	struct sim *sim = coll_bench_sim(b);
	ck_assert_uint_eq(sim_group_size(sim, 0), 16);
	struct sim_coll_links ar, bcast;
	sim_coll_links(sim, 0, &coll_ring, SIM_COLL_ALLREDUCE, 1e9, 0, &ar);
	sim_coll_links(sim, 0, &coll_ring, SIM_COLL_BROADCAST, 1e9, 0, &bcast);
	coll_bench_free(b);
	ck_assert_msg(ar.bw_inter_Bps > 0 && ar.alpha_inter_s >= 5e-6,
		      "ring all-reduce on 2 nodes: inter-node links %.6g B/s, %.3g s",
		      ar.bw_inter_Bps, ar.alpha_inter_s);
	ck_assert_msg(bcast.bw_inter_Bps > 0 && bcast.alpha_inter_s >= 5e-6,
		      "ring broadcast on 2 nodes: inter-node links %.6g B/s, %.3g s "
		      "(intra %.6g B/s, %.3g s): the network is left out",
		      bcast.bw_inter_Bps, bcast.alpha_inter_s, bcast.bw_intra_Bps,
		      bcast.alpha_intra_s);
	double tf = bench_time("dgx-h100", 16, 2, SIM_COLL_BROADCAST, "ring", 1e9, 0,
			       SIM_FIDELITY_FLOW);
	double ta = bench_time("dgx-h100", 16, 2, SIM_COLL_BROADCAST, "ring", 1e9, 0,
			       SIM_FIDELITY_ANALYTIC);
	ck_assert_msg(ta > 0.5 * tf, "ring broadcast of 1 GB on 2 DGX H100 nodes: analytic "
		      "%.6g s, flow %.6g s", ta, tf);
}
END_TEST

static Suite *collectives_suite(void)
{
	Suite *s = suite_create("collectives");
	TCase *tc = tcase_create("registry");
	tcase_add_test(tc, test_registry);
	tcase_add_test(tc, test_op_names);
	tcase_add_test(tc, test_busbw_factor);
	suite_add_tcase(s, tc);

	tc = tcase_create("plans");
	/* Every algorithm at every size to p = PMAX: a few seconds alone, more
	 * on a loaded machine (Check's default is 4 s). */
	tcase_set_timeout(tc, 60);
	int nalgos = 0;
	while (coll_algos[nalgos])
		nalgos++;
	tcase_add_loop_test(tc, test_steps_consistent, 0, nalgos);
	tcase_add_test(tc, test_broadcast_roots);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_patterns);
	tcase_add_test(tc, test_closed_forms);
	suite_add_tcase(s, tc);

	tc = tcase_create("bench");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_flow_equals_analytic_ideal);
	tcase_add_test(tc, test_broadcast_links_across_nodes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(collectives_suite());
}
