/*
 * run_jobs.c - `clustersim run` of a scenario with a jobs list: every job
 * alone on its nodes, then all of them together (parallel/jobs.h); each
 * job's step time both ways, the links more than one job crosses, and with
 * --db the run together: its timelines, ranks, links, a jobs row per job
 * and a job_links row per job and shared link.
 *
 * The report is printed from the rows that are stored (struct
 * sim_store_job_row, struct par_link_share), by par_jobs_text and
 * par_jobs_json (parallel/result_text.h), which `report` calls on the rows it reads back: the two
 * commands print the same text.
 */
#include "tools/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parallel/compute.h"
#include "parallel/goodput.h"
#include "parallel/jobs.h"
#include "parallel/layout.h"
#include "parallel/result.h"
#include "parallel/result_text.h"
#include "parallel/train.h"
#include "scenarios/scenario.h"
#include "scenarios/train_of.h"
#include "sim/store.h"
#include "topology/topo.h"


struct jobs_cli {
	struct scn_jobs *js;
	struct par_job job[PAR_MAX_JOBS];
	struct par_compute_model *cm[PAR_MAX_JOBS];
	struct par_jobs run;
	struct par_jobs_result res;
	struct sim_store_job_row row[PAR_MAX_JOBS];
	struct par_goodput goodput[PAR_MAX_JOBS];
	struct sim_store *st;
	struct cli_args *a;           /* for jobs_ready                     */
	enum scn_record mode;
	int ready_rc;                 /* jobs_ready's CLI code, or CLI_OK   */
};

/* Each job's training step and compute model; CLI_OK or an error printed. */
static int jobs_setup(struct cli_args *a, struct jobs_cli *c)
{
	const struct scn_jobs *js = c->js;
	char err[1024];
	for (size_t i = 0; i < js->n; i++) {
		const struct scn *s = &js->job[i].s;
		c->cm[i] = par_compute_model_new(&s->compute, topo_gpu_find(s->cluster.gpu),
						 s->training.precision, s->datadir, err, sizeof(err));
		if (!c->cm[i])
			return cli_error(a, CLI_BADINPUT, "%s: jobs[%zu] (%s): compute: %s", s->path, i,
					 js->job[i].name, err);
		c->job[i].name = js->job[i].name;
		c->job[i].first_rank = js->job[i].first_node * topo_config_gpus_per_node(&js->top.cluster);
		c->job[i].start_ps = sim_ps_from_s(js->job[i].start_s);
		scn_train_of(&c->job[i].train, s, c->cm[i]);
	}
	c->run = (struct par_jobs){
		.job = c->job, .n = js->n, .cluster = &js->top.cluster, .sim = c->job[0].train.sim,
		.steps = js->top.sim.steps, .seed = js->top.sim.seed, .var = &js->top.variability,
	};
	return CLI_OK;
}

/* ---- the database ------------------------------------------------------------ */

/* After the run together: every GPU's ranks row (its job's coordinates; a
 * GPU no job uses has none) and the links. */
static int store_finish(void *ctx, struct sim *sim, struct topo *topo, char *err, size_t errlen)
{
	struct jobs_cli *c = ctx;
	uint32_t n = sim_nranks(sim);
	sim_ps end = 0;
	for (uint32_t r = 0; r < n; r++)
		if (sim_rank_end(sim, r) > end)
			end = sim_rank_end(sim, r);
	struct par_dims dims[PAR_MAX_JOBS];
	for (size_t i = 0; i < c->run.n; i++)
		par_dims_of(c->job[i].train.layout, c->res.alone[i].gpus, &dims[i]);
	for (uint32_t r = 0; r < n; r++) {
		size_t i = 0;  /* the job whose GPUs hold r, or run.n: none */
		while (i < c->run.n && !(r >= c->job[i].first_rank &&
					 r - c->job[i].first_rank < c->res.alone[i].gpus))
			i++;
		struct sim_store_rank_summary sum;
		uint32_t coords[5];
		if (i < c->run.n) {
			struct par_coords co;
			par_coords_of(&dims[i], r - c->job[i].first_rank, &co);
			coords[0] = co.tp, coords[1] = co.cp, coords[2] = co.pp, coords[3] = co.dp;
			coords[4] = co.ep;
			sim_store_rank_summary_of(sim, r, end, &sum);
		}
		int job = i < c->run.n;
		if (sim_store_rank(c->st, r, topo_node_of(topo, r), topo_local_of(topo, r),
				   job ? coords : NULL, job ? &sum : NULL) < 0)
			goto fail;
	}
	if (sim_store_links(c->st, sim, topo_sim_ops(), topo) == 0)
		return 0;
fail:
	snprintf(err, errlen, "--db: %s", sim_store_error(c->st));
	return -1;
}

/* The recorder's context is the store; store_finish's is c: one pointer
 * serves both through this shim. */
static void rec_op(void *ctx, uint32_t rank, const struct sim_op *op, sim_ps s, sim_ps e)
{
	sim_store_recorder.op_done(((struct jobs_cli *)ctx)->st, rank, op, s, e);
}

static void rec_mem(void *ctx, uint32_t rank, sim_ps t, unsigned cat, double bytes)
{
	sim_store_recorder.mem(((struct jobs_cli *)ctx)->st, rank, t, cat, bytes);
}

static const struct sim_recorder_ops rec_ops = { .op_done = rec_op, .mem = rec_mem };

/* Open the database, start the run and hook the recorder; CLI_OK or printed. */
static int store_begin(struct cli_args *a, struct jobs_cli *c, enum scn_record mode)
{
	int rc = cli_store_open(a, cli_str(a, "db", ""), &c->st);
	if (rc != CLI_OK)
		return rc;
	const struct topo_config *cl = &c->js->top.cluster;
	char *cfg = scn_jobs_json(c->js);
	int64_t id = sim_store_run_begin(c->st, a->line, cfg,
					 sim_fidelity_name(c->js->top.sim.fidelity),
					 (uint32_t)topo_config_gpus(cl));
	free(cfg);
	if (id < 0)
		return cli_error(a, CLI_FAIL, "--db: %s", sim_store_error(c->st));
	const char *names[PAR_MEM_NCATS];  /* par_mem_name: static strings */
	for (int k = 0; k < PAR_MEM_NCATS; k++)
		names[k] = par_mem_name(k);
	sim_store_mem_names(c->st, names, PAR_MEM_NCATS);
	if (mode == SCN_RECORD_ALL)
		c->run.rec = &rec_ops;
	c->run.rec_ctx = c;
	c->run.finish = store_finish;
	return CLI_OK;
}

/* par_jobs' ready call: open the database for the run together. */
static int jobs_ready(void *ctx, char *err, size_t errlen)
{
	struct jobs_cli *c = ctx;
	(void)err, (void)errlen;
	c->ready_rc = store_begin(c->a, c, c->mode);
	return c->ready_rc == CLI_OK ? 0 : -1;
}

/* A report's steps as a row's. */
static void row_steps(const struct par_report *r, struct sim_store_job_steps *out)
{
	*out = (struct sim_store_job_steps){
		.step_time_s = r->step_time_s, .p50_s = r->step_p50_s, .p90_s = r->step_p90_s,
		.p99_s = r->step_p99_s, .tokens_per_s = r->tokens_per_s, .mfu = r->mfu,
		.steps = r->steps,
	};
}

/* Every job's row from the scenario and the result. */
static void rows_of(struct jobs_cli *c)
{
	for (size_t i = 0; i < c->run.n; i++) {
		const struct scn_job *j = &c->js->job[i];
		const struct par_report *al = &c->res.alone[i];
		struct sim_store_job_row *w = &c->row[i];
		*w = (struct sim_store_job_row){
			.job = (uint32_t)i, .first_node = j->first_node, .nodes = j->nodes,
			.start_s = j->start_s,
			.first_rank = c->job[i].first_rank, .gpus = al->gpus, .dp = al->dp,
			.tp = j->s.parallel.tp, .pp = j->s.parallel.pp, .cp = j->s.parallel.cp,
			.params = al->params, .peak_bytes = al->memory.peak,
			.capacity_bytes = al->memory.capacity, .fits = al->memory.fits,
		};
		snprintf(w->name, sizeof(w->name), "%s", j->name);
		snprintf(w->model, sizeof(w->model), "%s", j->s.model.preset);
		snprintf(w->strategy, sizeof(w->strategy), "%s", al->strategy);
		row_steps(al, &w->alone);
		row_steps(&c->res.shared[i], &w->shared);
		c->goodput[i] = al->goodput;
	}
}

/* sim_store_metric as par_result_metrics' put. */
static int put_metric(void *ctx, const char *name, double v)
{
	return sim_store_metric(ctx, name, v) < 0 ? -1 : 0;
}

/* The jobs and job_links rows and the metrics; 0 or -1. */
static int store_results(struct jobs_cli *c)
{
	const struct par_jobs_result *r = &c->res;
	for (size_t i = 0; i < c->run.n; i++) {
		if (sim_store_job(c->st, &c->row[i]) < 0)
			return -1;
		for (int alone = 0; alone < 2; alone++) {
			char prefix[96];
			snprintf(prefix, sizeof(prefix), "job.%s.%s", c->row[i].name,
				 alone ? "alone." : "");
			if (par_result_metrics(alone ? &r->alone[i] : &r->shared[i], prefix,
					       PAR_RESULT_G_STEP_TIMES, put_metric, c->st))
				return -1;
		}
	}
	for (size_t l = 0; l < r->nlinks; l++)
		for (size_t i = 0; i < c->run.n; i++)
			if (r->links[l].bytes[i] > 0 &&
			    sim_store_job_link(c->st, r->links[l].name, (uint32_t)i, r->links[l].bw_Bps,
					       r->links[l].bytes[i]) < 0)
				return -1;
	/* The stragglers of the run together, as a run's. */
	struct par_report together = { .nstragglers = r->nstragglers };
	memcpy(together.stragglers, r->stragglers, sizeof(together.stragglers));
	if (par_result_metrics(&together, "", PAR_RESULT_G_STRAGGLERS, put_metric, c->st))
		return -1;
	for (size_t i = 0; i < c->run.n && c->goodput[i].job_mtbf_s > 0; i++) {
		char prefix[96];
		snprintf(prefix, sizeof(prefix), "job.%s.", c->row[i].name);
		if (par_result_metrics(&r->alone[i], prefix, PAR_RESULT_G_FAILURES, put_metric,
				       c->st))
			return -1;
	}
	const struct { const char *name; double v; } m[] = {
		{ "jobs", (double)c->run.n }, { "jobs.shared_links", (double)r->nlinks },
		{ "steps", c->run.steps },
	};
	for (size_t i = 0; i < ARRAY_SIZE(m); i++)
		if (sim_store_metric(c->st, m[i].name, m[i].v) < 0)
			return -1;
	return 0;
}

/* The view of this run. */
static void view_of(const struct jobs_cli *c, double wall_s, struct par_jobs_view *v)
{
	const struct topo_config *cl = &c->js->top.cluster;
	*v = (struct par_jobs_view){
		.gpu = cl->gpu, .preset = cl->preset, .gpus = (uint32_t)topo_config_gpus(cl),
		.ideal = cl->kind == TOPO_IDEAL, .steps = c->run.steps,
		.fidelity = sim_fidelity_name(c->js->top.sim.fidelity), .job = c->row, .n = c->run.n,
		.links = c->res.links, .nlinks = c->res.nlinks, .goodput = c->goodput,
		.stragglers = c->res.stragglers,
		.nstragglers = c->res.nstragglers, .events = c->res.events, .wall_s = wall_s,
	};
}

static void print_report(const struct jobs_cli *c, int json, double wall_s)
{
	struct par_jobs_view v;
	view_of(c, wall_s, &v);
	if (json) {
		par_jobs_json(stdout, &v);
		return;
	}
	const struct scn *top = &c->js->top;
	const struct par_variability *var = &top->variability;
	printf("clustersim run: %s\n", top->path);
	par_jobs_text(stdout, &v);
	const struct par_result_setting set = {
		.jitter = par_dist_name(var->jitter), .jitter_cv = var->jitter_cv,
		.gpu_speed = par_dist_name(var->gpu), .gpu_cv = var->gpu_cv,
		.stragglers = var->stragglers, .straggler_slowdown = var->straggler_slowdown,
		.seed = (unsigned long long)top->sim.seed,
	};
	par_result_variability(stdout, &set, c->res.stragglers, c->res.nstragglers);
}

/* ---- the command ----------------------------------------------------------------- */

static int all_fit(const struct jobs_cli *c)
{
	for (size_t i = 0; i < c->run.n; i++)
		if (!c->res.alone[i].memory.fits)
			return 0;
	return 1;
}

/* Simulate, store and print; rc so far in, rc out. */
static int jobs_go(struct cli_args *a, struct jobs_cli *c)
{
	char err[1024] = "";
	const char *path = c->js->top.path;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (par_jobs_plan(&c->run, &c->res, err, sizeof(err)) < 0)
		return cli_error(a, CLI_BADINPUT, "%s: %s", path, err);
	int fits = all_fit(c), rc = CLI_OK;
	enum scn_record mode = c->js->top.sim.record;
	if (mode == SCN_RECORD_SAMPLE && cli_has(a, "db"))
		return cli_error(a, CLI_BADINPUT, "%s: sim.record: sample picks ranks of one job; "
				 "with several jobs use all, none or auto", path);
	if (mode == SCN_RECORD_AUTO)
		mode = c->run.job[0].train.sim.fidelity == SIM_FIDELITY_FLOW &&
		       topo_config_gpus(&c->js->top.cluster) <=
			       SCN_RECORD_ALL_MAX ? SCN_RECORD_ALL : SCN_RECORD_NONE;
	/* With several jobs the database opens once the run together is known
	 * to be within its bound (jobs_ready); one job's run is the last. */
	c->a = a, c->mode = mode;
	if (fits && cli_has(a, "db") && c->run.n == 1 && (rc = store_begin(a, c, mode)) != CLI_OK)
		return rc;
	if (cli_has(a, "db") && c->run.n > 1) {
		c->run.ready = jobs_ready;
		c->run.rec_ctx = c;
	}
	if (fits) {  /* on the steps par_jobs_plan resolved */
		int r = par_jobs_run(&c->run, &c->res, err, sizeof(err));
		if (r == PAR_JOBS_TOO_LONG)
			return cli_error(a, CLI_BADINPUT, "%s: %s", path, err);
		if (r < 0 && c->ready_rc != CLI_OK)
			return c->ready_rc;  /* printed by store_begin */
		if (r < 0)  /* past the simulated clock the input is the cause */
			rc = cli_error(a, r == PAR_RUN_CLOCK ? CLI_BADINPUT : CLI_FAIL,
				       "%s: the jobs could not finish: %s", path, err);
	}
	rows_of(c);
	if (!rc && c->st && store_results(c) < 0) {
		snprintf(err, sizeof(err), "%s", sim_store_error(c->st));
		rc = cli_error(a, CLI_FAIL, "--db: %s", err);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	if (rc && c->st)
		sim_store_run_fail(c->st, err);
	else if (c->st && sim_store_run_end(c->st, c->res.sim_end_ps, c->res.events, wall) < 0)
		rc = cli_error(a, CLI_FAIL, "--db: %s", sim_store_error(c->st));
	if (rc)
		return rc;
	print_report(c, cli_has(a, "json"), wall);
	for (size_t i = 0; i < c->run.n; i++)
		if (!c->res.alone[i].memory.fits) {
			fprintf(stderr, "clustersim run: %s: job %s is out of memory: the busiest GPU "
				"needs %.2f GB, it has %.2f GB\n", path, c->job[i].name,
				c->res.alone[i].memory.peak / 1e9,
				c->res.alone[i].memory.capacity / 1e9);
			rc = CLI_NOFIT;
		}
	return rc;
}

int cli_run_jobs(struct cli_args *a, struct scn_jobs *js)
{
	struct jobs_cli c = { .js = js };
	int rc = jobs_setup(a, &c);
	if (rc == CLI_OK)
		rc = jobs_go(a, &c);
	par_jobs_result_free(&c.res);
	sim_store_close(c.st);
	for (size_t i = 0; i < js->n; i++)
		par_compute_model_free(c.cm[i]);
	return rc;
}
