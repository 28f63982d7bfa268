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
#include "parallel/train.h"
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

/*
 * What goes into the store. Every rank gets its ranks row (placement and
 * summary); timelines (ops and memory rows) only for the ranks kept: all of
 * them, or for `sample` one whole pipeline (tp = cp = dp = 0), one TP group
 * (cp = pp = dp = 0) and the rank that finished last. That rank is known only
 * at the end. In flow fidelity the other ranks' records go to a temporary
 * spill file (32 bytes each, written in batches) and the last rank's are
 * read back from it and recorded before the programs they point into are
 * freed; the file is deleted when closed. In analytic fidelity a spill
 * would cost more than the simulation itself (its 2 GB at 16,384 GPUs take
 * longer to write than the 4 s step), and the replicas of a layout end
 * together, so that the lowest-numbered last rank is nearly always kept:
 * when it is not, the step is simulated a second time, recording it alone.
 */
struct rec_filter {
	struct sim_store *st;
	struct par_dims dims;
	uint8_t *keep;            /* [rank]: its timeline is stored; NULL: all */
	FILE *spill;              /* sample: the other ranks' records        */
	struct rec_spilled *buf;  /* written to spill SPILL_BATCH at a time  */
	size_t nbuf;
	int spill_failed;
	int second;               /* the second pass: only `last` is recorded */
	uint32_t nranks, last;
	struct rec_rank {
		uint32_t node, local;
		int present;          /* simulated (not absent: sim.symmetry) */
		struct sim_store_rank_summary sum;
	} *ranks;
};

/* A finished op (op != NULL) or a memory change (op == NULL) in the spill. */
struct rec_spilled {
	uint32_t rank, cat;
	const struct sim_op *op;
	sim_ps start;
	union {
		sim_ps end;
		double bytes;
	} u;
};

/* Records per write to the spill file (2 MiB). */
#define SPILL_BATCH 65536

static void rec_spill_flush(struct rec_filter *f)
{
	if (f->nbuf && fwrite(f->buf, sizeof(*f->buf), f->nbuf, f->spill) != f->nbuf)
		f->spill_failed = 1;
	f->nbuf = 0;
}

static void rec_spill(struct rec_filter *f, const struct rec_spilled *r)
{
	if (!f->spill || f->second)
		return;
	if (!f->buf)
		f->buf = xmalloc(SPILL_BATCH * sizeof(*f->buf));
	f->buf[f->nbuf++] = *r;
	if (f->nbuf == SPILL_BATCH)
		rec_spill_flush(f);
}

/* Is the rank's timeline recorded in this pass? */
static int rec_keep(const struct rec_filter *f, uint32_t rank)
{
	return f->second ? rank == f->last : !f->keep || f->keep[rank];
}

static void rec_op(void *ctx, uint32_t rank, const struct sim_op *op, sim_ps s, sim_ps e)
{
	struct rec_filter *f = ctx;
	if (rec_keep(f, rank))
		sim_store_recorder.op_done(f->st, rank, op, s, e);
	else
		rec_spill(f, &(struct rec_spilled){ .rank = rank, .op = op, .start = s, .u.end = e });
}

static void rec_mem(void *ctx, uint32_t rank, sim_ps t, unsigned cat, double bytes)
{
	struct rec_filter *f = ctx;
	if (rec_keep(f, rank))
		sim_store_recorder.mem(f->st, rank, t, cat, bytes);
	else
		rec_spill(f, &(struct rec_spilled){ .rank = rank, .cat = cat, .start = t,
						    .u.bytes = bytes });
}

static const struct sim_recorder_ops rec_filter_ops = { .op_done = rec_op, .mem = rec_mem };

/* Record the last rank's timeline from the spill (sample mode); 0 or -1. */
static int rec_unspill(struct rec_filter *f, char *err, size_t errlen)
{
	rec_spill_flush(f);
	if (f->spill_failed || fflush(f->spill) != 0 || fseek(f->spill, 0, SEEK_SET) != 0) {
		snprintf(err, errlen, "--db: the temporary file of the sampled timelines failed: %s",
			 strerror(errno));
		return -1;
	}
	if (!f->buf)
		f->buf = xmalloc(SPILL_BATCH * sizeof(*f->buf));
	size_t n;
	while ((n = fread(f->buf, sizeof(*f->buf), SPILL_BATCH, f->spill)) > 0)
		for (size_t i = 0; i < n; i++) {
			const struct rec_spilled *r = &f->buf[i];
			if (r->rank != f->last)
				continue;
			if (r->op)
				sim_store_recorder.op_done(f->st, r->rank, r->op, r->start, r->u.end);
			else
				sim_store_recorder.mem(f->st, r->rank, r->start, r->cat, r->u.bytes);
		}
	f->keep[f->last] = 1;
	return 0;
}

/* The sample: one pipeline and one TP group. */
static uint8_t *rec_sample(const struct par_dims *d, uint32_t nranks)
{
	uint8_t *keep = xcalloc(nranks, 1);
	for (uint32_t p = 0; p < d->pp; p++)
		keep[par_rank_of(d, &(struct par_coords){ .pp = p })] = 1;
	for (uint32_t t = 0; t < d->tp; t++)
		keep[par_rank_of(d, &(struct par_coords){ .tp = t })] = 1;
	return keep;
}

/*
 * After the run, while its programs live: every rank's placement and summary
 * (written later, once the timelines are complete, so that ops_stored counts
 * them), the rank that finished last (the lowest of equal ends) and its
 * timeline if it was spilled, and every link's totals.
 */
static int rec_finish(void *ctx, struct sim *sim, struct topo *topo, char *err, size_t errlen)
{
	struct rec_filter *f = ctx;
	sim_ps end = 0;
	for (uint32_t r = 0; r < f->nranks; r++)
		if (sim_rank_end(sim, r) > end)
			end = sim_rank_end(sim, r), f->last = r;
	for (uint32_t r = 0; r < f->nranks; r++) {
		f->ranks[r].present = sim_rank_present(sim, r);
		if (!f->ranks[r].present) {  /* symmetry: its replica 0 stands for it */
			f->ranks[r].node = topo_node_of(topo, r);
			f->ranks[r].local = topo_local_of(topo, r);
			continue;
		}
		f->ranks[r] = (struct rec_rank){
			.present = 1,
			.node = topo_node_of(topo, r), .local = topo_local_of(topo, r),
		};
		sim_store_rank_summary_of(sim, r, end, &f->ranks[r].sum);
	}
	if (f->keep && !f->keep[f->last] && f->spill && rec_unspill(f, err, errlen) < 0)
		return -1;
	if (sim_store_links(f->st, sim, topo_sim_ops(), topo) < 0) {
		snprintf(err, errlen, "--db: %s", sim_store_error(f->st));
		return -1;
	}
	return 0;
}

/* Set the filter up for a run into st in a record mode (not auto); the
 * training step records through it. -1 if the spill file cannot be made. */
static int rec_begin(struct rec_filter *f, struct par_train *t, const struct scn *s,
		     struct sim_store *st, enum scn_record mode)
{
	f->st = st;
	par_dims_of(&s->parallel, f->nranks, &f->dims);
	f->ranks = xcalloc(f->nranks, sizeof(*f->ranks));
	if (mode == SCN_RECORD_SAMPLE)
		f->keep = rec_sample(&f->dims, f->nranks);
	if (mode == SCN_RECORD_SAMPLE && s->sim.fidelity == SIM_FIDELITY_FLOW &&
	    !(f->spill = tmpfile()))
		return -1;
	t->rec_ctx = f;
	t->finish = rec_finish;
	if (mode != SCN_RECORD_NONE)
		t->rec = &rec_filter_ops;
	return 0;
}

/* Release what rec_begin and the run took (the spill file is deleted). */
static void rec_end(struct rec_filter *f)
{
	if (f->spill)
		fclose(f->spill);
	free(f->buf);
	free(f->keep);
	free(f->ranks);
}

/* The ranks rows, once every timeline is recorded. */
static int rec_ranks(struct rec_filter *f)
{
	for (uint32_t r = 0; r < f->nranks; r++) {
		struct par_coords c;
		par_coords_of(&f->dims, r, &c);
		const uint32_t coords[5] = { c.tp, c.cp, c.pp, c.dp, c.ep };
		if (sim_store_rank(f->st, r, f->ranks[r].node, f->ranks[r].local, coords,
				   f->ranks[r].present ? &f->ranks[r].sum : NULL) < 0)
			return -1;
	}
	return 0;
}

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
	if (par_train_plan(&t, &r, err, sizeof(err)) < 0) {
		par_compute_model_free(cm);
		return cli_error(a, CLI_BADINPUT, "%s: %s", s.path, err);
	}
	struct sim_store *st = NULL;
	struct rec_filter filter = { .nranks = r.gpus };
	enum scn_record mode = s.sim.record;
	if (mode == SCN_RECORD_AUTO)
		mode = r.gpus <= SCN_RECORD_ALL_MAX ? SCN_RECORD_ALL : SCN_RECORD_SAMPLE;
	if (r.memory.fits && cli_has(a, "db")) {
		if (!(st = store_begin(a, &s, &r, &rc))) {
			par_compute_model_free(cm);
			return rc;
		}
		if (rec_begin(&filter, &t, &s, st, mode) < 0) {
			rc = cli_error(a, CLI_FAIL, "--db: cannot create the temporary file of "
				       "the sampled timelines: %s", strerror(errno));
			sim_store_run_fail(st, "no temporary file");
			sim_store_close(st);
			rec_end(&filter);
			par_compute_model_free(cm);
			return rc;
		}
	}
	int sim_rc = r.memory.fits ? par_train_simulate(&t, &r, err, sizeof(err)) : 0;
	if (sim_rc < 0) {
		/* Past the simulated clock the input is the cause: bad input. */
		rc = cli_error(a, sim_rc == PAR_RUN_CLOCK ? CLI_BADINPUT : CLI_FAIL,
			       "%s: the step could not finish: %s", s.path, err);
	} else if (st && filter.keep && !filter.keep[filter.last]) {
		struct par_report again;  /* the same run, recording the last rank */
		filter.second = 1;
		t.finish = NULL;
		t.keep_steps = false;
		if (par_train_run(&t, &again, err, sizeof(err)) < 0)
			rc = cli_error(a, CLI_FAIL, "%s: the second pass could not finish: %s",
				       s.path, err);
	}
	if (!rc && st && r.memory.fits && rec_ranks(&filter) < 0) {
		snprintf(err, sizeof(err), "%s", sim_store_error(st));
		rc = cli_error(a, CLI_FAIL, "--db: %s", err);
	}
	if (rc && st)
		sim_store_run_fail(st, err);
	rec_end(&filter);
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
				"%.2f GB, it has %.2f GB\n", s.path, r.memory.peak / 1e9,
				r.memory.capacity / 1e9);
			rc = CLI_NOFIT;
		}
	}
	sim_store_close(st);
	free(r.step_times);
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
		"prints the step time, tokens/s, MFU and HFU (SPEC C15), the peak memory of the\n"
		"busiest GPU with its breakdown, and where the critical rank's time went.\n"
		"A layout that does not fit is reported with its memory breakdown and exit\n"
		"code 3, without running. --json prints one object with the keys step_time_s,\n"
		"tokens_per_s, mfu, hfu, memory {weights, grads, optimizer, activations,\n"
		"logits, buffers (the breakdown at the peak), peak, capacity, fits,\n"
		"model_states (weights, gradients and optimizer states held from the start)},\n"
		"breakdown {compute_s, exposed_comm_s, bubble_s, idle_s} (bytes, seconds and\n"
		"fractions) and wall_s, the simulator's own run time (the only key that\n"
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
