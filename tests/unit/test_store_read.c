/*
 * test_store_read.c - the reader half of the store module
 * (sim/store_read.c): opening read-only and the errors of files that are
 * not clustersim's, choosing a run, the timeline's window and rank set
 * through both cursors and the per-stream groups, whole tables, sweeps,
 * step times and configuration values.
 *
 * Every test writes a small database with the writer (sim/store.h) in its
 * own directory from mkdtemp(), then reads it back through the reader only.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/store.h"
#include "sim/store_read.h"
#include "tests/checkmain.h"
#include "tests/schema_v4.h"
#include "tests/tmpdir.h"

/* ---- helpers ------------------------------------------------------------ */

static struct sim_store *open_writer(const char *path)
{
	char err[512] = "";
	struct sim_store *st = sim_store_open(path, err, sizeof err);
	ck_assert_msg(st != NULL, "sim_store_open(%s): %s", path, err);
	return st;
}

static struct sim_store_read *open_reader(const char *path)
{
	char err[512] = "";
	int errnum = -1;
	struct sim_store_read *r = sim_store_read_open(path, &errnum, err, sizeof err);
	ck_assert_msg(r != NULL, "sim_store_read_open(%s): %d %s", path, errnum, err);
	return r;
}

/* One finished op of rank on stream, as the engine reports it. */
static void op_at(struct sim_store *st, uint32_t rank, uint32_t stream, const char *name,
		  sim_ps start, sim_ps end)
{
	struct sim_op op = {
		.kind = stream ? SIM_OP_COLL : SIM_OP_COMPUTE,
		.stream = (uint8_t)stream,
		.name = name,
		.dur_ps = end - start,
		.flops = 1e9 * (double)(rank + 1),
		.bytes = 1e6,
		.layer = -1, .mb = -1, .chunk = -1,
	};
	sim_store_recorder.op_done(st, rank, &op, start, end);
}

/*
 * The timeline of the window tests: 4 ranks; each has on stream 0 ops a
 * [0, 100), b [100, 200), c [200, 300) and a marker z at 150 (zero
 * length), and on stream 1 op x [50, 250). Recorded out of time order.
 */
static int64_t timeline_run(struct sim_store *st)
{
	int64_t id = sim_store_run_begin(st, "clustersim run t.yaml", "{\"a\":1}", "flow", 4);
	ck_assert_int_gt(id, 0);
	for (uint32_t rank = 0; rank < 4; rank++) {
		op_at(st, rank, 0, "b", 100, 200);
		op_at(st, rank, 0, "a", 0, 100);
		op_at(st, rank, 1, "x", 50, 250);
		op_at(st, rank, 0, "z", 150, 150);
		op_at(st, rank, 0, "c", 200, 300);
		uint32_t coords[5] = { 0, 0, 0, rank, 0 };
		ck_assert_int_eq(sim_store_rank(st, rank, rank / 2, rank % 2, coords, NULL), 0);
	}
	ck_assert_int_eq(sim_store_metric(st, "step_time_s", 3e-10), 0);
	ck_assert_int_eq(sim_store_run_end(st, 300, 20, 0.5), 0);
	return id;
}

/* What a cursor read, as "rank/stream/name/start-end" joined by spaces. */
static char *ops_text(struct sim_store_ops *c)
{
	char buf[1024] = "";
	struct sim_store_op op;
	int rc;
	while ((rc = sim_store_ops_next(c, &op)) == 1) {
		size_t n = strlen(buf);
		snprintf(buf + n, sizeof buf - n, "%s%d/%d/%s/%lld-%lld", n ? " " : "", op.rank,
			 op.stream, op.name, (long long)op.start_ps, (long long)op.end_ps);
	}
	ck_assert_int_eq(rc, 0);
	return xstrdup(buf);
}

static void stream_text(void *ctx, const struct sim_store_stream *s)
{
	char *buf = ctx;
	size_t n = strlen(buf);
	snprintf(buf + n, 512 - n, "%s%d/%d:%lld-%lld#%zu", n ? " " : "", s->rank, s->stream,
		 (long long)s->first_ps, (long long)s->last_ps, s->ops);
}

/* ---- opening ------------------------------------------------------------- */

START_TEST(test_open_missing)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store_read");
	char *path = tmp_path(&t, "none.db");
	char err[256];
	int errnum = 0;
	ck_assert_ptr_null(sim_store_read_open(path, &errnum, err, sizeof err));
	ck_assert_int_eq(errnum, ENOENT);
	ck_assert_int_eq(tmp_count(&t), 0);  /* read-only: nothing created */
	free(path);
	tmp_clear(&t);
}
END_TEST

/* A text file, another program's SQLite file and an empty file open (SQLite
 * reads lazily) and are told apart at the first query: not ours. */
START_TEST(test_not_ours)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store_read");
	char *text = tmp_path(&t, "text.db"), *other = tmp_path(&t, "other.db");
	char *empty = tmp_path(&t, "empty.db");
	FILE *f = fopen(text, "w");
	fputs("not a database, and long enough to be read as a header by SQLite .........\n", f);
	fclose(f);
	fclose(fopen(empty, "w"));
	sqlite3 *db;
	ck_assert_int_eq(sqlite3_open(other, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE t (x); INSERT INTO t VALUES (1)", NULL,
				      NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	const char *const paths[] = { text, other, empty };
	for (size_t i = 0; i < 3; i++) {
		struct sim_store_read *r = open_reader(paths[i]);
		int64_t run = 0;
		char status[16];
		ck_assert_int_eq(sim_store_read_pick(r, 0, &run, status, sizeof status),
				 SIM_STORE_READ_NOT_OURS);
		ck_assert_int_eq(sim_store_read_kind(r), SIM_STORE_READ_NOT_OURS);
		ck_assert_msg(strlen(sim_store_read_error(r)) > 0, "%s: no message", paths[i]);
		sim_store_read_close(r);
	}
	struct stat sb;
	ck_assert_int_eq(stat(empty, &sb), 0);
	ck_assert_int_eq(sb.st_size, 0);  /* left exactly as it was */
	free(text);
	free(other);
	free(empty);
	tmp_clear(&t);
}
END_TEST

/* The reader never writes: the file's bytes are the same after reading,
 * and its connection refuses a write. */
START_TEST(test_read_only)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store_read");
	char *path = tmp_path(&t, "r.db");
	struct sim_store *st = open_writer(path);
	timeline_run(st);
	sim_store_close(st);
	struct stat before, after;
	ck_assert_int_eq(stat(path, &before), 0);
	struct sim_store_read *r = open_reader(path);
	int64_t run;
	ck_assert_int_eq(sim_store_read_pick(r, 0, &run, NULL, 0), SIM_STORE_PICKED);
	ck_assert_int_ne(sqlite3_exec(sim_store_read_db(r), "CREATE TABLE w (x)", NULL, NULL,
				      NULL), SQLITE_OK);
	sim_store_read_close(r);
	ck_assert_int_eq(stat(path, &after), 0);
	ck_assert_int_eq(before.st_size, after.st_size);
	ck_assert_int_eq(before.st_mtime, after.st_mtime);
	free(path);
	tmp_clear(&t);
}
END_TEST

/* ---- runs ------------------------------------------------------------------ */

START_TEST(test_pick)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store_read");
	char *path = tmp_path(&t, "p.db");
	struct sim_store *st = open_writer(path);
	struct sim_store_read *r = open_reader(path);
	int64_t run = -5;
	char status[16];
	ck_assert_int_eq(sim_store_read_pick(r, 0, &run, status, sizeof status),
			 SIM_STORE_NONE_COMPLETE);
	int64_t first = timeline_run(st);
	int64_t second = timeline_run(st);
	int64_t failed = sim_store_run_begin(st, "clustersim run f.yaml", "{}", "flow", 1);
	ck_assert_int_eq(sim_store_run_fail(st, "stopped"), 0);
	int64_t running = sim_store_run_begin(st, "clustersim run r.yaml", "{}", "flow", 1);
	ck_assert_int_gt(running, failed);
	ck_assert_int_eq(sim_store_read_pick(r, 0, &run, status, sizeof status), SIM_STORE_PICKED);
	ck_assert_int_eq(run, second);  /* the newest complete one */
	ck_assert_int_eq(sim_store_read_pick(r, first, &run, status, sizeof status),
			 SIM_STORE_PICKED);
	ck_assert_int_eq(run, first);
	ck_assert_int_eq(sim_store_read_pick(r, failed, &run, status, sizeof status),
			 SIM_STORE_NOT_COMPLETE);
	ck_assert_str_eq(status, "failed");
	ck_assert_int_eq(sim_store_read_pick(r, running, &run, status, sizeof status),
			 SIM_STORE_NOT_COMPLETE);
	ck_assert_str_eq(status, "running");
	ck_assert_int_eq(sim_store_read_pick(r, 99, &run, status, sizeof status),
			 SIM_STORE_NO_RUN);
	sim_store_read_close(r);
	sim_store_close(st);
	free(path);
	tmp_clear(&t);
}
END_TEST

START_TEST(test_run_rows)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store_read");
	char *path = tmp_path(&t, "rows.db");
	struct sim_store *st = open_writer(path);
	int64_t id = timeline_run(st);
	sim_store_close(st);
	struct sim_store_read *r = open_reader(path);
	struct sim_store_run_row row;
	ck_assert_int_eq(sim_store_read_run(r, id, &row), SIM_STORE_READ_OK);
	ck_assert_str_eq(row.command, "clustersim run t.yaml");
	ck_assert_str_eq(row.fidelity, "flow");
	ck_assert_int_eq(row.ranks, 4);
	ck_assert_ptr_nonnull(row.created_utc);
	ck_assert_ptr_nonnull(row.version);
	sim_store_run_row_free(&row);
	ck_assert_int_eq(sim_store_read_run(r, id + 1, &row), 1);
	ck_assert_ptr_null(row.command);
	int nranks = 0;
	int64_t end = 0;
	ck_assert_int_eq(sim_store_read_extent(r, id, &nranks, &end), SIM_STORE_READ_OK);
	ck_assert_int_eq(nranks, 4);
	ck_assert_int_eq(end, 300);
	ck_assert_int_eq(sim_store_read_extent(r, id + 1, &nranks, &end), 1);
	int found = -1, node = -1, gpu = -1;
	ck_assert_int_eq(sim_store_read_rank_place(r, id, 3, &found, &node, &gpu), 0);
	ck_assert_int_eq(found, 1);
	ck_assert_int_eq(node, 1);
	ck_assert_int_eq(gpu, 1);
	ck_assert_int_eq(sim_store_read_rank_place(r, id, 7, &found, &node, &gpu), 0);
	ck_assert_int_eq(found, 0);
	sim_store_read_close(r);
	free(path);
	tmp_clear(&t);
}
END_TEST

/* ---- the timeline -------------------------------------------------------------- */

/* Every rank, the whole run: all ops of non-zero length, by rank and start;
 * the marker is left out. */
START_TEST(test_ops_all)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store_read");
	char *path = tmp_path(&t, "ops.db");
	struct sim_store *st = open_writer(path);
	int64_t id = timeline_run(st);
	sim_store_close(st);
	struct sim_store_read *r = open_reader(path);
	struct sim_store_window w = { .run = id, .from_ps = 0, .to_ps = 300 };
	struct sim_store_ops *c = sim_store_ops_open(r, &w, SIM_STORE_BY_RANK);
	ck_assert_ptr_nonnull(c);
	char *got = ops_text(c);
	ck_assert_str_eq(got, "0/0/a/0-100 0/1/x/50-250 0/0/b/100-200 0/0/c/200-300 "
			 "1/0/a/0-100 1/1/x/50-250 1/0/b/100-200 1/0/c/200-300 "
			 "2/0/a/0-100 2/1/x/50-250 2/0/b/100-200 2/0/c/200-300 "
			 "3/0/a/0-100 3/1/x/50-250 3/0/b/100-200 3/0/c/200-300");
	free(got);
	sim_store_ops_close(c);
	/* kind, bytes and FLOPs of an op */
	c = sim_store_ops_open(r, &w, SIM_STORE_BY_RANK);
	struct sim_store_op op;
	ck_assert_int_eq(sim_store_ops_next(c, &op), 1);
	ck_assert_str_eq(op.kind, "compute");
	ck_assert_double_eq(op.bytes, 1e6);
	ck_assert_double_eq(op.flops, 1e9);
	sim_store_ops_close(c);
	sim_store_read_close(r);
	free(path);
	tmp_clear(&t);
}
END_TEST

/* Ranks 1 and 3 and the window [120, 220): ops that overlap it, whole;
 * ranks 0 and 2 never, though rank 2 lies between the chosen ones. */
START_TEST(test_ops_window)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store_read");
	char *path = tmp_path(&t, "win.db");
	struct sim_store *st = open_writer(path);
	int64_t id = timeline_run(st);
	sim_store_close(st);
	struct sim_store_read *r = open_reader(path);
	const int ranks[] = { 1, 3 };
	struct sim_store_window w = { .run = id, .ranks = ranks, .nranks = 2, .from_ps = 120,
				      .to_ps = 220 };
	struct sim_store_ops *c = sim_store_ops_open(r, &w, SIM_STORE_BY_RANK);
	char *got = ops_text(c);
	ck_assert_str_eq(got, "1/1/x/50-250 1/0/b/100-200 1/0/c/200-300 "
			 "3/1/x/50-250 3/0/b/100-200 3/0/c/200-300");
	free(got);
	sim_store_ops_close(c);
	/* the window's end is exclusive: b, from 100, is not in [0, 100) */
	w.from_ps = 0;
	w.to_ps = 100;
	c = sim_store_ops_open(r, &w, SIM_STORE_BY_RANK);
	got = ops_text(c);
	ck_assert_str_eq(got, "1/0/a/0-100 1/1/x/50-250 3/0/a/0-100 3/1/x/50-250");
	free(got);
	sim_store_ops_close(c);
	/* one rank by stream, again and again from one cursor */
	w.from_ps = 120;
	w.to_ps = 220;
	c = sim_store_ops_open(r, &w, SIM_STORE_BY_STREAM);
	for (int i = 0; i < 2; i++) {
		sim_store_ops_rank(c, 2);
		got = ops_text(c);
		ck_assert_str_eq(got, "2/0/b/100-200 2/0/c/200-300 2/1/x/50-250");
		free(got);
	}
	sim_store_ops_close(c);
	/* the groups of the window */
	char buf[512] = "";
	ck_assert_int_eq(sim_store_read_streams(r, &w, SIM_STORE_SPAN, stream_text, buf),
			 SIM_STORE_READ_OK);
	ck_assert_str_eq(buf, "1/0:100-300#0 1/1:50-250#0 3/0:100-300#0 3/1:50-250#0");
	buf[0] = 0;
	ck_assert_int_eq(sim_store_read_streams(r, &w, SIM_STORE_COUNT, stream_text, buf),
			 SIM_STORE_READ_OK);
	ck_assert_str_eq(buf, "1/0:0-0#2 1/1:0-0#1 3/0:0-0#2 3/1:0-0#1");
	w.to_ps = 121;
	w.from_ps = 120;
	w.ranks = NULL;
	buf[0] = 0;
	ck_assert_int_eq(sim_store_read_streams(r, &w, SIM_STORE_SPAN, stream_text, buf),
			 SIM_STORE_READ_OK);
	ck_assert_str_eq(buf, "0/0:100-200#0 0/1:50-250#0 1/0:100-200#0 1/1:50-250#0 "
			 "2/0:100-200#0 2/1:50-250#0 3/0:100-200#0 3/1:50-250#0");
	/* another run: nothing */
	w.run = id + 1;
	buf[0] = 0;
	ck_assert_int_eq(sim_store_read_streams(r, &w, SIM_STORE_COUNT, stream_text, buf),
			 SIM_STORE_READ_OK);
	ck_assert_str_eq(buf, "");
	sim_store_read_close(r);
	free(path);
	tmp_clear(&t);
}
END_TEST

/* ---- whole tables -------------------------------------------------------------------- */

static size_t table_index(const char *name)
{
	for (size_t i = 0; i < sim_store_table_count(); i++)
		if (!strcmp(sim_store_table_name(i), name))
			return i;
	ck_abort_msg("no table %s", name);
	return 0;
}

START_TEST(test_tables)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store_read");
	char *path = tmp_path(&t, "tab.db");
	struct sim_store *st = open_writer(path);
	int64_t id = timeline_run(st);
	sim_store_close(st);
	struct sim_store_read *r = open_reader(path);
	ck_assert_str_eq(sim_store_table_name(0), "ops");
	ck_assert_int_eq(sim_store_table_per_run(table_index("metrics")), 1);
	ck_assert_int_eq(sim_store_table_per_run(table_index("sweeps")), 0);
	struct sim_store_rows *c = sim_store_rows_open(r, table_index("ops"), id);
	ck_assert_ptr_nonnull(c);
	static const char *const cols[] = { "run_id", "rank", "stream", "kind", "name",
					    "start_ps", "end_ps", "bytes", "flops", "id",
					    "layer", "mb", "chunk", "phase", "kernel" };
	ck_assert_int_eq(sim_store_rows_columns(c), ARRAY_SIZE(cols));
	for (size_t i = 0; i < ARRAY_SIZE(cols); i++)
		ck_assert_str_eq(sim_store_rows_name(c, i), cols[i]);
	size_t rows = 0;
	int rc;
	while ((rc = sim_store_rows_next(c)) == 1)
		rows++;
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(rows, 20);  /* the timeline table: markers too */
	sim_store_rows_close(c);
	c = sim_store_rows_open(r, table_index("metrics"), id);
	ck_assert_int_eq(sim_store_rows_next(c), 1);
	ck_assert_str_eq(sim_store_rows_text(c, 0), "1");
	ck_assert_str_eq(sim_store_rows_text(c, 1), "step_time_s");
	ck_assert_str_eq(sim_store_rows_text(c, 2), "3.0e-10");
	ck_assert_int_eq(sim_store_rows_next(c), 0);
	sim_store_rows_close(c);
	c = sim_store_rows_open(r, table_index("metrics"), id + 1);
	ck_assert_int_eq(sim_store_rows_next(c), 0);
	sim_store_rows_close(c);
	sim_store_read_close(r);
	free(path);
	tmp_clear(&t);
}
END_TEST

/* ---- labels -------------------------------------------------------------------------------- */

/* A run of two ops on rank 0: one labelled, one named as versions before
 * the labels named ops, without a label. */
static int64_t label_run(struct sim_store *st, int labelled)
{
	int64_t id = sim_store_run_begin(st, "clustersim run t.yaml", "{}", "flow", 1);
	struct sim_op op = {
		.kind = SIM_OP_COMPUTE, .name = "L3.mb2.c1.bwd.qkv_dx", .dur_ps = 10,
		.layer = -1, .mb = -1, .chunk = -1,
	};
	if (labelled)
		op.layer = 3, op.mb = 2, op.chunk = 1, op.phase = SIM_PHASE_BWD, op.kernel = "qkv_dx";
	sim_store_recorder.op_done(st, 0, &op, 0, 10);
	struct sim_op re = {
		.kind = SIM_OP_COMPUTE, .name = "L7.mb4.bwd.re.attn", .dur_ps = 10,
		.layer = -1, .mb = -1, .chunk = -1,
	};
	sim_store_recorder.op_done(st, 0, &re, 10, 20);
	uint32_t coords[5] = { 0 };
	ck_assert_int_eq(sim_store_rank(st, 0, 0, 0, coords, NULL), 0);
	ck_assert_int_eq(sim_store_run_end(st, 20, 2, 0.1), 0);
	return id;
}

/* "layer/mb/chunk/phase/kernel" of each op of run, by rank and time. */
static void labels_text(struct sim_store_read *r, int64_t run, char *buf, size_t len)
{
	struct sim_store_window w = { .run = run, .from_ps = 0, .to_ps = 100 };
	struct sim_store_ops *c = sim_store_ops_open(r, &w, SIM_STORE_BY_RANK);
	ck_assert_ptr_nonnull(c);
	struct sim_store_op op;
	buf[0] = 0;
	while (sim_store_ops_next(c, &op) == 1) {
		size_t n = strlen(buf);
		snprintf(buf + n, len - n, "%s%d/%d/%d/%s/%s", n ? " " : "", op.layer, op.mb,
			 op.chunk, op.phase ? sim_phase_name(op.phase) : "-",
			 op.kernel ? op.kernel : "-");
	}
	sim_store_ops_close(c);
}

/* Labels are read as written; a run without any has them from its names,
 * in a database of this version and in one from before the labels. */
START_TEST(test_labels)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store_read");
	char *path = tmp_path(&t, "labels.db");
	struct sim_store *st = open_writer(path);
	int64_t with = label_run(st, 1), without = label_run(st, 0);
	sim_store_close(st);
	struct sim_store_read *r = open_reader(path);
	char text[256];
	labels_text(r, with, text, sizeof(text));
	ck_assert_str_eq(text, "3/2/1/bwd/qkv_dx -1/-1/-1/-/-");
	labels_text(r, without, text, sizeof(text));
	ck_assert_str_eq(text, "3/2/1/bwd/- 7/4/-1/recompute/-");
	sim_store_read_close(r);
	/* The same file as version 4 wrote it: no label columns. */
	sqlite3 *db;
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, SCHEMA_V4_DOWNGRADE, NULL, NULL, NULL),
		SQLITE_OK);
	sqlite3_close(db);
	r = open_reader(path);
	labels_text(r, with, text, sizeof(text));
	ck_assert_str_eq(text, "3/2/1/bwd/- 7/4/-1/recompute/-");
	sim_store_read_close(r);
	free(path);
	tmp_clear(&t);
}
END_TEST

/* ---- sweeps ------------------------------------------------------------------------------ */

struct points_seen {
	char text[512];
};

static void point_text(void *ctx, const struct sim_store_point_value *v)
{
	struct points_seen *p = ctx;
	size_t n = strlen(p->text);
	snprintf(p->text + n, sizeof p->text - n, "%s%lld:%s:%s:%g:%s=%s", n ? " " : "",
		 (long long)v->point, v->status, v->reason ? v->reason : "-", v->fig, v->key,
		 v->value);
}

static int figure_of(const char *name)
{
	for (int i = 0; i < SIM_STORE_POINT_FIGURES; i++)
		if (!strcmp(sim_store_point_figure[i], name))
			return i;
	ck_abort_msg("no figure %s", name);
	return -1;
}

START_TEST(test_sweeps)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store_read");
	char *path = tmp_path(&t, "sw.db");
	struct sim_store *st = open_writer(path);
	struct sim_store_read *r = open_reader(path);
	int64_t sweep = 0;
	char *cmd = NULL;
	ck_assert_int_eq(sim_store_read_sweep(r, 0, &sweep, &cmd), 1);
	int resumed;
	int64_t a = sim_store_sweep_open(st, "sig-a", NULL, "a.yaml", "[]", &resumed);
	int64_t b = sim_store_sweep_open(st, "sig-b", "clustersim sweep b.yaml", "b.yaml", "[]",
					 &resumed);
	ck_assert_int_gt(b, a);
	const char *keys[] = { "parallel.zero", "training.micro_batch" };
	const char *v0[] = { "0", "1" }, *v1[] = { "1", "1" };
	struct sim_store_point p = { .point = 0, .status = "ok", .keys = keys, .values = v0,
				     .nvalues = 2 };
	for (int i = 0; i < SIM_STORE_POINT_FIGURES; i++)
		p.fig[i] = 10 + i;
	ck_assert_int_eq(sim_store_sweep_point(st, b, &p), 0);
	p = (struct sim_store_point){ .point = 1, .status = "no_fit", .reason = "too big",
				      .keys = keys, .values = v1, .nvalues = 2 };
	for (int i = 0; i < SIM_STORE_POINT_FIGURES; i++)
		p.fig[i] = NAN;
	ck_assert_int_eq(sim_store_sweep_point(st, b, &p), 0);
	ck_assert_int_eq(sim_store_read_sweep(r, 0, &sweep, &cmd), 0);
	ck_assert_int_eq(sweep, b);
	ck_assert_str_eq(cmd, "clustersim sweep b.yaml");
	free(cmd);
	ck_assert_int_eq(sim_store_read_sweep(r, a, &sweep, &cmd), 0);
	ck_assert_str_eq(cmd, "a.yaml");  /* no command: the scenario */
	free(cmd);
	ck_assert_int_eq(sim_store_read_sweep(r, 99, &sweep, &cmd), 1);
	struct points_seen seen = { "" };
	ck_assert_int_eq(sim_store_read_points(r, b, figure_of("mfu"), point_text, &seen), 0);
	ck_assert_str_eq(seen.text, "0:ok:-:12:parallel.zero=0 0:ok:-:12:training.micro_batch=1 "
			 "1:no_fit:too big:nan:parallel.zero=1 "
			 "1:no_fit:too big:nan:training.micro_batch=1");
	/* each figure reads back from its own column, as the writer stored it */
	for (int i = 0; i < SIM_STORE_POINT_FIGURES; i++) {
		seen.text[0] = 0;
		ck_assert_int_eq(sim_store_read_points(r, b, i, point_text, &seen), 0);
		char want[32];
		snprintf(want, sizeof want, "0:ok:-:%d:", 10 + i);
		ck_assert_msg(!strncmp(seen.text, want, strlen(want)), "%s: %s",
			      sim_store_point_figure[i], seen.text);
	}
	/* the list names the schema's columns, in order, after the reason */
	sqlite3_stmt *q;
	ck_assert_int_eq(sqlite3_prepare_v2(sim_store_read_db(r), "SELECT name FROM "
					    "pragma_table_info('sweep_points') ORDER BY cid", -1,
					    &q, NULL), SQLITE_OK);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
	for (int i = 0; i < SIM_STORE_POINT_FIGURES; i++) {
		ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
		ck_assert_str_eq((const char *)sqlite3_column_text(q, 0), sim_store_point_figure[i]);
	}
	ck_assert_int_eq(sqlite3_step(q), SQLITE_DONE);
	sqlite3_finalize(q);
	sim_store_read_close(r);
	sim_store_close(st);
	free(path);
	tmp_clear(&t);
}
END_TEST

/* ---- step times and configuration ----------------------------------------------------- */

static void name_text(void *ctx, const char *name)
{
	char *buf = ctx;
	size_t n = strlen(buf);
	snprintf(buf + n, 128 - n, "%s%s", n ? " " : "", name);
}

START_TEST(test_steps)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store_read");
	char *path = tmp_path(&t, "st.db");
	struct sim_store *st = open_writer(path);
	int64_t one = timeline_run(st);  /* no steps */
	int64_t steps = sim_store_run_begin(st, "clustersim run s.yaml",
					    "{\"variability.jitter\":\"lognormal\","
					    "\"variability.jitter_cv\":0.05,"
					    "\"variability.stragglers\":2}", "flow", 1);
	static const char *const names[] = { "step.1", "step.3", "step.2", "step.10",
					      "step.1x", "steps.4", "job.a.b.step.1" };
	static const double values[] = { 0.3, 0.1, 0.2, 0.25, 9, 9, 7 };
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		ck_assert_int_eq(sim_store_metric(st, names[i], values[i]), 0);
	ck_assert_int_eq(sim_store_run_end(st, 10, 1, 0.1), 0);
	int64_t jobs = sim_store_run_begin(st, "clustersim run j.yaml", "{}", "flow", 2);
	struct sim_store_job_row a = { .job = 1, .name = "a.b" }, b = { .job = 0, .name = "c" };
	ck_assert_int_eq(sim_store_job(st, &a), 0);
	ck_assert_int_eq(sim_store_job(st, &b), 0);
	ck_assert_int_eq(sim_store_metric(st, "job.a.b.alone.step.1", 1), 0);
	ck_assert_int_eq(sim_store_run_end(st, 10, 1, 0.1), 0);
	sim_store_close(st);

	struct sim_store_read *r = open_reader(path);
	int64_t *runs;
	size_t n;
	ck_assert_int_eq(sim_store_read_step_runs(r, &runs, &n), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(runs[0], steps);
	ck_assert_int_eq(runs[1], jobs);
	free(runs);
	double *v;
	ck_assert_int_eq(sim_store_read_steps(r, steps, "step.", &v, &n), 0);
	ck_assert_int_eq(n, 4);  /* digits only after the prefix; sorted by value */
	ck_assert_double_eq(v[0], 0.1);
	ck_assert_double_eq(v[1], 0.2);
	ck_assert_double_eq(v[2], 0.25);
	ck_assert_double_eq(v[3], 0.3);
	free(v);
	ck_assert_int_eq(sim_store_read_steps(r, steps, "job.a.b.step.", &v, &n), 0);
	ck_assert_int_eq(n, 1);
	free(v);
	ck_assert_int_eq(sim_store_read_steps(r, one, "step.", &v, &n), 0);
	ck_assert_int_eq(n, 0);
	free(v);
	char buf[128] = "";
	ck_assert_int_eq(sim_store_read_job_names(r, jobs, name_text, buf), 0);
	ck_assert_str_eq(buf, "c a.b");
	buf[0] = 0;
	ck_assert_int_eq(sim_store_read_job_names(r, steps, name_text, buf), 0);
	ck_assert_str_eq(buf, "");

	static const char *const keys[] = { "variability.jitter", "variability.jitter_cv",
					    "variability.gpu", "variability.stragglers" };
	struct sim_store_config_value cv[4];
	ck_assert_int_eq(sim_store_read_config(r, steps, keys, 4, cv), 0);
	ck_assert_int_eq(cv[0].present, 1);
	ck_assert_str_eq(cv[0].text, "lognormal");
	ck_assert_double_eq(cv[1].num, 0.05);
	ck_assert_int_eq(cv[2].present, 0);
	ck_assert_int_eq(cv[3].inum, 2);
	ck_assert_int_eq(sim_store_read_config(r, steps + 99, keys, 4, cv), 0);
	ck_assert_int_eq(cv[0].present, 0);
	sim_store_read_close(r);
	free(path);
	tmp_clear(&t);
}
END_TEST

/* A failed statement of the store module's own files, kept by the reader:
 * its kind and SQLite's message, as for the reader's own queries. */
START_TEST(test_note)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store_read");
	char *path = tmp_path(&t, "w.db");
	struct sim_store *st = open_writer(path);
	timeline_run(st);
	sim_store_close(st);
	struct sim_store_read *r = open_reader(path);
	sqlite3 *db = sim_store_read_db(r);
	ck_assert_int_eq(sqlite3_exec(db, "SELECT 1 FROM runs", NULL, NULL, NULL), SQLITE_OK);
	ck_assert_int_ne(sqlite3_exec(db, "SELECT * FROM missing", NULL, NULL, NULL), SQLITE_OK);
	sim_store_read_note(r);
	ck_assert_int_eq(sim_store_read_kind(r), SIM_STORE_READ_NOT_OURS);
	ck_assert_str_eq(sim_store_read_error(r), "no such table: missing");
	sim_store_read_close(r);
	free(path);
	tmp_clear(&t);
}
END_TEST

static Suite *store_read_suite(void)
{
	Suite *s = suite_create("store_read");
	TCase *tc = tcase_create("open");
	tcase_add_test(tc, test_open_missing);
	tcase_add_test(tc, test_not_ours);
	tcase_add_test(tc, test_read_only);
	tcase_add_test(tc, test_note);
	suite_add_tcase(s, tc);

	tc = tcase_create("read");
	tcase_add_test(tc, test_pick);
	tcase_add_test(tc, test_run_rows);
	tcase_add_test(tc, test_ops_all);
	tcase_add_test(tc, test_ops_window);
	tcase_add_test(tc, test_tables);
	tcase_add_test(tc, test_labels);
	tcase_add_test(tc, test_sweeps);
	tcase_add_test(tc, test_steps);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(store_read_suite());
}
