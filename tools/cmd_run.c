/*
 * cmd_run.c - `clustersim run SCENARIO`: load and validate a scenario,
 * check that the layout fits in memory, simulate the training step(s),
 * store the timeline and print the report (text or JSON).
 *
 * Nothing is written to the database before the scenario is valid and the
 * layout fits; a run that fails is marked failed and its rows removed.
 */
#include "tools/cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parallel/compute.h"
#include "parallel/layout.h"
#include "parallel/model.h"
#include "parallel/result.h"
#include "parallel/result_text.h"
#include "parallel/step.h"
#include "parallel/train.h"
#include "scenarios/record.h"
#include "scenarios/scenario.h"
#include "scenarios/train_of.h"
#include "sim/store.h"

static const struct cli_opt run_opts[] = {
	{ "set", 0, CLI_LIST, "KEY=VALUE", NULL,
	  "override a scenario key, with units (repeatable; docs/scenario.md lists them)" },
	{ "db", 0, CLI_FILE_DB, "FILE", NULL, "store the run, its timeline, memory and report in SQLite" },
	{ "fidelity", 0, CLI_STR, "F", "sim.fidelity",
	  "flow (transfers on links, contention) or analytic (closed forms)" },
	{ "record", 0, CLI_STR, "MODE", "sim.record",
	  "timelines stored with --db: all, sample (one pipeline, one TP group, the last rank), "
	  "none or auto (all up to 1,024 GPUs)" },
	{ "steps", 0, CLI_COUNT, "N", "sim.steps",
	  "simulate N steps, one after another, and report the spread of their times" },
	{ "json", 0, CLI_FLAG, NULL, NULL, "print the report as one JSON object" },
	{ 0 },
};

/* The scenario (with any jobs) with --fidelity, --record and --steps
 * folded in as the last --set lines. */
static int load(struct cli_args *a, struct scn_jobs *js)
{
	int nset;
	const char **given = cli_list(a, "set", &nset);
	size_t n = (size_t)nset, first = n;
	const char **sets = xcalloc(n + 3, sizeof(char *));
	for (size_t k = 0; k < n; k++)
		sets[k] = given[k];
	int rc = cli_fold_option(a, "fidelity", "sim.fidelity", sets, &n);
	if (rc == CLI_OK)
		rc = cli_fold_option(a, "record", "sim.record", sets, &n);
	if (rc == CLI_OK)
		rc = cli_fold_option(a, "steps", "sim.steps", sets, &n);
	char err[SCN_ERRLEN];
	if (rc == CLI_OK && scn_load_jobs(js, a->pos[0], sets, n, err, sizeof(err)) < 0)
		rc = cli_error(a, CLI_BADINPUT, "%s", err);
	for (size_t k = first; k < n; k++)
		free((char *)sets[k]);
	free(sets);
	if (rc != CLI_OK)
		return rc;
	cli_warn_scenario(a, &js->top, NULL);
	for (size_t i = 0; i < js->n; i++) {
		char label[1200];
		snprintf(label, sizeof(label), "%s: jobs[%zu] (%s)", js->top.path, i,
			 js->job[i].name);
		cli_warn_scenario(a, &js->job[i].s, label);
	}
	return CLI_OK;
}

/* What the text report names of the scenario. */
static void setting_of(const struct scn *s, struct par_result_setting *out)
{
	const struct par_model *m = &s->model;
	const struct par_variability *v = &s->variability;
	*out = (struct par_result_setting){
		.preset = m->preset, .layers = m->layers, .hidden = m->hidden,
		.gpu = s->cluster.gpu, .cluster = s->cluster.preset,
		.fidelity = sim_fidelity_name(s->sim.fidelity), .symmetry_dp = s->sim.symmetry == 1,
		.tp = s->parallel.tp, .pp = s->parallel.pp, .cp = s->parallel.cp,
		.ep = s->parallel.ep, .micro_batch = s->training.micro_batch, .seq = s->training.seq,
		.experts = m->moe.experts, .top_k = m->moe.top_k,
		.offload = s->parallel.offload.enabled,
		.jitter = par_dist_name(v->jitter), .jitter_cv = v->jitter_cv,
		.gpu_speed = par_dist_name(v->gpu), .gpu_cv = v->gpu_cv,
		.stragglers = v->stragglers, .straggler_slowdown = v->straggler_slowdown,
		.seed = (unsigned long long)s->sim.seed,
	};
}

/* sim_store_metric as par_result_metrics' put: a row that cannot be
 * written does not stop the others. */
static int put_metric(void *ctx, const char *name, double v)
{
	sim_store_metric(ctx, name, v);
	return 0;
}

/* Open the database and start the run; NULL (message printed, the exit
 * code in *rc) on failure. */
static struct sim_store *store_begin(struct cli_args *a, const struct scn *s,
				     const struct par_report *plan, int *rc)
{
	struct sim_store *st;
	if ((*rc = cli_store_open(a, cli_str(a, "db", ""), &st)) != CLI_OK)
		return NULL;
	char *cfg = scn_json(s);
	int64_t id = sim_store_run_begin(st, a->line, cfg, sim_fidelity_name(s->sim.fidelity),
					 plan->gpus);
	free(cfg);
	if (id < 0) {
		*rc = cli_error(a, CLI_FAIL, "--db: %s", sim_store_error(st));
		sim_store_close(st);
		return NULL;
	}
	const char *names[PAR_MEM_NCATS];  /* par_mem_name: static strings */
	for (int c = 0; c < PAR_MEM_NCATS; c++)
		names[c] = par_mem_name(c);
	sim_store_mem_names(st, names, PAR_MEM_NCATS);
	return st;
}

static int run_run(struct cli_args *a)
{
	if (a->npos != 1)
		return cli_error(a, CLI_BADINPUT, "expected one scenario file (clustersim run "
				 "SCENARIO.yaml)");
	struct scn_jobs js;
	int rc = load(a, &js);
	if (rc)
		return rc;
	if (js.n) {
		rc = cli_run_jobs(a, &js);
		scn_jobs_free(&js);
		return rc;
	}
	struct scn s = js.top;
	char err[1024];
	const struct topo_gpu *gpu = topo_gpu_find(s.cluster.gpu);
	struct par_compute_model *cm = par_compute_model_new(&s.compute, gpu,
							     s.training.precision, s.datadir,
							     err, sizeof(err));
	if (!cm)
		return cli_error(a, CLI_BADINPUT, "%s: compute: %s", s.path, err);
	struct par_train t;
	scn_train_of(&t, &s, cm);
	t.keep_steps = cli_has(a, "db");  /* each step's time is stored */
	struct par_report r = { 0 };
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct par_step step;
	if (par_step_resolve(&step, &t, err, sizeof(err)) < 0 ||
	    par_train_plan(&step, &r, err, sizeof(err)) < 0) {
		par_step_free(&step);
		par_compute_model_free(cm);
		return cli_error(a, CLI_BADINPUT, "%s: %s", s.path, err);
	}
	struct sim_store *st = NULL;
	struct scn_recording *rec = NULL;
	enum scn_record mode = scn_record_mode(s.sim.record, r.gpus);
	if (r.memory.fits && cli_has(a, "db")) {
		if (!(st = store_begin(a, &s, &r, &rc))) {
			par_step_free(&step);
			par_compute_model_free(cm);
			return rc;
		}
		if (!(rec = scn_record_begin(&step, &t, st, mode))) {
			rc = cli_error(a, CLI_FAIL, "--db: cannot create the temporary file of "
				       "the sampled timelines: %s", strerror(errno));
			sim_store_run_fail(st, "no temporary file");
			sim_store_close(st);
			par_step_free(&step);
			par_compute_model_free(cm);
			return rc;
		}
	}
	int sim_rc = r.memory.fits ? scn_record_simulate(rec, &step, &r, err, sizeof(err)) : 0;
	if (sim_rc == SCN_RECORD_AGAIN_FAILED)
		rc = cli_error(a, CLI_FAIL, "%s: the second pass could not finish: %s", s.path, err);
	else if (sim_rc < 0)  /* past the simulated clock the input is the cause */
		rc = cli_error(a, sim_rc == PAR_RUN_CLOCK ? CLI_BADINPUT : CLI_FAIL,
			       "%s: the step could not finish: %s", s.path, err);
	if (!rc && rec && scn_record_ranks(rec) < 0) {
		snprintf(err, sizeof(err), "%s", sim_store_error(st));
		rc = cli_error(a, CLI_FAIL, "--db: %s", err);
	}
	if (rc && st)
		sim_store_run_fail(st, err);
	scn_record_end(rec);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	if (!rc && st) {
		par_result_metrics(&r, "", PAR_RESULT_G_ALL, put_metric, st);
		if (sim_store_run_end(st, r.sim_end_ps, r.events, wall) < 0)
			rc = cli_error(a, CLI_FAIL, "--db: %s", sim_store_error(st));
	}
	if (!rc) {
		if (cli_has(a, "json")) {
			par_result_json(stdout, &r, wall);
		} else {
			struct par_result_setting set;
			setting_of(&s, &set);
			printf("clustersim run: %s\n", s.path);
			par_result_text(stdout, &set, &r);
		}
		if (!r.memory.fits) {
			fprintf(stderr, "clustersim run: %s: out of memory: the busiest GPU needs "
				"%.2f GB and %.2f GB reserved (cluster.memory_reserve), it has %.2f "
				"GB\n", s.path, r.memory.peak / 1e9, r.memory.reserve.total / 1e9,
				r.memory.capacity / 1e9);
			rc = CLI_NOFIT;
		}
	}
	sim_store_close(st);
	free(r.step_times);
	par_step_free(&step);
	par_compute_model_free(cm);
	return rc;
}

const struct cli_cmd cli_cmd_run = {
	.name = "run",
	.usage = "SCENARIO.yaml [--set KEY=VALUE]... [--db FILE] [--fidelity F] [--record MODE] "
		 "[--json]",
	.summary = "Simulate a training step of a scenario and report time, MFU and memory.",
	.description =
		"Loads the scenario (docs/scenario.md), applies --set overrides, checks the\n"
		"layout and whether it fits in GPU memory, then simulates sim.steps steps and\n"
		"prints the step time, tokens/s, MFU and HFU (SPEC C15's FLOPs with the causal\n"
		"mask counted: 6 params + 6 layers width seq per token), the peak memory of the\n"
		"busiest GPU with its breakdown and the memory reserved beyond the tensors\n"
		"(cluster.memory_reserve), and where the critical rank's time went.\n"
		"A layout that does not fit is reported with its memory breakdown and exit\n"
		"code 3, without running. --json prints one object with the keys step_time_s,\n"
		"tokens_per_s, mfu, hfu, memory {weights, grads, optimizer, activations,\n"
		"logits, buffers (the breakdown at the peak), peak, capacity, reserve, fits\n"
		"(peak + reserve <= capacity),\n"
		"model_states (weights, gradients and optimizer states held from the start)},\n"
		"breakdown {compute_s, exposed_comm_s, bubble_s, idle_s, interference_s (of\n"
		"compute_s, what communication beside it added: compute.interference)} (bytes,\n"
		"seconds and fractions) and wall_s, the simulator's own run time (the only key that\n"
		"differs between identical runs). A run whose simulated time would pass the\n"
		"clock's limit (2^63 ps, about 106 days) stops with exit code 2.\n"
		"\n"
		"A scenario with a jobs list (several jobs on one cluster, docs/jobs.md) is\n"
		"simulated job by job alone on its nodes, then all together; the report gives\n"
		"each job's placement, layout, memory and step time alone and shared, and the\n"
		"links that more than one job's traffic crosses. --json prints {jobs: [{name,\n"
		"model, first_node, nodes, first_rank, gpus, dp, tp, pp, cp, strategy, params,\n"
		"memory, alone, shared, slowdown}], shared_links: [{link, bw_Bps, bytes}],\n"
		"stragglers, events, wall_s}; alone and shared hold steps, step_time_s, its\n"
		"p50, p90 and p99, tokens_per_s and mfu. Exit code 3 if a job does not fit.",
	.opts = run_opts,
	.run = run_run,
};
