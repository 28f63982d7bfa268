/*
 * store_read.c - the reader half of the store module (store_read.h): every
 * query the tools make over the tables that sim/store.c creates and writes.
 *
 * The timeline is the ops view (store.c): timeline blocks found through
 * timeline_blocks_by_rank, each rank's rows sorted by SQLite. Queries over
 * it are bounded by the smallest and largest chosen rank and the window in
 * SQL; ranks between those bounds that were not chosen are skipped here, as
 * rows arrive. Cursors hand out one row at a time, so a timeline of
 * millions of ops costs reading them, not holding them.
 *
 * Every failure keeps SQLite's message and whether it means the file is
 * not clustersim's (SQLITE_ERROR: no such table; NOTADB; CORRUPT) or could
 * not be read (anything else).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "sim/store_read.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/store.h"
#include "sim/util.h"

/* How long a reader waits for a writer's lock, in ms. */
#define READ_BUSY_TIMEOUT_MS 10000

struct sim_store_read {
	sqlite3 *db;
	int kind;           /* of the last failure                 */
	char err[512];      /* its message                          */
};

/* ---- errors ------------------------------------------------------------------------ */

/* Keep the connection's last error; returns its kind. */
static int read_fail(struct sim_store_read *r)
{
	int code = sqlite3_errcode(r->db);
	r->kind = code == SQLITE_ERROR || code == SQLITE_NOTADB || code == SQLITE_CORRUPT
			  ? SIM_STORE_READ_NOT_OURS : SIM_STORE_READ_FAIL;
	snprintf(r->err, sizeof(r->err), "%s", sqlite3_errmsg(r->db));
	return r->kind;
}

const char *sim_store_read_error(const struct sim_store_read *r)
{
	return r->err;
}

int sim_store_read_kind(const struct sim_store_read *r)
{
	return r->kind;
}

/* A prepared statement, or NULL with the failure kept. */
static sqlite3_stmt *prepare(struct sim_store_read *r, const char *sql)
{
	sqlite3_stmt *q = NULL;
	if (sqlite3_prepare_v2(r->db, sql, -1, &q, NULL) != SQLITE_OK) {
		read_fail(r);
		sqlite3_finalize(q);
		return NULL;
	}
	return q;
}

/* The end of a statement's rows: OK after SQLITE_DONE, else the failure. */
static int finish(struct sim_store_read *r, sqlite3_stmt *q, int rc)
{
	int out = rc == SQLITE_DONE || rc == SQLITE_ROW ? SIM_STORE_READ_OK : read_fail(r);
	sqlite3_finalize(q);
	return out;
}

static char *dup_text(sqlite3_stmt *q, int col)
{
	const char *s = (const char *)sqlite3_column_text(q, col);
	return s ? xstrdup(s) : NULL;
}

static double real_or_nan(sqlite3_stmt *q, int col)
{
	return sqlite3_column_type(q, col) == SQLITE_NULL ? NAN : sqlite3_column_double(q, col);
}

/* ---- the connection ----------------------------------------------------------------- */

struct sim_store_read *sim_store_read_open(const char *path, int *errnum, char *err,
					   size_t errlen)
{
	*errnum = 0;
	if (errlen)
		err[0] = 0;
	if (access(path, R_OK) != 0) {
		*errnum = errno;
		return NULL;
	}
	sqlite3 *db = NULL;
	int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "%s", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		sqlite3_close(db);
		return NULL;
	}
	sqlite3_busy_timeout(db, READ_BUSY_TIMEOUT_MS);
	struct sim_store_read *r = xcalloc(1, sizeof(*r));
	r->db = db;
	return r;
}

void sim_store_read_close(struct sim_store_read *r)
{
	if (!r)
		return;
	sqlite3_close(r->db);
	free(r);
}

struct sqlite3 *sim_store_read_db(const struct sim_store_read *r)
{
	return r->db;
}

void sim_store_read_note(struct sim_store_read *r)
{
	read_fail(r);
}

/* ---- runs ---------------------------------------------------------------------------- */

int sim_store_read_pick(struct sim_store_read *r, int64_t id, int64_t *run, char *status,
			size_t slen)
{
	int given = id > 0;
	sqlite3_stmt *q = prepare(r, given ? "SELECT status FROM runs WHERE id = ?1"
					   : "SELECT max(id) FROM runs WHERE status = 'complete'");
	if (!q)
		return r->kind;
	sqlite3_bind_int64(q, 1, id);
	int rc = sqlite3_step(q), pick = SIM_STORE_PICKED;
	const char *st = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(q, 0) : NULL;
	if (slen)
		snprintf(status, slen, "%s", st ? st : "");
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		pick = read_fail(r);
	else if (given && !st)
		pick = SIM_STORE_NO_RUN;
	else if (given && strcmp(st, "complete"))
		pick = SIM_STORE_NOT_COMPLETE;
	else if (!given && sqlite3_column_type(q, 0) == SQLITE_NULL)
		pick = SIM_STORE_NONE_COMPLETE;
	*run = given ? id : pick == SIM_STORE_PICKED ? sqlite3_column_int64(q, 0) : 0;
	sqlite3_finalize(q);
	return pick;
}

int sim_store_read_run(struct sim_store_read *r, int64_t run, struct sim_store_run_row *row)
{
	*row = (struct sim_store_run_row){ 0 };
	sqlite3_stmt *q = prepare(r, "SELECT command, fidelity, created_utc, version, ranks "
				  "FROM runs WHERE id = ?1");
	if (!q)
		return r->kind;
	sqlite3_bind_int64(q, 1, run);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		*row = (struct sim_store_run_row){ .command = dup_text(q, 0),
						   .fidelity = dup_text(q, 1),
						   .created_utc = dup_text(q, 2),
						   .version = dup_text(q, 3),
						   .ranks = sqlite3_column_int(q, 4) };
	int out = finish(r, q, rc);
	return out == SIM_STORE_READ_OK && rc == SQLITE_DONE ? 1 : out;
}

void sim_store_run_row_free(struct sim_store_run_row *row)
{
	free(row->command);
	free(row->fidelity);
	free(row->created_utc);
	free(row->version);
	*row = (struct sim_store_run_row){ 0 };
}

static int has_label_columns(struct sim_store_read *r);

int sim_store_read_has_phase(struct sim_store_read *r, int64_t run, enum sim_phase ph)
{
	const char *name = sim_phase_name(ph);
	if (!name || !has_label_columns(r))
		return 0;
	sqlite3_stmt *q = prepare(r, "SELECT EXISTS (SELECT 1 FROM op_defs WHERE run_id = ?1 "
				     "AND phase = ?2)");
	if (!q)
		return r->kind;
	sqlite3_bind_int64(q, 1, run);
	sqlite3_bind_text(q, 2, name, -1, SQLITE_STATIC);
	int rc = sqlite3_step(q), yes = rc == SQLITE_ROW && sqlite3_column_int(q, 0);
	int out = finish(r, q, rc);
	return out == SIM_STORE_READ_OK ? yes : out;
}

int sim_store_read_extent(struct sim_store_read *r, int64_t run, int *nranks, int64_t *end_ps)
{
	sqlite3_stmt *q = prepare(r, "SELECT ranks, coalesce(sim_end_ps, (SELECT max(end_ps) "
				  "FROM ops WHERE run_id = ?1), 0) FROM runs WHERE id = ?1");
	if (!q)
		return r->kind;
	sqlite3_bind_int64(q, 1, run);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		*nranks = sqlite3_column_int(q, 0);
		*end_ps = sqlite3_column_int64(q, 1);
	}
	int out = finish(r, q, rc);
	return out == SIM_STORE_READ_OK && rc == SQLITE_DONE ? 1 : out;
}

int sim_store_read_rank_place(struct sim_store_read *r, int64_t run, int rank, int *found,
			      int *node, int *local_gpu)
{
	sqlite3_stmt *q = prepare(r, "SELECT node, local_gpu FROM ranks WHERE run_id = ?1 AND "
				  "rank = ?2");
	if (!q)
		return r->kind;
	sqlite3_bind_int64(q, 1, run);
	sqlite3_bind_int(q, 2, rank);
	int rc = sqlite3_step(q);
	*found = rc == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL;
	if (*found) {
		*node = sqlite3_column_int(q, 0);
		*local_gpu = sqlite3_column_int(q, 1);
	}
	return finish(r, q, rc);
}

/* ---- the timeline -------------------------------------------------------------------- */

static int cmp_int(const void *a, const void *b)
{
	return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* Whether rank is one of w's (every rank when w names none). */
static int rank_chosen(const struct sim_store_window *w, int rank)
{
	return !w->ranks || !w->nranks || bsearch(&rank, w->ranks, w->nranks, sizeof(int), cmp_int);
}

/* Bind the run (1), the window (2, 3) and the bounds of the ranks (4, 5). */
static void bind_window(sqlite3_stmt *q, const struct sim_store_window *w)
{
	int some = w->ranks && w->nranks;
	sqlite3_bind_int64(q, 1, w->run);
	sqlite3_bind_int64(q, 2, w->from_ps);
	sqlite3_bind_int64(q, 3, w->to_ps);
	sqlite3_bind_int(q, 4, some ? w->ranks[0] : 0);
	sqlite3_bind_int(q, 5, some ? w->ranks[w->nranks - 1] : INT32_MAX);
}

/* Ops of a chosen rank, of non-zero length, that overlap the window. */
#define OPS_WHERE "WHERE run_id = ?1 AND rank BETWEEN ?4 AND ?5 AND end_ps > ?2 AND " \
	"start_ps < ?3 AND end_ps > start_ps "

int sim_store_read_streams(struct sim_store_read *r, const struct sim_store_window *w,
			   enum sim_store_stream_figure fig,
			   void (*fn)(void *ctx, const struct sim_store_stream *s), void *ctx)
{
	sqlite3_stmt *q = prepare(r, fig == SIM_STORE_SPAN
		? "SELECT rank, stream, min(start_ps), max(end_ps) FROM ops " OPS_WHERE
		  "GROUP BY rank, stream ORDER BY rank, stream"
		: "SELECT rank, stream, count(*) FROM ops " OPS_WHERE
		  "GROUP BY rank, stream ORDER BY rank, stream");
	if (!q)
		return r->kind;
	bind_window(q, w);
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct sim_store_stream s = { .rank = sqlite3_column_int(q, 0),
					      .stream = sqlite3_column_int(q, 1) };
		if (fig == SIM_STORE_SPAN) {
			s.first_ps = sqlite3_column_int64(q, 2);
			s.last_ps = sqlite3_column_int64(q, 3);
		} else {
			s.ops = (size_t)sqlite3_column_int64(q, 2);
		}
		if (rank_chosen(w, s.rank))
			fn(ctx, &s);
	}
	return finish(r, q, rc);
}

struct sim_store_ops {
	struct sim_store_read *r;
	const struct sim_store_window *w;
	enum sim_store_ops_order order;
	sqlite3_stmt *q;
	int rank;             /* SIM_STORE_BY_STREAM: the rank read */
	int derive;           /* labels from the names (an older run) */
};

/* ---- labels of runs written before them --------------------------------------------- */

/* The number after prefix p filling token t of length n ("mb12"), or -1. */
static int tok_num(const char *t, size_t n, const char *p)
{
	size_t lp = strlen(p);
	if (n <= lp || n > lp + 6 || strncmp(t, p, lp))
		return -1;
	int v = 0;
	for (size_t i = lp; i < n; i++) {
		if (t[i] < '0' || t[i] > '9')
			return -1;
		v = v * 10 + (t[i] - '0');
	}
	return v;
}

static int tok_is(const char *t, size_t n, const char *word)
{
	return n == strlen(word) && !strncmp(t, word, n);
}

/*
 * A label from an op's name, as schema version 4 and earlier wrote names
 * (dot-separated tokens): "L<n>" the layer, ".mb<M>" the micro-batch, a
 * ".c<C>" right after it the model chunk; "fwd", "bwd" and "bwd.re" the
 * phase of a compute op.
 */
static void label_from_name(struct sim_store_op *op)
{
	int compute = op->kind && !strcmp(op->kind, "compute"), after_mb = 0, after_bwd = 0;
	for (const char *t = op->name ? op->name : ""; *t;) {
		size_t n = strcspn(t, ".");
		int mb = tok_num(t, n, "mb"), layer = tok_num(t, n, "L");
		if (after_mb && op->chunk < 0)
			op->chunk = tok_num(t, n, "c");
		if (compute && tok_is(t, n, "fwd") && op->phase == SIM_PHASE_NONE)
			op->phase = SIM_PHASE_FWD;
		else if (compute && tok_is(t, n, "bwd") && op->phase == SIM_PHASE_NONE)
			op->phase = SIM_PHASE_BWD;
		else if (after_bwd && tok_is(t, n, "re"))
			op->phase = SIM_PHASE_RECOMPUTE;
		after_bwd = compute && tok_is(t, n, "bwd");
		after_mb = mb >= 0;
		if (mb >= 0 && op->mb < 0)
			op->mb = mb;
		if (layer >= 0 && op->layer < 0)
			op->layer = layer;
		t += n + (t[n] == '.');
	}
}

/* Does the database have the labels' columns (schema version 5 on), and
 * does run hold any label (a run from before the migration has none)? */
static int run_labelled(struct sim_store_read *r, int64_t run)
{
	sqlite3_stmt *q = prepare(r, "SELECT EXISTS (SELECT 1 FROM op_defs WHERE run_id = ?1 "
				     "AND (phase IS NOT NULL OR mb IS NOT NULL OR layer IS NOT NULL "
				     "OR kernel IS NOT NULL))");
	if (!q)
		return 0;  /* no such column: an older database */
	sqlite3_bind_int64(q, 1, run);
	int yes = sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0);
	sqlite3_finalize(q);
	return yes;
}

static int has_label_columns(struct sim_store_read *r)
{
	sqlite3_stmt *q = prepare(r, "SELECT count(*) FROM pragma_table_info('op_defs') "
				     "WHERE name = 'phase'");
	int yes = q && sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) > 0;
	sqlite3_finalize(q);
	return yes;
}

static enum sim_phase phase_of(const char *name)
{
	for (int p = SIM_PHASE_FWD; name && p < SIM_PHASE_N; p++)
		if (!strcmp(name, sim_phase_name((enum sim_phase)p)))
			return (enum sim_phase)p;
	return SIM_PHASE_NONE;
}

/* Column i of q as an int, or -1 for NULL. */
static int int_or_none(sqlite3_stmt *q, int i)
{
	return sqlite3_column_type(q, i) == SQLITE_NULL ? -1 : sqlite3_column_int(q, i);
}

struct sim_store_ops *sim_store_ops_open(struct sim_store_read *r,
					 const struct sim_store_window *w,
					 enum sim_store_ops_order order)
{
	/* One query a rank by stream: the index (run_id, rank, first_row) finds
	 * its blocks, SQLite sorts them by stream; ops that end before the window
	 * are read and skipped. An older database has no label columns. */
	int columns = has_label_columns(r);
	const char *labels = columns ? ", layer, mb, chunk, phase, kernel"
				     : ", NULL, NULL, NULL, NULL, NULL";
	char sql[512];
	if (order == SIM_STORE_BY_RANK)
		snprintf(sql, sizeof(sql), "SELECT rank, stream, kind, name, start_ps, end_ps, bytes, "
			 "flops%s FROM ops " OPS_WHERE "ORDER BY rank, start_ps, id", labels);
	else
		snprintf(sql, sizeof(sql), "SELECT stream, kind, name, start_ps, end_ps%s FROM ops "
			 "WHERE run_id = ?1 AND rank = ?2 AND start_ps < ?4 AND end_ps > ?3 AND "
			 "end_ps > start_ps ORDER BY stream, start_ps, id", labels);
	int derive = !columns || !run_labelled(r, w->run);
	sqlite3_stmt *q = prepare(r, sql);
	if (!q)
		return NULL;
	if (order == SIM_STORE_BY_RANK) {
		bind_window(q, w);
	} else {
		sqlite3_bind_int64(q, 1, w->run);
		sqlite3_bind_int64(q, 3, w->from_ps);
		sqlite3_bind_int64(q, 4, w->to_ps);
	}
	struct sim_store_ops *c = xcalloc(1, sizeof(*c));
	*c = (struct sim_store_ops){ .r = r, .w = w, .order = order, .q = q, .derive = derive };
	return c;
}

void sim_store_ops_rank(struct sim_store_ops *c, int rank)
{
	sqlite3_reset(c->q);
	sqlite3_bind_int(c->q, 2, rank);
	c->rank = rank;
}

/* The label columns of q from column i on (layer, mb, chunk, phase,
 * kernel), or from the name for an older run. */
static void read_label(const struct sim_store_ops *c, int i, struct sim_store_op *op)
{
	sqlite3_stmt *q = c->q;
	op->layer = int_or_none(q, i);
	op->mb = int_or_none(q, i + 1);
	op->chunk = int_or_none(q, i + 2);
	op->phase = phase_of((const char *)sqlite3_column_text(q, i + 3));
	op->kernel = (const char *)sqlite3_column_text(q, i + 4);
	if (c->derive)
		label_from_name(op);
}

/* The row of q in *op: column i of the BY_RANK query is column i - 1 of
 * the BY_STREAM one (which has no rank), bytes and FLOPs only in BY_RANK. */
int sim_store_ops_next(struct sim_store_ops *c, struct sim_store_op *op)
{
	sqlite3_stmt *q = c->q;
	int rc;
	if (c->order == SIM_STORE_BY_STREAM) {
		if ((rc = sqlite3_step(q)) != SQLITE_ROW)
			return rc == SQLITE_DONE ? 0 : read_fail(c->r);
		op->rank = c->rank;
		op->stream = sqlite3_column_int(q, 0);
		op->kind = (const char *)sqlite3_column_text(q, 1);
		op->name = (const char *)sqlite3_column_text(q, 2);
		op->start_ps = sqlite3_column_int64(q, 3);
		op->end_ps = sqlite3_column_int64(q, 4);
		op->bytes = op->flops = NAN;
		read_label(c, 5, op);
		return 1;
	}
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		int rank = sqlite3_column_int(q, 0);
		if (!rank_chosen(c->w, rank))
			continue;
		op->rank = rank;
		op->stream = sqlite3_column_int(q, 1);
		op->kind = (const char *)sqlite3_column_text(q, 2);
		op->name = (const char *)sqlite3_column_text(q, 3);
		op->start_ps = sqlite3_column_int64(q, 4);
		op->end_ps = sqlite3_column_int64(q, 5);
		op->bytes = real_or_nan(q, 6);
		op->flops = real_or_nan(q, 7);
		read_label(c, 8, op);
		return 1;
	}
	return rc == SQLITE_DONE ? 0 : read_fail(c->r);
}

void sim_store_ops_close(struct sim_store_ops *c)
{
	if (!c)
		return;
	sqlite3_finalize(c->q);
	free(c);
}

/* ---- whole tables --------------------------------------------------------------------- */

/* Tables that can be exported, with their order of rows; ?1 is the run. */
static const struct {
	const char *name, *query;
	int per_run;
} tables[] = {
	{ "ops", "SELECT * FROM ops WHERE run_id = ?1 ORDER BY rank, start_ps, id", 1 },
	{ "ranks", "SELECT * FROM ranks WHERE run_id = ?1 ORDER BY rank", 1 },
	{ "links", "SELECT * FROM links WHERE run_id = ?1 ORDER BY link", 1 },
	{ "collective_results",
	  "SELECT * FROM collective_results WHERE run_id = ?1 ORDER BY rowid", 1 },
	{ "runs", "SELECT * FROM runs WHERE id = ?1", 1 },
	{ "memory", "SELECT * FROM memory WHERE run_id = ?1 ORDER BY rank, t_ps, rowid", 1 },
	{ "metrics", "SELECT * FROM metrics WHERE run_id = ?1 ORDER BY name", 1 },
	{ "sweeps", "SELECT * FROM sweeps ORDER BY id", 0 },
	{ "sweep_points", "SELECT * FROM sweep_points ORDER BY sweep_id, point", 0 },
	{ "sweep_values", "SELECT * FROM sweep_values ORDER BY sweep_id, point, key", 0 },
};

size_t sim_store_table_count(void)
{
	return ARRAY_SIZE(tables);
}

const char *sim_store_table_name(size_t i)
{
	BUG_ON(i >= ARRAY_SIZE(tables));
	return tables[i].name;
}

int sim_store_table_per_run(size_t i)
{
	BUG_ON(i >= ARRAY_SIZE(tables));
	return tables[i].per_run;
}

struct sim_store_rows {
	struct sim_store_read *r;
	sqlite3_stmt *q;
	size_t ncols;
};

struct sim_store_rows *sim_store_rows_open(struct sim_store_read *r, size_t table, int64_t run)
{
	BUG_ON(table >= ARRAY_SIZE(tables));
	sqlite3_stmt *q = prepare(r, tables[table].query);
	if (!q)
		return NULL;
	if (tables[table].per_run)
		sqlite3_bind_int64(q, 1, run);
	struct sim_store_rows *c = xcalloc(1, sizeof(*c));
	*c = (struct sim_store_rows){ .r = r, .q = q, .ncols = (size_t)sqlite3_column_count(q) };
	return c;
}

size_t sim_store_rows_columns(const struct sim_store_rows *c)
{
	return c->ncols;
}

const char *sim_store_rows_name(const struct sim_store_rows *c, size_t col)
{
	return sqlite3_column_name(c->q, (int)col);
}

int sim_store_rows_next(struct sim_store_rows *c)
{
	int rc = sqlite3_step(c->q);
	if (rc == SQLITE_ROW)
		return 1;
	return rc == SQLITE_DONE ? 0 : read_fail(c->r);
}

const char *sim_store_rows_text(const struct sim_store_rows *c, size_t col)
{
	return (const char *)sqlite3_column_text(c->q, (int)col);
}

void sim_store_rows_close(struct sim_store_rows *c)
{
	if (!c)
		return;
	sqlite3_finalize(c->q);
	free(c);
}

/* ---- sweeps ------------------------------------------------------------------------------ */

int sim_store_read_sweep(struct sim_store_read *r, int64_t id, int64_t *sweep, char **command)
{
	*command = NULL;
	sqlite3_stmt *q = prepare(r, id > 0 ? "SELECT id, coalesce(command, scenario) FROM sweeps "
				  "WHERE id = ?1" : "SELECT id, coalesce(command, scenario) FROM "
				  "sweeps ORDER BY id DESC LIMIT 1");
	if (!q)
		return r->kind;
	sqlite3_bind_int64(q, 1, id);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		*sweep = sqlite3_column_int64(q, 0);
		*command = dup_text(q, 1);
	}
	int out = finish(r, q, rc);
	return out == SIM_STORE_READ_OK && rc == SQLITE_DONE ? 1 : out;
}

int sim_store_read_points(struct sim_store_read *r, int64_t sweep, int fig,
			  void (*fn)(void *ctx, const struct sim_store_point_value *v),
			  void *ctx)
{
	BUG_ON(fig < 0 || fig >= SIM_STORE_POINT_FIGURES);
	char sql[400];
	snprintf(sql, sizeof(sql), "SELECT p.point, p.status, p.reason, p.%s, v.key, v.value "
		 "FROM sweep_points p JOIN sweep_values v ON v.sweep_id = p.sweep_id AND "
		 "v.point = p.point WHERE p.sweep_id = ?1 ORDER BY p.point, v.rowid",
		 sim_store_point_figure[fig]);
	sqlite3_stmt *q = prepare(r, sql);
	if (!q)
		return r->kind;
	sqlite3_bind_int64(q, 1, sweep);
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct sim_store_point_value v = {
			.point = sqlite3_column_int64(q, 0),
			.status = (const char *)sqlite3_column_text(q, 1),
			.reason = (const char *)sqlite3_column_text(q, 2),
			.fig = real_or_nan(q, 3),
			.key = (const char *)sqlite3_column_text(q, 4),
			.value = (const char *)sqlite3_column_text(q, 5),
		};
		fn(ctx, &v);
	}
	return finish(r, q, rc);
}

/* ---- step times ---------------------------------------------------------------------------- */

int sim_store_read_step_runs(struct sim_store_read *r, int64_t **runs, size_t *n)
{
	*runs = NULL;
	*n = 0;
	sqlite3_stmt *q = prepare(r, "SELECT r.id FROM runs r WHERE r.status = 'complete' AND "
				  "EXISTS (SELECT 1 FROM metrics m WHERE m.run_id = r.id AND "
				  "(m.name = 'step.1' OR m.name GLOB 'job.*.alone.step.1')) "
				  "ORDER BY r.id");
	if (!q)
		return r->kind;
	size_t cap = 0;
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (*n == cap)
			*runs = xreallocarray(*runs, cap = cap ? 2 * cap : 8, sizeof(int64_t));
		(*runs)[(*n)++] = sqlite3_column_int64(q, 0);
	}
	return finish(r, q, rc);
}

int sim_store_read_job_names(struct sim_store_read *r, int64_t run,
			     void (*fn)(void *ctx, const char *name), void *ctx)
{
	sqlite3_stmt *q = prepare(r, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
				  "name = 'jobs'");
	if (!q)
		return r->kind;
	int rc = sqlite3_step(q), has = rc == SQLITE_ROW;
	int out = finish(r, q, rc);
	if (out != SIM_STORE_READ_OK || !has)   /* a file of schema 3: no jobs */
		return out;
	if (!(q = prepare(r, "SELECT name FROM jobs WHERE run_id = ? ORDER BY job")))
		return r->kind;
	sqlite3_bind_int64(q, 1, run);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW)
		fn(ctx, (const char *)sqlite3_column_text(q, 0));
	return finish(r, q, rc);
}

int sim_store_read_steps(struct sim_store_read *r, int64_t run, const char *prefix,
			 double **v, size_t *n)
{
	*v = NULL;
	*n = 0;
	/* The prefix, then digits only (job names may hold '.' and '_'). */
	sqlite3_stmt *q = prepare(r, "SELECT value FROM metrics WHERE run_id = ?1 AND "
				  "substr(name, 1, length(?2)) = ?2 AND substr(name, length(?2) + 1) "
				  "GLOB '[0-9]*' AND NOT substr(name, length(?2) + 1) GLOB '*[^0-9]*' "
				  "AND value IS NOT NULL ORDER BY value");
	if (!q)
		return r->kind;
	sqlite3_bind_int64(q, 1, run);
	sqlite3_bind_text(q, 2, prefix, -1, SQLITE_STATIC);
	size_t cap = 0;
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (*n == cap)
			*v = xreallocarray(*v, cap = cap ? 2 * cap : 64, sizeof(double));
		(*v)[(*n)++] = sqlite3_column_double(q, 0);
	}
	return finish(r, q, rc);
}

int sim_store_read_config(struct sim_store_read *r, int64_t run, const char *const *keys,
			  size_t n, struct sim_store_config_value *out)
{
	memset(out, 0, n * sizeof(*out));
	sqlite3_stmt *q = prepare(r, "SELECT json_extract(config, ?2) FROM runs WHERE id = ?1");
	if (!q)
		return r->kind;
	sqlite3_bind_int64(q, 1, run);
	int rc = SQLITE_DONE;
	for (size_t i = 0; i < n; i++) {
		/* '$."a.b"': the key is one member, dots and all. */
		char *path = xasprintf("$.\"%s\"", keys[i]);
		sqlite3_reset(q);
		sqlite3_bind_text(q, 2, path, -1, SQLITE_TRANSIENT);
		free(path);
		rc = sqlite3_step(q);
		if (rc != SQLITE_ROW)
			break;
		struct sim_store_config_value *o = &out[i];
		o->present = sqlite3_column_type(q, 0) != SQLITE_NULL;
		const char *t = (const char *)sqlite3_column_text(q, 0);
		snprintf(o->text, sizeof(o->text), "%s", t ? t : "");
		o->num = sqlite3_column_double(q, 0);
		o->inum = sqlite3_column_int64(q, 0);
	}
	return finish(r, q, rc);
}
