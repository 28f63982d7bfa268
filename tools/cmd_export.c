/*
 * cmd_export.c - `clustersim export DB`: write a stored run's timeline (or
 * any of its tables) as CSV through libcsv, draw the timeline as an SVG
 * Gantt chart (tools/svg.c), or write it as a Chrome trace for Perfetto
 * (tools/trace.c). Only complete runs are exported; the database is opened
 * read-only and never changed. Outputs are written whole or not at all
 * (sim/outfile.h); one that is the database is refused (cli_check_files).
 * Opening the database and choosing the run are shared with `clustersim
 * report` (cli_read_open, cli_read_run); every query is the store module's
 * (sim/store_read.h).
 */
#include "tools/cli.h"

#include <stdlib.h>
#include <string.h>

#include "sim/outfile.h"
#include "sim/store_read.h"
#include "sim/util.h"
#include "tools/svg.h"
#include "tools/trace.h"

static const struct cli_opt export_opts[] = {
	{ "run", 'r', CLI_COUNT, "ID", "the newest complete run", "which run to export" },
	{ "csv", 0, CLI_FILE_OUT, "FILE", NULL, "write CSV to FILE (- for standard output)" },
	{ "table", 't', CLI_STR, "NAME", "ops",
	  "with --csv: ops (the timeline), ranks, links, collective_results, runs, memory "
	  "or metrics of the run; sweeps, sweep_points or sweep_values whole" },
	{ "svg", 0, CLI_FILE_OUT, "FILE", NULL,
	  "draw the timeline as an SVG Gantt chart to FILE (- for standard output)" },
	{ "trace", 0, CLI_FILE_OUT, "FILE", NULL,
	  "write the timeline as a Chrome trace (JSON) for Perfetto or chrome://tracing to FILE "
	  "(- for standard output)" },
	{ "ranks", 0, CLI_STR, "LIST", "all",
	  "with --svg or --trace: the ranks to export, such as 0-7,16,24-31" },
	{ "from", 0, CLI_TIME, "T", "0",
	  "with --svg or --trace: start of the time window, with a unit (10ms)" },
	{ "to", 0, CLI_TIME, "T", "the end of the run",
	  "with --svg or --trace: end of the time window" },
	{ 0 },
};

/* Write every row of a table as CSV, header first. */
static int write_rows(struct sim_store_rows *q, FILE *f)
{
	size_t n = sim_store_rows_columns(q);
	int rc;
	for (size_t i = 0; i < n; i++)
		cli_csv_field(f, sim_store_rows_name(q, i), i == 0);
	fputc('\n', f);
	while ((rc = sim_store_rows_next(q)) == 1) {
		for (size_t i = 0; i < n; i++)
			cli_csv_field(f, sim_store_rows_text(q, i), i == 0);
		fputc('\n', f);
	}
	return rc;
}

/* A query on the database failed (see cli.h). */
int cli_read_error(const struct cli_args *a, const struct sim_store_read *r, const char *path)
{
	if (sim_store_read_kind(r) == SIM_STORE_READ_NOT_OURS)
		return cli_error(a, CLI_BADINPUT, "%s: not a clustersim database (%s)", path,
				 sim_store_read_error(r));
	return cli_error(a, CLI_FAIL, "%s: cannot read the database: %s", path,
			 sim_store_read_error(r));
}

/* The run to read (see cli.h). */
int cli_read_run(struct cli_args *a, struct sim_store_read *r, long long *run)
{
	int given = cli_has(a, "run");
	int64_t id;
	char status[32];
	int pick = sim_store_read_pick(r, given ? *run : 0, &id, status, sizeof(status));
	switch (pick) {
	case SIM_STORE_PICKED:
		*run = id;
		return CLI_OK;
	case SIM_STORE_NO_RUN:
		return cli_error(a, CLI_BADINPUT, "option --run: no run %lld in %s", *run, a->pos[0]);
	case SIM_STORE_NOT_COMPLETE:
		return cli_error(a, CLI_BADINPUT, "option --run: run %lld is %s; only complete runs "
				 "can be read", *run, status);
	case SIM_STORE_NONE_COMPLETE:
		return cli_error(a, CLI_BADINPUT, "%s holds no complete run", a->pos[0]);
	default:
		return cli_read_error(a, r, a->pos[0]);
	}
}

/* Open the output of option opt (- for standard output): written to a
 * temporary file and renamed into place by out_close (sim/outfile.h). */
static int out_open(struct cli_args *a, const char *opt, struct sim_out *o)
{
	char what[32];
	snprintf(what, sizeof(what), "option --%s", opt);
	return cli_out_open(a, what, cli_str(a, opt, "-"), o);
}

/* Finish the output of option opt: into place if rc is CLI_OK, else
 * abandoned with the old file kept. */
static int out_close(struct cli_args *a, const char *opt, struct sim_out *o, int rc)
{
	char what[32];
	snprintf(what, sizeof(what), "option --%s", opt);
	return cli_out_commit(a, what, o, rc);
}

static int export_to(struct cli_args *a, struct sim_store_read *db, size_t table,
		     long long run)
{
	struct sim_store_rows *q = sim_store_rows_open(db, table, run);
	if (!q)
		return cli_read_error(a, db, a->pos[0]);
	struct sim_out o;
	int rc = out_open(a, "csv", &o);
	if (rc == CLI_OK) {
		if (write_rows(q, o.f) < 0)
			rc = cli_error(a, CLI_FAIL, "reading %s: %s", a->pos[0],
				       sim_store_read_error(db));
		rc = out_close(a, "csv", &o, rc);
	}
	sim_store_rows_close(q);
	return rc;
}

/* A result of svg.h or trace.h as an exit code, with its message. */
static int gantt_rc(struct cli_args *a, int g, const char *err)
{
	if (g == GANTT_OK)
		return CLI_OK;
	return cli_error(a, g == GANTT_BADINPUT ? CLI_BADINPUT : CLI_FAIL, "%s", err);
}

/* Draw the chart to --svg. */
static int export_svg(struct cli_args *a, struct sim_store_read *db, long long run,
		      const struct gantt_opts *o)
{
	struct sim_out out;
	int rc = out_open(a, "svg", &out);
	if (rc != CLI_OK)
		return rc;
	char err[512];
	struct gantt_stats st = { 0 };
	rc = gantt_rc(a, gantt_write(db, run, o, out.f, &st, err, sizeof(err)), err);
	rc = out_close(a, "svg", &out, rc);
	if (rc == CLI_OK && st.boxes > GANTT_MAX_BOXES)
		cli_error(a, CLI_OK, "warning: the chart has %zu boxes (more than %d) and may be slow "
			  "to view; draw fewer ranks with --ranks or a shorter window with --from and "
			  "--to", st.boxes, GANTT_MAX_BOXES);
	return rc;
}

/*
 * Write the Chrome trace to --trace. Its events are counted first: above
 * TRACE_MAX_EVENTS a warning says so before the (long) writing.
 */
static int export_trace(struct cli_args *a, struct sim_store_read *db, long long run,
			const struct gantt_opts *o)
{
	char err[512];
	struct trace *t;
	int rc = gantt_rc(a, trace_new(db, run, o, &t, err, sizeof(err)), err);
	if (rc != CLI_OK)
		return rc;
	if (trace_events(t) > TRACE_MAX_EVENTS)
		cli_error(a, CLI_OK, "warning: the trace has %zu events (more than %d), too many for "
			  "Perfetto or chrome://tracing to load well; export fewer ranks with --ranks "
			  "or a shorter window with --from and --to", trace_events(t),
			  TRACE_MAX_EVENTS);
	struct sim_out out;
	if ((rc = out_open(a, "trace", &out)) == CLI_OK)
		rc = out_close(a, "trace", &out,
			       gantt_rc(a, trace_write(t, out.f, err, sizeof(err)), err));
	trace_free(t);
	return rc;
}

/* The options of --svg and --trace, checked before the database is opened. */
static int window_opts(struct cli_args *a, struct gantt_opts *o, int **ranks)
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

/* The options of --csv: the table's index in *table, or an error. */
static int csv_opts(struct cli_args *a, size_t *table)
{
	static const char *const window_only[] = { "ranks", "from", "to" };
	for (size_t i = 0; i < ARRAY_SIZE(window_only); i++)
		if (cli_has(a, window_only[i]))
			return cli_error(a, CLI_BADINPUT, "option --%s applies to --svg and --trace "
					 "only", window_only[i]);
	const char *tname = cli_str(a, "table", "ops");
	size_t n = sim_store_table_count();
	for (size_t i = 0; i < n; i++)
		if (!strcmp(sim_store_table_name(i), tname)) {
			if (!sim_store_table_per_run(i) && cli_has(a, "run"))
				return cli_error(a, CLI_BADINPUT, "option --run: table %s belongs to "
						 "no run (it is exported whole)", tname);
			*table = i;
			return CLI_OK;
		}
	char names[256] = "";
	for (size_t i = 0; i < n; i++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 i ? ", " : "", sim_store_table_name(i));
	return cli_error(a, CLI_BADINPUT, "option --table: unknown table '%s': expected one of %s",
			 tname, names);
}

/* Open read-only: readers never change the database (see cli.h). */
int cli_read_open(struct cli_args *a, struct sim_store_read **db)
{
	char err[512];
	int errnum;
	*db = sim_store_read_open(a->pos[0], &errnum, err, sizeof(err));
	if (*db)
		return CLI_OK;
	if (errnum)
		return cli_error(a, CLI_BADINPUT, "cannot read database '%s'", a->pos[0]);
	return cli_error(a, CLI_BADINPUT, "cannot open '%s': %s", a->pos[0], err);
}

/* What to write: exactly one of --csv, --svg and --trace. */
enum export_kind { EXPORT_CSV, EXPORT_SVG, EXPORT_TRACE };

/* Which of them was given; two, or none, is an error naming them. */
static int export_kind(struct cli_args *a, enum export_kind *kind)
{
	static const char *const outs[] = { [EXPORT_CSV] = "csv", [EXPORT_SVG] = "svg",
					    [EXPORT_TRACE] = "trace" };
	int n = 0;
	for (int k = 0; k < (int)ARRAY_SIZE(outs); k++) {
		if (!cli_has(a, outs[k]))
			continue;
		if (n++)
			return cli_error(a, CLI_BADINPUT, "options --%s and --%s cannot both be given",
					 outs[*kind], outs[k]);
		*kind = (enum export_kind)k;
	}
	if (!n)
		return cli_error(a, CLI_BADINPUT, "option --csv FILE, --svg FILE or --trace FILE is "
				 "required (- for standard output)");
	return CLI_OK;
}

/* Write the run (--run, else the newest complete) of the open database. */
static int export_write(struct cli_args *a, struct sim_store_read *db, enum export_kind kind,
			size_t table, const struct gantt_opts *o, long long run)
{
	if (kind == EXPORT_CSV && !sim_store_table_per_run(table))
		return export_to(a, db, table, 0);  /* the sweep tables: no run to find */
	int rc = cli_read_run(a, db, &run);
	if (rc != CLI_OK)
		return rc;
	if (kind == EXPORT_SVG)
		return export_svg(a, db, run, o);
	if (kind == EXPORT_TRACE)
		return export_trace(a, db, run, o);
	return export_to(a, db, table, run);
}

/* Every option is checked before the database is opened, so that bad
 * input never costs reading it. */
static int export_run(struct cli_args *a)
{
	if (a->npos != 1)
		return cli_error(a, CLI_BADINPUT, "expected one database file (clustersim export DB "
				 "--csv FILE, --svg FILE or --trace FILE)");
	enum export_kind kind = EXPORT_CSV;
	int rc = export_kind(a, &kind);
	if (rc != CLI_OK)
		return rc;
	struct gantt_opts o = { 0 };
	int *ranks = NULL;
	size_t table = 0;
	long long run = 0;
	rc = kind != EXPORT_CSV ? window_opts(a, &o, &ranks) : csv_opts(a, &table);
	if (rc == CLI_OK && cli_count(a, "run", 1, INT64_MAX, &run) < 0)
		rc = CLI_BADINPUT;
	struct sim_store_read *db = NULL;
	if (rc == CLI_OK && (rc = cli_read_open(a, &db)) == CLI_OK) {
		rc = export_write(a, db, kind, table, &o, run);
		sim_store_read_close(db);
	}
	free(ranks);
	return rc;
}

const struct cli_cmd cli_cmd_export = {
	.name = "export",
	.usage = "DB (--csv FILE [--table NAME] | --svg FILE | --trace FILE) [--ranks LIST] "
		 "[--from T] [--to T] [--run ID]",
	.summary = "Write a stored run's timeline (or another table) as CSV, SVG or a Chrome trace.",
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
		"--ranks, --from and --to.\n"
		"\n"
		"--trace writes the Chrome trace event format, which ui.perfetto.dev and\n"
		"chrome://tracing open: one process per rank (pid = rank, named \"rank R\n"
		"(node N, GPU G)\"), one thread per stream (tid = stream: compute, grads,\n"
		"params, host, tp, pp send next, pp send prev, pp recv prev, pp recv next,\n"
		"cp send, cp recv, tp recv), one complete event per op of non-zero length with ts and\n"
		"dur in microseconds (exact to the picosecond), the op's name, its kind as\n"
		"category and args {bytes, flops, kind}. Ops that overlap the window are\n"
		"written whole. The trace is streamed from the database, never held in\n"
		"memory; above 1,000,000 events, which viewers struggle to load, a warning\n"
		"on standard error suggests --ranks, --from and --to, and the trace is\n"
		"written all the same.",
	.opts = export_opts,
	.run = export_run,
};
