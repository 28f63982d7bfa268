/*
 * cmd_sweep.c - `clustersim sweep SCENARIO --vary KEY=V1,V2,...`: run the
 * scenario at every point of the cartesian product of the varied values, on
 * N worker processes, and keep every point (its varied values and report
 * figures, or why it failed) in the database's sweep tables.
 *
 * The points run on the worker pool (sim/pool.h: forked workers, or under
 * mpirun the other MPI ranks), handed out one at a time so that a slow point
 * does not hold up the rest; only this process writes the database. A point
 * whose worker dies (an abort, the OOM killer) is stored as failed with the
 * signal, and the sweep goes on. A sweep is identified by its scenario's
 * content, overrides and varied values (scn_sweep_signature(),
 * scenarios/sweep.h): rerunning it into the same database skips the points already stored (resume). Results do not
 * depend on the number of workers. The exit code is 1 when a point failed
 * or none is ok (sweep_outcome()).
 */
#include "tools/cli.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "parallel/compute.h"
#include "parallel/result.h"
#include "parallel/train.h"
#include "scenarios/scenario.h"
#include "scenarios/sweep.h"
#include "sim/outfile.h"
#include "sim/store.h"
#include "sim/mpi_pool.h"
#include "sim/pool.h"
#include "sim/sha256.h"

static const struct cli_opt sweep_opts[] = {
	{ "vary", 0, CLI_LIST, "KEY=V1,V2,...", NULL,
	  "a scenario key and its values (repeatable: the cartesian product); a..b gives the "
	  "powers of two from a to b" },
	{ "set", 0, CLI_LIST, "KEY=VALUE", NULL, "override a scenario key at every point" },
	{ "jobs", 'j', CLI_COUNT, "N", "all cores",
	  "worker processes (under mpirun, built --with-mpi: the other ranks instead)" },
	{ "db", 0, CLI_FILE_DB, "FILE", NULL, "keep the sweep in SQLite (and resume it from there)" },
	{ "csv", 0, CLI_FILE_OUT, "FILE", NULL, "also write the points as CSV" },
	{ "json", 0, CLI_FLAG, NULL, NULL, "print a JSON object instead of the table" },
	{ "fidelity", 0, CLI_STR, "F", "sim.fidelity", "flow or analytic, for every point" },
	{ 0 },
};

/* The figures of a point are the columns of sweep_points. */
_Static_assert(PAR_RESULT_FIGURES == SIM_STORE_POINT_FIGURES,
	       "parallel/result.c's sweep figures are sim/store.c's sweep_points columns");

static int parse_vary(struct cli_args *a, struct scn_sweep *sw)
{
	int nvary;
	const char **vary = cli_list(a, "vary", &nvary);
	if (nvary == 0)
		return cli_error(a, CLI_BADINPUT, "give at least one --vary KEY=V1,V2,...");
	for (int k = 0; k < nvary; k++) {
		char err[256];
		int rc = scn_sweep_vary(sw, vary[k], err, sizeof(err));
		if (rc == SCN_SWEEP_BAD_KEY)
			return cli_error(a, CLI_BADINPUT, "option --vary %s: %s",
					 sw->vary[sw->nvary - 1].key, err);
		if (rc)
			return cli_error(a, CLI_BADINPUT, "option --vary: %s", err);
	}
	return CLI_OK;
}

/* ---- the pool's callbacks (sim/pool.h) ------------------------------------ */

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* The pool's context: what a worker needs (the scenario and the sweep) and,
 * in this process, where results go. */
struct serve {
	const char *path;
	const struct scn_sweep *sw;
	struct collect *collect;      /* NULL in an MPI rank other than 0 */
};

/* A worker's task: one point. */
static void serve_point(void *ctx, const void *task, void *buf)
{
	const struct serve *sv = ctx;
	uint32_t point = *(const uint32_t *)task;
	pool_test_crash(point);
	scn_sweep_run_point(sv->path, sv->sw, point, buf);
}

/* A point whose worker died: failed, with how it died. */
static void lost_point(void *ctx, const void *task, void *buf, const char *why)
{
	struct scn_sweep_result *r = buf;
	(void)ctx;
	r->point = *(const uint32_t *)task;
	r->status = SCN_SWEEP_FAILED;
	snprintf(r->reason, sizeof(r->reason), "%s", why);
	for (int i = 0; i < PAR_RESULT_FIGURES; i++)
		r->fig[i] = NAN;
}

/* ---- output -------------------------------------------------------------------- */

struct point_out {
	struct scn_sweep_result r;
	int done;
};

static void progress(uint32_t done, uint32_t total, double t0)
{
	if (!isatty(2))
		return;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	double el = (double)now.tv_sec + now.tv_nsec * 1e-9 - t0, rate = done / (el > 0 ? el : 1e-9);
	int w = 30, fill = total ? (int)(w * (double)done / total) : w;
	fprintf(stderr, "\r[%.*s%*s] %u/%u points, %.1f/s, ETA %.0f s ", fill,
		"##############################", w - fill, "", done, total, rate,
		rate > 0 ? (total - done) / rate : 0);
	if (done == total)
		fputc('\n', stderr);
}

static void print_table(const struct scn_sweep *sw, const struct point_out *pts)
{
	for (unsigned k = 0; k < sw->nvary; k++)
		printf("%-*s ", 14, sw->vary[k].key + (strrchr(sw->vary[k].key, '.') ?
				strrchr(sw->vary[k].key, '.') - sw->vary[k].key + 1 : 0));
	printf("%12s %8s %10s  %s\n", "step(s)", "MFU", "peak(GB)", "status");
	for (uint32_t i = 0; i < sw->npoints; i++) {
		const char *vals[SCN_SWEEP_MAX_VARY];
		if (!pts[i].done)
			continue;
		scn_sweep_point_values(sw, i, vals);
		for (unsigned k = 0; k < sw->nvary; k++)
			printf("%-14s ", vals[k]);
		const struct scn_sweep_result *r = &pts[i].r;
		struct par_report fig = { 0 };  /* the point's figures, by name */
		par_result_from_figures(&fig, r->fig);
		if (r->status == 0)
			printf("%12.6f %8.4f %10.2f  ok\n", fig.step_time_s, fig.mfu,
			       fig.memory.peak / 1e9);
		else
			printf("%12s %8s %10s  %s: %s\n", "-", "-", isnan(fig.memory.peak) ? "-" : "",
			       scn_sweep_status_names[r->status], r->reason);
	}
}

static void print_json(const struct scn_sweep *sw, const struct point_out *pts, int64_t id,
		       double wall)
{
	printf("{\"sweep\":%lld,\"points\":[", (long long)id);
	int first = 1;
	for (uint32_t i = 0; i < sw->npoints; i++) {
		const char *vals[SCN_SWEEP_MAX_VARY];
		if (!pts[i].done)
			continue;
		scn_sweep_point_values(sw, i, vals);
		printf("%s{\"point\":%u,\"values\":{", first ? "" : ",", i);
		for (unsigned k = 0; k < sw->nvary; k++) {
			printf("%s", k ? "," : "");
			cli_json_str(stdout, sw->vary[k].key);
			printf(":");
			cli_json_str(stdout, vals[k]);
		}
		printf("},\"status\":\"%s\"", scn_sweep_status_names[pts[i].r.status]);
		if (pts[i].r.status) {
			printf(",\"reason\":");
			cli_json_str(stdout, pts[i].r.reason);
		}
		for (unsigned f = 0; f < PAR_RESULT_FIGURES; f++)
			if (!isnan(pts[i].r.fig[f]))
				printf(",\"%s\":%.9g", par_result_figure_name(f), pts[i].r.fig[f]);
		printf("}");
		first = 0;
	}
	printf("],\"wall_s\":%.6f}\n", wall);
}

static int write_csv(struct cli_args *a, const struct scn_sweep *sw, const struct point_out *pts)
{
	struct sim_out o;
	int rc = cli_out_open(a, "option --csv", cli_str(a, "csv", ""), &o);
	if (rc != CLI_OK)
		return rc;
	FILE *f = o.f;
	for (unsigned k = 0; k < sw->nvary; k++)
		cli_csv_field(f, sw->vary[k].key, k == 0);
	cli_csv_field(f, "status", 0);
	cli_csv_field(f, "reason", 0);
	for (unsigned i = 0; i < PAR_RESULT_FIGURES; i++)
		cli_csv_field(f, par_result_figure_name(i), 0);
	fputc('\n', f);
	for (uint32_t i = 0; i < sw->npoints; i++) {
		const char *vals[SCN_SWEEP_MAX_VARY];
		if (!pts[i].done)
			continue;
		scn_sweep_point_values(sw, i, vals);
		for (unsigned k = 0; k < sw->nvary; k++)
			cli_csv_field(f, vals[k], k == 0);
		cli_csv_field(f, scn_sweep_status_names[pts[i].r.status], 0);
		cli_csv_field(f, pts[i].r.status ? pts[i].r.reason : "", 0);
		for (int k = 0; k < PAR_RESULT_FIGURES; k++) {
			char v[40] = "";
			if (!isnan(pts[i].r.fig[k]))
				snprintf(v, sizeof(v), "%.9g", pts[i].r.fig[k]);
			cli_csv_field(f, v, 0);
		}
		fputc('\n', f);
	}
	return cli_out_commit(a, "option --csv", &o, CLI_OK);
}

/* ---- the command ------------------------------------------------------------------ */

static void store_result(struct sim_store *st, int64_t id, const struct scn_sweep *sw,
			 const struct scn_sweep_result *r)
{
	const char *vals[SCN_SWEEP_MAX_VARY], *keys[SCN_SWEEP_MAX_VARY];
	scn_sweep_point_values(sw, r->point, vals);
	for (unsigned k = 0; k < sw->nvary; k++)
		keys[k] = sw->vary[k].key;
	struct sim_store_point p = {
		.point = r->point, .status = scn_sweep_status_names[r->status],
		.reason = r->status ? r->reason : NULL, .keys = keys, .values = vals,
		.nvalues = sw->nvary,
	};
	memcpy(p.fig, r->fig, sizeof(p.fig));
	if (sim_store_sweep_point(st, id, &p) < 0)
		fprintf(stderr, "clustersim sweep: --db: %s\n", sim_store_error(st));
}

/* What run_all keeps while results come in, from workers or MPI ranks. */
struct collect {
	const struct scn_sweep *sw;
	struct sim_store *st;
	int64_t id;
	struct point_out *pts;
	uint32_t done, todo;
	double t0;
};

static void collect_result(void *ctx, const void *result)
{
	struct collect *c = ((const struct serve *)ctx)->collect;
	const struct scn_sweep_result *r = result;
	c->pts[r->point].r = *r;
	c->pts[r->point].done = 1;
	if (c->st)
		store_result(c->st, c->id, c->sw, r);
	progress(++c->done, c->todo, c->t0);
}

/* Hand out the points not yet stored to the pool (forked workers, or MPI
 * ranks); collect and store their results; fill in the points earlier runs
 * stored. */
static int run_all(struct cli_args *a, const struct scn_sweep *sw, struct sim_store *st, int64_t id,
		   struct point_out *pts, int jobs, double t0)
{
	uint32_t todo = 0, total = sw->npoints;
	uint32_t *queue = xmalloc(total * sizeof(uint32_t));
	for (uint32_t i = 0; i < total; i++)
		if (!(st && sim_store_sweep_has(st, id, i)))
			queue[todo++] = i;
	struct collect c = { .sw = sw, .st = st, .id = id, .pts = pts, .todo = todo, .t0 = t0 };
	struct serve sv = { .path = a->pos[0], .sw = sw, .collect = &c };
	const struct pool_job job = {
		.task_size = sizeof(uint32_t), .result_size = sizeof(struct scn_sweep_result),
		.run = serve_point, .lost = lost_point, .done = collect_result, .ctx = &sv,
	};
	struct pool_stats ps;
	int rc = pool_run(&job, queue, todo, jobs, &interrupted, &ps);
	free(queue);
	if (rc < 0)
		return cli_error(a, CLI_FAIL, "cannot start workers: %s", strerror(errno));
	/* Points of earlier runs of this sweep come from the database. */
	for (uint32_t i = 0; st && i < total; i++) {
		char status[32];
		if (pts[i].done || !sim_store_sweep_get(st, id, i, status, sizeof(status),
							 pts[i].r.reason, sizeof(pts[i].r.reason),
							 pts[i].r.fig))
			continue;
		pts[i].r.point = i;
		/* A status this version does not know counts as failed, never ok. */
		pts[i].r.status = SCN_SWEEP_FAILED;
		for (int k = 0; k < 4; k++)
			if (!strcmp(status, scn_sweep_status_names[k]))
				pts[i].r.status = k;
		pts[i].done = 1;
	}
	if (interrupted)
		return cli_error(a, 130, "interrupted after %u of %u points; run the same command "
				 "again to resume%s", ps.done, todo, st ? "" : " (with --db)");
	if (ps.done < todo)
		return cli_error(a, CLI_FAIL, "no worker could be restarted: %u of %u points not "
				 "run (%s)", todo - ps.done, todo, strerror(errno));
	return CLI_OK;
}

/*
 * The exit code of a sweep whose points all have a result (this run's or
 * stored ones): 0 when at least one point is ok and none failed; 1, said on
 * stderr, when some point failed (its simulation could not finish, or its
 * worker died) or none is ok. no_fit and invalid points are answers, not
 * failures.
 */
static int sweep_outcome(struct cli_args *a, const struct scn_sweep *sw, const struct point_out *pts)
{
	uint32_t count[4] = { 0 };
	for (uint32_t i = 0; i < sw->npoints; i++)
		if (pts[i].done)
			count[pts[i].r.status]++;
	if (count[3])
		return cli_error(a, CLI_FAIL, "%u of %u points failed (status failed, with the "
				 "reason)", count[3], sw->npoints);
	if (!count[0])
		return cli_error(a, CLI_FAIL, "no point of %u ran: %u no_fit, %u invalid",
				 sw->npoints, count[1], count[2]);
	return CLI_OK;
}

static void sweep_free(struct scn_sweep *sw, char *fid)
{
	scn_sweep_free(sw);
	free(sw->base);
	free(fid);
}

static int sweep_run(struct cli_args *a)
{
	if (a->npos != 1)
		return cli_error(a, CLI_BADINPUT, "expected one scenario file (clustersim sweep "
				 "SCENARIO.yaml --vary KEY=V1,V2,...)");
	struct scn_sweep sw = { 0 };
	int rc = parse_vary(a, &sw);
	long long jobs = sysconf(_SC_NPROCESSORS_ONLN);
	if (rc == CLI_OK && cli_count(a, "jobs", 1, 64, &jobs) < 0)
		rc = CLI_BADINPUT;
	int nsets;
	const char **sets = cli_list(a, "set", &nsets);
	sw.base = xcalloc((size_t)nsets + 1, sizeof(char *));
	for (int k = 0; k < nsets; k++)
		sw.base[sw.nbase++] = sets[k];
	size_t nbase = sw.nbase;  /* --fidelity checked here, named as typed */
	if (rc == CLI_OK)
		rc = cli_fold_option(a, "fidelity", "sim.fidelity", sw.base, &nbase);
	char *fid = nbase > sw.nbase ? (char *)sw.base[sw.nbase] : NULL;
	sw.nbase = nbase;
	/* The file must be a readable file (every point reads it again, so not
	 * a pipe) and every varied key must exist; a point whose values make
	 * the layout invalid is kept with its reason. */
	struct stat sb;
	if (rc == CLI_OK && access(a->pos[0], R_OK) != 0)
		rc = cli_error(a, CLI_BADINPUT, "%s: cannot read: %s", a->pos[0], strerror(errno));
	else if (rc == CLI_OK && (stat(a->pos[0], &sb) != 0 || !S_ISREG(sb.st_mode)))
		rc = cli_error(a, CLI_BADINPUT, "%s: not a regular file (each point of a sweep "
			       "reads the scenario again)", a->pos[0]);
	for (unsigned k = 0; rc == CLI_OK && k < sw.nvary; k++)
		if (!scn_key_known(sw.vary[k].key))
			rc = cli_error(a, CLI_BADINPUT, "option --vary: unknown key %s (see "
				       "docs/scenario.md)", sw.vary[k].key);
	if (rc == CLI_OK && mp_size() > 1 && mp_rank() > 0) {
		/* An MPI rank other than 0: run the points rank 0 hands out. */
		struct serve sv = { .path = a->pos[0], .sw = &sw };
		const struct pool_job job = {
			.task_size = sizeof(uint32_t), .result_size = sizeof(struct scn_sweep_result),
			.run = serve_point, .lost = lost_point, .ctx = &sv,
		};
		signal(SIGINT, SIG_IGN);  /* rank 0 decides when to stop */
		pool_serve(&job);
		sweep_free(&sw, fid);
		return CLI_OK;
	}
	struct sim_store *st = NULL;
	int64_t id = 0;
	int resumed = 0;
	if (rc == CLI_OK && cli_has(a, "db")) {
		char sha[72] = "sha256:";
		if (sha256_file(a->pos[0], sha + 7) < 0)
			rc = cli_error(a, CLI_BADINPUT, "%s: cannot read: %s", a->pos[0],
				       strerror(errno));
		else
			rc = cli_store_open(a, cli_str(a, "db", ""), &st);
		char *sig = scn_sweep_signature(sha, &sw), *text = scn_sweep_text(a->pos[0], &sw);
		if (rc == CLI_OK &&
		    (id = sim_store_sweep_open(st, sig, a->line, a->pos[0], text, &resumed)) < 0)
			rc = cli_error(a, CLI_FAIL, "--db: %s", sim_store_error(st));
		free(sig);
		free(text);
		if (rc == CLI_OK && resumed)
			fprintf(stderr, "clustersim sweep: resuming sweep %lld\n", (long long)id);
	}
	struct point_out *pts = xcalloc(sw.npoints ? sw.npoints : 1, sizeof(*pts));
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (rc == CLI_OK) {
		struct sigaction sa = { .sa_handler = on_sigint };
		sigaction(SIGINT, &sa, NULL);
		rc = run_all(a, &sw, st, id, pts, (int)jobs, (double)t0.tv_sec + t0.tv_nsec * 1e-9);
		signal(SIGINT, SIG_DFL);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	if (rc == CLI_OK) {
		if (cli_has(a, "json"))
			print_json(&sw, pts, id, wall);
		else
			print_table(&sw, pts);
		if (cli_has(a, "csv"))
			rc = write_csv(a, &sw, pts);
	}
	if (rc == CLI_OK)
		rc = sweep_outcome(a, &sw, pts);
	sweep_free(&sw, fid);
	free(pts);
	sim_store_close(st);
	return rc;
}

const struct cli_cmd cli_cmd_sweep = {
	.name = "sweep",
	.usage = "SCENARIO.yaml --vary KEY=V1,V2,... [--vary ...] [--set KEY=VALUE]... [-j N] "
		 "[--db FILE] [--csv FILE] [--json]",
	.summary = "Run a scenario at every combination of the varied keys.",
	.description =
		"Each point is the scenario with --set and the point's values applied (the last\n"
		"--vary varies fastest), simulated like `clustersim run` by one of N worker\n"
		"processes (one with -j 1: a point never runs in the sweep's own process).\n"
		"Points that do not fit in memory or are not valid layouts are kept with their\n"
		"reason (no_fit, invalid); a point whose simulation cannot finish, or whose\n"
		"worker dies (an abort, a signal such as the OOM killer's SIGKILL), is kept as\n"
		"failed with the reason or the signal, and the sweep goes on with a new\n"
		"worker. With --db the sweep and every point are stored (tables sweeps,\n"
		"sweep_points, sweep_values; docs/schema.md); running the same command on a\n"
		"scenario file of the same content into the same database resumes it, skipping\n"
		"the points already stored, failed ones too. A progress bar goes to stderr\n"
		"when it is a terminal. --json prints {\"sweep\", \"points\": [{\"point\",\n"
		"\"values\", \"status\", \"reason\", figures...}], \"wall_s\"}. Exit codes: 0 when\n"
		"at least one point is ok and none failed; 1 when some point failed or none is\n"
		"ok (the table and the database still hold every point); 2 for bad input.\n"
		"Ctrl-C stops handing out points, stores those in flight and exits 130.",
	.opts = sweep_opts,
	.run = sweep_run,
	.mpi = 1,
};
