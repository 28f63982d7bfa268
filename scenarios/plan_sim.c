/*
 * plan_sim.c - the planner's layouts simulated and ranked (plan_sim.h).
 */
#include "scenarios/plan_sim.h"

#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/schedule.h"
#include "parallel/step.h"
#include "parallel/train.h"
#include "scenarios/scenario.h"
#include "scenarios/train_of.h"
#include "sim/pool.h"
#include "sim/store.h"
#include "sim/util.h"

static void figures_of(const struct par_report *r, struct scn_plan_figures *f)
{
	*f = (struct scn_plan_figures){
		.step_time_s = r->step_time_s, .tokens_per_s = r->tokens_per_s, .mfu = r->mfu,
		.peak_bytes = r->memory.peak, .reserve_bytes = r->memory.reserve.total,
		.capacity_bytes = r->memory.capacity, .compute_s = r->breakdown.compute_s,
		.exposed_comm_s = r->breakdown.exposed_comm_s, .bubble_s = r->breakdown.bubble_s,
		.idle_s = r->breakdown.idle_s, .interference_s = r->breakdown.interference_s,
	};
	memcpy(f->exposed_by, r->breakdown.exposed_by, sizeof(f->exposed_by));
}

void scn_plan_layout_name(const struct par_candidate *c, char *buf, size_t len)
{
	static const char *const rc[] = { "none", "selective", "full" };
	const struct par_layout *l = &c->layout;
	/* the schedule where it is not 1F1B (interleaved with vpp > 1) */
	const struct par_schedule_ops *o = l->schedule < par_schedule_count()
						   ? par_schedule(l->schedule) : NULL;
	const char *name = o ? o->name : "?";
	int plain = o && !strcmp(name, l->vpp > 1 ? "interleaved" : "1f1b");
	snprintf(buf, len, "tp%u%s pp%u vpp%u cp%u ep%u dp%u mb%u zero%u rc=%s%s%s", l->tp,
		 l->sp ? (l->tp_overlap ? "+sp+ov" : "+sp") : "", l->pp, l->vpp, l->cp, l->ep, l->dp, c->micro_batch, l->zero,
		 rc[c->recompute], plain ? "" : " ", plain ? "" : name);
}

const char *scn_plan_collapse_blocker(const struct scn *s)
{
	if (s->model.moe.experts)
		return "a mixture of experts routes each replica's tokens differently";
	const struct par_variability *v = &s->variability;
	if (v->jitter || v->gpu || v->stragglers)
		return "variability draws every GPU's own times";
	return NULL;
}

/* How a simulation ended. A layout that does not fit after all is the
 * estimator's error, an answer; the others are failures (exit 1). */
enum plan_end { PLAN_OK, PLAN_NOFIT, PLAN_REFUSED, PLAN_CRASHED };

/* Simulate one candidate: the scenario with its layout; how it ended, and
 * why in `why` when not PLAN_OK. */
static enum plan_end simulate(const struct scn *base, const struct par_compute_model *cm,
			     const struct par_candidate *c, enum sim_fidelity f, int collapse,
			     struct scn_plan_figures *fig, char *why, size_t whylen)
{
	struct par_report rep, *r = &rep;
	struct scn s = *base;
	char err[SCN_ERRLEN] = "";
	s.parallel = c->layout;
	s.training.micro_batch = c->micro_batch;
	s.training.recompute = c->recompute;
	/* One data-parallel replica stands for the others where they behave
	 * alike (sim.symmetry dp). */
	if (collapse && !scn_plan_collapse_blocker(base))
		s.sim.symmetry = 1;
	if (scn_validate(&s, err, sizeof(err)) < 0) {
		snprintf(why, whylen, "%s", err);
		return PLAN_REFUSED;
	}
	struct par_train t;
	scn_train_of(&t, &s, cm);
	t.steps = 1, t.sim.fidelity = f;
	/* A layout that does not fit is not simulated (nor are its checks of
	 * what only the simulation builds made: par_train_plan). */
	struct par_step st;
	int rc = par_step_resolve(&st, &t, err, sizeof(err));
	if (rc == 0)
		rc = par_train_plan(&st, r, err, sizeof(err));
	if (rc == 0 && r->memory.fits)
		rc = par_train_simulate(&st, r, err, sizeof(err));
	par_step_free(&st);
	if (rc < 0) {
		snprintf(why, whylen, "%s", err);
		return PLAN_REFUSED;
	}
	if (!r->memory.fits) {
		snprintf(why, whylen, "does not fit after all: peak %.2f GB and %.2f GB reserved, of "
			 "%.2f GB", r->memory.peak / 1e9, r->memory.reserve.total / 1e9,
			 r->memory.capacity / 1e9);
		return PLAN_NOFIT;
	}
	figures_of(r, fig);
	return PLAN_OK;
}

/* By flow step time; those without one after, by analytic step time. */
static int by_best(const void *a, const void *b)
{
	const struct scn_plan_layout *x = a, *y = b;
	int nx = isnan(x->flow_s), ny = isnan(y->flow_s);
	if (nx != ny)
		return nx - ny;
	double u = nx ? x->sim_s : x->flow_s, v = ny ? y->sim_s : y->flow_s;
	return u < v ? -1 : u > v ? 1 : (x->est_rank > y->est_rank) - (x->est_rank < y->est_rank);
}

/* One simulation's outcome, as a worker sends it back. */
struct outcome {
	uint32_t i;
	enum plan_end end;
	char why[512];            /* when not PLAN_OK                      */
	struct scn_plan_figures r;         /* when PLAN_OK                          */
};

/* A simulation a worker is handed: which, in what fidelity, of what. */
struct plan_task {
	uint32_t i;
	uint32_t est_rank;        /* for the crash test hook (pool.h)    */
	enum sim_fidelity f;
	int collapse;             /* sim.symmetry dp where it can         */
	struct par_candidate c;
};

/* The pool's context: what a worker simulates (the scenario and compute
 * model) and, in this process, where outcomes land (by index). */
struct plan_serve {
	const struct scn *s;
	const struct par_compute_model *cm;
	struct outcome *out;
	size_t n, done;
	const struct scn_plan_hooks *hooks;
	const char *fidelity;
};

static void serve_layout(void *ctx, const void *task, void *buf)
{
	const struct plan_serve *ps = ctx;
	struct plan_task t = *(const struct plan_task *)task;
	struct outcome *o = buf;
	pool_test_crash(t.est_rank);
	/* Pointers are this process's own: the algorithms the planner kept
	 * from the scenario. */
	memcpy(t.c.layout.algo, ps->s->parallel.algo, sizeof(t.c.layout.algo));
	o->i = t.i;
	o->end = simulate(ps->s, ps->cm, &t.c, t.f, t.collapse, &o->r, o->why, sizeof(o->why));
}

/* A layout whose worker died. */
static void lost_layout(void *ctx, const void *task, void *buf, const char *why)
{
	struct outcome *o = buf;
	(void)ctx;
	o->i = ((const struct plan_task *)task)->i;
	o->end = PLAN_CRASHED;
	snprintf(o->why, sizeof(o->why), "%s", why);
}

static void collect_outcome(void *ctx, const void *result)
{
	struct plan_serve *ps = ctx;
	const struct outcome *o = result;
	BUG_ON(o->i >= ps->n);
	ps->out[o->i] = *o;
	ps->done++;
	if (ps->hooks && ps->hooks->progress)
		ps->hooks->progress(ps->hooks->ctx, ps->fidelity, ps->done, ps->n);
}

/* The pool job of a plan: layouts in, outcomes out. */
static struct pool_job plan_job(struct plan_serve *ps)
{
	return (struct pool_job){
		.task_size = sizeof(struct plan_task), .result_size = sizeof(struct outcome),
		.run = serve_layout, .lost = lost_layout, .done = collect_outcome, .ctx = ps,
	};
}

/*
 * Simulate v[0..n) in fidelity f on the pool (`jobs` forked workers, or
 * the MPI ranks); outcomes land by index, so they do not depend on the
 * number of workers. A layout whose worker died, or that no worker could
 * be started for, is PLAN_CRASHED with the reason.
 */
static void simulate_all(const struct scn *s, const struct par_compute_model *cm,
			const struct scn_plan_layout *v, size_t n, enum sim_fidelity f, int collapse,
			long long jobs, const struct scn_plan_hooks *hooks, struct outcome *out)
{
	memset(out, 0, n * sizeof(*out));
	struct plan_task *tasks = xcalloc(n ? n : 1, sizeof(*tasks));
	for (size_t i = 0; i < n; i++) {
		tasks[i] = (struct plan_task){ .i = (uint32_t)i, .est_rank = v[i].est_rank, .f = f,
					       .collapse = collapse, .c = v[i].c };
		out[i].end = PLAN_CRASHED;
		snprintf(out[i].why, sizeof(out[i].why), "not simulated: no worker could be started");
	}
	struct plan_serve ps = { .s = s, .cm = cm, .out = out, .n = n, .hooks = hooks,
				 .fidelity = f == SIM_FIDELITY_FLOW ? "flow" : "analytic" };
	const struct pool_job job = plan_job(&ps);
	struct pool_stats st;
	pool_run(&job, tasks, (uint32_t)n, (int)jobs, NULL, &st);
	free(tasks);
}

static void say_failed(const struct scn_plan_hooks *h, const struct par_candidate *c,
		       const char *fidelity, const char *why)
{
	if (h->failed)
		h->failed(h->ctx, c, fidelity, why);
}

static int by_sim(const void *a, const void *b)
{
	const struct scn_plan_layout *x = a, *y = b;
	double u = isnan(x->sim_s) ? INFINITY : x->sim_s, v = isnan(y->sim_s) ? INFINITY : y->sim_s;
	return u < v ? -1 : u > v ? 1 : (x->est_rank > y->est_rank) - (x->est_rank < y->est_rank);
}

void scn_plan_order(const struct scn_plan_layout *v, size_t n, struct scn_plan_order *o)
{
	*o = (struct scn_plan_order){ .first = n ? v[0].est_rank : 0 };
	for (size_t i = 0; i < n; i++) {
		uint32_t d = v[i].est_rank > i + 1 ? v[i].est_rank - (uint32_t)i - 1
						    : (uint32_t)i + 1 - v[i].est_rank;
		o->worst = d > o->worst ? d : o->worst;
		for (size_t j = i + 1; j < n; j++, o->pairs++)
			o->swaps += v[i].est_rank > v[j].est_rank;
	}
	/* Spearman's rho over the layouts that ran (ties take mean ranks). */
	double *x = xcalloc(4 * (n ? n : 1), sizeof(*x)), *y = x + n, *work = y + n;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i].sim_s))
			x[k] = v[i].c.step_s, y[k++] = v[i].sim_s;
	o->rho = k >= 3 ? gsl_stats_spearman(x, 1, y, 1, k, work) : NAN;
	free(x);
}

void scn_plan_serve(const struct scn *s, const struct par_compute_model *cm)
{
	struct plan_serve ps = { .s = s, .cm = cm };
	const struct pool_job job = plan_job(&ps);
	pool_serve(&job);
}

/* The place of v[0..n) that holds c's layout, or n. */
static size_t layout_in(const struct scn_plan_layout *v, size_t n, const struct par_candidate *c)
{
	for (size_t i = 0; i < n; i++)
		if (par_plan_same_layout(&v[i].c, c))
			return i;
	return n;
}

static struct scn_plan_layout layout_of(const struct par_candidate *c, size_t i)
{
	return (struct scn_plan_layout){ .c = *c, .flow_s = NAN,
					 .est_rank = c->rank ? c->rank : (uint32_t)i + 1 };
}

size_t scn_plan_simulate(const struct scn *s, const struct par_compute_model *cm,
			 const struct par_candidate *cands, size_t m,
			 const struct scn_plan_run *run, struct scn_plan_layout **vp, size_t *nvp,
			 const struct scn_plan_hooks *hooks, struct scn_plan_fails *fails)
{
	size_t top = run->top, cap = m + 16, n = 0, next = 0;
	int jobs = run->jobs;
	static const struct scn_plan_hooks none;
	if (!hooks)
		hooks = &none;
	*fails = (struct scn_plan_fails){ 0 };
	struct scn_plan_layout *v = xcalloc(cap, sizeof(*v));
	/* more[i] has been simulated (it is rank i + 1 by the estimate). */
	unsigned char *tried = xcalloc(run->nmore + 1, 1);
	for (size_t i = 0; i < m; i++) {
		v[n++] = layout_of(&cands[i], i);
		if (cands[i].rank && cands[i].rank <= run->nmore)
			tried[cands[i].rank - 1] = 1;
	}
	/*
	 * Analytic fidelity, in rounds: a layout that does not fit after all
	 * (its programs' memory against the estimate's) is the estimate's
	 * miss: it leaves the set, and the next of the estimate's order not yet
	 * simulated takes its place. Failures proper (refused, a worker that
	 * died) stay, named.
	 */
	for (size_t from = 0; from < n;) {
		struct outcome *o = xcalloc(n - from, sizeof(*o));
		simulate_all(s, cm, v + from, n - from, SIM_FIDELITY_ANALYTIC, 1, jobs, hooks, o);
		size_t w = from, misses = 0;
		for (size_t i = from; i < n; i++) {
			const struct outcome *x = &o[i - from];
			int keep = run->keep && par_plan_same_layout(&v[i].c, run->keep);
			if (x->end == PLAN_NOFIT && !keep) {
				fails->nofit++, misses++;
				say_failed(hooks, &v[i].c, "analytic", x->why);
				continue;
			}
			v[w] = v[i];
			if (x->end == PLAN_OK) {
				v[w].sim_s = x->r.step_time_s, v[w].r = v[w].ra = x->r;
			} else {
				v[w].sim_s = NAN, v[w].why = xstrdup(x->why);
				fails->analytic++, fails->failures += x->end != PLAN_NOFIT;
				if (x->end != PLAN_NOFIT)
					say_failed(hooks, &v[w].c, "analytic", x->why);
			}
			w++;
		}
		free(o);
		n = from = w;
		for (; misses && next < run->nmore; next++) {
			const struct par_candidate *c = &run->more[next];
			if (tried[next] || layout_in(v, n, c) < n)
				continue;
			tried[next] = 1;
			if (n == cap)
				v = xreallocarray(v, cap *= 2, sizeof(*v));
			v[n++] = layout_of(c, next);
			misses--;
		}
	}
	free(tried);
	qsort(v, n, sizeof(*v), by_sim);
	size_t nflow = 0;
	while (nflow < n && nflow < top && !isnan(v[nflow].sim_s))
		nflow++;
	struct outcome *o = xcalloc(nflow ? nflow : 1, sizeof(*o));
	simulate_all(s, cm, v, nflow, SIM_FIDELITY_FLOW, !run->exact_flow, jobs, hooks, o);
	for (size_t i = 0; i < nflow; i++) {
		if (o[i].end == PLAN_OK)
			v[i].flow_s = o[i].r.step_time_s, v[i].r = o[i].r;
		else
			fails->flow++, fails->failures += o[i].end != PLAN_NOFIT,
				v[i].flow_why = xstrdup(o[i].why), say_failed(hooks, &v[i].c, "flow", o[i].why);
	}
	free(o);
	/* The flow-simulated head is ranked by its flow step times (those whose
	 * flow run failed after them, by analytic time). */
	qsort(v, nflow, sizeof(*v), by_best);
	*vp = v, *nvp = n;
	return nflow;
}

void scn_plan_free(struct scn_plan_layout *v, size_t m)
{
	for (size_t i = 0; i < m; i++)
		free(v[i].why), free(v[i].flow_why);
}

/* ---- the plan in the database ---------------------------------------------------- */

static const char *const rc_names[] = { "none", "selective", "full" };

void scn_plan_print_table(FILE *out, const struct scn_plan_layout *v, size_t n, size_t show)
{
	fprintf(out, "%-4s %-52s %10s %10s %10s %7s %9s %9s %9s\n", "#", "layout", "est(s)",
		"sim(s)", "flow(s)", "MFU", "peak(GB)", "bubble", "exposed");
	for (size_t i = 0; i < n && i < show; i++) {
		char name[128];
		scn_plan_layout_name(&v[i].c, name, sizeof(name));
		fprintf(out, "%-4zu %-52s %10.4f ", i + 1, name, v[i].c.step_s);
		if (isnan(v[i].sim_s)) {   /* the simulation refused it */
			fprintf(out, "%10s\n", "failed");
			continue;
		}
		fprintf(out, "%10.4f ", v[i].sim_s);
		if (isnan(v[i].flow_s))
			fprintf(out, "%10s ", "-");
		else
			fprintf(out, "%10.4f ", v[i].flow_s);
		fprintf(out, "%7.4f %9.1f %9.4f %9.4f\n", v[i].r.mfu, v[i].r.peak_bytes / 1e9,
			v[i].r.bubble_s, v[i].r.exposed_comm_s);
	}
}

static const double *figs_of(const struct scn_plan_figures *f, double out[SIM_STORE_PLAN_FIGS])
{
	const double v[SIM_STORE_PLAN_FIGS] = {
		f->mfu, f->tokens_per_s, f->peak_bytes, f->reserve_bytes, f->capacity_bytes,
		f->compute_s, f->interference_s, f->bubble_s, f->exposed_comm_s, f->idle_s,
		f->exposed_by[PAR_COMM_TP], f->exposed_by[PAR_COMM_DP], f->exposed_by[PAR_COMM_PP],
		f->exposed_by[PAR_COMM_CP], f->exposed_by[PAR_COMM_HOST],
	};
	memcpy(out, v, sizeof(v));
	return out;
}

int64_t scn_plan_store(struct sqlite3 *db, const struct scn_plan_head *h,
		       const struct scn_plan_layout *v, size_t n, char *err, size_t errlen)
{
	struct sim_store_plan_row *rows = xcalloc(n ? n : 1, sizeof(*rows));
	for (size_t i = 0; i < n; i++) {
		const struct scn_plan_layout *x = &v[i];
		const struct par_layout *l = &x->c.layout;
		struct sim_store_plan_row *r = &rows[i];
		*r = (struct sim_store_plan_row){
			.estimate_rank = x->est_rank, .tp = l->tp, .sp = l->sp, .pp = l->pp,
			.vpp = l->vpp, .cp = l->cp, .ep = l->ep, .dp = l->dp,
			.micro_batch = x->c.micro_batch, .zero = l->zero, .estimate_s = x->c.step_s,
			.step_time_s = x->sim_s, .flow_step_time_s = x->flow_s, .failed = x->why,
			.compared = i == h->compare_at,
		};
		snprintf(r->recompute, sizeof(r->recompute), "%s", rc_names[x->c.recompute]);
		snprintf(r->schedule, sizeof(r->schedule), "%s", par_schedule(l->schedule)->name);
		r->tp_overlap = par_plan_key_value(&x->c, PAR_PK_TP_OVERLAP);
		figs_of(&x->r, r->fig);
		if (isnan(x->sim_s))
			for (int j = 0; j < SIM_STORE_PLAN_FIGS; j++)
				r->fig[j] = NAN;
		for (unsigned q = 0; q < PAR_PLAN_NFAMILIES; q++)
			if (par_plan_in_family(q, &x->c))
				snprintf(r->families + strlen(r->families),
					 sizeof(r->families) - strlen(r->families), "%s%s",
					 r->families[0] ? "," : "", par_plan_family_name(q));
	}
	int64_t id = sim_store_plan_write(db, &h->s, rows, n, err, errlen);
	free(rows);   /* the failed strings are v's */
	return id;
}

int scn_plan_load(struct sqlite3 *db, int64_t id, struct scn_plan_head *h,
		  struct scn_plan_layout **vp, size_t *np, char *err, size_t errlen)
{
	struct sim_store_plan_row *rows;
	size_t n;
	*vp = NULL, *np = 0;
	memset(h, 0, sizeof(*h));
	int rc = sim_store_plan_read(db, id, &h->s, &rows, &n, err, errlen);
	if (rc)
		return rc;
	h->compare_at = n;
	struct scn_plan_layout *v = xcalloc(n ? n : 1, sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		const struct sim_store_plan_row *r = &rows[i];
		struct scn_plan_layout *x = &v[i];
		struct par_layout *l = &x->c.layout;
		x->est_rank = r->estimate_rank;
		l->tp = r->tp, l->sp = r->sp != 0, l->pp = r->pp, l->vpp = r->vpp, l->cp = r->cp;
		l->tp_overlap = r->tp_overlap != 0;
		l->ep = r->ep, l->dp = r->dp, l->zero = r->zero;
		x->c.micro_batch = r->micro_batch;
		for (int j = 0; j < 3; j++)
			if (!strcmp(r->recompute, rc_names[j]))
				x->c.recompute = (enum par_recompute)j;
		/* a version 6 file stores none: 1F1B, or interleaved with chunks */
		int sc = par_schedule_find(r->schedule[0] ? r->schedule
					   : l->vpp > 1 ? "interleaved" : "1f1b");
		l->schedule = sc >= 0 ? (uint32_t)sc : 0;
		x->c.step_s = r->estimate_s, x->sim_s = r->step_time_s;
		x->flow_s = r->flow_step_time_s;
		x->why = r->failed ? xstrdup(r->failed) : NULL;
		struct scn_plan_figures *f = &x->r;
		double *figs[SIM_STORE_PLAN_FIGS] = {
			&f->mfu, &f->tokens_per_s, &f->peak_bytes, &f->reserve_bytes,
			&f->capacity_bytes, &f->compute_s, &f->interference_s, &f->bubble_s,
			&f->exposed_comm_s, &f->idle_s, &f->exposed_by[PAR_COMM_TP],
			&f->exposed_by[PAR_COMM_DP], &f->exposed_by[PAR_COMM_PP],
			&f->exposed_by[PAR_COMM_CP], &f->exposed_by[PAR_COMM_HOST],
		};
		for (int j = 0; j < SIM_STORE_PLAN_FIGS; j++)
			*figs[j] = r->fig[j];
		f->step_time_s = isnan(x->flow_s) ? x->sim_s : x->flow_s;
		if (r->compared)
			h->compare_at = i;
	}
	sim_store_plan_rows_free(rows, n);
	*vp = v, *np = n;
	return 0;
}
