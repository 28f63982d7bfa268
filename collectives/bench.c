/*
 * bench.c - collectives over the whole cluster, size after size; see bench.h.
 */
#include "collectives/bench.h"

#include <stdio.h>
#include <stdlib.h>

#include "collectives/coll.h"

struct coll_bench {
	struct coll_bench_config cfg;
	struct topo *topo;
	struct sim *sim;
	uint32_t world;
};

struct coll_bench *coll_bench_new(const struct coll_bench_config *cfg, char *err, size_t errlen)
{
	if (cfg->op == SIM_COLL_BROADCAST && cfg->root >= cfg->nranks) {
		snprintf(err, errlen, "--root %u: expected a rank below %u", cfg->root, cfg->nranks);
		return NULL;
	}
	struct topo *t = topo_new(&cfg->cluster, cfg->nranks, err, errlen);
	if (!t)
		return NULL;
	struct coll_bench *b = xcalloc(1, sizeof(*b));
	b->cfg = *cfg;
	b->topo = t;
	struct sim_config sc;
	sim_config_init(&sc);
	sc.fidelity = cfg->fidelity;
	if (cfg->chunk_bytes > 0)
		sc.chunk_bytes = cfg->chunk_bytes;
	sc.algos = coll_algos;
	b->sim = sim_new(&sc, cfg->nranks, topo_sim_ops(), t);
	topo_attach(t, b->sim);
	uint32_t *ranks = xmalloc(cfg->nranks * sizeof(uint32_t));
	for (uint32_t r = 0; r < cfg->nranks; r++)
		ranks[r] = r;
	b->world = sim_group_add(b->sim, ranks, cfg->nranks);
	free(ranks);
	return b;
}

void coll_bench_free(struct coll_bench *b)
{
	if (!b)
		return;
	sim_free(b->sim);
	topo_free(b->topo);
	free(b);
}

struct sim *coll_bench_sim(struct coll_bench *b) { return b->sim; }
struct topo *coll_bench_topo(struct coll_bench *b) { return b->topo; }

int coll_bench_check(struct coll_bench *b, double bytes, char *err, size_t errlen)
{
	unsigned c = b->cfg.channels;
	return sim_coll_check(b->sim, b->world, b->cfg.op, b->cfg.algo, bytes, &c,
			      err, errlen) ? 0 : -1;
}

int coll_bench_run(struct coll_bench *b, double bytes, struct coll_bench_result *out,
		   char *err, size_t errlen)
{
	unsigned c = b->cfg.channels;
	const struct sim_coll_algo *algo = sim_coll_check(b->sim, b->world, b->cfg.op,
							  b->cfg.algo, bytes, &c, err, errlen);
	if (!algo)
		return -1;
	char name[96];
	snprintf(name, sizeof(name), "%s %.0fB %s", sim_coll_op_name(b->cfg.op), bytes, algo->name);
	struct sim_program *prog = sim_program_new();
	/* Stream 1: the communication stream, as NCCL runs on its own. */
	sim_program_coll(prog, 1, name, b->cfg.op, algo, 0, bytes, b->cfg.channels, b->cfg.root);
	sim_ps t0 = sim_now(b->sim);
	uint64_t e0 = sim_events(b->sim);
	for (uint32_t r = 0; r < b->cfg.nranks; r++)
		sim_rank_start(b->sim, r, prog, &b->world, 1);
	int rc = sim_run(b->sim);
	sim_ps t1 = t0;
	for (uint32_t r = 0; r < b->cfg.nranks; r++)
		if (sim_rank_end(b->sim, r) > t1)
			t1 = sim_rank_end(b->sim, r);
	sim_program_free(prog);
	if (rc < 0) {
		snprintf(err, errlen, "%s", sim_error(b->sim));
		return sim_failed_clock(b->sim) ? COLL_BENCH_CLOCK : -1;
	}
	double t = sim_ps_to_s(t1 - t0);
	*out = (struct coll_bench_result){
		.algo = algo, .channels = c, .time_s = t,
		.algbw_Bps = t > 0 ? bytes / t : 0,
		.busbw_Bps = t > 0 ? bytes / t * sim_coll_busbw_factor(b->cfg.op, b->cfg.nranks) : 0,
		.events = sim_events(b->sim) - e0,
	};
	return 0;
}
