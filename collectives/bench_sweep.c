/*
 * bench_sweep.c - a collective's sizes run and stored (bench_sweep.h).
 */
#include "collectives/bench_sweep.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sim/store.h"
#include "sim/util.h"

char *coll_bench_config_json(const struct coll_bench_config *cfg)
{
	char cluster[4096];
	topo_config_json(&cfg->cluster, cluster, sizeof(cluster));
	return xasprintf("{\"command\":\"collective\",\"op\":\"%s\",\"algo\":\"%s\","
			 "\"channels\":%u,\"root\":%u,\"ranks\":%u,\"fidelity\":\"%s\","
			 "\"chunk_bytes\":%.17g,\"cluster\":%s}",
			 sim_coll_op_name(cfg->op), cfg->algo ? cfg->algo->name : "auto",
			 cfg->channels, cfg->root, cfg->nranks, sim_fidelity_name(cfg->fidelity),
			 cfg->chunk_bytes, cluster);
}

/* Every rank's ranks row, after the sizes have run (no parallel layout). */
static int store_ranks(struct sim_store *st, struct sim *sim, struct topo *topo)
{
	for (uint32_t r = 0; r < sim_nranks(sim); r++) {
		struct sim_store_rank_summary sum;
		sim_store_rank_summary_of(sim, r, sim_now(sim), &sum);
		if (sim_store_rank(st, r, topo_node_of(topo, r), topo_local_of(topo, r), NULL,
				   &sum) < 0)
			return -1;
	}
	return 0;
}

int coll_bench_sweep(struct coll_bench *b, const struct coll_bench_config *cfg,
		     const double *sizes, int n, struct sim_store *st, const char *command,
		     struct coll_bench_row *rows, char *err, size_t errlen)
{
	struct sim *sim = coll_bench_sim(b);
	if (st) {
		char *json = coll_bench_config_json(cfg);
		int64_t id = sim_store_run_begin(st, command, json, sim_fidelity_name(cfg->fidelity),
						 cfg->nranks);
		free(json);
		if (id < 0) {
			snprintf(err, errlen, "%s", sim_store_error(st));
			return COLL_SWEEP_STORE;
		}
		sim_set_recorder(sim, &sim_store_recorder, st);
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int s = 0; s < n; s++) {
		struct coll_bench_row *row = &rows[s];
		char e[512];
		int rc = coll_bench_run(b, sizes[s], &row->r, e, sizeof(e));
		if (rc < 0) {
			snprintf(err, errlen, "%s", e);
			if (st)
				sim_store_run_fail(st, e);
			return rc;
		}
		row->algo = row->r.algo->name;
		row->channels = row->r.channels;
		row->bytes = sizes[s];
		struct sim_store_coll_row cr = {
			.op = sim_coll_op_name(cfg->op), .algo = row->algo, .ranks = cfg->nranks,
			.channels = row->channels, .bytes = row->bytes, .time_s = row->r.time_s,
			.algbw_GBps = row->r.algbw_Bps / 1e9, .busbw_GBps = row->r.busbw_Bps / 1e9,
		};
		if (st)
			sim_store_coll_result(st, &cr);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	if (st && (store_ranks(st, sim, coll_bench_topo(b)) < 0 ||
		   sim_store_links(st, sim, topo_sim_ops(), coll_bench_topo(b)) < 0 ||
		   sim_store_run_end(st, sim_now(sim), sim_events(sim), wall) < 0)) {
		snprintf(err, errlen, "%s", sim_store_error(st));
		sim_store_run_fail(st, err);
		return COLL_SWEEP_STORE;
	}
	return 0;
}
