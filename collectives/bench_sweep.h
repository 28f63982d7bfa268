/*
 * bench_sweep.h - one algorithm of `clustersim collective` over its sizes,
 * stored as one run when there is a database (collectives/bench_sweep.c):
 * the sizes' rows, and in the store the run's configuration, its timeline,
 * every rank's summary, the link totals and the rows.
 */
#ifndef COLL_BENCH_SWEEP_H
#define COLL_BENCH_SWEEP_H

#include "collectives/bench.h"

/* One size's result, as the command prints it. */
struct coll_bench_row {
	const char *algo;                  /* the algorithm that ran       */
	unsigned channels;
	double bytes;
	struct coll_bench_result r;
};

/* The database failed: err is its message (sim_store_error). */
#define COLL_SWEEP_STORE (-3)

/*
 * Run sizes[0..n) on b, built from cfg, into rows[0..n). With st, as one
 * run stored with command (the command line) and the configuration
 * coll_bench_config_json gives; a run that fails is marked failed. 0; -1
 * or COLL_BENCH_CLOCK with err as coll_bench_run says; COLL_SWEEP_STORE.
 */
struct sim_store;
int coll_bench_sweep(struct coll_bench *b, const struct coll_bench_config *cfg,
		     const double *sizes, int n, struct sim_store *st, const char *command,
		     struct coll_bench_row *rows, char *err, size_t errlen);

/* The configuration a stored run keeps: {"command":"collective","op":...,
 * "algo":...,"channels","root","ranks","fidelity","chunk_bytes","cluster"}
 * (allocated: the caller frees it). */
char *coll_bench_config_json(const struct coll_bench_config *cfg);

#endif
