/*
 * result_text.h - the text form of a run's result: the lines of the report
 * a person reads, from a struct par_report (train.h) and what the lines
 * name of the scenario (struct par_result_setting). `run` prints it from
 * the step it simulated, `report` from the struct par_report it rebuilt
 * from the stored metrics (result.h) with a setting read from runs.config:
 * one printer, so the two print the same text. A run of several jobs
 * (jobs.h) likewise: its text and JSON from the rows that are stored
 * (struct sim_store_job_row, struct par_link_share), for `run` and
 * `report` alike.
 *
 * The lines are not in result.c's table of fields: they mix figures with
 * scenario settings, derived values (the bubble's share of the pipeline
 * phase), conversions (GB, %, hours, days), plurals and conditions
 * (experts, offload, pp > 1). To show a new figure, add it to a line of
 * par_result_text.
 */
#ifndef PAR_RESULT_TEXT_H
#define PAR_RESULT_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "parallel/train.h"

/* What the text report names of the scenario. */
struct par_result_setting {
	const char *preset, *gpu, *cluster, *fidelity;  /* model.preset, cluster.gpu,
							 * cluster.preset, sim.fidelity */
	unsigned layers, hidden, tp, pp, cp, ep, micro_batch, seq, experts, top_k;
	int symmetry_dp, offload;                       /* sim.symmetry dp, offload */
	const char *jitter, *gpu_speed;                 /* distribution names       */
	double jitter_cv, gpu_cv, straggler_slowdown;
	unsigned stragglers;
	unsigned long long seed;
};

/* The report's lines after its first (model, cluster, layout, memory,
 * experts and offload when configured, and when the layout fits: step
 * time, steps, variability, failures, the critical rank, the pipeline). */
void par_result_text(FILE *out, const struct par_result_setting *s, const struct par_report *r);
/* The variability line alone (nothing without jitter, GPU spread or
 * stragglers); ranks: the first n straggler ranks drawn. */
void par_result_variability(FILE *out, const struct par_result_setting *s,
			    const uint32_t *ranks, unsigned n);
/* The failures line (nothing without a job MTBF); label: its start
 * ("  failures    "). */
struct par_goodput;
void par_result_failures(FILE *out, const char *label, const struct par_goodput *g,
			 unsigned gpus);

/* A run of several jobs: the cluster line, each job's lines and the shared
 * links (text; the caller prints the first line and the variability line),
 * or the JSON object of `run --json`. */
struct sim_store_job_row;
struct par_link_share;
struct par_jobs_view {
	const char *gpu, *preset, *fidelity;
	unsigned gpus, steps;
	int ideal;                              /* jobs placed by GPU       */
	const struct sim_store_job_row *job;
	size_t n;
	const struct par_link_share *links;     /* busiest first            */
	size_t nlinks;
	const struct par_goodput *goodput;      /* per job: failures (0: none) */
	const uint32_t *stragglers;
	unsigned nstragglers;
	unsigned long long events;
	double wall_s;
};
/* The text names at most this many shared links (the JSON all). */
#define PAR_JOBS_TEXT_LINKS 8
void par_jobs_text(FILE *out, const struct par_jobs_view *v);
void par_jobs_json(FILE *out, const struct par_jobs_view *v);

#endif
