/*
 * bench.h - run collectives over every rank of a cluster, one size after
 * another, as nccl-tests does: what `clustersim collective`, the tests and
 * bench/ share.
 *
 * A struct coll_bench owns its topology, its sim and the world group; sizes
 * run in sequence on one clock (each starts when the previous has finished
 * on every rank), so a recorder sees one continuous timeline.
 */
#ifndef COLL_BENCH_H
#define COLL_BENCH_H

#include "sim/sim.h"
#include "topology/topo.h"

struct coll_bench_config {
	struct topo_config cluster;
	uint32_t nranks;
	enum sim_coll_op op;
	const struct sim_coll_algo *algo;  /* NULL: auto, by closed form */
	unsigned channels;                 /* 0: the algorithm's default  */
	uint32_t root;                     /* broadcast root rank         */
	enum sim_fidelity fidelity;
	double chunk_bytes;                /* 0: SIM_DEFAULT_CHUNK_BYTES  */
};

struct coll_bench_result {
	const struct sim_coll_algo *algo;  /* the one that ran            */
	unsigned channels;
	double time_s;                     /* first start to last finish  */
	double algbw_Bps, busbw_Bps;       /* SPEC C6                     */
	uint64_t events;                   /* events of this size         */
};

struct coll_bench;

/* Build the cluster and the world group. NULL with err on bad input. */
struct coll_bench *coll_bench_new(const struct coll_bench_config *cfg, char *err, size_t errlen);
void coll_bench_free(struct coll_bench *b);

/* Check that the collective can run at this size (algorithm, layout). */
int coll_bench_check(struct coll_bench *b, double bytes, char *err, size_t errlen);

/* Run one size. 0, or -1 with err (the run failed: a bug or a deadlock), or
 * COLL_BENCH_CLOCK with err: a time passed the simulated clock's range
 * (sim_failed_clock; the sizes run one after another on one clock). */
#define COLL_BENCH_CLOCK (-2)
int coll_bench_run(struct coll_bench *b, double bytes, struct coll_bench_result *out,
		   char *err, size_t errlen);

struct sim *coll_bench_sim(struct coll_bench *b);
struct topo *coll_bench_topo(struct coll_bench *b);

#endif
