/*
 * jobs.h - several training jobs on one cluster (a scenario's `jobs:` list):
 * each its own model, layout and nodes, their traffic on the links it
 * crosses. Each job runs alone on its nodes, then all of them together, and
 * the report gives each job's step time both ways and the links that more
 * than one job's traffic crosses.
 *
 * Jobs step on their own clocks, each from its start time: a job starts its
 * next step as soon as its
 * last rank ends the last one, whatever the others do. Every step is timed
 * until every job has timed sim.steps of them: a shorter job times more
 * steps, over the whole of the longer jobs' (their communication phases
 * included). Steps in flight then end untimed (they ran partly alone).
 *
 * Variability (the scenario's, for the whole cluster): every GPU's speed
 * and the stragglers are drawn once over the cluster's ranks from sim.seed,
 * the same alone and together; each job's kernel jitter comes from a
 * generator of its own (seed sim.seed + 1 + its index), so jobs whose
 * traffic never meets draw the same alone as together.
 *
 * The caller owns the jobs and their configurations; a result's arrays are
 * the result's (par_jobs_result_free).
 */
#ifndef PAR_JOBS_H
#define PAR_JOBS_H

#include <stddef.h>
#include <stdint.h>

#include "parallel/train.h"

/* Most jobs in one scenario. */
#define PAR_MAX_JOBS 16

/*
 * Most steps one job may run in the run together beyond the `steps` it
 * times. Jobs keep stepping until the last one has timed its steps, so a
 * job that starts late (start: 1d) would have the others run a million
 * steps first. From the steps alone, each job's count together is
 * estimated before that run (contention lengthens steps, so the count may
 * be somewhat larger); above steps + this bound par_jobs_run refuses with
 * PAR_JOBS_TOO_LONG.
 */
#define PAR_JOBS_MAX_STEPS 10000
#define PAR_JOBS_TOO_LONG (-3)  /* apart from PAR_RUN_CLOCK (train.h) */

/* One job: its step as a scenario of its own (the cluster it sees is its
 * share: its nodes), and where that share starts on the cluster. */
struct par_job {
	const char *name;
	struct par_train train;
	uint32_t first_rank;         /* its rank 0 is the cluster's GPU first_rank */
	sim_ps start_ps;             /* its first step starts then (alone too) */
};

struct par_jobs {
	const struct par_job *job;
	size_t n;
	const struct topo_config *cluster;  /* the whole cluster              */
	struct sim_config sim;              /* flow fidelity: links are shared */
	uint32_t steps;                     /* timed steps of each job (>= 1)  */
	uint64_t seed;                      /* variability draws               */
	const struct par_variability *var;  /* over the cluster's GPUs, or NULL */
	/* The run together: its recorder (ranks are the cluster's) and a call
	 * once its steps have run, before its sim is freed; either may be NULL. */
	const struct sim_recorder_ops *rec;
	void *rec_ctx;
	int (*finish)(void *ctx, struct sim *sim, struct topo *topo, char *err, size_t errlen);
	/* With several jobs: called with rec_ctx after the runs alone, once the
	 * run together is known to be within its bound, before it
	 * starts (to open the database only then); -1 stops. May be NULL. */
	int (*ready)(void *ctx, char *err, size_t errlen);
};

/* A link that more than one job's traffic crosses, and what each moves on
 * it per step when alone (0 for a job that does not cross it). */
struct par_link_share {
	char name[64];
	double bw_Bps;
	double bytes[PAR_MAX_JOBS];
};

struct par_jobs_result {
	size_t n;                            /* jobs                          */
	/* Per job: its plan (memory, parameters) with its step times alone on
	 * its nodes (sim.steps of them) and shared with the others (sim.steps
	 * or more); step_times has each timed step's, in order. */
	struct par_report *alone, *shared;
	struct par_step *steps;              /* per job: its step, resolved once
					      * by par_jobs_plan               */
	struct par_link_share *links;        /* busiest first, then by name */
	size_t nlinks;
	uint64_t events;                     /* of the run together */
	sim_ps sim_end_ps;
	uint32_t stragglers[8];              /* cluster ranks, the first few */
	uint32_t nstragglers;
};

/*
 * Check every job (par_train_plan) and the placement: each job's GPUs lie on
 * the cluster and no two overlap. Fills each job's plan into out->alone and
 * out->shared (allocated here) without running anything. 0, or -1 with err
 * naming the job.
 */
int par_jobs_plan(const struct par_jobs *js, struct par_jobs_result *out, char *err,
		  size_t errlen);

/* Run every job alone and all together, on the steps par_jobs_plan
 * resolved into out (out zeroed: planned here first). 0; or -1 with err;
 * PAR_JOBS_TOO_LONG (bad input: the jobs' starts are too far apart for
 * their step times) with err; or PAR_RUN_CLOCK with err (a time passed the
 * simulated clock: train.h). */
int par_jobs_run(const struct par_jobs *js, struct par_jobs_result *out, char *err, size_t errlen);

void par_jobs_result_free(struct par_jobs_result *r);

#endif
