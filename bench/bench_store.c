/*
 * bench_store.c - how fast the SQLite recorder writes a timeline.
 *
 *   bench_store [--ranks R] [--ops N] [--db PATH]
 *
 * Feeds N finished ops (default 10,000,000) of R ranks (default 1,024) to the
 * store's recorder the way the engine does: round robin over the ranks, each
 * rank's ops one after the other in time, 4,000 distinct ops per rank
 * program (the op definitions of a Llama layer stack repeat), one memory
 * change every 16 ops. Then ends the run (every buffered row written and
 * committed). Wall time is CLOCK_MONOTONIC from the run's start to its end;
 * rows are everything written (ops, memory, definitions, blocks, ranks);
 * the database is a fresh file (default bench_store.db in the current
 * directory, removed afterwards). Prints one table row.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sim/store.h"

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long long file_bytes(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0 ? (long long)sb.st_size : 0;
}

static void remove_db(const char *path)
{
	char side[1024];
	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
}

int main(int argc, char **argv)
{
	uint32_t ranks = 1024, nops = 10000000;
	const char *path = "bench_store.db";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--ranks") && i + 1 < argc)
			ranks = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--ops") && i + 1 < argc)
			nops = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--db") && i + 1 < argc)
			path = argv[++i];
		else {
			fprintf(stderr, "usage: bench_store [--ranks R] [--ops N] [--db PATH]\n");
			return 2;
		}
	}
	if (ranks == 0 || nops == 0) {
		fprintf(stderr, "bench_store: --ranks and --ops must be positive\n");
		return 2;
	}
	enum { PROGRAM_OPS = 4000 };
	struct sim_op *ops = calloc(PROGRAM_OPS, sizeof(*ops));
	char (*names)[32] = calloc(PROGRAM_OPS, sizeof(*names));
	for (int k = 0; k < PROGRAM_OPS; k++) {
		snprintf(names[k], sizeof(names[k]), "L%d.mb%d.fwd.op%d", k / 50, k % 16, k % 7);
		ops[k] = (struct sim_op){
			.kind = (uint8_t)(k % 5 == 4 ? SIM_OP_COLL : SIM_OP_COMPUTE),
			.stream = (uint8_t)(k % 5 == 4 ? 4 : 0), .name = names[k],
			.bytes = 1e8 + k, .flops = 1e12,
			/* labelled as the step builder labels such an op */
			.layer = k / 50, .mb = (int16_t)(k % 16), .chunk = -1,
			.phase = SIM_PHASE_FWD, .kernel = "op",
		};
	}
	remove_db(path);
	char err[512];
	struct sim_store *st = sim_store_open(path, err, sizeof(err));
	if (!st) {
		fprintf(stderr, "bench_store: %s\n", err);
		return 1;
	}
	double t0 = now_s();
	if (sim_store_run_begin(st, "bench_store", "{}", "flow", ranks) < 0)
		goto fail;
	uint64_t mem_rows = 0;
	for (uint32_t i = 0; i < nops; i++) {
		uint32_t rank = i % ranks, k = (i / ranks) % PROGRAM_OPS;
		sim_ps start = (sim_ps)(i / ranks) * 1000000;
		sim_store_recorder.op_done(st, rank, &ops[k], start, start + 900000);
		if (i % 16 == 0) {
			sim_store_recorder.mem(st, rank, start, i % 6, 1e9 + i);
			mem_rows++;
		}
	}
	for (uint32_t r = 0; r < ranks; r++)
		if (sim_store_rank(st, r, r / 8, r % 8, NULL, NULL) < 0)
			goto fail;
	if (sim_store_run_end(st, (sim_ps)nops * 1000000 / ranks, nops, 0) < 0)
		goto fail;
	double wall = now_s() - t0;
	sim_store_close(st);
	/* Definitions: every program op once; blocks: one per 256 ops of a rank. */
	uint64_t defs = nops < PROGRAM_OPS ? nops : PROGRAM_OPS;
	uint64_t blocks = 0;
	for (uint32_t r = 0; r < ranks; r++) {
		uint64_t mine = nops / ranks + (r < nops % ranks);
		blocks += (mine + 255) / 256;
	}
	uint64_t rows = nops + mem_rows + defs + blocks + ranks;
	printf("%-8s %10s %12s %10s %14s %10s\n", "ranks", "ops", "rows", "wall_s",
	       "rows_per_s", "db_MiB");
	printf("%-8u %10u %12llu %10.3f %14.0f %10.1f\n", ranks, nops, (unsigned long long)rows,
	       wall, (double)rows / wall, (double)file_bytes(path) / (1024.0 * 1024.0));
	remove_db(path);
	free(ops);
	free(names);
	return 0;
fail:
	fprintf(stderr, "bench_store: %s\n", sim_store_error(st));
	sim_store_close(st);
	remove_db(path);
	return 1;
}
