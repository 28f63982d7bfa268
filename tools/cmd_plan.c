/*
 * cmd_plan.c - `clustersim plan SCENARIO --gpus N`: enumerate every layout of
 * the scenario's model and training run on N GPUs, drop those that are not
 * valid or do not fit, rank the rest with the closed-form estimator
 * (parallel/plan.c), simulate the best in analytic fidelity and the top K in
 * flow fidelity, and report the ranking with where estimator and simulation
 * disagreed, and why the winner wins. The simulations run on the worker pool
 * (sim/pool.h), so one that aborts is named as failed and the rest go on;
 * a plan with a failed simulation still prints its ranking, and exits 1.
 */
#include "tools/cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "parallel/plan.h"
#include "parallel/train.h"
#include "scenarios/scenario.h"
#include "scenarios/train_of.h"
#include "sim/util.h"
#include "sim/mpi_pool.h"
#include "sim/pool.h"

static const struct cli_opt plan_opts[] = {
	{ "gpus", 'g', CLI_COUNT, "N", NULL, "GPUs to plan for (whole nodes of the cluster)" },
	{ "set", 0, CLI_LIST, "KEY=VALUE", NULL, "override a scenario key (model, training, cluster)" },
	{ "top", 'k', CLI_COUNT, "K", "3", "layouts to print, and to simulate in flow fidelity" },
	{ "analytic", 0, CLI_COUNT, "N", "16384 / GPUs, 16 to 256",
	  "best estimates to simulate in analytic fidelity" },
	{ "objective", 0, CLI_STR, "GOAL", "step_time", "step_time, mfu or tokens_per_s" },
	{ "jobs", 'j', CLI_COUNT, "N", "all cores", "worker processes for the simulations" },
	{ "json", 0, CLI_FLAG, NULL, NULL, "print a JSON object instead of the table" },
	{ 0 },
};

/* What the plan prints of a simulation's report: plain numbers, so that
 * they cross a worker's pipe or an MPI message byte for byte. */
struct figures {
	double step_time_s, tokens_per_s, mfu, peak_bytes;
	double compute_s, exposed_comm_s, bubble_s, idle_s;   /* critical rank */
};

static void figures_of(const struct par_report *r, struct figures *f)
{
	*f = (struct figures){
		.step_time_s = r->step_time_s, .tokens_per_s = r->tokens_per_s, .mfu = r->mfu,
		.peak_bytes = r->memory.peak, .compute_s = r->breakdown.compute_s,
		.exposed_comm_s = r->breakdown.exposed_comm_s, .bubble_s = r->breakdown.bubble_s,
		.idle_s = r->breakdown.idle_s,
	};
}

/* A candidate with its simulated figures. */
struct ranked {
	struct par_candidate c;
	uint32_t est_rank;          /* place by the estimate                  */
	double sim_s, flow_s;       /* analytic and flow step times (or NAN) */
	struct figures r;           /* the analytic (or flow) report's        */
	char *why, *flow_why;       /* why a simulation failed (malloc'd), or NULL */
};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static void layout_name(const struct par_candidate *c, char *buf, size_t len)
{
	static const char *const rc[] = { "none", "selective", "full" };
	const struct par_layout *l = &c->layout;
	snprintf(buf, len, "tp%u%s pp%u vpp%u cp%u ep%u dp%u mb%u zero%u rc=%s", l->tp,
		 l->sp ? "+sp" : "", l->pp, l->vpp, l->cp, l->ep, l->dp, c->micro_batch, l->zero,
		 rc[c->recompute]);
}

/* How a simulation ended. A layout that does not fit after all is the
 * estimator's error, an answer; the others are failures (exit 1). */
enum sim_end { SIM_OK, SIM_NOFIT, SIM_REFUSED, SIM_CRASHED };

/* Simulate one candidate: the scenario with its layout; how it ended, and
 * why in `why` when not SIM_OK. */
static enum sim_end simulate(const struct scn *base, const struct par_compute_model *cm,
			     const struct par_candidate *c, enum sim_fidelity f,
			     struct figures *fig, char *why, size_t whylen)
{
	struct par_report rep, *r = &rep;
	struct scn s = *base;
	char err[SCN_ERRLEN] = "";
	s.parallel = c->layout;
	s.training.micro_batch = c->micro_batch;
	s.training.recompute = c->recompute;
	if (scn_validate(&s, err, sizeof(err)) < 0) {
		snprintf(why, whylen, "%s", err);
		return SIM_REFUSED;
	}
	struct par_train t;
	scn_train_of(&t, &s, cm);
	t.steps = 1, t.sim.fidelity = f;
	/* A layout that does not fit is not simulated (nor are its checks of
	 * what only the simulation builds made: par_train_plan). */
	if (par_train_plan(&t, r, err, sizeof(err)) < 0 ||
	    (r->memory.fits && par_train_simulate(&t, r, err, sizeof(err)) < 0)) {
		snprintf(why, whylen, "%s", err);
		return SIM_REFUSED;
	}
	if (!r->memory.fits) {
		snprintf(why, whylen, "out of memory: peak %.2f GB of %.2f GB",
			 r->memory.peak / 1e9, r->memory.capacity / 1e9);
		return SIM_NOFIT;
	}
	figures_of(r, fig);
	return SIM_OK;
}

/* By flow step time; those without one after, by analytic step time. */
static int by_best(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	int nx = isnan(x->flow_s), ny = isnan(y->flow_s);
	if (nx != ny)
		return nx - ny;
	double u = nx ? x->sim_s : x->flow_s, v = ny ? y->sim_s : y->flow_s;
	return u < v ? -1 : u > v ? 1 : (x->est_rank > y->est_rank) - (x->est_rank < y->est_rank);
}

/* Say on stderr that a layout's simulation failed, and why. */
static void failed(const struct par_candidate *c, const char *fidelity, const char *why)
{
	char name[128];
	layout_name(c, name, sizeof(name));
	fprintf(stderr, "clustersim plan: the %s simulation of %s failed: %s\n", fidelity, name,
		why[0] ? why : "no reason given");
}

/* One simulation's outcome, as a worker sends it back. */
struct outcome {
	uint32_t i;
	enum sim_end end;
	char why[512];            /* when not SIM_OK                      */
	struct figures r;         /* when SIM_OK                          */
};

/* A simulation a worker is handed: which, in what fidelity, of what. */
struct plan_task {
	uint32_t i;
	uint32_t est_rank;        /* for the crash test hook (pool.h)    */
	enum sim_fidelity f;
	struct par_candidate c;
};

/* The pool's context: what a worker simulates (the scenario and compute
 * model) and, in this process, where outcomes land (by index). */
struct plan_serve {
	const struct scn *s;
	const struct par_compute_model *cm;
	struct outcome *out;
	size_t n;
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
	o->end = simulate(ps->s, ps->cm, &t.c, t.f, &o->r, o->why, sizeof(o->why));
}

/* A layout whose worker died. */
static void lost_layout(void *ctx, const void *task, void *buf, const char *why)
{
	struct outcome *o = buf;
	(void)ctx;
	o->i = ((const struct plan_task *)task)->i;
	o->end = SIM_CRASHED;
	snprintf(o->why, sizeof(o->why), "%s", why);
}

static void collect_outcome(void *ctx, const void *result)
{
	struct plan_serve *ps = ctx;
	const struct outcome *o = result;
	BUG_ON(o->i >= ps->n);
	ps->out[o->i] = *o;
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
 * be started for, is SIM_CRASHED with the reason.
 */
static void simulate_all(const struct scn *s, const struct par_compute_model *cm,
			const struct ranked *v, size_t n, enum sim_fidelity f, long long jobs,
			struct outcome *out)
{
	memset(out, 0, n * sizeof(*out));
	struct plan_task *tasks = xcalloc(n ? n : 1, sizeof(*tasks));
	for (size_t i = 0; i < n; i++) {
		tasks[i] = (struct plan_task){ .i = (uint32_t)i, .est_rank = v[i].est_rank, .f = f,
					       .c = v[i].c };
		out[i].end = SIM_CRASHED;
		snprintf(out[i].why, sizeof(out[i].why), "not simulated: no worker could be started");
	}
	struct plan_serve ps = { .s = s, .cm = cm, .out = out, .n = n };
	const struct pool_job job = plan_job(&ps);
	struct pool_stats st;
	pool_run(&job, tasks, (uint32_t)n, (int)jobs, NULL, &st);
	free(tasks);
}

static int by_sim(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	double u = isnan(x->sim_s) ? INFINITY : x->sim_s, v = isnan(y->sim_s) ? INFINITY : y->sim_s;
	return u < v ? -1 : u > v ? 1 : (x->est_rank > y->est_rank) - (x->est_rank < y->est_rank);
}

/* Why the winner beats the runner-up, in one paragraph. */
static void why(const struct ranked *a, const struct ranked *b, const char *goal)
{
	char wa[128], wb[128];
	layout_name(&a->c, wa, sizeof(wa));
	layout_name(&b->c, wb, sizeof(wb));
	const struct figures *x = &a->r, *y = &b->r;
	/* The reports are the flow ones where both were simulated in flow. */
	int flow = !isnan(a->flow_s) && !isnan(b->flow_s);
	double ta = flow ? a->flow_s : a->sim_s, tb = flow ? b->flow_s : b->sim_s;
	const char *fid = flow ? "flow" : "analytic";
	if (!strcmp(goal, "mfu"))
		printf("\n%s beats %s with an MFU of %.4f against %.4f (%s fidelity). ", wa, wb,
		       a->r.mfu, b->r.mfu, fid);
	else if (!strcmp(goal, "tokens_per_s"))
		printf("\n%s beats %s with %.0f tokens/s against %.0f (%s fidelity). ", wa, wb,
		       a->r.tokens_per_s, b->r.tokens_per_s, fid);
	else
		printf("\n%s beats %s by %.1f %% (%.4f s against %.4f s per step, %s fidelity). ",
		       wa, wb, 100 * (tb / ta - 1), ta, tb, fid);
	double dc = y->compute_s - x->compute_s;
	double db = y->bubble_s - x->bubble_s;
	double de = y->exposed_comm_s - x->exposed_comm_s;
	double di = y->idle_s - x->idle_s;
	printf("Of the difference, compute accounts for %+.4f s, the pipeline bubble %+.4f s, "
	       "exposed communication %+.4f s and other idle time %+.4f s on the critical rank. ",
	       dc, db, de, di);
	printf("The winner peaks at %.1f GB per GPU, the runner-up at %.1f GB.\n",
	       x->peak_bytes / 1e9, y->peak_bytes / 1e9);
}

static void print_table(const struct ranked *v, size_t n, size_t top)
{
	printf("%-4s %-52s %10s %10s %10s %7s %9s %9s %9s\n", "#", "layout", "est(s)", "sim(s)",
	       "flow(s)", "MFU", "peak(GB)", "bubble", "exposed");
	for (size_t i = 0; i < n && i < top; i++) {
		char name[128];
		layout_name(&v[i].c, name, sizeof(name));
		printf("%-4zu %-52s %10.4f ", i + 1, name, v[i].c.step_s);
		if (isnan(v[i].sim_s)) {   /* the simulation refused it */
			printf("%10s\n", "failed");
			continue;
		}
		printf("%10.4f ", v[i].sim_s);
		if (isnan(v[i].flow_s))
			printf("%10s ", "-");
		else
			printf("%10.4f ", v[i].flow_s);
		printf("%7.4f %9.1f %9.4f %9.4f\n", v[i].r.mfu, v[i].r.peak_bytes / 1e9,
		       v[i].r.bubble_s, v[i].r.exposed_comm_s);
	}
}

static void print_json(const struct ranked *v, size_t n, size_t top, uint64_t total, size_t fits,
		       const uint64_t dropped[], double per_s, double wall)
{
	printf("{\"candidates\":%llu,\"fits\":%zu,\"dropped\":{\"invalid\":%llu,\"memory\":%llu},"
	       "\"screened_per_s\":%.1f,\"wall_s\":%.3f,\"layouts\":[", (unsigned long long)total,
	       fits, (unsigned long long)dropped[PAR_DROP_INVALID],
	       (unsigned long long)dropped[PAR_DROP_MEMORY], per_s, wall);
	static const char *const rc[] = { "none", "selective", "full" };
	(void)top;
	for (size_t i = 0; i < n; i++) {
		const struct par_layout *l = &v[i].c.layout;
		printf("%s{\"tp\":%u,\"sp\":%s,\"pp\":%u,\"vpp\":%u,\"cp\":%u,\"ep\":%u,\"dp\":%u,"
		       "\"micro_batch\":%u,\"zero\":%u,\"recompute\":\"%s\",\"estimate_s\":%.9g,"
		       "\"step_time_s\":", i ? "," : "", l->tp, l->sp ? "true" : "false", l->pp,
		       l->vpp, l->cp, l->ep, l->dp, v[i].c.micro_batch, l->zero, rc[v[i].c.recompute],
		       v[i].c.step_s);
		if (isnan(v[i].sim_s)) {   /* the simulation refused it: no figures */
			printf("null,\"failed\":");
			cli_json_str(stdout, v[i].why);
			printf(",\"estimate_rank\":%u}", v[i].est_rank);
			continue;
		}
		printf("%.9g,", v[i].sim_s);
		if (!isnan(v[i].flow_s))
			printf("\"flow_step_time_s\":%.9g,", v[i].flow_s);
		else if (v[i].flow_why) {
			printf("\"flow_failed\":");
			cli_json_str(stdout, v[i].flow_why);
			printf(",");
		}
		printf("\"mfu\":%.6g,\"tokens_per_s\":%.9g,\"peak_bytes\":%.17g,\"bubble_s\":%.9g,"
		       "\"exposed_comm_s\":%.9g,\"estimate_rank\":%u}", v[i].r.mfu, v[i].r.tokens_per_s,
		       v[i].r.peak_bytes, v[i].r.bubble_s, v[i].r.exposed_comm_s,
		       v[i].est_rank);
	}
	printf("]}\n");
}

/* How far the estimator's order was from the simulation's. */
static void disagreement(const struct ranked *v, size_t n)
{
	uint32_t worst = 0, first = v[0].est_rank;
	size_t swaps = 0, pairs = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t d = v[i].est_rank > i + 1 ? v[i].est_rank - (uint32_t)i - 1
						    : (uint32_t)i + 1 - v[i].est_rank;
		worst = d > worst ? d : worst;
		for (size_t j = i + 1; j < n; j++, pairs++)
			swaps += v[i].est_rank > v[j].est_rank;
	}
	fprintf(stderr, "clustersim plan: the simulated winner was #%u by the estimate; %zu of "
		"%zu pairs of the %zu simulated layouts swapped order; the largest move was %u "
		"places\n", first, swaps, pairs, n, worst);
}

static int plan_run(struct cli_args *a)
{
	if (a->npos != 1 || !cli_has(a, "gpus"))
		return cli_error(a, CLI_BADINPUT, "expected a scenario and --gpus N (clustersim plan "
				 "SCENARIO.yaml --gpus N)");
	long long gpus = 0, top = 3, nsim, jobs = sysconf(_SC_NPROCESSORS_ONLN);
	if (cli_count(a, "gpus", 1, TOPO_MAX_RANKS, &gpus) < 0)
		return CLI_BADINPUT;
	/* A simulation's cost grows with the GPUs: a few hundred small ones,
	 * a handful of 1,024-GPU ones (about 1 to 2 s each on one core). */
	nsim = 16384 / gpus < 16 ? 16 : 16384 / gpus > 256 ? 256 : 16384 / gpus;
	if (cli_count(a, "jobs", 1, 64, &jobs) < 0 || cli_count(a, "top", 1, 1000, &top) < 0 ||
	    cli_count(a, "analytic", 1, 100000, &nsim) < 0)
		return CLI_BADINPUT;
	const char *goal = cli_str(a, "objective", "step_time");
	if (strcmp(goal, "step_time") && strcmp(goal, "mfu") && strcmp(goal, "tokens_per_s"))
		return cli_error(a, CLI_BADINPUT, "option --objective: expected step_time, mfu or "
				 "tokens_per_s, got '%s'", goal);
	int nsets;
	const char **sets = cli_list(a, "set", &nsets);
	struct scn s;
	char err[SCN_ERRLEN];
	if (scn_load_unchecked(&s, a->pos[0], sets, (size_t)nsets, err, sizeof(err)) < 0)
		return cli_error(a, CLI_BADINPUT, "%s", err);
	uint32_t gpn = s.cluster.kind == TOPO_IDEAL ? 1 : s.cluster.gpus_per_node;
	if (gpus % gpn)
		return cli_error(a, CLI_BADINPUT, "option --gpus: %lld is not a whole number of "
				 "nodes of %u GPUs", gpus, gpn);
	s.cluster.nodes = (uint32_t)(gpus / gpn);
	struct par_compute_model *cm = par_compute_model_new(
		&s.compute, topo_gpu_find(s.cluster.gpu), s.training.precision, s.datadir, err,
		sizeof(err));
	if (!cm)
		return cli_error(a, CLI_BADINPUT, "%s: compute: %s", a->pos[0], err);
	if (mp_size() > 1 && mp_rank() > 0) {
		/* An MPI rank other than 0: simulate the layouts rank 0 hands out. */
		struct plan_serve ps = { .s = &s, .cm = cm };
		const struct pool_job job = plan_job(&ps);
		pool_serve(&job);
		par_compute_model_free(cm);
		return CLI_OK;
	}
	double t0 = now_s();
	struct par_planner *pl = par_planner_new(&s.model, &s.training, &s.parallel, &s.cluster,
						 (uint32_t)gpus, cm);
	struct par_candidate *cands;
	uint64_t dropped[PAR_DROP_NCAUSES], total;
	size_t n = par_plan(pl, &cands, dropped, &total);
	double screened = now_s() - t0;
	par_planner_free(pl);
	if (!n) {
		par_compute_model_free(cm);
		free(cands);
		return cli_error(a, CLI_NOFIT, "none of %llu layouts fits: %llu invalid, %llu out of "
				 "memory", (unsigned long long)total,
				 (unsigned long long)dropped[PAR_DROP_INVALID],
				 (unsigned long long)dropped[PAR_DROP_MEMORY]);
	}
	size_t m = n < (size_t)nsim ? n : (size_t)nsim;
	struct ranked *v = xcalloc(m, sizeof(*v));
	struct outcome *o = xcalloc(m, sizeof(*o));
	for (size_t i = 0; i < m; i++) {
		v[i].c = cands[i];
		v[i].est_rank = (uint32_t)i + 1;
		v[i].flow_s = NAN;
	}
	/* Failures: simulations refused or whose worker died (not those that
	 * did not fit after all). */
	size_t afail = 0, ffail = 0, failures = 0;
	simulate_all(&s, cm, v, m, SIM_FIDELITY_ANALYTIC, jobs, o);
	for (size_t i = 0; i < m; i++) {
		if ((v[i].sim_s = o[i].end == SIM_OK ? o[i].r.step_time_s : NAN), o[i].end == SIM_OK)
			v[i].r = o[i].r;
		else
			afail++, failures += o[i].end != SIM_NOFIT, v[i].why = xstrdup(o[i].why),
				failed(&v[i].c, "analytic", o[i].why);
	}
	qsort(v, m, sizeof(*v), by_sim);
	size_t nflow = 0;
	while (nflow < m && nflow < (size_t)top && !isnan(v[nflow].sim_s))
		nflow++;
	simulate_all(&s, cm, v, nflow, SIM_FIDELITY_FLOW, jobs, o);
	for (size_t i = 0; i < nflow; i++) {
		if (o[i].end == SIM_OK)
			v[i].flow_s = o[i].r.step_time_s, v[i].r = o[i].r;
		else
			ffail++, failures += o[i].end != SIM_NOFIT, v[i].flow_why = xstrdup(o[i].why),
				failed(&v[i].c, "flow", o[i].why);
	}
	free(o);
	/* The flow-simulated head is ranked by its flow step times (those whose
	 * flow run failed after them, by analytic time). */
	qsort(v, nflow, sizeof(*v), by_best);
	double wall = now_s() - t0, per_s = screened > 0 ? total / screened : 0;
	if (cli_has(a, "json"))
		print_json(v, m, (size_t)top, total, n, dropped, per_s, wall);
	else {
		char af[32] = "", ff[32] = "";
		if (afail)
			snprintf(af, sizeof(af), " (%zu failed)", afail);
		if (ffail)
			snprintf(ff, sizeof(ff), " (%zu failed)", ffail);
		printf("clustersim plan: %s on %lld GPUs: %llu layouts, %zu valid and fitting "
		       "(%llu invalid, %llu out of memory), screened at %.0f per second; "
		       "%zu simulated in analytic fidelity%s, %zu in flow%s\n\n", a->pos[0], gpus,
		       (unsigned long long)total, n, (unsigned long long)dropped[PAR_DROP_INVALID],
		       (unsigned long long)dropped[PAR_DROP_MEMORY], per_s, m, af, nflow, ff);
		print_table(v, m, (size_t)top);
		if (m > 1 && !isnan(v[1].sim_s))
			why(&v[0], &v[1], goal);
	}
	disagreement(v, m);
	for (size_t i = 0; i < m; i++)
		free(v[i].why), free(v[i].flow_why);
	free(v);
	free(cands);
	par_compute_model_free(cm);
	if (failures)
		return cli_error(a, CLI_FAIL, "%zu of %zu simulations failed (named above); the "
				 "ranking leaves them out", failures, m + nflow);
	return CLI_OK;
}

const struct cli_cmd cli_cmd_plan = {
	.name = "plan",
	.usage = "SCENARIO.yaml --gpus N [--set KEY=VALUE]... [--top K] [--analytic N] "
		 "[--objective GOAL] [--json]",
	.summary = "Find the best parallel layout for a model on N GPUs.",
	.description =
		"Enumerates every layout (tp, sp, pp, vpp, cp, ep, dp, micro-batch, ZeRO stage,\n"
		"recomputation) of the scenario's model and training run on N GPUs of its\n"
		"cluster, drops those that are not valid or do not fit in memory (counting\n"
		"each reason), ranks the rest with a closed-form estimator built on the\n"
		"simulator's own cost functions (no event engine), simulates the best\n"
		"--analytic of them in analytic fidelity (by default 16384 / GPUs, at least 16\n"
		"and at most 256) and the best K of those (--top) in flow fidelity, and prints\n"
		"the ranking (the K by flow step time, then the rest by analytic step time)\n"
		"with a paragraph on why the winner beats the runner-up. With flash attention,\n"
		"selective recomputation keeps the same activations as none and is not\n"
		"enumerated. Where the estimate and the simulation disagree, and any\n"
		"simulation that failed, is reported on stderr. With the model and global\n"
		"batch fixed, step time, MFU and tokens/s rank layouts the same way, so\n"
		"--objective only picks the measure the paragraph compares the two in.\n"
		"--json prints {candidates, fits, dropped, screened_per_s, wall_s, layouts:\n"
		"[...]} with every simulated layout (step_time_s null and failed the reason\n"
		"where the analytic simulation failed, flow_failed where only the flow one\n"
		"did); wall_s and screened_per_s are the only keys that differ between\n"
		"identical runs. The simulations run on -j worker processes (default: all\n"
		"cores); the results do not depend on how many, and a simulation whose worker\n"
		"dies (an abort, a signal) is named as failed with the signal while the rest go\n"
		"on. Exit codes: 0; 1 when a simulation was refused or its worker died (the\n"
		"ranking of the others is still printed; a layout that does not fit after all\n"
		"is not a failure); 2 for bad input; 3 when no layout fits. docs/plan.md\n"
		"explains it all.",
	.opts = plan_opts,
	.run = plan_run,
	.mpi = 1,
};
