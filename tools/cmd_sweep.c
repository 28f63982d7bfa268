/*
 * cmd_sweep.c - `clustersim sweep SCENARIO --vary KEY=V1,V2,...`: run the
 * scenario at every point of the cartesian product of the varied values, on
 * N worker processes, and keep every point (its varied values and report
 * figures, or why it failed) in the database's sweep tables.
 *
 * Workers are forked processes that run points they are handed one at a
 * time (a slow point does not hold up the rest) and send back a fixed-size
 * result; only this process writes the database. Under mpirun (built
 * --with-mpi) the other MPI ranks are the workers and rank 0 hands out the
 * points and writes (tools/mpi_pool.h). A sweep is identified by
 * its scenario, overrides and varied values: rerunning it into the same
 * database skips the points already stored (resume). Results do not depend on
 * the number of workers.
 */
#include "tools/cli.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "parallel/compute.h"
#include "parallel/train.h"
#include "scenarios/scenario.h"
#include "sim/store.h"
#include "tools/mpi_pool.h"

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
	{ "db", 0, CLI_STR, "FILE", NULL, "keep the sweep in SQLite (and resume it from there)" },
	{ "csv", 0, CLI_STR, "FILE", NULL, "also write the points as CSV" },
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

/* What a worker sends back: fixed size, one pipe write (< PIPE_BUF). */
struct result {
	uint32_t worker, point;
	int status;                   /* 0 ok, 1 no_fit, 2 invalid, 3 failed */
	char reason[768];
	double fig[SIM_STORE_POINT_FIGURES];
};

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
	char *end;
	unsigned long lo = strtoul(item, &end, 10), hi = strtoul(dots + 2, NULL, 10);
	if (end != dots || lo == 0 || hi < lo || (lo & (lo - 1)) || (hi & (hi - 1)))
		return cli_error(a, CLI_BADINPUT, "option --vary %s: '%s': a range a..b takes "
				 "powers of two, a <= b", v->key, item);
	for (unsigned long x = lo; x <= hi; x *= 2) {
		char buf[32];
		snprintf(buf, sizeof(buf), "%lu", x);
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

/* Run one point: load the scenario with its values, plan, simulate. */
static void run_point(const char *path, const struct sweep *sw, uint32_t point, struct result *r)
{
	const char *vals[MAX_VARY], *sets[64 + MAX_VARY];
	char setbuf[MAX_VARY][256], err[SCN_ERRLEN];
	size_t n = 0;
	memset(r, 0, sizeof(*r));
	r->point = point;
	for (int i = 0; i < SIM_STORE_POINT_FIGURES; i++)
		r->fig[i] = NAN;
	point_values(sw, point, vals);
	for (size_t i = 0; i < sw->nbase && n < 64; i++)
		sets[n++] = sw->base[i];
	for (unsigned k = 0; k < sw->nvary; k++) {
		snprintf(setbuf[k], sizeof(setbuf[k]), "%s=%s", sw->vary[k].key, vals[k]);
		sets[n++] = setbuf[k];
	}
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
	cli_train_of(&t, &s, cm);
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
	const double f[SIM_STORE_POINT_FIGURES] = {
		r->status ? NAN : rep.step_time_s, r->status ? NAN : rep.tokens_per_s,
		r->status ? NAN : rep.mfu, r->status ? NAN : rep.hfu, rep.memory.peak,
		rep.memory.capacity, rep.memory.fits, r->status ? NAN : rep.breakdown.compute_s,
		r->status ? NAN : rep.breakdown.exposed_comm_s, r->status ? NAN : rep.breakdown.bubble_s,
		r->status ? NAN : rep.breakdown.idle_s, rep.gpus, rep.dp, rep.micro_batches,
	};
	memcpy(r->fig, f, sizeof(f));
}

/* ---- workers ---------------------------------------------------------------- */

struct pool {
	int n;
	pid_t pid[64];
	int task[64];          /* parent -> worker: a point index, or EOF    */
	int results;           /* workers -> parent, one shared pipe         */
};

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void worker(const char *path, const struct sweep *sw, uint32_t id, int task, int out)
{
	uint32_t point;
	while (read(task, &point, sizeof(point)) == (ssize_t)sizeof(point)) {
		struct result r;
		run_point(path, sw, point, &r);
		r.worker = id;
		if (write(out, &r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(1);
	}
	_exit(0);
}

/* An MPI rank's task: one point. */
struct serve {
	const char *path;
	const struct sweep *sw;
};

static void serve_point(void *ctx, const void *task, void *buf)
{
	const struct serve *sv = ctx;
	struct result *r = buf;
	run_point(sv->path, sv->sw, *(const uint32_t *)task, r);
	r->worker = (uint32_t)mp_rank();
}

static int pool_start(struct pool *p, int n, const char *path, const struct sweep *sw)
{
	int res[2];
	if (pipe(res) < 0)
		return -1;
	p->n = 0;
	p->results = res[0];
	fflush(NULL);
	for (int i = 0; i < n; i++) {
		int t[2];
		if (pipe(t) < 0)
			return -1;
		pid_t pid = fork();
		if (pid < 0)
			return -1;
		if (pid == 0) {
			close(t[1]);
			close(res[0]);
			signal(SIGINT, SIG_IGN);  /* the parent decides when to stop */
			worker(path, sw, (uint32_t)i, t[0], res[1]);
		}
		close(t[0]);
		p->pid[i] = pid;
		p->task[i] = t[1];
		p->n++;
	}
	close(res[1]);
	return 0;
}

static void pool_stop(struct pool *p)
{
	for (int i = 0; i < p->n; i++)
		close(p->task[i]);
	for (int i = 0; i < p->n; i++)
		waitpid(p->pid[i], NULL, 0);
	close(p->results);
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
		if (r->status == 0)
			printf("%12.6f %8.4f %10.2f  ok\n", r->fig[0], r->fig[2], r->fig[4] / 1e9);
		else
			printf("%12s %8s %10s  %s: %s\n", "-", "-", isnan(r->fig[4]) ? "-" : "",
			       status_names[r->status], r->reason);
	}
}

/* A JSON string: quotes, backslashes and control bytes escaped. */
static void json_str(FILE *f, const char *s)
{
	char buf[1600];
	sim_json_escape(s, buf, sizeof(buf));
	fprintf(f, "\"%s\"", buf);
}

static const char *const fig_names[SIM_STORE_POINT_FIGURES] = {
	"step_time_s", "tokens_per_s", "mfu", "hfu", "peak_bytes", "capacity_bytes", "fits",
	"compute_s", "exposed_comm_s", "bubble_s", "idle_s", "gpus", "dp", "micro_batches",
};

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
			json_str(stdout, sw->vary[k].key);
			printf(":");
			json_str(stdout, vals[k]);
		}
		printf("},\"status\":\"%s\"", status_names[pts[i].r.status]);
		if (pts[i].r.status) {
			printf(",\"reason\":");
			json_str(stdout, pts[i].r.reason);
		}
		for (int f = 0; f < SIM_STORE_POINT_FIGURES; f++)
			if (!isnan(pts[i].r.fig[f]))
				printf(",\"%s\":%.9g", fig_names[f], pts[i].r.fig[f]);
		printf("}");
		first = 0;
	}
	printf("],\"wall_s\":%.6f}\n", wall);
}

static int write_csv(struct cli_args *a, const struct sweep *sw, const struct point_out *pts)
{
	const char *path = cli_str(a, "csv", "");
	FILE *f = fopen(path, "w");
	if (!f)
		return cli_error(a, CLI_BADINPUT, "option --csv: cannot write '%s'", path);
	for (unsigned k = 0; k < sw->nvary; k++)
		cli_csv_field(f, sw->vary[k].key, k == 0);
	cli_csv_field(f, "status", 0);
	cli_csv_field(f, "reason", 0);
	for (int i = 0; i < SIM_STORE_POINT_FIGURES; i++)
		cli_csv_field(f, fig_names[i], 0);
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
		for (int k = 0; k < SIM_STORE_POINT_FIGURES; k++) {
			char v[40] = "";
			if (!isnan(pts[i].r.fig[k]))
				snprintf(v, sizeof(v), "%.9g", pts[i].r.fig[k]);
			cli_csv_field(f, v, 0);
		}
		fputc('\n', f);
	}
	return fclose(f) ? cli_error(a, CLI_FAIL, "option --csv: error writing '%s'", path) : CLI_OK;
}

/* ---- the command ------------------------------------------------------------------ */

/* Signature: everything that defines the points, to find the sweep again. */
static char *signature(const char *path, const struct sweep *sw)
{
	size_t cap = 4096, n = 0;
	char *s = xmalloc(cap);
	n += (size_t)snprintf(s, cap, "%s", path);
	for (size_t i = 0; i < sw->nbase; i++) {
		if (n + strlen(sw->base[i]) + 8 >= cap)
			s = xrealloc(s, cap *= 2);
		n += (size_t)snprintf(s + n, cap - n, " --set %s", sw->base[i]);
	}
	for (unsigned k = 0; k < sw->nvary; k++)
		for (unsigned v = 0; v < sw->vary[k].n; v++) {
			if (n + strlen(sw->vary[k].key) + strlen(sw->vary[k].values[v]) + 16 >= cap)
				s = xrealloc(s, cap *= 2);
			n += (size_t)snprintf(s + n, cap - n, "%s%s=%s", v ? "," : " --vary ",
					      v ? "" : sw->vary[k].key, sw->vary[k].values[v]);
		}
	return s;
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

/* Hand out the points not yet stored; collect and store the results. */
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
	struct collect *c = ctx;
	const struct result *r = result;
	c->pts[r->point].r = *r;
	c->pts[r->point].done = 1;
	if (c->st)
		store_result(c->st, c->id, c->sw, r);
	progress(++c->done, c->todo, c->t0);
}

/* Run the queue on the forked workers; the number of results. */
static int run_local(struct cli_args *a, const char *path, const struct sweep *sw,
		     const uint32_t *queue, uint32_t todo, int jobs, struct collect *c)
{
	uint32_t next = 0;
	if (jobs > (int)todo)
		jobs = todo ? (int)todo : 1;
	struct pool pool;
	if (todo && pool_start(&pool, jobs, path, sw) < 0)
		return cli_error(a, CLI_FAIL, "cannot start workers: %s", strerror(errno));
	for (int w = 0; w < pool.n && next < todo; w++, next++)
		if (write(pool.task[w], &queue[next], sizeof(uint32_t)) < 0)
			break;
	while (c->done < todo) {
		struct result r;
		ssize_t got = read(pool.results, &r, sizeof(r));
		if (got != (ssize_t)sizeof(r)) {
			if (got < 0 && errno == EINTR && !interrupted)
				continue;
			break;
		}
		collect_result(c, &r);
		if (next < todo && !interrupted &&
		    write(pool.task[r.worker], &queue[next], sizeof(uint32_t)) > 0)
			next++;
		else if (interrupted && c->done == next)
			break;
	}
	if (todo)
		pool_stop(&pool);
	return CLI_OK;
}

static int run_all(struct cli_args *a, const struct sweep *sw, struct sim_store *st, int64_t id,
		   struct point_out *pts, int jobs, double t0)
{
	uint32_t todo = 0, total = sw->npoints;
	uint32_t *queue = xmalloc(total * sizeof(uint32_t));
	for (uint32_t i = 0; i < total; i++)
		if (!(st && sim_store_sweep_has(st, id, i)))
			queue[todo++] = i;
	struct collect c = { .sw = sw, .st = st, .id = id, .pts = pts, .todo = todo, .t0 = t0 };
	int rc = CLI_OK;
	if (mp_size() > 1) {  /* the other MPI ranks are the workers */
		struct result r;
		mp_dispatch(queue, todo, sizeof(uint32_t), &r, sizeof(r), collect_result, &c,
			    &interrupted);
	} else {
		rc = run_local(a, a->pos[0], sw, queue, todo, jobs, &c);
	}
	free(queue);
	if (rc != CLI_OK)
		return rc;
	uint32_t done = c.done;
	/* Points of earlier runs of this sweep come from the database. */
	for (uint32_t i = 0; st && i < total; i++) {
		char status[32];
		if (pts[i].done || !sim_store_sweep_get(st, id, i, status, sizeof(status),
							 pts[i].r.reason, sizeof(pts[i].r.reason),
							 pts[i].r.fig))
			continue;
		pts[i].r.point = i;
		for (int k = 0; k < 4; k++)
			if (!strcmp(status, status_names[k]))
				pts[i].r.status = k;
		pts[i].done = 1;
	}
	if (interrupted)
		return cli_error(a, 130, "interrupted after %u of %u points; run the same command "
				 "again to resume%s", done, todo, st ? "" : " (with --db)");
	return done == todo ? CLI_OK : cli_error(a, CLI_FAIL, "a worker stopped early");
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
	char fid[64];
	if (cli_has(a, "fidelity")) {
		snprintf(fid, sizeof(fid), "sim.fidelity=%s", cli_str(a, "fidelity", ""));
		sw.base[sw.nbase++] = fid;
	}
	/* The file must be readable and every varied key must exist; a point
	 * whose values make the layout invalid is kept with its reason. */
	if (rc == CLI_OK && access(a->pos[0], R_OK) != 0)
		rc = cli_error(a, CLI_BADINPUT, "%s: cannot read: %s", a->pos[0], strerror(errno));
	for (unsigned k = 0; rc == CLI_OK && k < sw.nvary; k++)
		if (!scn_key_known(sw.vary[k].key))
			rc = cli_error(a, CLI_BADINPUT, "option --vary: unknown key %s (see "
				       "docs/scenario.md)", sw.vary[k].key);
	if (rc == CLI_OK && mp_size() > 1 && mp_rank() > 0) {
		/* An MPI rank other than 0: run the points rank 0 hands out. */
		struct serve sv = { .path = a->pos[0], .sw = &sw };
		struct result r;
		uint32_t point;
		signal(SIGINT, SIG_IGN);  /* rank 0 decides when to stop */
		mp_serve(&point, sizeof(point), &r, sizeof(r), serve_point, &sv);
		for (unsigned k = 0; k < sw.nvary; k++)
			for (unsigned v = 0; v < sw.vary[k].n; v++)
				free(sw.vary[k].values[v]);
		free(sw.base);
		return CLI_OK;
	}
	struct sim_store *st = NULL;
	int64_t id = 0;
	int resumed = 0;
	if (rc == CLI_OK && cli_has(a, "db")) {
		char err[512];
		st = sim_store_open(cli_str(a, "db", ""), err, sizeof(err));
		char *sig = signature(a->pos[0], &sw);
		if (!st)
			rc = cli_error(a, CLI_BADINPUT, "option --db: %s", err);
		else if ((id = sim_store_sweep_open(st, sig, a->line, a->pos[0], sig, &resumed)) < 0)
			rc = cli_error(a, CLI_FAIL, "--db: %s", sim_store_error(st));
		free(sig);
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
	for (unsigned k = 0; k < sw.nvary; k++)
		for (unsigned v = 0; v < sw.vary[k].n; v++)
			free(sw.vary[k].values[v]);
	free(sw.base);
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
		"processes. Points that do not fit in memory or are not valid layouts are kept\n"
		"with their reason. With --db the sweep and every point are stored (tables\n"
		"sweeps, sweep_points, sweep_values; docs/schema.md); running the same command\n"
		"into the same database resumes it, skipping the points already stored. A\n"
		"progress bar goes to stderr when it is a terminal. --json prints {\"sweep\",\n"
		"\"points\": [{\"point\", \"values\", \"status\", \"reason\", figures...}], \"wall_s\"}.\n"
		"Ctrl-C stops handing out points, stores those in flight and exits 130.",
	.opts = sweep_opts,
	.run = sweep_run,
	.mpi = 1,
};
