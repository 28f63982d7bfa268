/*
 * cmd_plot.c - `clustersim plot DB --x KEY --y METRIC [--series KEY] --svg
 * FILE`: a line chart of a stored sweep (tables sweeps, sweep_points,
 * sweep_values; docs/schema.md), drawn by tools/plot.c.
 *
 * The sweep's points are read once, with their varied values, into memory
 * (a sweep holds at most 100,000 points of at most 8 keys). The x key's
 * values become numbers when they all parse as plain numbers or as sizes,
 * times or rates with units, else evenly spaced categories. A chart never
 * mixes points silently: a key that varies among the chosen points must be
 * the x axis, the series or fixed by --where, else the command refuses.
 * The database is opened read-only and read through the store module
 * (sim/store_read.h).
 */
#include "tools/cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/outfile.h"
#include "sim/store.h"
#include "sim/store_read.h"
#include "sim/util.h"
#include "parallel/compute.h"
#include "scenarios/plan_sim.h"
#include "scenarios/scenario.h"
#include "tools/plot.h"

#define MAX_KEYS 16

static const struct cli_opt plot_opts[] = {
	{ "sweep", 0, CLI_COUNT, "ID", "the newest sweep", "which sweep of DB to draw (sweeps.id)" },
	{ "x", 0, CLI_STR, "KEY", NULL, "the varied key along the x axis (required)" },
	{ "y", 0, CLI_STR, "METRIC", NULL,
	  "the figure up the y axis (required): step_time_s, tokens_per_s, mfu, hfu, peak_bytes, "
	  "capacity_bytes, compute_s, exposed_comm_s, bubble_s, idle_s, gpus, dp or "
	  "micro_batches" },
	{ "series", 0, CLI_STR, "KEY", NULL, "another varied key: one line per value, and a legend" },
	{ "where", 0, CLI_LIST, "KEY=VALUE", NULL,
	  "keep only the points where a varied key has this value (repeatable)" },
	{ "svg", 0, CLI_FILE_OUT, "FILE", NULL, "write the chart to FILE, - for standard output (required)" },
	{ "steps", 0, CLI_FLAG, NULL, NULL,
	  "draw instead the distribution of the step times of runs stored with --steps N "
	  "(`clustersim run --db`): one line per run" },
	{ "run", 0, CLI_LIST, "ID", "every run with 2 steps or more",
	  "with --steps, a run to draw (repeatable)" },
	{ "plan", 0, CLI_STR, "ID", NULL,
	  "draw instead a plan stored with `clustersim plan --db` (its id, or last): the "
	  "estimate, analytic and flow step time of each simulated layout, in its ranking" },
	{ "interference", 0, CLI_STR, "TABLE", NULL,
	  "draw instead the interference curves of a calibration table (h200: "
	  "docs/calibration.md), as the compute model reads them; no DB" },
	{ 0 },
};

/* The figures that can be drawn: sweep_points columns (sim/store.h's
 * sim_store_point_figure), axis titles, scale. */
static const struct metric {
	const char *col;
	const char *title;
	double scale;         /* stored value to plotted value */
} metrics[] = {
	{ "step_time_s", "step time (s)", 1 },
	{ "tokens_per_s", "throughput (tokens/s)", 1 },
	{ "mfu", "MFU (fraction)", 1 },
	{ "hfu", "HFU (fraction)", 1 },
	{ "peak_bytes", "peak memory of the busiest GPU (GB)", 1e-9 },
	{ "capacity_bytes", "GPU memory (GB)", 1e-9 },
	{ "compute_s", "compute time per step (s)", 1 },
	{ "exposed_comm_s", "exposed communication per step (s)", 1 },
	{ "bubble_s", "pipeline bubble per step (s)", 1 },
	{ "idle_s", "idle time per step (s)", 1 },
	{ "gpus", "GPUs (count)", 1 },
	{ "dp", "data-parallel degree (count)", 1 },
	{ "micro_batches", "micro-batches per step (count)", 1 },
};

/* One stored point: its status, figure and the value of each key. */
struct spoint {
	char status[16];
	char *reason;
	double y;                     /* NAN when not ok or NULL     */
	char *val[MAX_KEYS];          /* by key index; NULL: none    */
};

/* A list of distinct strings in order of first appearance. */
struct vlist {
	const char **v;
	size_t n;
};

/* Everything one plot needs; the strings and arrays are owned here. */
struct plotctx {
	struct cli_args *a;
	const char *path;
	struct sim_store_read *db;
	long long sweep;
	char *command;                /* sweeps.command, or the scenario      */
	const struct metric *m;
	char *keys[MAX_KEYS];         /* the varied keys, in stored order     */
	size_t nkeys;
	struct spoint *pts;
	size_t npts;
	int xk, sk;                   /* key indices of --x and --series (-1) */
	int wk[MAX_KEYS];             /* --where keys and values              */
	const char *wv[MAX_KEYS];
	size_t nwhere;
	int fig;                      /* --y's index in sim_store_point_figure */
	int64_t last_point;           /* while loading: the point read last    */
};

/* ---- lists for messages ----------------------------------------------------------- */

/*
 * Add s unless it is there: O(values) a call, so O(points x values) for a
 * key's values, a few million comparisons at most for the largest sweep.
 */
static void vlist_add(struct vlist *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], s))
			return;
	l->v = xreallocarray(l->v, l->n + 1, sizeof(char *));
	l->v[l->n++] = s;
}

/* "a, b, c" (sep between) into buf, cut with "..." when it does not fit. */
static char *join(const char *const *v, size_t n, const char *sep, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = 0;
	for (size_t i = 0; i < n && used < len; i++) {
		int w = snprintf(buf + used, len - used, "%s%s", i ? sep : "", v[i]);
		used += w > 0 ? (size_t)w : 0;
	}
	if (used >= len && len > 4)
		strcpy(buf + len - 4, "...");
	return buf;
}

/* The metrics' names, for the message about an unknown one. */
static char *metric_names(char *buf, size_t len)
{
	const char *names[ARRAY_SIZE(metrics)];
	for (size_t i = 0; i < ARRAY_SIZE(metrics); i++)
		names[i] = metrics[i].col;
	return join(names, ARRAY_SIZE(metrics), ", ", buf, len);
}

/* Index of a varied key, or -1 if the sweep does not vary it. */
static int key_index(const struct plotctx *c, const char *name)
{
	for (size_t k = 0; k < c->nkeys; k++)
		if (!strcmp(c->keys[k], name))
			return (int)k;
	return -1;
}

/* ---- reading the sweep ---------------------------------------------------------------- */

/*
 * A query on the sweep tables failed: the file is not SQLite, or lacks the
 * tables; either way it is not a database this command can read. (An I/O
 * error is a failure, cli_read_error.)
 */
static int db_error(struct plotctx *c, const char *what)
{
	if (sim_store_read_kind(c->db) != SIM_STORE_READ_NOT_OURS)
		return cli_read_error(c->a, c->db, c->path);
	return cli_error(c->a, CLI_BADINPUT, "%s: not a clustersim database (%s: %s)", c->path,
			 what, sim_store_read_error(c->db));
}

/* Open DB read-only; a file that is missing or unreadable is bad input. */
static int open_ro(struct plotctx *c)
{
	char err[512];
	int errnum;
	c->db = sim_store_read_open(c->path, &errnum, err, sizeof(err));
	if (c->db)
		return CLI_OK;
	if (errnum)
		return cli_error(c->a, CLI_BADINPUT, "cannot read database '%s': %s", c->path,
				 strerror(errnum));
	return cli_error(c->a, CLI_BADINPUT, "cannot open '%s': %s", c->path, err);
}

/* The sweep to draw: --sweep's, or the newest; its command for the title. */
static int pick_sweep(struct plotctx *c)
{
	int given = cli_has(c->a, "sweep");
	int64_t id = c->sweep;
	char *cmd;
	int rc = sim_store_read_sweep(c->db, given ? c->sweep : 0, &id, &cmd);
	if (rc == SIM_STORE_READ_OK) {
		c->sweep = id;
		c->command = cmd ? cmd : xstrdup("(command not recorded)");
		return CLI_OK;
	}
	if (rc < 0)
		return db_error(c, "reading its sweeps");
	if (given)
		return cli_error(c->a, CLI_BADINPUT, "option --sweep: no sweep %lld in %s", c->sweep,
				 c->path);
	return cli_error(c->a, CLI_BADINPUT, "%s holds no sweep (store one with clustersim sweep "
			 "--db)", c->path);
}

/* Key index of name, added to the keys when new; -1 past MAX_KEYS. */
static int key_add(struct plotctx *c, const char *name)
{
	int k = key_index(c, name);
	if (k >= 0 || c->nkeys == MAX_KEYS)
		return k;
	c->keys[c->nkeys] = xstrdup(name);
	return (int)c->nkeys++;
}

/* A varied value of a point, starting the point at its first value. */
static void point_value(void *ctx, const struct sim_store_point_value *v)
{
	struct plotctx *c = ctx;
	if (c->npts == 0 || v->point != c->last_point) {  /* values come point by point */
		c->pts = xreallocarray(c->pts, c->npts + 1, sizeof(*c->pts));
		struct spoint *p = &c->pts[c->npts++];
		memset(p, 0, sizeof(*p));
		snprintf(p->status, sizeof(p->status), "%s", v->status ? v->status : "?");
		p->reason = v->reason ? xstrdup(v->reason) : NULL;
		p->y = isnan(v->fig) ? NAN : v->fig * c->m->scale;
	}
	c->last_point = v->point;
	int k = key_add(c, v->key ? v->key : "");
	if (k >= 0 && !c->pts[c->npts - 1].val[k])
		c->pts[c->npts - 1].val[k] = xstrdup(v->value ? v->value : "");
}

/* Every point of the sweep with its varied values. */
static int load_points(struct plotctx *c)
{
	if (sim_store_read_points(c->db, c->sweep, c->fig, point_value, c) != SIM_STORE_READ_OK)
		return db_error(c, "reading the sweep's points");
	if (c->npts == 0)
		return cli_error(c->a, CLI_BADINPUT, "sweep %lld of %s has no points yet (run the "
				 "sweep again to resume it)", c->sweep, c->path);
	return CLI_OK;
}

/* ---- choosing the points ------------------------------------------------------------ */

/* Whether point p passes every --where. */
static int chosen(const struct plotctx *c, const struct spoint *p)
{
	for (size_t i = 0; i < c->nwhere; i++)
		if (!p->val[c->wk[i]] || strcmp(p->val[c->wk[i]], c->wv[i]))
			return 0;
	return 1;
}

/* The distinct values of key k among all points, or the chosen ones only. */
static struct vlist key_values(const struct plotctx *c, int k, int chosen_only)
{
	struct vlist l = { 0 };
	for (size_t i = 0; i < c->npts; i++)
		if (c->pts[i].val[k] && (!chosen_only || chosen(c, &c->pts[i])))
			vlist_add(&l, c->pts[i].val[k]);
	return l;
}

/* The key index of option opt's value, or an error listing the keys. */
static int find_key(struct plotctx *c, const char *opt, const char *name, int *k)
{
	char list[600];
	*k = key_index(c, name);
	if (*k >= 0)
		return CLI_OK;
	return cli_error(c->a, CLI_BADINPUT, "option --%s: '%s' is not a varied key of sweep %lld; "
			 "its varied keys: %s", opt, name, c->sweep,
			 join((const char *const *)c->keys, c->nkeys, ", ", list, sizeof(list)));
}

/* One --where KEY=VALUE: a varied key, not the x or series, and one of its values. */
static int add_where(struct plotctx *c, const char *kv)
{
	char key[256], list[600];
	const char *eq = strchr(kv, '=');
	int k;
	if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof(key))
		return cli_error(c->a, CLI_BADINPUT, "option --where: expected KEY=VALUE, got '%s'",
				 kv);
	snprintf(key, sizeof(key), "%.*s", (int)(eq - kv), kv);
	if (find_key(c, "where", key, &k) != CLI_OK)
		return CLI_BADINPUT;
	if (k == c->xk || k == c->sk)
		return cli_error(c->a, CLI_BADINPUT, "option --where: %s is already the %s", key,
				 k == c->xk ? "x axis (--x)" : "series (--series)");
	struct vlist vals = key_values(c, k, 0);
	int found = 0;
	for (size_t i = 0; i < vals.n; i++)
		found |= !strcmp(vals.v[i], eq + 1);
	if (!found)
		cli_error(c->a, CLI_BADINPUT, "option --where: %s is never '%s' in sweep %lld; its "
			  "values: %s", key, eq + 1, c->sweep, join(vals.v, vals.n, ", ", list, sizeof(list)));
	free(vals.v);
	c->wk[c->nwhere] = k;
	c->wv[c->nwhere++] = eq + 1;
	return found ? CLI_OK : CLI_BADINPUT;
}

/* Refuse a key other than x, series and --where that varies among the chosen points. */
static int check_mixed(struct plotctx *c)
{
	for (size_t k = 0; k < c->nkeys; k++) {
		if ((int)k == c->xk || (int)k == c->sk)
			continue;
		struct vlist vals = key_values(c, (int)k, 1);
		char list[400];
		int rc = vals.n <= 1 ? CLI_OK : cli_error(c->a, CLI_BADINPUT,
			"the sweep also varies %s (%s): draw one line per value with --series %s, "
			"or keep one value with --where %s=%s", c->keys[k],
			join(vals.v, vals.n, ", ", list, sizeof(list)), c->keys[k], c->keys[k], vals.v[0]);
		free(vals.v);
		if (rc != CLI_OK)
			return rc;
	}
	return CLI_OK;
}

/* --x, --series and --where against the sweep's keys. */
static int resolve_keys(struct plotctx *c)
{
	struct cli_args *a = c->a;
	if (find_key(c, "x", cli_str(a, "x", ""), &c->xk) != CLI_OK)
		return CLI_BADINPUT;
	c->sk = -1;
	if (cli_has(a, "series") && find_key(c, "series", cli_str(a, "series", ""), &c->sk))
		return CLI_BADINPUT;
	if (c->sk == c->xk)
		return cli_error(a, CLI_BADINPUT, "option --series: %s is already the x axis",
				 c->keys[c->xk]);
	int nwhere;
	const char **where = cli_list(a, "where", &nwhere);
	if (nwhere > MAX_KEYS)
		return cli_error(a, CLI_BADINPUT, "option --where: at most %d", MAX_KEYS);
	for (int i = 0; i < nwhere; i++)
		if (add_where(c, where[i]) != CLI_OK)
			return CLI_BADINPUT;
	return check_mixed(c);
}

/* ---- numbers from values ------------------------------------------------------------- */

/* A value as a number: plain, or a size, time or rate; its kind, or -1. */
static int parse_value(const char *s, double *v)
{
	static const struct { enum plot_xkind kind; enum sim_unit unit; } units[] = {
		{ PLOT_X_BYTES, SIM_UNIT_BYTES }, { PLOT_X_TIME, SIM_UNIT_TIME },
		{ PLOT_X_RATE, SIM_UNIT_RATE },
	};
	char err[128];
	if (sim_number_parse(s, v, NULL, 0) == 0)
		return PLOT_X_NUMBER;
	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (sim_units_parse(units[i].unit, s, v, err, sizeof(err)) == 0)
			return (int)units[i].kind;
	return -1;
}

/*
 * What the values are: numbers of one kind (num[] filled), a plain 0 going
 * with any unit, or else categories.
 */
static enum plot_xkind classify(const struct vlist *l, double *num)
{
	int kind = PLOT_X_NUMBER, plain = 0;
	for (size_t i = 0; i < l->n; i++) {
		int k = parse_value(l->v[i], &num[i]);
		if (k < 0 || (k != PLOT_X_NUMBER && kind != PLOT_X_NUMBER && k != kind))
			return PLOT_X_CATEGORY;
		plain |= k == PLOT_X_NUMBER && num[i] != 0;
		kind = k == PLOT_X_NUMBER ? kind : k;
	}
	return kind != PLOT_X_NUMBER && plain ? PLOT_X_CATEGORY : (enum plot_xkind)kind;
}

/* ---- the chart ------------------------------------------------------------------------- */

/* What the chart is made of, built from the chosen points. */
struct chartdata {
	struct vlist xs, ss;          /* distinct x and series values      */
	double *xnum;                 /* the x values as numbers           */
	struct plot_line *lines;
	struct plot_point *pts;       /* every line's points, end to end   */
	char **tips;
	char note[512], bad[96], title[400];
};

/* Points by x, for qsort: a line is drawn left to right. */
static int cmp_point(const void *a, const void *b)
{
	double x = ((const struct plot_point *)a)->x, y = ((const struct plot_point *)b)->x;
	return (x > y) - (x < y);
}

/* Index of s in l (it is there). */
static size_t vlist_find(const struct vlist *l, const char *s)
{
	size_t i = 0;
	while (i < l->n && strcmp(l->v[i], s))
		i++;
	BUG_ON(i == l->n);
	return i;
}

/* Series values ascending when they are all numbers, else as first seen. */
static void order_series(struct vlist *ss)
{
	double *num = xcalloc(ss->n ? ss->n : 1, sizeof(double));
	if (classify(ss, num) != PLOT_X_CATEGORY)
		for (size_t i = 1; i < ss->n; i++)  /* insertion sort: a few dozen values */
			for (size_t j = i; j > 0 && num[j - 1] > num[j]; j--) {
				double t = num[j];
				const char *s = ss->v[j];
				num[j] = num[j - 1], ss->v[j] = ss->v[j - 1];
				num[j - 1] = t, ss->v[j - 1] = s;
			}
	free(num);
}

/* The tooltip of point p: its values, then its figure or why it has none. */
static char *point_tip(const struct plotctx *c, const struct spoint *p)
{
	char vals[600];
	const char *kv[MAX_KEYS];
	char buf[MAX_KEYS][300];
	size_t n = 0;
	for (size_t k = 0; k < c->nkeys; k++)
		if (p->val[k]) {
			snprintf(buf[n], sizeof(buf[n]), "%s=%s", c->keys[k], p->val[k]);
			kv[n] = buf[n];
			n++;
		}
	join(kv, n, ", ", vals, sizeof(vals));
	if (!isnan(p->y) && !strcmp(p->status, "ok"))
		return xasprintf("%s: %s %.6g", vals, c->m->col, p->y);
	return xasprintf("%s: %s%s%s", vals, p->status, p->reason ? ": " : "",
			 p->reason ? p->reason : "");
}

/*
 * One line per series value (one line without --series), its points in x
 * order; a point's x is its value, or its category's index. O(lines x
 * points): 64 values times 100,000 points at most.
 */
static void build_lines(const struct plotctx *c, struct chartdata *d, enum plot_xkind kind)
{
	size_t nl = d->ss.n ? d->ss.n : 1, np = 0;
	d->lines = xcalloc(nl, sizeof(*d->lines));
	d->pts = xcalloc(c->npts, sizeof(*d->pts));
	d->tips = xcalloc(c->npts, sizeof(char *));
	for (size_t l = 0; l < nl; l++) {
		struct plot_line *line = &d->lines[l];
		line->label = c->sk >= 0 ? d->ss.v[l] : c->m->col;
		line->pts = &d->pts[np];
		for (size_t i = 0; i < c->npts; i++) {
			const struct spoint *p = &c->pts[i];
			if (!chosen(c, p) || !p->val[c->xk] ||
			    (c->sk >= 0 && (!p->val[c->sk] || strcmp(p->val[c->sk], d->ss.v[l]))))
				continue;
			size_t xi = vlist_find(&d->xs, p->val[c->xk]);
			char *tip = point_tip(c, p);
			d->tips[np] = tip;
			d->pts[np++] = (struct plot_point){
				.x = kind == PLOT_X_CATEGORY ? (double)xi : d->xnum[xi], .y = p->y,
				.ok = !strcmp(p->status, "ok") && !isnan(p->y), .tip = tip };
			line->n++;
		}
		qsort(&d->pts[np - line->n], line->n, sizeof(*d->pts), cmp_point);
	}
}

/* The legend's words for crosses: the reasons present and how many points. */
static const char *bad_label(const struct plotctx *c, char *buf, size_t len)
{
	static const char *const statuses[] = { "no_fit", "invalid", "failed", "ok" };
	static const char *const words[] = { "no fit", "invalid", "failed", "no value" };
	const char *present[ARRAY_SIZE(statuses)];
	size_t n = 0, total = 0;
	for (size_t s = 0; s < ARRAY_SIZE(statuses); s++) {
		size_t seen = 0;
		for (size_t i = 0; i < c->npts; i++)  /* an ok point without its figure: "no value" */
			seen += chosen(c, &c->pts[i]) && !strcmp(c->pts[i].status, statuses[s]) &&
				(s < 3 || isnan(c->pts[i].y));
		if (seen)
			present[n++] = words[s];
		total += seen;
	}
	if (!total)
		return NULL;
	char list[80];
	snprintf(buf, len, "%s (%zu point%s)", join(present, n, " / ", list, sizeof(list)), total,
		 total == 1 ? "" : "s");
	return buf;
}

/* The third line: keys fixed by --where or by having one value only. */
static const char *fixed_note(const struct plotctx *c, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = 0;
	for (size_t k = 0; k < c->nkeys; k++) {
		if ((int)k == c->xk || (int)k == c->sk)
			continue;
		struct vlist vals = key_values(c, (int)k, 1);
		if (vals.n == 1 && used < len) {
			int w = snprintf(buf + used, len - used, "%s%s = %s", used ? ", " : "with ",
					 c->keys[k], vals.v[0]);
			used += w > 0 ? (size_t)w : 0;
		}
		free(vals.v);
	}
	return buf[0] ? buf : NULL;
}

/* Fill p from the chosen points. */
static void build_plot(const struct plotctx *c, struct chartdata *d, struct plot *p)
{
	d->xs = key_values(c, c->xk, 1);
	if (c->sk >= 0) {
		d->ss = key_values(c, c->sk, 1);
		order_series(&d->ss);
	}
	d->xnum = xcalloc(d->xs.n ? d->xs.n : 1, sizeof(double));
	enum plot_xkind kind = classify(&d->xs, d->xnum);
	build_lines(c, d, kind);
	snprintf(d->title, sizeof(d->title), "Sweep %lld: %s by %s%s%s", c->sweep, c->m->col,
		 c->keys[c->xk], c->sk >= 0 ? ", one line per " : "", c->sk >= 0 ? c->keys[c->sk] : "");
	*p = (struct plot){
		.title = d->title, .command = c->command, .note = fixed_note(c, d->note, sizeof(d->note)),
		.xkind = kind, .cats = d->xs.v, .ncats = d->xs.n, .xtitle = c->keys[c->xk],
		.ytitle = c->m->title, .legend_title = c->sk >= 0 ? c->keys[c->sk] : NULL,
		.lines = d->lines, .nlines = d->ss.n ? d->ss.n : 1,
		.bad_label = bad_label(c, d->bad, sizeof(d->bad)),
	};
}

/* Release what build_plot() allocated; npts bounds the tooltips. */
static void chartdata_free(struct chartdata *d, size_t npts)
{
	for (size_t i = 0; i < npts; i++)
		free(d->tips[i]);
	free(d->tips);
	free(d->pts);
	free(d->lines);
	free(d->xnum);
	free(d->xs.v);
	free(d->ss.v);
}

/* Draw to --svg: written whole or not at all (sim/outfile.h). */
static int write_svg(struct plotctx *c)
{
	struct sim_out o;
	int rc = cli_out_open(c->a, "option --svg", cli_str(c->a, "svg", "-"), &o);
	if (rc != CLI_OK)
		return rc;
	struct chartdata d = { 0 };
	struct plot p;
	build_plot(c, &d, &p);
	rc = plot_write(&p, o.f) == 0 ? CLI_OK
				       : cli_error(c->a, CLI_FAIL, "option --svg: error writing '%s': %s",
						   cli_str(c->a, "svg", "-"), strerror(errno));
	rc = cli_out_commit(c->a, "option --svg", &o, rc);
	chartdata_free(&d, c->npts);
	return rc;
}

/* ---- the distribution of step times (--steps) ---------------------------------------- */

/* A run's label, short enough for the legend: its id and its variability
 * (jitter and GPU-speed cv, stragglers and their slowdown; the
 * distributions' names are in the run's configuration). */
static char *run_label(struct plotctx *c, long long run)
{
	static const char *const keys[] = {
		"variability.jitter", "variability.jitter_cv", "variability.gpu",
		"variability.gpu_cv", "variability.stragglers", "variability.straggler_slowdown",
	};
	struct sim_store_config_value v[ARRAY_SIZE(keys)];
	char buf[256];
	int n = snprintf(buf, sizeof(buf), "run %lld:", run);
	int any = 0;
	/* A label only: a run whose configuration cannot be read has no variability. */
	if (sim_store_read_config(c->db, run, keys, ARRAY_SIZE(keys), v) == SIM_STORE_READ_OK) {
		if (v[0].present && strcmp(v[0].text, "none") && n < (int)sizeof(buf))
			n += snprintf(buf + n, sizeof(buf) - (size_t)n, " jitter %g", v[1].num), any = 1;
		if (v[2].present && strcmp(v[2].text, "none") && n < (int)sizeof(buf))
			n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%s GPUs %g", any ? "," : "",
				      v[3].num), any = 1;
		if (v[4].inum > 0 && n < (int)sizeof(buf))
			n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%s %lld slow %gx",
				      any ? "," : "", v[4].inum, v[5].num), any = 1;
	}
	if (!any && n < (int)sizeof(buf))
		snprintf(buf + n, sizeof(buf) - (size_t)n, " no variability");
	return xstrdup(buf);
}

/* One line of the drawing: the steps of a run, or of one job of a run of
 * several, alone or shared (metrics named prefix + step number). */
struct steps_line {
	long long run;
	char prefix[112];           /* "step.", "job.NAME.step.", "job.NAME.alone.step." */
	char *label;
};

/* A line's step times, sorted; their number in *n (0: none stored). */
static int line_steps(struct plotctx *c, const struct steps_line *l, double **v, size_t *n)
{
	if (sim_store_read_steps(c->db, l->run, l->prefix, v, n) != SIM_STORE_READ_OK)
		return cli_read_error(c->a, c->db, c->path);
	return CLI_OK;
}

static void add_line(struct steps_line **lines, size_t *n, long long run, const char *prefix,
		     char *label)
{
	*lines = xreallocarray(*lines, *n + 1, sizeof(**lines));
	struct steps_line *l = &(*lines)[(*n)++];
	*l = (struct steps_line){ .run = run, .label = label };
	snprintf(l->prefix, sizeof(l->prefix), "%s", prefix);
}

/* The lines of one job of a run of several: alone and shared. */
struct job_lines {
	long long run;
	struct steps_line **lines;
	size_t *n;
};

static void add_job(void *ctx, const char *name)
{
	struct job_lines *j = ctx;
	char prefix[112];
	for (int alone = 1; name && alone >= 0; alone--) {
		snprintf(prefix, sizeof(prefix), "job.%s.%sstep.", name, alone ? "alone." : "");
		add_line(j->lines, j->n, j->run, prefix, xasprintf("run %lld job %s %s", j->run,
								   name, alone ? "alone" : "shared"));
	}
}

/* A run's lines: its steps, or for a run of several jobs each job's steps
 * alone and shared (from its jobs rows). */
static int run_lines(struct plotctx *c, long long run, struct steps_line **lines, size_t *n)
{
	size_t before = *n;
	struct job_lines j = { .run = run, .lines = lines, .n = n };
	if (sim_store_read_job_names(c->db, run, add_job, &j) != SIM_STORE_READ_OK)
		return cli_read_error(c->a, c->db, c->path);
	if (*n == before)
		add_line(lines, n, run, "step.", run_label(c, run));
	return CLI_OK;
}

/* The runs to draw: --run's, or every complete run with 2 steps or more. */
static int step_runs(struct plotctx *c, int64_t **runs, size_t *n)
{
	struct cli_args *a = c->a;
	int nrun;
	const char **run = cli_list(a, "run", &nrun);
	*n = 0;
	*runs = NULL;
	if (nrun) {
		*runs = xcalloc((size_t)nrun, sizeof(int64_t));
		for (int i = 0; i < nrun; i++) {
			char *end;
			long long id = strtoll(run[i], &end, 10);
			if (end == run[i] || *end || id < 1)
				return cli_error(a, CLI_BADINPUT, "option --run: expected a run id (a "
						 "whole number from 1), got '%s'", run[i]);
			(*runs)[(*n)++] = id;
		}
		return CLI_OK;
	}
	if (sim_store_read_step_runs(c->db, runs, n) != SIM_STORE_READ_OK)
		return cli_read_error(a, c->db, c->path);
	if (!*n)
		return cli_error(a, CLI_BADINPUT, "%s: no run with 2 steps or more (store one with "
				 "clustersim run SCENARIO --steps N --db %s)", c->path, c->path);
	return CLI_OK;
}

/* The empirical distribution of each run's step times: x a step time, y the
 * share of the run's steps at or below it. */
static int plot_steps(struct plotctx *c)
{
	int64_t *runs;
	size_t nruns, nl = 0;
	struct steps_line *sl = NULL;
	int rc = step_runs(c, &runs, &nruns);
	for (size_t i = 0; rc == CLI_OK && i < nruns; i++)
		rc = run_lines(c, runs[i], &sl, &nl);
	struct plot_line *lines = xcalloc(nl ? nl : 1, sizeof(*lines));
	struct plot_point **pts = xcalloc(nl ? nl : 1, sizeof(*pts));
	for (size_t i = 0; rc == CLI_OK && i < nl; i++) {
		size_t n;
		double *v;
		if ((rc = line_steps(c, &sl[i], &v, &n)) != CLI_OK) {
			free(v);
			break;
		}
		if (n < 2) {
			free(v);
			rc = cli_error(c->a, CLI_BADINPUT, "option --run: run %lld has %zu stored "
				       "step time%s: run it with --steps N (N >= 2) and --db", sl[i].run,
				       n, n == 1 ? "" : "s");
			break;
		}
		pts[i] = xcalloc(n, sizeof(**pts));
		for (size_t k = 0; k < n; k++)
			pts[i][k] = (struct plot_point){ .x = v[k], .y = (double)(k + 1) / n, .ok = 1 };
		free(v);
		lines[i] = (struct plot_line){ .label = sl[i].label, .pts = pts[i], .n = n };
	}
	struct sim_out o;
	if (rc == CLI_OK && (rc = cli_out_open(c->a, "option --svg", cli_str(c->a, "svg", "-"),
					       &o)) == CLI_OK) {
		const char *args = c->a->line ? strchr(c->a->line, ' ') : NULL;
		char *cmd = xasprintf("clustersim%s", args ? args : "");
		struct plot p = {
			.title = "Step-time distribution", .command = cmd,
			.xkind = PLOT_X_TIME, .xtitle = "step time",
			.ytitle = "share of steps at or below (fraction)", .legend_title = "runs",
			.lines = lines, .nlines = nl,
		};
		if (plot_write(&p, o.f) != 0)
			rc = cli_error(c->a, CLI_FAIL, "option --svg: error writing '%s': %s",
				       cli_str(c->a, "svg", "-"), strerror(errno));
		rc = cli_out_commit(c->a, "option --svg", &o, rc);
		free(cmd);
	}
	for (size_t i = 0; i < nl; i++)
		free(pts[i]), free(sl[i].label);
	free(pts);
	free(sl);
	free(lines);
	free(runs);
	return rc;
}

/* ---- interference curves (--interference) --------------------------------------------- */

/*
 * The factors of time of a calibration table's interference.csv as the
 * compute model reads them (par_compute_interference, par_comm_interference),
 * at every k from 0 to 40 blocks: the measured kernels beside k blocks, and
 * the communication kernel beside each of them.
 */
static int plot_interference(struct cli_args *a)
{
	const char *table = cli_str(a, "interference", "");
	if (a->npos || cli_has(a, "x") || cli_has(a, "y") || cli_has(a, "series") ||
	    cli_has(a, "steps") || cli_has(a, "where") || cli_has(a, "sweep") || cli_has(a, "run"))
		return cli_error(a, CLI_BADINPUT, "option --interference draws a calibration table's "
				 "curves: it takes no DB and no other option than --svg");
	if (!cli_has(a, "svg"))
		return cli_error(a, CLI_BADINPUT, "option --svg is required (clustersim plot "
				 "--interference TABLE --svg FILE)");
	struct par_compute cfg = { .efficiency = 0, .launch_s = 0 };
	if (!*table || strlen(table) >= sizeof(cfg.table))
		return cli_error(a, CLI_BADINPUT, "option --interference: expected a calibration "
				 "table's name (h200), got '%s'", table);
	snprintf(cfg.table, sizeof(cfg.table), "%s", table);
	char err[512];
	/* The factors are ratios: any GPU reads the same curves. */
	const struct topo_gpu *gpu = topo_gpu_find("H200-SXM-141GB");
	struct par_compute_model *cm = par_compute_model_new(&cfg, gpu, PAR_BF16, scn_datadir(),
							     err, sizeof(err));
	if (!cm)
		return cli_error(a, CLI_BADINPUT, "option --interference: %s", err);
	if (!par_compute_has_interference(cm)) {
		par_compute_model_free(cm);
		return cli_error(a, CLI_BADINPUT, "option --interference: calibration table '%s' has "
				 "no interference.csv", table);
	}
	enum { K = 41 };
	static const struct {
		const char *label;
		int comm;                 /* the communication kernel beside it */
		struct par_op op;
	} kinds[] = {
		{ "8192\u00b3 matmul", 0, { .cls = PAR_OP_GEMM, .flops = 2.0 * 8192 * 8192 * 8192 } },
		{ "4096\u00b3 matmul", 0, { .cls = PAR_OP_GEMM, .flops = 2.0 * 4096 * 4096 * 4096 } },
		{ "attention", 0, { .cls = PAR_OP_ATTENTION, .flops = 1e12 } },
		{ "add (memory-bound)", 0, { .cls = PAR_OP_MEMBOUND, .bytes = 1e9 } },
		{ "comm. beside the 8192\u00b3 matmul", 1,
		  { .cls = PAR_OP_GEMM, .flops = 2.0 * 8192 * 8192 * 8192 } },
		{ "comm. beside attention", 1, { .cls = PAR_OP_ATTENTION, .flops = 1e12 } },
		{ "comm. beside the add", 1, { .cls = PAR_OP_MEMBOUND, .bytes = 1e9 } },
	};
	struct plot_point pts[ARRAY_SIZE(kinds)][K];
	struct plot_line lines[ARRAY_SIZE(kinds)];
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		for (int k = 0; k < K; k++) {
			double f = kinds[i].comm ? par_comm_interference(cm, &kinds[i].op, k)
						 : par_compute_interference(cm, &kinds[i].op, k);
			pts[i][k] = (struct plot_point){ .x = k, .y = f, .ok = 1 };
		}
		lines[i] = (struct plot_line){ .label = kinds[i].label, .pts = pts[i], .n = K };
	}
	par_compute_model_free(cm);
	char *note = xasprintf("calibration table %s (interference.csv): Steffen interpolation "
			       "through (0, 1) and the measured blocks, the last point held above",
			       table);
	char *command = xasprintf("clustersim plot --interference %s --svg FILE", table);
	struct plot p = {
		.title = "Interference: factor of a kernel's time beside the other",
		.command = command, .note = note, .xkind = PLOT_X_NUMBER,
		.xtitle = "CUDA blocks the communication holds (NCCL's channels)",
		.ytitle = "factor of time (1 = alone)", .legend_title = "kernel",
		.lines = lines, .nlines = ARRAY_SIZE(kinds),
	};
	struct sim_out o;
	const char *svg = cli_str(a, "svg", "-");
	int rc = cli_out_open(a, "option --svg", svg, &o);
	if (rc == CLI_OK) {
		rc = plot_write(&p, o.f) == 0 ? CLI_OK
					       : cli_error(a, CLI_FAIL, "option --svg: error writing "
							   "'%s': %s", svg, strerror(errno));
		rc = cli_out_commit(a, "option --svg", &o, rc);
	}
	free(note);
	free(command);
	return rc;
}

/* ---- a stored plan (--plan) ----------------------------------------------------------- */

/*
 * The layouts of a plan in the order it ranked them (x: their place), with
 * three lines: the estimate, the analytic step time and the flow one (where
 * run); a layout whose simulation failed has no point on the lines it
 * lacks. How far the estimate strays from the simulation, at a glance.
 */
static int plot_plan(struct cli_args *a)
{
	if (a->npos != 1 || !cli_has(a, "svg"))
		return cli_error(a, CLI_BADINPUT, "expected a database and --svg FILE (clustersim "
				 "plot DB --plan ID|last --svg FILE)");
	if (cli_has(a, "x") || cli_has(a, "y") || cli_has(a, "series") || cli_has(a, "steps"))
		return cli_error(a, CLI_BADINPUT, "option --plan draws a plan's step times: it takes "
				 "no --x, --y, --series or --steps");
	struct scn_plan_head h;
	struct scn_plan_layout *v;
	size_t n;
	int rc = cli_read_plan(a, &h, &v, &n);
	if (rc != CLI_OK)
		return rc;
	struct plot_point *pts = xcalloc(3 * n, sizeof(*pts));
	char **tips = xcalloc(n, sizeof(*tips));
	for (size_t i = 0; i < n; i++) {
		char name[128];
		scn_plan_layout_name(&v[i].c, name, sizeof(name));
		tips[i] = xasprintf("#%zu %s", i + 1, name);
		const double y[3] = { v[i].c.step_s, v[i].sim_s, v[i].flow_s };
		for (int k = 0; k < 3; k++)
			pts[k * n + i] = (struct plot_point){ .x = (double)(i + 1), .y = y[k],
							      .ok = !isnan(y[k]), .tip = tips[i] };
	}
	/* The flow line has points only where flow ran: the others are left
	 * out rather than crossed. */
	size_t nflow = 0;
	for (size_t i = 0; i < n; i++)
		if (pts[2 * n + i].ok)
			pts[2 * n + nflow++] = pts[2 * n + i];
	const struct plot_line lines[] = {
		{ .label = "estimate", .pts = pts, .n = n },
		{ .label = "analytic simulation", .pts = pts + n, .n = n },
		{ .label = "flow simulation", .pts = pts + 2 * n, .n = nflow },
	};
	char *title = xasprintf("Plan %lld: step time of each simulated layout, estimate against "
				"simulation", (long long)h.s.id);
	const struct sim_store_plan_head *hs = &h.s;
	char *note = hs->rho == hs->rho
			     ? xasprintf("%s on %u GPUs: Spearman's rho %.3f", hs->scenario, hs->gpus,
					 hs->rho)
			     : xasprintf("%s on %u GPUs", hs->scenario, hs->gpus);
	struct plot p = {
		.title = title, .command = h.s.command, .note = note, .xkind = PLOT_X_NUMBER,
		.xtitle = "place in the plan's ranking", .ytitle = "step time (s)",
		.legend_title = "step time by", .lines = lines,
		.nlines = nflow ? 3 : 2, .bad_label = "simulation failed",
	};
	struct sim_out o;
	const char *svg = cli_str(a, "svg", "-");
	rc = cli_out_open(a, "option --svg", svg, &o);
	if (rc == CLI_OK) {
		rc = plot_write(&p, o.f) == 0 ? CLI_OK
					       : cli_error(a, CLI_FAIL, "option --svg: error writing "
							   "'%s': %s", svg, strerror(errno));
		rc = cli_out_commit(a, "option --svg", &o, rc);
	}
	for (size_t i = 0; i < n; i++)
		free(tips[i]);
	free(tips);
	free(pts);
	free(title);
	free(note);
	scn_plan_free(v, n);
	free(v);
	return rc;
}

/* ---- the command ---------------------------------------------------------------------- */

/* The options that need no database: positional, required, the metric. */
static int check_opts(struct plotctx *c)
{
	struct cli_args *a = c->a;
	char list[400];
	if (a->npos != 1)
		return cli_error(a, CLI_BADINPUT, "expected one database file (clustersim plot DB "
				 "--x KEY --y METRIC --svg FILE)");
	if (cli_has(a, "steps")) {
		if (!cli_has(a, "svg"))
			return cli_error(a, CLI_BADINPUT, "option --svg is required (clustersim plot "
					 "DB --steps --svg FILE)");
		if (cli_has(a, "x") || cli_has(a, "y") || cli_has(a, "series"))
			return cli_error(a, CLI_BADINPUT, "option --steps draws step times: it takes "
					 "no --x, --y or --series");
		return CLI_OK;
	}
	if (cli_has(a, "run"))
		return cli_error(a, CLI_BADINPUT, "option --run goes with --steps");
	static const char *const required[] = { "x", "y", "svg" };
	for (size_t i = 0; i < ARRAY_SIZE(required); i++)
		if (!cli_has(a, required[i]))
			return cli_error(a, CLI_BADINPUT, "option --%s is required (clustersim plot DB "
					 "--x KEY --y METRIC --svg FILE)", required[i]);
	const char *y = cli_str(a, "y", "");
	for (size_t i = 0; i < ARRAY_SIZE(metrics); i++)
		if (!strcmp(metrics[i].col, y))
			c->m = &metrics[i];
	if (!c->m)
		return cli_error(a, CLI_BADINPUT, "option --y: unknown metric '%s'; expected one of: "
				 "%s", y, metric_names(list, sizeof(list)));
	c->fig = -1;
	for (int i = 0; i < SIM_STORE_POINT_FIGURES; i++)
		if (!strcmp(sim_store_point_figure[i], c->m->col))
			c->fig = i;
	BUG_ON(c->fig < 0);  /* every metric is a figure of the schema */
	return cli_count(a, "sweep", 1, INT64_MAX, &c->sweep) < 0 ? CLI_BADINPUT : CLI_OK;
}

/* Release the points, keys and connection, whatever stage failed. */
static void plotctx_free(struct plotctx *c)
{
	for (size_t i = 0; i < c->npts; i++) {
		free(c->pts[i].reason);
		for (size_t k = 0; k < c->nkeys; k++)
			free(c->pts[i].val[k]);
	}
	for (size_t k = 0; k < c->nkeys; k++)
		free(c->keys[k]);
	free(c->pts);
	free(c->command);
	sim_store_read_close(c->db);
}

/* Check the options, read the sweep, choose its points, draw them. */
static int plot_run(struct cli_args *a)
{
	if (cli_has(a, "interference"))
		return plot_interference(a);
	if (cli_has(a, "plan"))
		return plot_plan(a);
	struct plotctx c = { .a = a, .path = a->pos[0] };
	int rc = check_opts(&c);
	if (rc == CLI_OK)
		rc = open_ro(&c);
	if (rc == CLI_OK && cli_has(a, "steps")) {
		rc = plot_steps(&c);
		plotctx_free(&c);
		return rc;
	}
	if (rc == CLI_OK)
		rc = pick_sweep(&c);
	if (rc == CLI_OK)
		rc = load_points(&c);
	if (rc == CLI_OK)
		rc = resolve_keys(&c);
	if (rc == CLI_OK)
		rc = write_svg(&c);
	plotctx_free(&c);
	return rc;
}

const struct cli_cmd cli_cmd_plot = {
	.name = "plot",
	.usage = "DB --x KEY --y METRIC [--series KEY] [--where KEY=VALUE]... [--sweep ID] "
		 "--svg FILE | DB --steps [--run ID]... --svg FILE | DB --plan ID|last --svg FILE | "
		 "--interference TABLE --svg FILE",
	.summary = "Draw a stored sweep as a line chart, runs' step times, a plan, or a "
		   "calibration table's interference curves, in SVG.",
	.description =
		"Reads a sweep stored with `clustersim sweep --db` (the newest unless --sweep)\n"
		"and draws METRIC against the varied key KEY (docs/img/sweep-mfu.svg). Values\n"
		"of KEY that are all numbers, with or without a unit (8, 25MB, 10us, 50GB/s),\n"
		"are placed by value, on a log scale when they are positive and span a factor\n"
		"of 16 or more; other values (preset names) are evenly spaced categories in\n"
		"the order they were varied. --series draws one line per value of another\n"
		"varied key. A key that varies among the drawn points must be --x, --series\n"
		"or fixed with --where, else the command stops and names it. Points that did\n"
		"not fit in memory, were invalid or failed have no value: they break their\n"
		"line and are marked by a cross on the x axis; hovering names their reason.\n"
		"peak_bytes and capacity_bytes are drawn in GB (1e9 bytes).\n"
		"With --steps it draws instead the distribution of the step times of runs\n"
		"stored with `clustersim run --steps N --db` (every such run, or --run's):\n"
		"one line per run, the share of its steps at or below each time, labelled\n"
		"with the run's variability (docs/variability.md).\n"
		"With --plan ID (or last) it draws a plan stored with `clustersim plan --db`:\n"
		"the estimate, the analytic and the flow step time of each simulated layout\n"
		"against its place in the ranking (hovering names the layout).\n"
		"With --interference TABLE (no DB) it draws the calibration table's\n"
		"interference curves as the compute model reads them, the factor of each\n"
		"measured kernel's time beside k blocks of communication and of the\n"
		"communication kernel's beside it, k = 0 to 40 (docs/img/interference.svg).",
	.opts = plot_opts,
	.run = plot_run,
};
