/*
 * cmd_export.c - `clustersim export DB`: write a stored run's timeline (or
 * any of its tables) as CSV through libcsv, or draw the timeline as an SVG
 * Gantt chart (tools/svg.c). Only complete runs are exported; the database
 * is opened read-only and never changed.
 */
#include "tools/cli.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/store.h"
#include "sim/util.h"
#include "tools/svg.h"

static const struct cli_opt export_opts[] = {
	{ "run", 'r', CLI_COUNT, "ID", "the newest complete run", "which run to export" },
	{ "csv", 0, CLI_STR, "FILE", NULL, "write CSV to FILE (- for standard output)" },
	{ "table", 't', CLI_STR, "NAME", "ops",
	  "ops (the timeline), ranks, links, collective_results or runs" },
	{ "svg", 0, CLI_STR, "FILE", NULL,
	  "draw the timeline as an SVG Gantt chart to FILE (- for standard output)" },
	{ "ranks", 0, CLI_STR, "LIST", "all", "with --svg: the ranks to draw, such as 0-7,16,24-31" },
	{ "from", 0, CLI_TIME, "T", "0", "with --svg: start of the time window, with a unit (10ms)" },
	{ "to", 0, CLI_TIME, "T", "the end of the run", "with --svg: end of the time window" },
	{ 0 },
};

/* Tables that can be exported, with their order of rows. */
static const struct {
	const char *name, *query;
} tables[] = {
	{ "ops", "SELECT * FROM ops WHERE run_id = ?1 ORDER BY rank, start_ps, rowid" },
	{ "ranks", "SELECT * FROM ranks WHERE run_id = ?1 ORDER BY rank" },
	{ "links", "SELECT * FROM links WHERE run_id = ?1 ORDER BY link" },
	{ "collective_results",
	  "SELECT * FROM collective_results WHERE run_id = ?1 ORDER BY rowid" },
	{ "runs", "SELECT * FROM runs WHERE id = ?1" },
};

/* Write every row of a prepared statement as CSV, header first. */
static int write_rows(sqlite3_stmt *q, FILE *f)
{
	int n = sqlite3_column_count(q), rc;
	for (int i = 0; i < n; i++)
		cli_csv_field(f, sqlite3_column_name(q, i), i == 0);
	fputc('\n', f);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		for (int i = 0; i < n; i++)
			cli_csv_field(f, (const char *)sqlite3_column_text(q, i), i == 0);
		fputc('\n', f);
	}
	return rc == SQLITE_DONE ? 0 : -1;
}

/* The run to export: the given one if complete, else the newest complete. */
static int pick_run(struct cli_args *a, sqlite3 *db, long long *run)
{
	sqlite3_stmt *q;
	int given = cli_has(a, "run");
	const char *sql = given ? "SELECT status FROM runs WHERE id = ?1"
				: "SELECT max(id) FROM runs WHERE status = 'complete'";
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		return cli_error(a, CLI_BADINPUT, "%s: not a clustersim database (%s)", a->pos[0],
				 sqlite3_errmsg(db));
	sqlite3_bind_int64(q, 1, *run);
	int rc = sqlite3_step(q);
	const char *status = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(q, 0) : NULL;
	int out = CLI_OK;
	if (given && !status)
		out = cli_error(a, CLI_BADINPUT, "option --run: no run %lld in %s", *run, a->pos[0]);
	else if (given && strcmp(status, "complete"))
		out = cli_error(a, CLI_BADINPUT, "option --run: run %lld is %s; only complete runs "
				"are exported", *run, status);
	else if (!given && sqlite3_column_type(q, 0) == SQLITE_NULL)
		out = cli_error(a, CLI_BADINPUT, "%s holds no complete run", a->pos[0]);
	else if (!given)
		*run = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return out;
}

static int export_to(struct cli_args *a, sqlite3 *db, const char *query, long long run)
{
	const char *path = cli_str(a, "csv", "-");
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db, query, -1, &q, NULL) != SQLITE_OK)
		return cli_error(a, CLI_BADINPUT, "%s: not a clustersim database (%s)", a->pos[0],
				 sqlite3_errmsg(db));
	sqlite3_bind_int64(q, 1, run);
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
	int rc = CLI_OK;
	if (!f)
		rc = cli_error(a, CLI_BADINPUT, "option --csv: cannot write '%s'", path);
	else if (write_rows(q, f) < 0)
		rc = cli_error(a, CLI_FAIL, "reading %s: %s", a->pos[0], sqlite3_errmsg(db));
	if (f && f != stdout && fclose(f) != 0)
		rc = cli_error(a, CLI_FAIL, "option --csv: error writing '%s'", path);
	sqlite3_finalize(q);
	return rc;
}

/* Draw the chart to --svg; a file left half-written by an error is removed. */
static int export_svg(struct cli_args *a, sqlite3 *db, long long run, const struct gantt_opts *o)
{
	const char *path = cli_str(a, "svg", "-");
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
	if (!f)
		return cli_error(a, CLI_BADINPUT, "option --svg: cannot write '%s'", path);
	char err[512];
	struct gantt_stats st = { 0 };
	int g = gantt_write(db, run, o, f, &st, err, sizeof(err));
	int rc = g == GANTT_OK ? CLI_OK
			       : cli_error(a, g == GANTT_BADINPUT ? CLI_BADINPUT : CLI_FAIL, "%s", err);
	if (f != stdout && fclose(f) != 0 && rc == CLI_OK)
		rc = cli_error(a, CLI_FAIL, "option --svg: error writing '%s'", path);
	if (f != stdout && rc != CLI_OK)
		remove(path);
	if (rc == CLI_OK && st.boxes > GANTT_MAX_BOXES)
		cli_error(a, CLI_OK, "warning: the chart has %zu boxes (more than %d) and may be slow "
			  "to view; draw fewer ranks with --ranks or a shorter window with --from and "
			  "--to", st.boxes, GANTT_MAX_BOXES);
	return rc;
}

/* The options of --svg, checked before the database is opened. */
static int svg_opts(struct cli_args *a, struct gantt_opts *o, int **ranks)
{
	if (cli_has(a, "table"))
		return cli_error(a, CLI_BADINPUT, "option --table applies to --csv only");
	char err[256];
	if (cli_has(a, "ranks") &&
	    gantt_ranks_parse(cli_str(a, "ranks", ""), ranks, &o->nranks, err, sizeof(err)) < 0)
		return cli_error(a, CLI_BADINPUT, "option --ranks: %s", err);
	o->ranks = *ranks;
	double from_s = 0, to_s = 0;
	if (cli_units(a, "from", &from_s) < 0 || cli_units(a, "to", &to_s) < 0)
		return CLI_BADINPUT;
	o->from_ps = sim_ps_from_s(from_s);
	o->to_ps = sim_ps_from_s(to_s);
	if (cli_has(a, "to") && o->to_ps <= o->from_ps)
		return cli_error(a, CLI_BADINPUT, "option --to: must be after --from (%s)",
				 cli_str(a, "from", "0"));
	return CLI_OK;
}

/* The options of --csv: the table's query, or NULL after an error. */
static const char *csv_opts(struct cli_args *a)
{
	static const char *const svg_only[] = { "ranks", "from", "to" };
	for (size_t i = 0; i < ARRAY_SIZE(svg_only); i++)
		if (cli_has(a, svg_only[i])) {
			cli_error(a, CLI_BADINPUT, "option --%s applies to --svg only", svg_only[i]);
			return NULL;
		}
	const char *tname = cli_str(a, "table", "ops");
	for (size_t i = 0; i < ARRAY_SIZE(tables); i++)
		if (!strcmp(tables[i].name, tname))
			return tables[i].query;
	cli_error(a, CLI_BADINPUT, "option --table: unknown table '%s': expected ops, ranks, "
		  "links, collective_results or runs", tname);
	return NULL;
}

static int open_db(struct cli_args *a, sqlite3 **db)
{
	if (access(a->pos[0], R_OK) != 0)
		return cli_error(a, CLI_BADINPUT, "cannot read database '%s'", a->pos[0]);
	if (sqlite3_open_v2(a->pos[0], db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		int rc = cli_error(a, CLI_BADINPUT, "cannot open '%s': %s", a->pos[0],
				   sqlite3_errmsg(*db));
		sqlite3_close(*db);
		return rc;
	}
	sqlite3_busy_timeout(*db, 10000);
	return CLI_OK;
}

static int export_run(struct cli_args *a)
{
	if (a->npos != 1)
		return cli_error(a, CLI_BADINPUT, "expected one database file (clustersim export DB "
				 "--csv FILE, or --svg FILE)");
	int svg = cli_has(a, "svg");
	if (svg && cli_has(a, "csv"))
		return cli_error(a, CLI_BADINPUT, "options --csv and --svg cannot both be given");
	if (!svg && !cli_has(a, "csv"))
		return cli_error(a, CLI_BADINPUT, "option --csv FILE or --svg FILE is required (- for "
				 "standard output)");
	struct gantt_opts o = { 0 };
	int *ranks = NULL, rc = CLI_OK;
	const char *query = NULL;
	long long run = 0;
	if (svg)
		rc = svg_opts(a, &o, &ranks);
	else if (!(query = csv_opts(a)))
		rc = CLI_BADINPUT;
	if (rc == CLI_OK && cli_count(a, "run", 1, INT64_MAX, &run) < 0)
		rc = CLI_BADINPUT;
	sqlite3 *db = NULL;
	if (rc == CLI_OK && (rc = open_db(a, &db)) == CLI_OK) {
		rc = pick_run(a, db, &run);
		if (rc == CLI_OK)
			rc = svg ? export_svg(a, db, run, &o) : export_to(a, db, query, run);
		sqlite3_close(db);
	}
	free(ranks);
	return rc;
}

const struct cli_cmd cli_cmd_export = {
	.name = "export",
	.usage = "DB (--csv FILE [--table NAME] | --svg FILE [--ranks LIST] [--from T] [--to T]) "
		 "[--run ID]",
	.summary = "Write a stored run's timeline (or another table) as CSV, or draw it as SVG.",
	.description =
		"Reads a database written with --db. The ops table is the timeline: one row per\n"
		"op of every rank (rank, stream, kind, name, start_ps, end_ps, bytes, flops);\n"
		"docs/schema.md describes every table. Only runs whose status is complete\n"
		"are exported. The first CSV row holds the column names.\n"
		"\n"
		"--svg draws the timeline as a Gantt chart (docs/img/ddp-lesson.svg): one row\n"
		"per rank and stream; forward, backward, recompute, communication and other\n"
		"compute in their own colours; micro-batch numbers (M, or M.C with a model\n"
		"chunk) on the boxes wide enough; idle time of the compute stream shaded.\n"
		"Consecutive ops of a row with the same phase, micro-batch and chunk, less\n"
		"than 0.05% of the window apart, are drawn as one box (ops without a\n"
		"micro-batch, such as DDP buckets, only while the box is too thin to see);\n"
		"hovering over a box names its ops. Above 20,000 boxes a warning suggests\n"
		"--ranks, --from and --to.",
	.opts = export_opts,
	.run = export_run,
};
