/*
 * run_jobs.c - `clustersim run` of a scenario with a jobs list: every job
 * alone on its nodes, then all of them together (parallel/jobs.h); each
 * job's step time both ways, the links more than one job crosses, and with
 * --db the run together: its timelines, ranks, links, a jobs row per job
 * and a job_links row per job and shared link.
 */
#include "tools/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parallel/compute.h"
#include "parallel/jobs.h"
#include "parallel/layout.h"
#include "parallel/train.h"
#include "scenarios/scenario.h"
#include "sim/store.h"
#include "topology/topo.h"

/* Links listed in the text report; --json and --db have them all. */
#define TEXT_LINKS 8

struct jobs_cli {
	struct scn_jobs *js;
	struct par_job job[PAR_MAX_JOBS];
	struct par_compute_model *cm[PAR_MAX_JOBS];
	struct par_jobs run;
	struct par_jobs_result res;
	struct sim_store *st;
};

static uint32_t gpus_per_node(const struct topo_config *c)
{
	return c->kind == TOPO_IDEAL ? 1 : c->gpus_per_node;
}

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
		c->job[i].first_rank = js->job[i].first_node * gpus_per_node(&js->top.cluster);
		cli_train_of(&c->job[i].train, s, c->cm[i]);
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
	for (uint32_t r = 0; r < n; r++) {
		const struct par_job *job = NULL;
		for (size_t i = 0; i < c->run.n; i++)
			if (r >= c->job[i].first_rank && r - c->job[i].first_rank < c->res.alone[i].gpus)
				job = &c->job[i];
		struct sim_store_rank_summary sum;
		uint32_t coords[5];
		if (job) {
			struct par_dims d;
			struct par_coords co;
			par_dims_of(job->train.layout, c->res.alone[job - c->job].gpus, &d);
			par_coords_of(&d, r - job->first_rank, &co);
			coords[0] = co.tp, coords[1] = co.cp, coords[2] = co.pp, coords[3] = co.dp;
			coords[4] = co.ep;
			sim_store_rank_summary_of(sim, r, end, &sum);
		}
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
	char err[512];
	c->st = sim_store_open(cli_str(a, "db", ""), err, sizeof(err));
	if (!c->st)
		return cli_error(a, CLI_BADINPUT, "option --db: %s", err);
	const struct topo_config *cl = &c->js->top.cluster;
	char *cfg = scn_jobs_json(c->js);
	int64_t id = sim_store_run_begin(c->st, a->line, cfg,
					 sim_fidelity_name(c->js->top.sim.fidelity),
					 cl->nodes * gpus_per_node(cl));
	free(cfg);
	if (id < 0)
		return cli_error(a, CLI_FAIL, "--db: %s", sim_store_error(c->st));
	static const char *const names[PAR_MEM_NCATS] = {
		"weights", "grads", "optimizer", "activations", "logits", "buffers",
	};
	sim_store_mem_names(c->st, names, PAR_MEM_NCATS);
	if (mode == SCN_RECORD_ALL)
		c->run.rec = &rec_ops;
	c->run.rec_ctx = c;
	c->run.finish = store_finish;
	return CLI_OK;
}

/* The jobs and job_links rows and the metrics; 0 or -1. */
static int store_results(struct jobs_cli *c)
{
	const struct par_jobs_result *r = &c->res;
	for (size_t i = 0; i < c->run.n; i++) {
		const struct par_report *al = &r->alone[i], *sh = &r->shared[i];
		struct sim_store_job_row row = {
			.job = (uint32_t)i, .name = c->job[i].name, .first_rank = c->job[i].first_rank,
			.gpus = al->gpus, .step_time_alone_s = al->step_time_s,
			.step_time_shared_s = sh->step_time_s, .tokens_per_s = sh->tokens_per_s,
			.mfu = sh->mfu, .peak_bytes = al->memory.peak, .fits = al->memory.fits,
		};
		if (sim_store_job(c->st, &row) < 0)
			return -1;
		for (uint32_t k = 0; sh->step_times && k < sh->steps; k++) {
			char name[96];
			snprintf(name, sizeof(name), "job.%s.step.%u", c->job[i].name, k);
			if (sim_store_metric(c->st, name, sh->step_times[k]) < 0)
				return -1;
		}
	}
	for (size_t l = 0; l < r->nlinks; l++)
		for (size_t i = 0; i < c->run.n; i++)
			if (r->links[l].bytes[i] > 0 &&
			    sim_store_job_link(c->st, r->links[l].name, (uint32_t)i, r->links[l].bw_Bps,
					       r->links[l].bytes[i]) < 0)
				return -1;
	if (sim_store_metric(c->st, "jobs", (double)c->run.n) < 0 ||
	    sim_store_metric(c->st, "jobs.shared_links", (double)r->nlinks) < 0)
		return -1;
	return 0;
}

/* ---- the report ----------------------------------------------------------------- */

static void print_text(const struct jobs_cli *c)
{
	const struct scn_jobs *js = c->js;
	const struct topo_config *cl = &js->top.cluster;
	const struct par_jobs_result *r = &c->res;
	printf("clustersim run: %s\n", js->top.path);
	printf("  cluster     %u x %s (%s), %s fidelity; %zu jobs, %u step%s each\n",
	       cl->nodes * gpus_per_node(cl), cl->gpu, cl->preset,
	       sim_fidelity_name(js->top.sim.fidelity), js->n, js->top.sim.steps,
	       js->top.sim.steps == 1 ? "" : "s");
	for (size_t i = 0; i < js->n; i++) {
		const struct scn_job *j = &js->job[i];
		const struct par_report *al = &r->alone[i], *sh = &r->shared[i];
		const struct par_layout *p = &j->s.parallel;
		printf("  job %-7s %s %u-%u (ranks %u-%u): %s%s%.2f B parameters; dp %u (%s), tp %u, "
		       "pp %u, cp %u\n", j->name, cl->kind == TOPO_IDEAL ? "GPUs" : "nodes",
		       j->first_node, j->first_node + j->nodes - 1, c->job[i].first_rank,
		       c->job[i].first_rank + al->gpus - 1, j->s.model.preset,
		       j->s.model.preset[0] ? ", " : "", al->params / 1e9, al->dp, al->strategy,
		       p->tp, p->pp, p->cp);
		printf("              memory peak %.2f GB of %.2f GB per GPU: %s\n",
		       al->memory.peak / 1e9, al->memory.capacity / 1e9,
		       al->memory.fits ? "fits" : "OUT OF MEMORY");
		if (!al->memory.fits)
			continue;
		printf("              step alone %.6f s, shared %.6f s (%+.2f %%); shared: tokens/s "
		       "%.0f, MFU %.4f\n", al->step_time_s, sh->step_time_s,
		       100 * (sh->step_time_s / al->step_time_s - 1), sh->tokens_per_s, sh->mfu);
		if (sh->steps > 1)
			printf("              steps p50 %.6f / %.6f s, p99 %.6f / %.6f s (alone / "
			       "shared)\n", al->step_p50_s, sh->step_p50_s, al->step_p99_s,
			       sh->step_p99_s);
	}
	const struct par_variability *v = &js->top.variability;
	cli_print_variability(par_dist_name(v->jitter), v->jitter_cv, par_dist_name(v->gpu),
			      v->gpu_cv, v->stragglers, v->straggler_slowdown, r->stragglers,
			      r->nstragglers, (unsigned long long)js->top.sim.seed);
	if (!r->nlinks) {
		printf("  links       no link carries more than one job's traffic\n");
		return;
	}
	printf("  links       %zu carry more than one job's traffic (bytes per step, each job "
	       "alone)%s\n", r->nlinks, r->nlinks > TEXT_LINKS ? "; the busiest:" : ":");
	for (size_t l = 0; l < r->nlinks && l < TEXT_LINKS; l++) {
		printf("              %-24s %7.1f GB/s:", r->links[l].name, r->links[l].bw_Bps / 1e9);
		for (size_t i = 0, k = 0; i < js->n; i++)
			if (r->links[l].bytes[i] > 0)
				printf("%s %s %.3f GB", k++ ? "," : "", js->job[i].name,
				       r->links[l].bytes[i] / 1e9);
		printf("\n");
	}
}

static void print_steps_json(const struct par_report *r)
{
	printf("{\"step_time_s\":%.9g,\"step_time_p50_s\":%.9g,\"step_time_p90_s\":%.9g,"
	       "\"step_time_p99_s\":%.9g,\"tokens_per_s\":%.9g,\"mfu\":%.6g}", r->step_time_s,
	       r->step_p50_s, r->step_p90_s, r->step_p99_s, r->tokens_per_s, r->mfu);
}

static void print_json(const struct jobs_cli *c, double wall_s)
{
	const struct par_jobs_result *r = &c->res;
	printf("{\"jobs\":[");
	for (size_t i = 0; i < c->run.n; i++) {
		const struct scn_job *j = &c->js->job[i];
		const struct par_report *al = &r->alone[i];
		printf("%s{\"name\":\"%s\",\"first_node\":%u,\"nodes\":%u,\"first_rank\":%u,"
		       "\"gpus\":%u,\"params\":%.17g,\"memory\":{\"peak\":%.17g,\"capacity\":%.17g,"
		       "\"fits\":%s}", i ? "," : "", j->name, j->first_node, j->nodes,
		       c->job[i].first_rank, al->gpus, al->params, al->memory.peak,
		       al->memory.capacity, al->memory.fits ? "true" : "false");
		if (al->memory.fits) {
			printf(",\"alone\":");
			print_steps_json(al);
			printf(",\"shared\":");
			print_steps_json(&r->shared[i]);
			printf(",\"slowdown\":%.9g", r->shared[i].step_time_s / al->step_time_s);
		}
		printf("}");
	}
	printf("],\"shared_links\":[");
	for (size_t l = 0; l < r->nlinks; l++) {
		printf("%s{\"link\":\"%s\",\"bw_Bps\":%.17g,\"bytes\":{", l ? "," : "",
		       r->links[l].name, r->links[l].bw_Bps);
		for (size_t i = 0, k = 0; i < c->run.n; i++)
			if (r->links[l].bytes[i] > 0)
				printf("%s\"%s\":%.17g", k++ ? "," : "", c->job[i].name,
				       r->links[l].bytes[i]);
		printf("}}");
	}
	printf("],\"stragglers\":[");
	for (uint32_t i = 0; i < r->nstragglers; i++)
		printf("%s%u", i ? "," : "", r->stragglers[i]);
	printf("],\"events\":%llu,\"wall_s\":%.6f}\n", (unsigned long long)r->events, wall_s);
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
	char err[1024];
	const char *path = c->js->top.path;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (par_jobs_plan(&c->run, &c->res, err, sizeof(err)) < 0)
		return cli_error(a, CLI_BADINPUT, "%s: %s", path, err);
	int fits = all_fit(c), rc = CLI_OK;
	enum scn_record mode = c->js->top.sim.record;
	if (mode == SCN_RECORD_SAMPLE)
		return cli_error(a, CLI_BADINPUT, "%s: sim.record: sample picks ranks of one job; "
				 "with several jobs use all, none or auto", path);
	if (mode == SCN_RECORD_AUTO)
		mode = c->run.job[0].train.sim.fidelity == SIM_FIDELITY_FLOW &&
		       c->js->top.cluster.nodes * gpus_per_node(&c->js->top.cluster) <=
			       SCN_RECORD_ALL_MAX ? SCN_RECORD_ALL : SCN_RECORD_NONE;
	if (fits && cli_has(a, "db") && (rc = store_begin(a, c, mode)) != CLI_OK)
		return rc;
	if (fits) {
		par_jobs_result_free(&c->res, c->run.n);
		if (par_jobs_run(&c->run, &c->res, err, sizeof(err)) < 0)
			rc = cli_error(a, CLI_FAIL, "%s: the jobs could not finish: %s", path, err);
	}
	if (!rc && c->st && store_results(c) < 0)
		rc = cli_error(a, CLI_FAIL, "--db: %s", sim_store_error(c->st));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	if (rc && c->st)
		sim_store_run_fail(c->st, err);
	else if (c->st && sim_store_run_end(c->st, c->res.sim_end_ps, c->res.events, wall) < 0)
		rc = cli_error(a, CLI_FAIL, "--db: %s", sim_store_error(c->st));
	if (rc)
		return rc;
	if (cli_has(a, "json"))
		print_json(c, wall);
	else
		print_text(c);
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
	par_jobs_result_free(&c.res, js->n);
	sim_store_close(c.st);
	for (size_t i = 0; i < js->n; i++)
		par_compute_model_free(c.cm[i]);
	return rc;
}
