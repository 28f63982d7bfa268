/*
 * jobs.c - several jobs on one cluster: each placed on the cluster's sim
 * from its first rank (par_place), stepping on its own clock through the
 * engine's rank-done call, run alone and then together.
 *
 * Invariants of a run: every rank belongs to at most one job (job_of); a
 * job's `left` counts its ranks still in the current step, and its `ev` is
 * scheduled at most once, by the last of them, to start the next step at the
 * time that one ended.
 */
#include "parallel/jobs.h"

#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_rng.h>

#include "parallel/train-int.h"

/* One job in a run. */
struct jrun {
	struct sim_event ev;          /* starts its next step               */
	const struct par_job *job;
	struct par_placed p;
	uint32_t left;                /* ranks still in the step            */
	uint32_t timed, cap;          /* steps timed so far; room in step_s */
	sim_ps t0;                    /* when the step started              */
	double *step_s;               /* [timed]                            */
	gsl_rng *jitter;              /* its kernels' jitter, or NULL       */
};

struct jobs_run {
	struct jrun *j;
	size_t n;
	const struct par_variability *var;
	uint32_t *job_of;             /* [cluster rank]: job, or NO_JOB     */
	uint32_t steps;
	size_t through;               /* jobs with `steps` steps timed      */
};

#define NO_JOB UINT32_MAX

/*
 * Kernel jitter from the job's own generator (seeded by sim.seed and its
 * index): the draws follow its own events, so a job's draws are the same
 * alone and beside jobs whose traffic never meets its own.
 */
static double job_jitter(void *ctx, uint32_t rank, const struct sim_op *op)
{
	const struct jobs_run *run = ctx;
	(void)op;
	return par_draw_mean1(run->j[run->job_of[rank]].jitter, run->var->jitter,
			      run->var->jitter_cv);
}

static void step_begin(struct sim *sim, struct sim_event *ev)
{
	struct jrun *j = container_of(ev, struct jrun, ev);
	j->t0 = sim_now(sim);
	j->left = j->p.n;
	for (uint32_t r = 0; r < j->p.n; r++)
		par_place_start(&j->p, sim, r);
}

/* A rank ended its step; the job's last one times it and starts the next,
 * until every job has timed `steps` steps. */
static void rank_done(void *ctx, struct sim *sim, uint32_t rank)
{
	struct jobs_run *run = ctx;
	BUG_ON(run->job_of[rank] == NO_JOB);
	struct jrun *j = &run->j[run->job_of[rank]];
	if (--j->left)
		return;
	if (run->through == run->n)
		return;  /* the window is closed: the step ran partly alone */
	if (j->timed == j->cap)
		j->step_s = xreallocarray(j->step_s, j->cap *= 2, sizeof(double));
	j->step_s[j->timed++] = sim_ps_to_s(sim_now(sim) - j->t0);
	run->through += j->timed == run->steps;
	if (run->through < run->n)
		sim_schedule(sim, sim_now(sim), &j->ev);
}

/* A link one job's traffic crossed, while it ran alone. */
struct crossed {
	char name[64];
	double bw_Bps;
	double bytes;                 /* per step */
	uint32_t job;
};

/*
 * Run jobs which[0..k) on a sim of the whole cluster. Each job's step times
 * go to its report (rep[which[i]]); with `crossed`, the links the run's
 * traffic crossed are appended to it for job which[0] (k = 1). The last run
 * (`last`: all the jobs together, or the only job) is recorded and finished
 * as js asks, and its totals go to out.
 */
static int run_some(const struct par_jobs *js, const size_t *which, size_t k, int last,
		    struct par_report *rep, struct crossed **crossed, size_t *ncrossed,
		    struct par_jobs_result *out, char *err, size_t errlen)
{
	uint32_t n = (uint32_t)topo_config_gpus(js->cluster);
	struct topo *topo = topo_new(js->cluster, n, err, errlen);
	if (!topo)
		return -1;
	struct sim *sim = sim_new(&js->sim, n, topo_sim_ops(), topo);
	topo_attach(topo, sim);
	if (last && js->rec)
		sim_set_recorder(sim, js->rec, js->rec_ctx);
	struct jobs_run run = {
		.j = xcalloc(k, sizeof(struct jrun)), .n = k, .steps = js->steps ? js->steps : 1,
		.job_of = xmalloc(n * sizeof(uint32_t)),
	};
	for (uint32_t r = 0; r < n; r++)
		run.job_of[r] = NO_JOB;
	for (size_t i = 0; i < k; i++) {
		struct jrun *j = &run.j[i];
		j->job = &js->job[which[i]];
		j->ev.fire = step_begin;
		j->step_s = xcalloc(j->cap = run.steps, sizeof(double));
		par_place(&j->p, &out->steps[which[i]], sim, j->job->first_rank);
		for (uint32_t r = 0; r < j->p.n; r++)
			run.job_of[j->job->first_rank + r] = (uint32_t)i;
	}
	struct par_var_state vr = { 0 };
	struct par_report vrep = { 0 };
	if (par_var_active(js->var))
		par_var_begin(&vr, js->var, js->seed, sim, &vrep);
	if (par_var_active(js->var) && js->var->jitter) {
		run.var = js->var;
		for (size_t i = 0; i < k; i++) {
			run.j[i].jitter = gsl_rng_alloc(gsl_rng_mt19937);
			gsl_rng_set(run.j[i].jitter, (unsigned long)(js->seed + 1 + which[i]));
		}
		sim_set_compute_scale(sim, job_jitter, &run);
	}
	sim_set_rank_done(sim, rank_done, &run);
	for (size_t i = 0; i < k; i++)
		sim_schedule(sim, run.j[i].job->start_ps, &run.j[i].ev);
	int rc = sim_run(sim);
	if (rc < 0) {
		snprintf(err, errlen, "%s", sim_error(sim));
		if (sim_failed_clock(sim))
			rc = PAR_RUN_CLOCK;
	}
	for (size_t i = 0; rc == 0 && i < k; i++) {
		struct par_report *r = &rep[which[i]];
		uint32_t timed = run.j[i].timed;
		r->step_times = xmalloc(timed * sizeof(double));
		memcpy(r->step_times, run.j[i].step_s, timed * sizeof(double));
		double sum = 0;
		for (uint32_t s = 0; s < timed; s++)
			sum += run.j[i].step_s[s];
		r->step_time_s = sum / timed;
		par_report_rates(&run.j[i].job->train, r);
		par_report_steps(run.j[i].step_s, timed, r);
	}
	if (rc == 0 && last) {
		out->events = sim_events(sim);
		out->sim_end_ps = sim_now(sim);
		out->nstragglers = vrep.nstragglers;
		memcpy(out->stragglers, vrep.stragglers, sizeof(out->stragglers));
	}
	for (uint32_t l = 0; rc == 0 && crossed && l < sim_nlinks(sim); l++) {
		struct sim_link_stats ls;
		sim_link_stats(sim, l, &ls);
		if (ls.bytes <= 0)
			continue;
		*crossed = xreallocarray(*crossed, *ncrossed + 1, sizeof(**crossed));
		struct crossed *c = &(*crossed)[(*ncrossed)++];
		*c = (struct crossed){ .bw_Bps = ls.bw_Bps, .bytes = ls.bytes / run.steps,
				       .job = (uint32_t)which[0] };
		topo_sim_ops()->link_name(topo, ls.tag, c->name, sizeof(c->name));
	}
	par_var_end(&vr, sim);
	if (rc == 0 && last && js->finish)
		rc = js->finish(js->rec_ctx, sim, topo, err, errlen);
	/* The engine first: after a failed run its queue may still hold a
	 * job's start event, which lives in run.j. */
	sim_free(sim);
	topo_free(topo);
	for (size_t i = 0; i < k; i++) {
		par_place_free(&run.j[i].p);
		free(run.j[i].step_s);
		if (run.j[i].jitter)
			gsl_rng_free(run.j[i].jitter);
	}
	free(run.j);
	free(run.job_of);
	return rc;
}

static int by_name(const void *a, const void *b)
{
	const struct crossed *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->job > y->job) - (x->job < y->job);
}

static double link_total(const struct par_link_share *l)
{
	double sum = 0;
	for (int i = 0; i < PAR_MAX_JOBS; i++)
		sum += l->bytes[i];
	return sum;
}

/* Busiest first (bytes of all jobs), then by name. */
static int by_bytes(const void *a, const void *b)
{
	const struct par_link_share *x = a, *y = b;
	double bx = link_total(x), by = link_total(y);
	return bx != by ? (bx < by) - (bx > by) : strcmp(x->name, y->name);
}

/* The links more than one job crossed alone, busiest first. */
static void shared_links(struct crossed *c, size_t n, struct par_jobs_result *out)
{
	if (n)
		qsort(c, n, sizeof(*c), by_name);
	for (size_t i = 0, e; i < n; i = e) {
		for (e = i + 1; e < n && !strcmp(c[e].name, c[i].name); e++)
			;
		if (e - i < 2)
			continue;
		out->links = xreallocarray(out->links, out->nlinks + 1, sizeof(*out->links));
		struct par_link_share *l = &out->links[out->nlinks++];
		*l = (struct par_link_share){ .bw_Bps = c[i].bw_Bps };
		snprintf(l->name, sizeof(l->name), "%s", c[i].name);
		for (size_t k = i; k < e; k++)
			l->bytes[c[k].job] = c[k].bytes;
	}
	if (out->nlinks)
		qsort(out->links, out->nlinks, sizeof(*out->links), by_bytes);
}

int par_jobs_plan(const struct par_jobs *js, struct par_jobs_result *out, char *err,
		  size_t errlen)
{
	*out = (struct par_jobs_result){ 0 };
	if (js->n < 1 || js->n > PAR_MAX_JOBS)
		return sim_errf(err, errlen, "jobs: expected 1 to %d jobs, got %zu", PAR_MAX_JOBS,
				js->n);
	out->n = js->n;
	out->alone = xcalloc(js->n, sizeof(struct par_report));
	out->shared = xcalloc(js->n, sizeof(struct par_report));
	out->steps = xcalloc(js->n, sizeof(struct par_step));
	uint32_t total = (uint32_t)topo_config_gpus(js->cluster);
	char why[1024];
	for (size_t i = 0; i < js->n; i++) {
		const struct par_job *j = &js->job[i];
		if (par_step_resolve(&out->steps[i], &j->train, why, sizeof(why)) < 0 ||
		    par_train_plan(&out->steps[i], &out->alone[i], why, sizeof(why)) < 0)
			return sim_errf(err, errlen, "job %s: %s", j->name, why);
		out->shared[i] = out->alone[i];
		uint32_t end = j->first_rank + out->alone[i].gpus;
		if (end > total || end < j->first_rank)
			return sim_errf(err, errlen, "job %s: GPUs %u to %u, but the cluster has %u",
					j->name, j->first_rank, end - 1, total);
		for (size_t k = 0; k < i; k++) {
			const struct par_job *o = &js->job[k];
			if (j->first_rank < o->first_rank + out->alone[k].gpus &&
			    o->first_rank < end)
				return sim_errf(err, errlen, "job %s: its GPUs (%u to %u) overlap "
						"job %s's (%u to %u)", j->name, j->first_rank,
						end - 1, o->name, o->first_rank,
						o->first_rank + out->alone[k].gpus - 1);
		}
		if (j->train.host)
			return sim_errf(err, errlen, "job %s: compute.host: eager is not simulated "
					"in a jobs list yet (each job has its own compute model); use "
					"none", j->name);
		if (j->train.interference)
			return sim_errf(err, errlen, "job %s: compute.interference: measured is not "
					"simulated in a jobs list yet (each job has its own compute "
					"model); use none", j->name);
		if (j->train.symmetry_dp)
			return sim_errf(err, errlen, "job %s: sim.symmetry: dp is not simulated in a "
					"jobs list (the replicas' traffic is what jobs share); use "
					"none", j->name);
	}
	if (js->n > 1 && js->sim.fidelity != SIM_FIDELITY_FLOW)
		return sim_errf(err, errlen, "jobs: jobs share links in flow fidelity only; "
				"set sim.fidelity: flow");
	return 0;
}

/*
 * The steps each job runs together, estimated from the steps alone: the run
 * ends when the last job has timed `steps` of them, about max over jobs of
 * start + steps x step time; job i runs from its start to then. 0, or
 * PAR_JOBS_TOO_LONG with err naming the job and the late one.
 */
static int steps_bound(const struct par_jobs *js, const struct par_report *alone, char *err,
		       size_t errlen)
{
	uint32_t steps = js->steps ? js->steps : 1;
	double end = 0;
	size_t last = 0;
	for (size_t i = 0; i < js->n; i++) {
		double e = sim_ps_to_s(js->job[i].start_ps) + steps * alone[i].step_time_s;
		if (e > end)
			end = e, last = i;
	}
	for (size_t i = 0; i < js->n; i++) {
		double n = (end - sim_ps_to_s(js->job[i].start_ps)) / alone[i].step_time_s;
		/* Too late a start, or steps of too different lengths. */
		double late = sim_ps_to_s(js->job[last].start_ps) - sim_ps_to_s(js->job[i].start_ps);
		if (n > (double)steps + PAR_JOBS_MAX_STEPS)
			return sim_errf(err, errlen, "jobs: job %s (steps of %.3g s alone) would run "
					"about %.0f steps together until job %s (start %.6g s) has "
					"timed %u of its steps of %.3g s: at most sim.steps + %d; %s",
					js->job[i].name, alone[i].step_time_s, n, js->job[last].name,
					sim_ps_to_s(js->job[last].start_ps), steps,
					alone[last].step_time_s, PAR_JOBS_MAX_STEPS,
					late > steps * alone[last].step_time_s
						? "start the jobs closer together"
						: "the steps differ too much in length: simulate the jobs "
						  "apart"), PAR_JOBS_TOO_LONG;
	}
	return 0;
}

int par_jobs_run(const struct par_jobs *js, struct par_jobs_result *out, char *err, size_t errlen)
{
	if (!out->steps && par_jobs_plan(js, out, err, errlen) < 0)
		return -1;
	struct crossed *crossed = NULL;
	size_t ncrossed = 0, all[PAR_MAX_JOBS];
	int rc = 0;
	char why[1024];
	for (size_t i = 0; i < js->n && rc == 0; i++) {
		all[i] = i;
		rc = run_some(js, &i, 1, js->n == 1, out->alone, &crossed, &ncrossed, out, why, sizeof(why));
		if (rc < 0)
			sim_errf(err, errlen, "job %s alone: %s", js->job[i].name, why);
	}
	if (rc == 0 && js->n > 1)
		rc = steps_bound(js, out->alone, err, errlen);
	if (rc == 0 && js->n > 1 && js->ready && js->ready(js->rec_ctx, err, errlen) < 0)
		rc = -1;
	if (rc == 0 && js->n > 1) {
		rc = run_some(js, all, js->n, 1, out->shared, NULL, NULL, out, why, sizeof(why));
		if (rc < 0)
			sim_errf(err, errlen, "the jobs together: %s", why);
	}
	if (rc == 0 && js->n == 1) {  /* alone is all there is */
		free(out->shared[0].step_times);
		out->shared[0] = out->alone[0];
		out->shared[0].step_times = NULL;
		if (out->alone[0].step_times) {
			size_t bytes = out->alone[0].steps * sizeof(double);
			out->shared[0].step_times = memcpy(xmalloc(bytes), out->alone[0].step_times,
							   bytes);
		}
	}
	if (rc == 0)
		shared_links(crossed, ncrossed, out);
	free(crossed);
	return rc;
}

void par_jobs_result_free(struct par_jobs_result *r)
{
	for (size_t i = 0; i < r->n && r->alone; i++) {
		free(r->alone[i].step_times);
		free(r->shared[i].step_times);
	}
	for (size_t i = 0; i < r->n && r->steps; i++)
		par_step_free(&r->steps[i]);
	free(r->alone);
	free(r->shared);
	free(r->steps);
	free(r->links);
	*r = (struct par_jobs_result){ 0 };
}
