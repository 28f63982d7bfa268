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
 * content, overrides and varied values (signature()): rerunning it into the
 * same database skips the points already stored (resume). Results do not
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
#include "scenarios/train_of.h"
#include "sim/outfile.h"
#include "sim/store.h"
#include "sim/mpi_pool.h"
#include "sim/pool.h"
#include "sim/sha256.h"

#define MAX_VARY 8
#define MAX_VALUES 64
#define MAX_POINTS 100000

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

/* The varied keys and their values. */
struct vary {
	char key[128];
	char *values[MAX_VALUES];
	unsigned n;
};

struct sweep {
	struct vary vary[MAX_VARY];
	unsigned nvary;
	uint32_t npoints;
	const char **base;            /* --set and --fidelity, for every point */
	size_t nbase;
};

/* What a worker sends back (fixed size); a reason holds any scenario error
 * whole. */
struct result {
	uint32_t point;
	int status;                   /* 0 ok, 1 no_fit, 2 invalid, 3 failed */
	char reason[SCN_ERRLEN];
	double fig[PAR_RESULT_FIGURES];  /* the sweep_points figures
					 * (parallel/result.h), NAN: none */
};

/* The figures of a point are the columns of sweep_points. */
_Static_assert(PAR_RESULT_FIGURES == SIM_STORE_POINT_FIGURES,
	       "parallel/result.c's sweep figures are sim/store.c's sweep_points columns");

static const char *const status_names[] = { "ok", "no_fit", "invalid", "failed" };

/* "4..64" -> 4, 8, 16, 32, 64; anything else is one value. */
static int expand(struct cli_args *a, struct vary *v, const char *item)
{
	const char *dots = strstr(item, "..");
	if (!dots) {
		if (v->n == MAX_VALUES)
			return cli_error(a, CLI_BADINPUT, "option --vary %s: at most %d values",
					 v->key, MAX_VALUES);
		v->values[v->n++] = xstrdup(item);
		return CLI_OK;
	}
	char first[32];
	unsigned long long lo = 0, hi = 0;
	snprintf(first, sizeof(first), "%.*s", (int)(dots - item), item);
	if ((size_t)(dots - item) >= sizeof(first) ||
	    sim_whole_parse(first, 1ull << 62, &lo, NULL, 0) < 0 ||
	    sim_whole_parse(dots + 2, 1ull << 62, &hi, NULL, 0) < 0 ||
	    lo == 0 || hi < lo || (lo & (lo - 1)) || (hi & (hi - 1)))
		return cli_error(a, CLI_BADINPUT, "option --vary %s: '%s': a range a..b takes "
				 "powers of two, a <= b", v->key, item);
	for (unsigned long long x = lo; x <= hi; x *= 2) {
		char buf[32];
		snprintf(buf, sizeof(buf), "%llu", x);
		if (expand(a, v, buf))
			return CLI_BADINPUT;
	}
	return CLI_OK;
}

static int parse_vary(struct cli_args *a, struct sweep *sw)
{
	int nvary;
	const char **vary = cli_list(a, "vary", &nvary);
	if (nvary == 0)
		return cli_error(a, CLI_BADINPUT, "give at least one --vary KEY=V1,V2,...");
	sw->npoints = 1;
	for (int k = 0; k < nvary; k++) {
		const char *kv = vary[k], *eq = strchr(kv, '=');
		if ((unsigned)k == MAX_VARY)
			return cli_error(a, CLI_BADINPUT, "option --vary: at most %d keys", MAX_VARY);
		struct vary *v = &sw->vary[sw->nvary++];
		if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof(v->key) || !eq[1])
			return cli_error(a, CLI_BADINPUT, "option --vary: expected KEY=V1,V2,..., got "
					 "'%s'", kv);
		snprintf(v->key, sizeof(v->key), "%.*s", (int)(eq - kv), kv);
		char *vals = xstrdup(eq + 1), *save = NULL;
		for (char *t = strtok_r(vals, ",", &save); t; t = strtok_r(NULL, ",", &save))
			if (expand(a, v, t)) {
				free(vals);
				return CLI_BADINPUT;
			}
		free(vals);
		if (!v->n || (uint64_t)sw->npoints * v->n > MAX_POINTS)
			return cli_error(a, CLI_BADINPUT, "option --vary %s: expected 1 to %d points "
					 "in all", v->key, MAX_POINTS);
		sw->npoints *= v->n;
	}
	return CLI_OK;
}

/* The value of each varied key at a point (the last key varies fastest). */
static void point_values(const struct sweep *sw, uint32_t point, const char **out)
{
	for (unsigned k = sw->nvary; k-- > 0;) {
		out[k] = sw->vary[k].values[point % sw->vary[k].n];
		point /= sw->vary[k].n;
	}
}

/* Keep a message as the point's reason, cut to fit. */
static void set_reason(struct result *r, const char *why)
{
	size_t n = strlen(why);
	if (n >= sizeof(r->reason))
		n = sizeof(r->reason) - 1;
	memcpy(r->reason, why, n);
	r->reason[n] = 0;
}

/* Simulate the scenario with sets applied, as a point: figures and status
 * into r. */
static void simulate_point(const char *path, const char *const *sets, size_t n, struct result *r)
{
	char err[SCN_ERRLEN];
	struct scn s;
	if (scn_load(&s, path, sets, n, err, sizeof(err)) < 0) {
		r->status = 2;
		set_reason(r, err);
		return;
	}
	struct par_compute_model *cm = par_compute_model_new(
		&s.compute, topo_gpu_find(s.cluster.gpu), s.training.precision, s.datadir, err,
		sizeof(err));
	if (!cm) {
		r->status = 2;
		set_reason(r, err);
		return;
	}
	struct par_train t;
	scn_train_of(&t, &s, cm);
	struct par_report rep;
	int rc;
	if (par_train_plan(&t, &rep, err, sizeof(err)) < 0) {
		r->status = 2;
		set_reason(r, err);
	} else if (!rep.memory.fits) {
		r->status = 1;
		snprintf(r->reason, sizeof(r->reason), "out of memory: %.2f GB of %.2f GB",
			 rep.memory.peak / 1e9, rep.memory.capacity / 1e9);
	} else if ((rc = par_train_simulate(&t, &rep, err, sizeof(err))) < 0) {
		r->status = rc == PAR_RUN_CLOCK ? 2 : 3;  /* past the clock: refused */
		set_reason(r, err);
	}
	par_compute_model_free(cm);
	if (r->status == 2 || r->status == 3)
		return;
	par_result_figures(&rep, r->fig);  /* no_fit: what needs a fit is NAN */
}

/* Run one point: every --set, then the point's values (no limit on their
 * number), applied to the scenario. */
static void run_point(const char *path, const struct sweep *sw, uint32_t point, struct result *r)
{
	const char *vals[MAX_VARY];
	char *own[MAX_VARY];
	const char **sets = xcalloc(sw->nbase + sw->nvary, sizeof(char *));
	size_t n = 0;
	memset(r, 0, sizeof(*r));
	r->point = point;
	for (int i = 0; i < PAR_RESULT_FIGURES; i++)
		r->fig[i] = NAN;
	point_values(sw, point, vals);
	for (size_t i = 0; i < sw->nbase; i++)
		sets[n++] = sw->base[i];
	for (unsigned k = 0; k < sw->nvary; k++)
		sets[n++] = own[k] = xasprintf("%s=%s", sw->vary[k].key, vals[k]);
	simulate_point(path, sets, n, r);
	for (unsigned k = 0; k < sw->nvary; k++)
		free(own[k]);
	free(sets);
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
	const struct sweep *sw;
	struct collect *collect;      /* NULL in an MPI rank other than 0 */
};

/* A worker's task: one point. */
static void serve_point(void *ctx, const void *task, void *buf)
{
	const struct serve *sv = ctx;
	uint32_t point = *(const uint32_t *)task;
	pool_test_crash(point);
	run_point(sv->path, sv->sw, point, buf);
}

/* A point whose worker died: failed, with how it died. */
static void lost_point(void *ctx, const void *task, void *buf, const char *why)
{
	struct result *r = buf;
	(void)ctx;
	r->point = *(const uint32_t *)task;
	r->status = 3;
	set_reason(r, why);
	for (int i = 0; i < PAR_RESULT_FIGURES; i++)
		r->fig[i] = NAN;
}

/* ---- output -------------------------------------------------------------------- */

struct point_out {
	struct result r;
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

static void print_table(const struct sweep *sw, const struct point_out *pts)
{
	for (unsigned k = 0; k < sw->nvary; k++)
		printf("%-*s ", 14, sw->vary[k].key + (strrchr(sw->vary[k].key, '.') ?
				strrchr(sw->vary[k].key, '.') - sw->vary[k].key + 1 : 0));
	printf("%12s %8s %10s  %s\n", "step(s)", "MFU", "peak(GB)", "status");
	for (uint32_t i = 0; i < sw->npoints; i++) {
		const char *vals[MAX_VARY];
		if (!pts[i].done)
			continue;
		point_values(sw, i, vals);
		for (unsigned k = 0; k < sw->nvary; k++)
			printf("%-14s ", vals[k]);
		const struct result *r = &pts[i].r;
		struct par_report fig = { 0 };  /* the point's figures, by name */
		par_result_from_figures(&fig, r->fig);
		if (r->status == 0)
			printf("%12.6f %8.4f %10.2f  ok\n", fig.step_time_s, fig.mfu,
			       fig.memory.peak / 1e9);
		else
			printf("%12s %8s %10s  %s: %s\n", "-", "-", isnan(fig.memory.peak) ? "-" : "",
			       status_names[r->status], r->reason);
	}
}

static void print_json(const struct sweep *sw, const struct point_out *pts, int64_t id,
		       double wall)
{
	printf("{\"sweep\":%lld,\"points\":[", (long long)id);
	int first = 1;
	for (uint32_t i = 0; i < sw->npoints; i++) {
		const char *vals[MAX_VARY];
		if (!pts[i].done)
			continue;
		point_values(sw, i, vals);
		printf("%s{\"point\":%u,\"values\":{", first ? "" : ",", i);
		for (unsigned k = 0; k < sw->nvary; k++) {
			printf("%s", k ? "," : "");
			cli_json_str(stdout, sw->vary[k].key);
			printf(":");
			cli_json_str(stdout, vals[k]);
		}
		printf("},\"status\":\"%s\"", status_names[pts[i].r.status]);
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

static int write_csv(struct cli_args *a, const struct sweep *sw, const struct point_out *pts)
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
		const char *vals[MAX_VARY];
		if (!pts[i].done)
			continue;
		point_values(sw, i, vals);
		for (unsigned k = 0; k < sw->nvary; k++)
			cli_csv_field(f, vals[k], k == 0);
		cli_csv_field(f, status_names[pts[i].r.status], 0);
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

/* The sweep as text, for people: the scenario, --set and --vary as given
 * (the vary column of sweeps). */
static char *sweep_text(const char *path, const struct sweep *sw)
{
	size_t cap = 4096, n = 0;
	char *s = xmalloc(cap);
	n += (size_t)snprintf(s, cap, "%s", path);
	for (size_t i = 0; i < sw->nbase; i++) {
		while (n + strlen(sw->base[i]) + 8 >= cap)
			s = xrealloc(s, cap *= 2);
		n += (size_t)snprintf(s + n, cap - n, " --set %s", sw->base[i]);
	}
	for (unsigned k = 0; k < sw->nvary; k++)
		for (unsigned v = 0; v < sw->vary[k].n; v++) {
			while (n + strlen(sw->vary[k].key) + strlen(sw->vary[k].values[v]) + 16 >= cap)
				s = xrealloc(s, cap *= 2);
			n += (size_t)snprintf(s + n, cap - n, "%s%s=%s", v ? "," : " --vary ",
					      v ? "" : sw->vary[k].key, sw->vary[k].values[v]);
		}
	return s;
}

/* A growing signature: fields as netstrings. */
struct sig {
	char *s;
	size_t n, cap;
};

/* Append "LEN:BYTES,": a field's length comes before it, so no text in a
 * field (a comma, an '=', a space) can end it or start the next. */
static void sig_field(struct sig *g, const char *field)
{
	size_t len = strlen(field);
	while (g->n + len + 32 >= g->cap)
		g->s = xrealloc(g->s, g->cap = g->cap ? 2 * g->cap : 1024);
	g->n += (size_t)snprintf(g->s + g->n, g->cap - g->n, "%zu:%s,", len, field);
}

static void sig_count(struct sig *g, size_t n)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%zu", n);
	sig_field(g, buf);
}

/*
 * The signature that finds a sweep again: the format, the scenario file's
 * SHA-256 (its content, not its path: an edited scenario is a new sweep, a
 * moved one the same), then the --set overrides and each varied key with
 * its values, every list preceded by its length. Two sweeps share it only
 * when they run the same points on the same file.
 */
static char *signature(const char *sha, const struct sweep *sw)
{
	struct sig g = { 0 };
	sig_field(&g, "clustersim-sweep-2");
	sig_field(&g, sha);
	sig_count(&g, sw->nbase);
	for (size_t i = 0; i < sw->nbase; i++)
		sig_field(&g, sw->base[i]);
	sig_count(&g, sw->nvary);
	for (unsigned k = 0; k < sw->nvary; k++) {
		sig_field(&g, sw->vary[k].key);
		sig_count(&g, sw->vary[k].n);
		for (unsigned v = 0; v < sw->vary[k].n; v++)
			sig_field(&g, sw->vary[k].values[v]);
	}
	return g.s;
}

static void store_result(struct sim_store *st, int64_t id, const struct sweep *sw,
			 const struct result *r)
{
	const char *vals[MAX_VARY], *keys[MAX_VARY];
	point_values(sw, r->point, vals);
	for (unsigned k = 0; k < sw->nvary; k++)
		keys[k] = sw->vary[k].key;
	struct sim_store_point p = {
		.point = r->point, .status = status_names[r->status],
		.reason = r->status ? r->reason : NULL, .keys = keys, .values = vals,
		.nvalues = sw->nvary,
	};
	memcpy(p.fig, r->fig, sizeof(p.fig));
	if (sim_store_sweep_point(st, id, &p) < 0)
		fprintf(stderr, "clustersim sweep: --db: %s\n", sim_store_error(st));
}

/* What run_all keeps while results come in, from workers or MPI ranks. */
struct collect {
	const struct sweep *sw;
	struct sim_store *st;
	int64_t id;
	struct point_out *pts;
	uint32_t done, todo;
	double t0;
};

static void collect_result(void *ctx, const void *result)
{
	struct collect *c = ((const struct serve *)ctx)->collect;
	const struct result *r = result;
	c->pts[r->point].r = *r;
	c->pts[r->point].done = 1;
	if (c->st)
		store_result(c->st, c->id, c->sw, r);
	progress(++c->done, c->todo, c->t0);
}

/* Hand out the points not yet stored to the pool (forked workers, or MPI
 * ranks); collect and store their results; fill in the points earlier runs
 * stored. */
static int run_all(struct cli_args *a, const struct sweep *sw, struct sim_store *st, int64_t id,
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
		.task_size = sizeof(uint32_t), .result_size = sizeof(struct result),
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
		pts[i].r.status = 3;
		for (int k = 0; k < 4; k++)
			if (!strcmp(status, status_names[k]))
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
static int sweep_outcome(struct cli_args *a, const struct sweep *sw, const struct point_out *pts)
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

static void sweep_free(struct sweep *sw, char *fid)
{
	for (unsigned k = 0; k < sw->nvary; k++)
		for (unsigned v = 0; v < sw->vary[k].n; v++)
			free(sw->vary[k].values[v]);
	free(sw->base);
	free(fid);
}

static int sweep_run(struct cli_args *a)
{
	if (a->npos != 1)
		return cli_error(a, CLI_BADINPUT, "expected one scenario file (clustersim sweep "
				 "SCENARIO.yaml --vary KEY=V1,V2,...)");
	struct sweep sw = { 0 };
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
			.task_size = sizeof(uint32_t), .result_size = sizeof(struct result),
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
		char *sig = signature(sha, &sw), *text = sweep_text(a->pos[0], &sw);
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
