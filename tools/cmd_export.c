/*
 * cmd_export.c - `clustersim export DB`: write a stored run's timeline (or
 * any of its tables) as CSV through libcsv. Only complete runs are
 * exported; the database is opened read-only and never changed.
 */
#include "tools/cli.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/store.h"

static const struct cli_opt export_opts[] = {
	{ "run", 'r', CLI_COUNT, "ID", "the newest complete run", "which run to export" },
	{ "csv", 0, CLI_STR, "FILE", NULL, "write CSV to FILE (- for standard output)" },
	{ "table", 't', CLI_STR, "NAME", "ops",
	  "ops (the timeline), ranks, links, collective_results or runs" },
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

static int export_run(struct cli_args *a)
{
	if (a->npos != 1)
		return cli_error(a, CLI_BADINPUT, "expected one database file (clustersim export DB "
				 "--csv FILE)");
	if (!cli_has(a, "csv"))
		return cli_error(a, CLI_BADINPUT, "option --csv FILE is required (- for standard "
				 "output)");
	const char *tname = cli_str(a, "table", "ops"), *query = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(tables); i++)
		if (!strcmp(tables[i].name, tname))
			query = tables[i].query;
	if (!query)
		return cli_error(a, CLI_BADINPUT, "option --table: unknown table '%s': expected ops, "
				 "ranks, links, collective_results or runs", tname);
	long long run = 0;
	if (cli_count(a, "run", 1, INT64_MAX, &run) < 0)
		return CLI_BADINPUT;
	if (access(a->pos[0], R_OK) != 0)
		return cli_error(a, CLI_BADINPUT, "cannot read database '%s'", a->pos[0]);
	sqlite3 *db;
	if (sqlite3_open_v2(a->pos[0], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		int rc = cli_error(a, CLI_BADINPUT, "cannot open '%s': %s", a->pos[0],
				   sqlite3_errmsg(db));
		sqlite3_close(db);
		return rc;
	}
	sqlite3_busy_timeout(db, 10000);
	int rc = pick_run(a, db, &run);
	if (rc == CLI_OK)
		rc = export_to(a, db, query, run);
	sqlite3_close(db);
	return rc;
}

const struct cli_cmd cli_cmd_export = {
	.name = "export",
	.usage = "DB --csv FILE [--run ID] [--table NAME]",
	.summary = "Write a stored run's timeline (or another table) as CSV.",
	.description =
		"Reads a database written with --db. The ops table is the timeline: one row per\n"
		"op of every rank (rank, stream, kind, name, start_ps, end_ps, bytes, flops);\n"
		"docs/schema.md describes every table. Only runs whose status is complete\n"
		"are exported. The first CSV row holds the column names.",
	.opts = export_opts,
	.run = export_run,
};
