/*
 * plan_sim.h - the planner's best layouts simulated: each in analytic
 * fidelity, the best of those in flow fidelity, on the worker pool
 * (sim/pool.h), and ranked by what the simulations said (the second half
 * of `clustersim plan`; the first, enumeration and the estimate, is
 * parallel/plan.h). scenarios/plan_sim.c.
 *
 * A simulation is run on the scenario with the candidate's layout, micro-
 * batch and recomputation, one step. It ends in one of four ways: its
 * figures; the layout does not fit after all (the estimator's error, an
 * answer); the scenario's checks or the simulation refused it; or its
 * worker died (an abort, a signal). The last two are failures. Results do
 * not depend on the number of workers.
 */
#ifndef SCENARIOS_PLAN_SIM_H
#define SCENARIOS_PLAN_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "parallel/plan.h"
#include "parallel/train.h"
#include "sim/store.h"

struct scn;
struct par_compute_model;

/* What a plan keeps of a simulation's report: plain numbers, so that they
 * cross a worker's pipe or an MPI message byte for byte. */
struct scn_plan_figures {
	double step_time_s, tokens_per_s, mfu, peak_bytes;
	double reserve_bytes, capacity_bytes;   /* fits: peak + reserve <= capacity */
	double compute_s, exposed_comm_s, bubble_s, idle_s;   /* critical rank */
	double interference_s;    /* of compute_s: communication beside it */
	double exposed_by[PAR_COMM_NKINDS];   /* exposed_comm_s by kind */
};

/* A candidate with its simulated figures. */
struct scn_plan_layout {
	struct par_candidate c;
	uint32_t est_rank;          /* place by the estimate, from 1          */
	double sim_s, flow_s;       /* analytic and flow step times (or NAN) */
	struct scn_plan_figures r;  /* the flow report's, else the analytic's */
	struct scn_plan_figures ra; /* the analytic report's                */
	char *why, *flow_why;       /* why a simulation failed (malloc'd), or NULL */
};

/* What failed: simulations that did not end in figures, per fidelity, and
 * of them the failures proper (refused, or the worker died). */
struct scn_plan_fails {
	size_t analytic, flow, failures;
	size_t nofit;             /* left out: did not fit after all       */
};

/* What the caller hears while the simulations run, any may be NULL:
 * failed, for each simulation that did not end in figures, in the order of
 * the ranking at the time (fidelity "analytic" or "flow"); progress, as
 * each simulation of a fidelity ends (done of total). */
struct scn_plan_hooks {
	void (*failed)(void *ctx, const struct par_candidate *c, const char *fidelity,
		       const char *why);
	void (*progress)(void *ctx, const char *fidelity, size_t done, size_t total);
	void *ctx;
};

/*
 * Simulate cands[0..m) in analytic fidelity on run->jobs workers (or the
 * MPI ranks), replacing those that do not fit after all (run->more), rank
 * them by step time, simulate the best run->top that ran in flow fidelity
 * and rank those by flow step time (those whose flow run failed after
 * them). *v (malloc'd, *nv entries) gets the ranking; the number simulated
 * in flow is returned. scn_plan_free frees v's strings.
 */
struct scn_plan_run {
	size_t top;               /* the best of the analytic ranking to run in flow */
	int jobs;                 /* worker processes                       */
	bool exact_flow;          /* flow runs simulate every rank; else, where
				   * scn_plan_collapse_blocker allows, one
				   * data-parallel replica for all          */
	/* Where a layout does not fit after all, the next of more[0..nmore)
	 * (the estimate's order) not yet simulated takes its place. */
	const struct par_candidate *more;
	size_t nmore;
	const struct par_candidate *keep;   /* kept however it ends (--compare), or NULL */
};
size_t scn_plan_simulate(const struct scn *s, const struct par_compute_model *cm,
			 const struct par_candidate *cands, size_t m,
			 const struct scn_plan_run *run, struct scn_plan_layout **v, size_t *nv,
			 const struct scn_plan_hooks *hooks, struct scn_plan_fails *fails);
void scn_plan_free(struct scn_plan_layout *v, size_t m);

/* An MPI rank other than 0: simulate the layouts rank 0 hands out, until
 * it says stop. */
void scn_plan_serve(const struct scn *s, const struct par_compute_model *cm);

/* How far the estimate's order was from the ranking of v[0..n): the
 * simulated winner's place by the estimate, the pairs that swapped, and
 * the largest move in places. */
struct scn_plan_order {
	uint32_t first, worst;
	size_t swaps, pairs;
	double rho;               /* Spearman's rank correlation of the estimates
				   * with the analytic step times, over the
				   * layouts that ran (NAN under 3) */
};
void scn_plan_order(const struct scn_plan_layout *v, size_t n, struct scn_plan_order *o);

/*
 * Simulations are symmetry-collapsed (sim.symmetry dp: one data-parallel
 * replica simulated for all; in flow fidelity unless exact_flow), where
 * the replicas behave alike; where they do not, why (and the plan
 * simulates every rank): NULL when they do. docs/plan.md says how far the
 * collapsed step is from the exact one.
 */
const char *scn_plan_collapse_blocker(const struct scn *s);

/*
 * A plan in the database (tables plans and plan_layouts, docs/schema.md):
 * its head and every simulated layout in the ranking's order (compare_at:
 * the --compare layout's place, or n). scn_plan_store writes them in one
 * transaction and returns the plan's id (-1 with err); scn_plan_load reads
 * plan `id` (0: the newest) back into *v (malloc'd, *n; scn_plan_free and
 * free) with its head, the figures those of the flow run where there was
 * one: 0, 1 if there is no such plan, -1 with err.
 */
struct scn_plan_head {
	struct sim_store_plan_head s;   /* as the plans table stores it     */
	size_t compare_at;
};
struct sqlite3;
int64_t scn_plan_store(struct sqlite3 *db, const struct scn_plan_head *h,
		       const struct scn_plan_layout *v, size_t n, char *err, size_t errlen);
int scn_plan_load(struct sqlite3 *db, int64_t id, struct scn_plan_head *h,
		  struct scn_plan_layout **v, size_t *n, char *err, size_t errlen);

/* The ranking's table, its first `show` rows (the layout, the estimate, the
 * analytic and flow step times, MFU, peak, bubble and exposed
 * communication), as `plan` prints it. */
void scn_plan_print_table(FILE *out, const struct scn_plan_layout *v, size_t n, size_t show);

/* "tp8+sp pp4 vpp1 cp1 ep1 dp2 mb1 zero1 rc=none" */
void scn_plan_layout_name(const struct par_candidate *c, char *buf, size_t len);

#endif
