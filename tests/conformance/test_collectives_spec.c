/*
 * test_collectives_spec.c - SPEC.md C1-C8 pinned by number: every closed
 * form of the collectives, in both fidelities where the item applies, to
 * 1e-6 relative, on the ideal cluster (and the dgx preset for C7, C8).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/bench.h"
#include "collectives/coll.h"
#include "scenarios/scenario.h"
#include "topology/topo.h"
#include "tests/checkmain.h"

#define TOL 1e-6
#define ALPHA 10e-6
#define BW 50e9

static const enum sim_fidelity fidelities[] = { SIM_FIDELITY_FLOW, SIM_FIDELITY_ANALYTIC };

static void ideal(struct topo_config *c, double alpha, double bw)
{
	char err[256];
	ck_assert_msg(scn_cluster_preset(c, "ideal", err, sizeof(err)) == 0, "%s", err);
	c->net_lat_s = alpha;
	c->net_bw_Bps = bw;
}

/* Time of one collective over all ranks of the cluster. */
static double run_one(const struct topo_config *cluster, uint32_t p, enum sim_coll_op op,
		      const char *algo, double bytes, unsigned channels, enum sim_fidelity f)
{
	struct coll_bench_config c = {
		.cluster = *cluster, .nranks = p, .op = op,
		.algo = algo ? coll_find(algo) : NULL, .channels = channels, .fidelity = f,
	};
	char err[512];
	struct coll_bench *b = coll_bench_new(&c, err, sizeof(err));
	ck_assert_msg(b != NULL, "coll_bench_new: %s", err);
	struct coll_bench_result r;
	ck_assert_msg(coll_bench_run(b, bytes, &r, err, sizeof(err)) == 0, "run: %s", err);
	coll_bench_free(b);
	return r.time_s;
}

static void assert_close(double got, double want, const char *what)
{
	double rel = fabs(got - want) / fabs(want);
	ck_assert_msg(rel <= TOL, "%s: got %.12g s, closed form %.12g s (relative error %.3g)",
		      what, got, want, rel);
}

/* C1: ring all-reduce 2(p-1)α + 2(p-1)/p nβ; the SPEC example is 35.140 ms. */
START_TEST(c1_ring_allreduce)
{
	struct topo_config c;
	ideal(&c, ALPHA, BW);
	for (int f = 0; f < 2; f++) {
		double t = run_one(&c, 8, SIM_COLL_ALLREDUCE, "ring", 1e9, 1, fidelities[f]);
		assert_close(t, 0.035140, "C1 example");
		const uint32_t ps[] = { 2, 3, 5, 16, 64 };
		for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
			double p = ps[i], n = 3e6;
			double want = 2 * (p - 1) * ALPHA + 2 * (p - 1) / p * n / BW;
			char what[64];
			snprintf(what, sizeof(what), "C1 p=%u %s", ps[i], sim_fidelity_name(fidelities[f]));
			assert_close(run_one(&c, ps[i], SIM_COLL_ALLREDUCE, "ring", n, 1, fidelities[f]),
				     want, what);
		}
	}
}
END_TEST

/* C2: ring reduce-scatter and all-gather, each (p-1)α + (p-1)/p nβ. */
START_TEST(c2_ring_reducescatter_allgather)
{
	struct topo_config c;
	ideal(&c, ALPHA, BW);
	const enum sim_coll_op ops[] = { SIM_COLL_REDUCESCATTER, SIM_COLL_ALLGATHER };
	for (int f = 0; f < 2; f++)
		for (int o = 0; o < 2; o++)
			for (uint32_t p = 2; p <= 9; p += 7) {
				double n = 1e9, want = (p - 1) * ALPHA + (p - 1.0) / p * n / BW;
				assert_close(run_one(&c, p, ops[o], "ring", n, 1, fidelities[f]), want,
					     sim_coll_op_name(ops[o]));
			}
}
END_TEST

/* C3: recursive doubling log2(p)(α + nβ) = 60.030 ms; p = 6 folds in and out. */
START_TEST(c3_recursive_doubling)
{
	struct topo_config c;
	ideal(&c, ALPHA, BW);
	for (int f = 0; f < 2; f++) {
		assert_close(run_one(&c, 8, SIM_COLL_ALLREDUCE, "rd", 1e9, 1, fidelities[f]),
			     0.060030, "C3 example");
		/* p = 6: fold-in, log2(4) = 2 butterfly steps, fold-out. */
		assert_close(run_one(&c, 6, SIM_COLL_ALLREDUCE, "rd", 1e9, 1, fidelities[f]),
			     4 * (ALPHA + 1e9 / BW), "C3 p=6");
	}
	/* Reduce-scatter by halving refuses p = 6 with a clear error. */
	struct coll_bench_config bc = { .cluster = c, .nranks = 6, .op = SIM_COLL_REDUCESCATTER,
					.algo = &coll_rd };
	char err[256];
	struct coll_bench *b = coll_bench_new(&bc, err, sizeof(err));
	ck_assert_int_eq(coll_bench_check(b, 1e6, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "power-of-two") != NULL, "message: %s", err);
	coll_bench_free(b);
}
END_TEST

/* The algorithm auto picks on p ideal ranks among the given ones. */
static const struct sim_coll_algo *auto_pick(const struct sim_coll_algo *const *algos,
					     uint32_t p, double bytes)
{
	struct topo_config c;
	char err[256];
	ideal(&c, ALPHA, BW);
	struct topo *t = topo_new(&c, p, err, sizeof(err));
	struct sim_config sc;
	sim_config_init(&sc);
	sc.algos = algos;
	struct sim *sim = sim_new(&sc, p, topo_sim_ops(), t);
	topo_attach(t, sim);
	uint32_t ranks[64];
	for (uint32_t r = 0; r < p; r++)
		ranks[r] = r;
	uint32_t g = sim_group_add(sim, ranks, p);
	unsigned ch = 0;
	const struct sim_coll_algo *a = sim_coll_check(sim, g, SIM_COLL_ALLREDUCE, NULL, bytes,
						       &ch, err, sizeof(err));
	ck_assert_msg(a != NULL, "%s", err);
	sim_free(sim);
	topo_free(t);
	return a;
}

/* C4: among ring and rd, auto switches at n* = 4.4 MB; hd beats the ring. */
START_TEST(c4_crossover)
{
	double p = 8, L = 3, beta = 1 / BW;
	double nstar = (2 * (p - 1) - L) * ALPHA / ((L - 2 * (p - 1) / p) * beta);
	ck_assert_msg(fabs(nstar - 4.4e6) < 1, "n* = %.1f", nstar);
	const struct sim_coll_algo *const ring_rd[] = { &coll_ring, &coll_rd, NULL };
	ck_assert_str_eq(auto_pick(ring_rd, 8, nstar * 0.99)->name, "rd");
	ck_assert_str_eq(auto_pick(ring_rd, 8, nstar * 1.01)->name, "ring");
	/* With every algorithm: rd for tiny messages, hd (the ring's bandwidth
	 * term with fewer latencies) for large ones; the ring never wins at p=8. */
	ck_assert_str_eq(auto_pick(coll_algos, 8, 1e3)->name, "rd");
	ck_assert_str_eq(auto_pick(coll_algos, 8, 1e9)->name, "hd");
	/* hd is 2 log2(p) α + 2(p-1)/p nβ, in both fidelities. */
	struct topo_config c;
	ideal(&c, ALPHA, BW);
	for (int f = 0; f < 2; f++)
		assert_close(run_one(&c, 8, SIM_COLL_ALLREDUCE, "hd", 1e9, 1, fidelities[f]),
			     6 * ALPHA + 1.75 * 1e9 / BW, "hd");
}
END_TEST

/* C5: pairwise all-to-all (p-1)α + (p-1)/p nβ. */
START_TEST(c5_alltoall)
{
	struct topo_config c;
	ideal(&c, ALPHA, BW);
	for (int f = 0; f < 2; f++)
		for (uint32_t p = 2; p <= 12; p += 5) {
			double n = 64e6, want = (p - 1) * ALPHA + (p - 1.0) / p * n / BW;
			assert_close(run_one(&c, p, SIM_COLL_ALLTOALL, "pairwise", n, 1, fidelities[f]),
				     want, "C5");
		}
}
END_TEST

/* C6: busbw = algbw x factor; with α = 0 the ring's busbw equals W. */
START_TEST(c6_busbw)
{
	struct topo_config c;
	ideal(&c, 0, BW);
	const enum sim_coll_op ops[] = { SIM_COLL_ALLREDUCE, SIM_COLL_REDUCESCATTER,
					 SIM_COLL_ALLGATHER };
	for (int f = 0; f < 2; f++)
		for (int o = 0; o < 3; o++) {
			struct coll_bench_config bc = { .cluster = c, .nranks = 8, .op = ops[o],
							.algo = &coll_ring, .fidelity = fidelities[f] };
			char err[256];
			struct coll_bench *b = coll_bench_new(&bc, err, sizeof(err));
			struct coll_bench_result r;
			ck_assert_int_eq(coll_bench_run(b, 1e9, &r, err, sizeof(err)), 0);
			assert_close(r.algbw_Bps, 1e9 / r.time_s, "algbw");
			assert_close(r.busbw_Bps, BW, sim_coll_op_name(ops[o]));
			coll_bench_free(b);
		}
	ck_assert_double_eq_tol(sim_coll_busbw_factor(SIM_COLL_ALLREDUCE, 8), 1.75, 1e-15);
	ck_assert_double_eq_tol(sim_coll_busbw_factor(SIM_COLL_ALLTOALL, 8), 0.875, 1e-15);
	ck_assert_double_eq_tol(sim_coll_busbw_factor(SIM_COLL_BROADCAST, 8), 1.0, 1e-15);
}
END_TEST

/* The dgx preset with the C7 links: α₁ 3 us, W₁ 450 GB/s, α₂ 10 us, W₂ 50 GB/s. */
static void dgx_c7(struct topo_config *c, uint32_t nodes)
{
	char err[256];
	ck_assert(scn_cluster_preset(c, "dgx-h100", err, sizeof(err)) == 0);
	const char *kv[][2] = {
		{ "nvlink.latency", "3us" }, { "nvlink.bandwidth", "450GB/s" },
		{ "network.latency", "10us" }, { "network.bandwidth", "50GB/s" },
		{ "network.oversubscription", "1" }, { "network.hop_latency", "0" },
	};
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
		ck_assert_msg(topo_config_set(c, kv[i][0], kv[i][1], err, sizeof(err)) == 0, "%s", err);
	c->nodes = nodes;
}

/* C7: hierarchical all-reduce 7.741 ms against 39.370 ms for a flat ring. */
START_TEST(c7_hierarchical)
{
	struct topo_config c;
	dgx_c7(&c, 4);
	double g = 8, N = 4, n = 1e9;
	double hier = 2 * ((g - 1) * 3e-6 + (g - 1) / g * n / 450e9) + 2 * (N - 1) * 10e-6 +
		      2 * (N - 1) / N * (n / g) / 50e9;
	ck_assert_msg(fabs(hier - 7.741e-3) < 1e-6, "closed form %.6g", hier);
	double flat = 2 * 31 * 10e-6 + 2 * 31.0 / 32 * n / 50e9;
	ck_assert_msg(fabs(flat - 39.370e-3) < 1e-6, "closed form %.6g", flat);
	for (int f = 0; f < 2; f++) {
		assert_close(run_one(&c, 32, SIM_COLL_ALLREDUCE, "hier", n, 0, fidelities[f]), hier,
			     "C7 hier");
		assert_close(run_one(&c, 32, SIM_COLL_ALLREDUCE, "ring", n, 1, fidelities[f]), flat,
			     "C7 flat ring, one channel");
		/* One ring per NIC rail: about 2*31*α₂ + 2*31/32*(n/8)/W₂ = 5.5 ms. */
		double eight = run_one(&c, 32, SIM_COLL_ALLREDUCE, "ring", n, 0, fidelities[f]);
		double est = 2 * 31 * 10e-6 + 2 * 31.0 / 32 * (n / 8) / 50e9;
		ck_assert_msg(fabs(eight - est) / est < 0.02, "8-channel ring %.6g s, about %.6g",
			      eight, est);
	}
}
END_TEST

/* Time for two all-reduces run at once on two groups of two ranks each. */
static double two_at_once(const struct topo_config *cl, const uint32_t a[2], const uint32_t b[2],
			  int both)
{
	char err[256];
	struct topo *t = topo_new(cl, cl->nodes * cl->gpus_per_node, err, sizeof(err));
	ck_assert_msg(t != NULL, "%s", err);
	struct sim_config sc;
	sim_config_init(&sc);
	sc.algos = coll_algos;
	uint32_t nr = cl->nodes * cl->gpus_per_node;
	struct sim *sim = sim_new(&sc, nr, topo_sim_ops(), t);
	topo_attach(t, sim);
	uint32_t ga = sim_group_add(sim, a, 2), gb = sim_group_add(sim, b, 2);
	struct sim_program *prog = sim_program_new();
	sim_program_coll(prog, 1, "allreduce", SIM_COLL_ALLREDUCE, &coll_ring, 0, 1e9, 1, 0);
	for (int i = 0; i < 2; i++) {
		sim_rank_start(sim, a[i], prog, &ga, 1);
		if (both)
			sim_rank_start(sim, b[i], prog, &gb, 1);
	}
	ck_assert_msg(sim_run(sim) == 0, "%s", sim_error(sim));
	sim_ps end = 0;
	for (uint32_t r = 0; r < nr; r++)
		if (sim_rank_end(sim, r) > end)
			end = sim_rank_end(sim, r);
	sim_program_free(prog);
	sim_free(sim);
	topo_free(t);
	return sim_ps_to_s(end);
}

/* C8: two all-reduces sharing every network link take twice as long; two
 * on disjoint links take as long as one (flow fidelity). */
START_TEST(c8_contention)
{
	struct topo_config c;
	dgx_c7(&c, 2);
	const uint32_t a[2] = { 0, 8 }, b[2] = { 1, 9 };  /* GPU 0 and GPU 1 of two nodes */
	double one = two_at_once(&c, a, b, 0);
	double disjoint = two_at_once(&c, a, b, 1);       /* rails 0 and 1: no shared link */
	ck_assert_msg(fabs(disjoint / one - 1) < 1e-9, "disjoint: %.9g s vs alone %.9g s",
		      disjoint, one);
	c.nics_per_node = 1;                               /* both cross the node's one NIC */
	double alone = two_at_once(&c, a, b, 0);
	double shared = two_at_once(&c, a, b, 1);
	double ratio = shared / alone;
	ck_assert_msg(ratio > 1.9 && ratio < 2.05, "shared: %.9g s vs alone %.9g s (x%.4f)",
		      shared, alone, ratio);
}
END_TEST

static Suite *spec_suite(void)
{
	const struct spec_item items[] = {
		{ "C1", c1_ring_allreduce }, { "C2", c2_ring_reducescatter_allgather },
		{ "C3", c3_recursive_doubling }, { "C4", c4_crossover }, { "C5", c5_alltoall },
		{ "C6", c6_busbw }, { "C7", c7_hierarchical }, { "C8", c8_contention },
	};
	return spec_suite_of("SPEC C1-C8 (collectives)", items, ARRAY_SIZE(items), 120);
}

int main(void)
{
	return check_run(spec_suite());
}
