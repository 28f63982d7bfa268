/*
 * bench_plan.c - how fast the planner screens layouts: par_plan (enumerate,
 * check, estimate, sort) on two layout spaces, without simulating any.
 *
 *   bench_plan [SRCDIR]
 *
 * gpt3-175b  GPT-3 175B on 1,024 A100 (128 DGX A100 nodes), sequence 2048,
 *            global batch 1536: the configuration of Narayanan et al., SC21
 *            ("Efficient large-scale language model training on GPU clusters
 *            using Megatron-LM"), table 1, whose 1,024-GPU row it is.
 * llama3-70b Llama-3-70B on 1,024 H100 (128 DGX H100 nodes), the shipped
 *            scenarios/llama3-70b-h100x256.yaml with 128 nodes.
 *
 * Both start from a shipped scenario file (SRCDIR/scenarios, default the
 * source directory the benchmark was configured from) with --set-style
 * overrides. Each case is screened R times (R = 5) and the best wall time
 * (CLOCK_MONOTONIC around par_plan) is reported with candidates per second.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "parallel/plan.h"
#include "scenarios/scenario.h"
#include "sim/util.h"

#ifndef CLUSTERSIM_SRCDIR
#error "build with -DCLUSTERSIM_SRCDIR='\"/path/to/source\"'"
#endif

#define REPEATS 5

struct bench_case {
	const char *name, *file;
	const char *sets[8];
	unsigned nodes;
};

static const struct bench_case cases[] = {
	{ "gpt3-175b", "zero-fsdp-compare.yaml",
	  { "model.preset=gpt3-175b", "cluster.preset=dgx-a100", "training.seq=2048",
	    "training.global_batch=1536", "training.micro_batch=1" }, 128 },
	{ "llama3-70b", "llama3-70b-h100x256.yaml", { NULL }, 128 },
};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	const char *src = argc > 1 ? argv[1] : CLUSTERSIM_SRCDIR;
	printf("%-11s %6s %12s %10s %10s %10s %12s %s\n", "case", "gpus", "candidates", "fits",
	       "invalid", "no_memory", "screen_s", "per_s");
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct bench_case *bc = &cases[k];
		char path[1024], err[SCN_ERRLEN];
		snprintf(path, sizeof(path), "%s/scenarios/%s", src, bc->file);
		size_t nsets = 0;
		while (nsets < 8 && bc->sets[nsets])
			nsets++;
		struct scn s;
		if (scn_load_unchecked(&s, path, bc->sets, nsets, err, sizeof(err)) < 0) {
			fprintf(stderr, "bench_plan: %s\n", err);
			return 1;
		}
		s.cluster.nodes = bc->nodes;
		uint32_t gpus = bc->nodes * s.cluster.gpus_per_node;
		struct par_compute_model *cm = par_compute_model_new(
			&s.compute, topo_gpu_find(s.cluster.gpu), s.training.precision, s.datadir,
			err, sizeof(err));
		if (!cm) {
			fprintf(stderr, "bench_plan: %s: %s\n", bc->name, err);
			return 1;
		}
		double best = 1e300;
		uint64_t dropped[PAR_DROP_NCAUSES], total = 0;
		size_t n = 0;
		for (int r = 0; r < REPEATS; r++) {
			/* A fresh planner each time: its kernel-time cache starts cold. */
			struct par_planner *pl = par_planner_new(&s.model, &s.training, &s.parallel,
								 &s.cluster, gpus, cm,
								 s.sim.seed, NULL, 0);
			struct par_candidate *c;
			double t0 = now_s();
			n = par_plan(pl, &c, dropped, &total);
			double dt = now_s() - t0;
			best = dt < best ? dt : best;
			free(c);
			par_planner_free(pl);
		}
		printf("%-11s %6u %12llu %10zu %10llu %10llu %12.4f %.0f\n", bc->name, gpus,
		       (unsigned long long)total, n, (unsigned long long)dropped[PAR_DROP_INVALID],
		       (unsigned long long)dropped[PAR_DROP_MEMORY], best, total / best);
		par_compute_model_free(cm);
	}
	return 0;
}
