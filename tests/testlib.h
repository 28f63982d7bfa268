/*
 * testlib.h - small helpers shared by the Check tests: relative error and
 * one-shot collective timings through struct coll_bench (collectives/bench.h).
 *
 * Everything here is static inline so that each test program is one file;
 * the helpers assert (ck_assert_msg) on every error, printing its message,
 * so a test that calls them reads as a list of expected figures.
 */
#ifndef TESTS_TESTLIB_H
#define TESTS_TESTLIB_H

#include <check.h>
#include <math.h>
#include <stdint.h>

#include "collectives/bench.h"
#include "collectives/coll.h"
#include "sim/sim.h"
#include "scenarios/scenario.h"
#include "topology/topo.h"

/* |a - b| / |b|, or |a| when b is 0: how far a is from the expected b. */
static inline double rel_err(double a, double b)
{
	return b == 0 ? fabs(a) : fabs(a - b) / fabs(b);
}

/*
 * Time in seconds of one collective of bytes over nranks ranks of the given
 * cluster (the world group), on the algorithm named algo (NULL: auto) with
 * channels (0: the algorithm's default) at fidelity f. Asserts on errors.
 */
static inline double bench_time_cfg(const struct topo_config *cluster, uint32_t nranks,
				    enum sim_coll_op op, const char *algo, double bytes,
				    unsigned channels, enum sim_fidelity f)
{
	struct coll_bench_config bc = {
		.cluster = *cluster,
		.nranks = nranks,
		.op = op,
		.algo = NULL,
		.channels = channels,
		.root = 0,
		.fidelity = f,
		.chunk_bytes = 0,
	};
	if (algo) {
		bc.algo = coll_find(algo);
		ck_assert_msg(bc.algo != NULL, "unknown algorithm '%s' (have %s)", algo,
			      coll_names());
	}
	char err[512] = "";
	struct coll_bench *b = coll_bench_new(&bc, err, sizeof err);
	ck_assert_msg(b != NULL, "coll_bench_new(%s, %u ranks): %s", cluster->preset,
		      nranks, err);
	struct coll_bench_result res;
	int rc = coll_bench_run(b, bytes, &res, err, sizeof err);
	ck_assert_msg(rc == 0, "coll_bench_run(%s %s %.0f B on %u ranks of %s, %s): %s",
		      sim_coll_op_name(op), algo ? algo : "auto", bytes, nranks,
		      cluster->preset, sim_fidelity_name(f), err);
	coll_bench_free(b);
	return res.time_s;
}

/* As bench_time_cfg on a cluster preset; nodes > 0 sets cluster.nodes. */
static inline double bench_time(const char *preset, uint32_t nranks, uint32_t nodes,
				enum sim_coll_op op, const char *algo, double bytes,
				unsigned channels, enum sim_fidelity f)
{
	struct topo_config cfg;
	char err[512] = "";
	int rc = scn_cluster_preset(&cfg, preset, err, sizeof err);
	ck_assert_msg(rc == 0, "scn_cluster_preset(%s): %s", preset, err);
	if (nodes > 0)
		cfg.nodes = nodes;
	return bench_time_cfg(&cfg, nranks, op, algo, bytes, channels, f);
}

#endif
