/*
 * test_store.c - the SQLite recorder (sim/store.c): opening and schema
 * versions, the run lifecycle ('running' -> 'complete' or 'failed'), batched
 * commits, failure clean-up and collective result rows.
 *
 * Every test works in its own directory from mkdtemp() under /tmp and checks
 * what is stored with plain SQL, as a reader of the database would. Ops are
 * fed straight to sim_store_recorder.op_done, as the engine does. Nothing
 * depends on the wall clock (created_utc is checked for its format only).
 */
#include <check.h>
#include <dirent.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/store.h"
#include "tests/checkmain.h"
#include "tests/schema_v4.h"
#include "tests/tmpdir.h"

/* ---- helpers ------------------------------------------------------------ */

static struct sim_store *open_ok(const char *path)
{
	char err[512] = "";
	struct sim_store *st = sim_store_open(path, err, sizeof err);
	ck_assert_msg(st != NULL, "sim_store_open(%s): %s", path, err);
	return st;
}

/* The single integer a query returns (NULL reads as -1). */
__attribute__((format(printf, 2, 3)))
static int64_t q_int(sqlite3 *db, const char *fmt, ...)
{
	char sql[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	sqlite3_stmt *s;
	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK,
		      "%s: %s", sql, sqlite3_errmsg(db));
	ck_assert_msg(sqlite3_step(s) == SQLITE_ROW, "%s: no row", sql);
	int64_t v = sqlite3_column_type(s, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

/* The single number a query returns (a query without format arguments). */
static double q_double(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s;
	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK,
		      "%s: %s", sql, sqlite3_errmsg(db));
	ck_assert_msg(sqlite3_step(s) == SQLITE_ROW, "%s: no row", sql);
	double v = sqlite3_column_double(s, 0);
	sqlite3_finalize(s);
	return v;
}

/* The single text a query returns, copied (NULL reads as "NULL"). */
__attribute__((format(printf, 2, 3)))
static char *q_text(sqlite3 *db, const char *fmt, ...)
{
	char sql[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	sqlite3_stmt *s;
	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK,
		      "%s: %s", sql, sqlite3_errmsg(db));
	ck_assert_msg(sqlite3_step(s) == SQLITE_ROW, "%s: no row", sql);
	const unsigned char *t = sqlite3_column_text(s, 0);
	char *v = xstrdup(t ? (const char *)t : "NULL");
	sqlite3_finalize(s);
	return v;
}

#define ck_assert_query_str(db, expect, ...) do { \
	char *got_ = q_text(db, __VA_ARGS__); \
	ck_assert_str_eq(got_, expect); \
	free(got_); \
} while (0)

/* A second, read-only connection: what another process would see. */
static sqlite3 *reader(const char *path)
{
	sqlite3 *db;
	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	return db;
}

/* Feed one finished op to the recorder, as the engine does. */
static void fake_op(struct sim_store *st, uint32_t rank, enum sim_op_kind kind,
		    const char *name, sim_ps start, sim_ps end, double bytes, double flops)
{
	struct sim_op op = {
		.kind = (uint8_t)kind,
		.stream = kind == SIM_OP_COMPUTE ? 0 : 1,
		.name = name,
		.dur_ps = end - start,
		.flops = flops,
		.bytes = bytes,
		.layer = -1, .mb = -1, .chunk = -1,
	};
	sim_store_recorder.op_done(st, rank, &op, start, end);
}

/* n compute ops spread over 8 ranks. */
static void fake_ops(struct sim_store *st, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		fake_op(st, i % 8, SIM_OP_COMPUTE, "fwd", (sim_ps)i * 10, (sim_ps)i * 10 + 7,
			1e6, 2e9);
}

/* A complete run of nops compute ops; returns its id. */
static int64_t complete_run(struct sim_store *st, uint32_t nops)
{
	int64_t id = sim_store_run_begin(st, "clustersim run a.yaml", "{}", "flow", 8);
	ck_assert_msg(id > 0, "run_begin: %s", sim_store_error(st));
	fake_ops(st, nops);
	ck_assert_msg(sim_store_run_end(st, (sim_ps)nops * 10, nops, 0.25) == 0,
		      "run_end: %s", sim_store_error(st));
	return id;
}

/* ---- opening ------------------------------------------------------------ */

START_TEST(test_open_create)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store");
	char *path = tmp_path(&t, "new.db");
	struct sim_store *st = open_ok(path);
	sqlite3 *db = sim_store_db(st);
	ck_assert_int_eq(q_int(db, "PRAGMA user_version"), SIM_STORE_SCHEMA_VERSION);
	ck_assert_query_str(db, "wal", "PRAGMA journal_mode");
	ck_assert_int_eq(q_int(db, "PRAGMA foreign_keys"), 1);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
			       " AND name IN ('runs', 'ranks', 'op_defs', 'timeline',"
			       " 'timeline_blocks', 'links', 'collective_results', 'memory',"
			       " 'metrics')"), 9);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM sqlite_master"
			       " WHERE type = 'view' AND name = 'ops'"), 1);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index'"
			       " AND name = 'timeline_blocks_by_rank'"), 1);
	ck_assert_str_eq(sim_store_error(st), "");
	ck_assert_int_eq(sim_store_last_complete(st), -1);
	sim_store_close(st);
	ck_assert_int_eq(access(path, F_OK), 0);
	free(path);
	tmp_clear(&t);
}
END_TEST

START_TEST(test_reopen)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store");
	char *path = tmp_path(&t, "re.db");
	struct sim_store *st = open_ok(path);
	int64_t id = complete_run(st, 3);
	sim_store_close(st);

	st = open_ok(path);
	sqlite3 *db = sim_store_db(st);
	ck_assert_int_eq(q_int(db, "PRAGMA user_version"), SIM_STORE_SCHEMA_VERSION);
	ck_assert_int_eq(sim_store_last_complete(st), id);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM ops WHERE run_id = %lld",
			       (long long)id), 3);
	int64_t id2 = complete_run(st, 2);
	ck_assert_int_gt(id2, id);
	ck_assert_int_eq(sim_store_last_complete(st), id2);
	sim_store_close(st);
	free(path);
	tmp_clear(&t);
}
END_TEST

START_TEST(test_not_sqlite)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store");
	char *path = tmp_path(&t, "garbage.db");
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < 256; i++)
		fputs("this is not a database\n", f);
	fclose(f);

	char err[512] = "";
	struct sim_store *st = sim_store_open(path, err, sizeof err);
	ck_assert_ptr_null(st);
	ck_assert_msg(strstr(err, path) != NULL, "error does not name %s: %s", path, err);
	ck_assert_msg(strstr(err, "not a SQLite database") != NULL, "error: %s", err);
	free(path);
	tmp_clear(&t);
}
END_TEST

START_TEST(test_wrong_version)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store");
	char *path = tmp_path(&t, "old.db");
	sqlite3 *db;
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);

	char err[512] = "";
	ck_assert_ptr_null(sim_store_open(path, err, sizeof err));
	ck_assert_msg(strstr(err, path) != NULL, "error does not name %s: %s", path, err);
	ck_assert_msg(strstr(err, "version 99") != NULL, "error: %s", err);
	free(path);
	tmp_clear(&t);
}
END_TEST

/* The bytes of the file at path (NUL-terminated, length in *len). */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	size_t cap = 1 << 16, n = 0, got;
	char *buf = xmalloc(cap);
	while ((got = fread(buf + n, 1, cap - n, f)) > 0)
		if ((n += got) == cap)
			buf = xrealloc(buf, cap *= 2);
	fclose(f);
	*len = n;
	return buf;
}

/* Another program's SQLite file: refused as not ours, byte for byte as it
 * was (no tables added, no WAL, no user_version), whatever its pragmas. */
START_TEST(test_foreign_untouched)
{
	static const char *const makers[] = {
		"CREATE TABLE t (x); INSERT INTO t VALUES (1);",
		"PRAGMA application_id = 42; CREATE TABLE runs (x); CREATE TABLE ranks (y);",
		"PRAGMA user_version = 4; CREATE TABLE notes (x);",
		"PRAGMA user_version = 4; PRAGMA application_id = 7;",
	};
	for (size_t i = 0; i < sizeof makers / sizeof makers[0]; i++) {
		struct tmp t = { .dir = "" };
		tmp_init(&t, "test_store");
		char *path = tmp_path(&t, "other.db");
		sqlite3 *db;
		ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
		ck_assert_int_eq(sqlite3_exec(db, makers[i], NULL, NULL, NULL), SQLITE_OK);
		sqlite3_close(db);
		size_t n0, n1;
		char *before = slurp(path, &n0), err[512] = "";
		enum sim_store_fail why = SIM_STORE_FAIL_NONE;
		ck_assert_ptr_null(sim_store_open_why(path, &why, err, sizeof err));
		ck_assert_int_eq(why, SIM_STORE_NOT_OURS);
		ck_assert_msg(strstr(err, path) && strstr(err, "another program"), "%s: %s",
			      makers[i], err);
		char *after = slurp(path, &n1);
		ck_assert_msg(n0 == n1 && !memcmp(before, after, n0), "%s: the file changed",
			      makers[i]);
		char *wal = xasprintf("%s-wal", path);
		ck_assert_msg(access(wal, F_OK) != 0, "%s: a WAL file was left", makers[i]);
		free(wal);
		free(before);
		free(after);
		free(path);
		tmp_clear(&t);
	}
}
END_TEST

/* A new file, and a zero-length one, get clustersim's application_id; a
 * database of an older clustersim (no id) still opens and gets it. */
START_TEST(test_application_id)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store");
	char *path = tmp_path(&t, "new.db"), *empty = tmp_path(&t, "empty.db");
	FILE *f = fopen(empty, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	sim_store_close(open_ok(path));
	sim_store_close(open_ok(empty));
	sqlite3 *db;
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(q_int(db, "PRAGMA application_id"), SIM_STORE_APPLICATION_ID);
	ck_assert_int_eq(sqlite3_exec(db, "PRAGMA application_id = 0", NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	ck_assert_int_eq(sqlite3_open(empty, &db), SQLITE_OK);
	ck_assert_int_eq(q_int(db, "PRAGMA application_id"), SIM_STORE_APPLICATION_ID);
	sqlite3_close(db);

	sim_store_close(open_ok(path));   /* as an older clustersim left it */
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(q_int(db, "PRAGMA application_id"), SIM_STORE_APPLICATION_ID);
	ck_assert_int_eq(q_int(db, "PRAGMA user_version"), SIM_STORE_SCHEMA_VERSION);
	sqlite3_close(db);
	free(path);
	free(empty);
	tmp_clear(&t);
}
END_TEST

/* ---- runs --------------------------------------------------------------- */

START_TEST(test_run_lifecycle)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store");
	char *path = tmp_path(&t, "life.db");
	struct sim_store *st = open_ok(path);
	sqlite3 *db = sim_store_db(st);
	sqlite3 *other = reader(path);

	int64_t id = sim_store_run_begin(st, "clustersim run x.yaml", "{\"tp\":2}", "flow", 2);
	ck_assert_int_gt(id, 0);
	ck_assert_query_str(other, "running", "SELECT status FROM runs WHERE id = %lld",
			    (long long)id);
	char *utc = q_text(db, "SELECT created_utc FROM runs WHERE id = %lld", (long long)id);
	ck_assert_uint_eq(strlen(utc), 20);
	ck_assert_msg(utc[4] == '-' && utc[10] == 'T' && utc[19] == 'Z', "created_utc %s", utc);
	free(utc);

	ck_assert_int_eq(sim_store_rank(st, 0, 0, 0, NULL, NULL), 0);
	ck_assert_int_eq(sim_store_rank(st, 1, 0, 1, NULL, NULL), 0);
	fake_op(st, 0, SIM_OP_COMPUTE, "L0.fwd.mb0", 0, 1000, 4e6, 8e9);
	fake_op(st, 0, SIM_OP_COLL, "L0.allreduce", 1000, 3000, 1e9, 0);
	fake_op(st, 0, SIM_OP_SEND, "pp.send", 3000, 3500, 2e6, 0);
	fake_op(st, 1, SIM_OP_RECV, "pp.recv", 3000, 3500, 2e6, 0);
	fake_op(st, 1, SIM_OP_COMPUTE, "L1.fwd.mb0", 3500, 5000, 4e6, 8e9);
	/* Nothing of the run is visible to others before it ends. */
	ck_assert_int_eq(q_int(other, "SELECT count(*) FROM ops"), 0);
	ck_assert_int_eq(sim_store_run_end(st, 5000, 42, 0.5), 0);

	ck_assert_query_str(other, "complete", "SELECT status FROM runs WHERE id = %lld",
			    (long long)id);
	ck_assert_int_eq(q_int(other, "SELECT sim_end_ps FROM runs"), 5000);
	ck_assert_int_eq(q_int(other, "SELECT events FROM runs"), 42);
	ck_assert_int_eq(q_int(other, "SELECT ranks FROM runs"), 2);
	ck_assert_int_eq(q_int(other, "SELECT wall_s = 0.5 FROM runs"), 1);
	ck_assert_query_str(other, "flow", "SELECT fidelity FROM runs");
	ck_assert_query_str(other, "{\"tp\":2}", "SELECT config FROM runs");
	ck_assert_query_str(other, "clustersim run x.yaml", "SELECT command FROM runs");
	ck_assert_query_str(other, "NULL", "SELECT error FROM runs");
	ck_assert_int_eq(q_int(other, "SELECT length(version) > 0 FROM runs"), 1);

	ck_assert_int_eq(q_int(other, "SELECT count(*) FROM ops WHERE run_id = %lld",
			       (long long)id), 5);
	ck_assert_int_eq(q_int(other, "SELECT count(*) FROM ops WHERE kind = 'compute'"), 2);
	ck_assert_int_eq(q_int(other, "SELECT count(*) FROM ops WHERE kind = 'coll'"), 1);
	ck_assert_int_eq(q_int(other, "SELECT count(*) FROM ops WHERE kind = 'send'"), 1);
	ck_assert_int_eq(q_int(other, "SELECT count(*) FROM ops WHERE kind = 'recv'"), 1);
	ck_assert_int_eq(q_int(other, "SELECT sum(flops) FROM ops"), 16000000000LL);
	ck_assert_int_eq(q_int(other, "SELECT bytes FROM ops WHERE kind = 'coll'"), 1000000000);
	ck_assert_int_eq(q_int(other, "SELECT end_ps - start_ps FROM ops"
			       " WHERE name = 'L0.allreduce'"), 2000);
	ck_assert_int_eq(q_int(other, "SELECT stream FROM ops WHERE name = 'pp.recv'"), 1);
	ck_assert_int_eq(q_int(other, "SELECT sum(end_ps - start_ps) FROM ops WHERE rank = 1"),
			 2000);
	ck_assert_int_eq(q_int(other, "SELECT count(*) FROM ranks WHERE run_id = %lld",
			       (long long)id), 2);
	ck_assert_int_eq(q_int(other, "SELECT local_gpu FROM ranks WHERE rank = 1"), 1);
	ck_assert_int_eq(sim_store_last_complete(st), id);

	sqlite3_close(other);
	sim_store_close(st);
	free(path);
	tmp_clear(&t);
}
END_TEST

START_TEST(test_many_ops)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store");
	char *path = tmp_path(&t, "many.db");
	struct sim_store *st = open_ok(path);
	sqlite3 *other = reader(path);

	int64_t id = sim_store_run_begin(st, "run", "{}", "flow", 8);
	ck_assert_int_gt(id, 0);
	fake_ops(st, 300000);
	/* Ranks' buffers are written in blocks of 256 ops and committed in
	 * batches of 262,144 rows (block rows included): the first batch is
	 * visible, not the rest. */
	long long seen = q_int(other, "SELECT count(*) FROM ops");
	ck_assert_msg(seen > 250000 && seen < 300000 && seen % 256 == 0,
		      "%lld ops visible while running", seen);
	ck_assert_int_eq(q_int(other, "SELECT count(*) FROM timeline_blocks"), seen / 256);
	ck_assert_query_str(other, "running", "SELECT status FROM runs");
	fake_ops(st, 100000);
	ck_assert_int_eq(sim_store_run_end(st, 2000000, 400000, 1.0), 0);

	ck_assert_int_eq(q_int(other, "SELECT count(*) FROM ops WHERE run_id = %lld",
			       (long long)id), 400000);
	ck_assert_int_eq(q_int(other, "SELECT count(*) FROM ops WHERE run_id = %lld"
			       " AND rank = 3", (long long)id), 50000);
	/* One definition: every op is the same "fwd". */
	ck_assert_int_eq(q_int(other, "SELECT count(*) FROM op_defs"), 1);
	/* A rank's rows come back in the order it finished them: times rise,
	 * except once, where the second 100,000 ops start over from 0. */
	ck_assert_int_eq(q_int(other, "SELECT count(*) FROM (SELECT start_ps, lag(start_ps)"
			       " OVER (ORDER BY id) AS prev FROM ops WHERE rank = 5)"
			       " WHERE prev >= start_ps"), 1);
	ck_assert_query_str(other, "complete", "SELECT status FROM runs");
	sqlite3_close(other);
	sim_store_close(st);
	free(path);
	tmp_clear(&t);
}
END_TEST

START_TEST(test_run_fail)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store");
	char *path = tmp_path(&t, "fail.db");
	struct sim_store *st = open_ok(path);
	sqlite3 *db = sim_store_db(st);

	int64_t id = sim_store_run_begin(st, "run", "{}", "flow", 8);
	ck_assert_int_gt(id, 0);
	ck_assert_int_eq(sim_store_rank(st, 0, 0, 0, NULL, NULL), 0);
	fake_ops(st, 300000);  /* some rows are already committed */
	ck_assert_int_gt(q_int(db, "SELECT count(*) FROM timeline"), 0);
	struct sim_store_coll_row row = { .op = "allreduce", .algo = "ring", .ranks = 8 };
	ck_assert_int_eq(sim_store_coll_result(st, &row), 0);
	ck_assert_int_eq(sim_store_run_fail(st, "deadlock: rank 3 waits for rank 5"), 0);

	const char *tables[] = { "ops", "ranks", "links", "collective_results", "op_defs",
				 "timeline_blocks" };
	for (size_t i = 0; i < ARRAY_SIZE(tables); i++)
		ck_assert_int_eq(q_int(db, "SELECT count(*) FROM %s WHERE run_id = %lld",
				       tables[i], (long long)id), 0);
	/* The committed timeline rows went with their blocks. */
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM timeline"), 0);
	ck_assert_query_str(db, "failed", "SELECT status FROM runs WHERE id = %lld",
			    (long long)id);
	ck_assert_query_str(db, "deadlock: rank 3 waits for rank 5",
			    "SELECT error FROM runs WHERE id = %lld", (long long)id);
	ck_assert_int_eq(q_int(db, "SELECT sim_end_ps FROM runs"), -1);
	ck_assert_int_eq(sim_store_last_complete(st), -1);
	sim_store_close(st);
	free(path);
	tmp_clear(&t);
}
END_TEST

START_TEST(test_second_run)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store");
	char *path = tmp_path(&t, "two.db");
	struct sim_store *st = open_ok(path);
	sqlite3 *db = sim_store_db(st);

	int64_t first = complete_run(st, 3);
	int64_t second = sim_store_run_begin(st, "run", "{}", "analytic", 8);
	ck_assert_int_gt(second, first);
	fake_ops(st, 4);
	ck_assert_int_eq(sim_store_run_fail(st, "bad scenario"), 0);
	ck_assert_int_eq(sim_store_last_complete(st), first);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM ops WHERE run_id = %lld",
			       (long long)first), 3);
	ck_assert_query_str(db, "complete", "SELECT status FROM runs WHERE id = %lld",
			    (long long)first);

	int64_t third = complete_run(st, 5);
	ck_assert_int_eq(sim_store_last_complete(st), third);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM ops WHERE run_id = %lld",
			       (long long)first), 3);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM ops WHERE run_id = %lld",
			       (long long)third), 5);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM ops"), 8);
	/* Deleting a run (foreign keys on) takes its timeline rows along. */
	ck_assert_int_eq(sqlite3_exec(db, "DELETE FROM runs WHERE id = 1", NULL, NULL, NULL),
			 SQLITE_OK);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM timeline"), 5);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM op_defs WHERE run_id = 1"), 0);
	sim_store_close(st);
	free(path);
	tmp_clear(&t);
}
END_TEST

START_TEST(test_coll_result)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store");
	char *path = tmp_path(&t, "coll.db");
	struct sim_store *st = open_ok(path);

	int64_t id = sim_store_run_begin(st, "clustersim collective", "{}", "flow", 8);
	ck_assert_int_gt(id, 0);
	struct sim_store_coll_row row = {
		.op = "allreduce", .algo = "ring", .ranks = 8, .channels = 2,
		.bytes = 1e9, .time_s = 0.035140, .algbw_GBps = 28.457598,
		.busbw_GBps = 49.800797,
	};
	ck_assert_int_eq(sim_store_coll_result(st, &row), 0);
	ck_assert_int_eq(sim_store_run_end(st, 35140000000LL, 100, 0.01), 0);

	sqlite3_stmt *s;
	ck_assert_int_eq(sqlite3_prepare_v2(sim_store_db(st),
		"SELECT run_id, op, algo, ranks, channels, bytes, time_s, algbw_GBps,"
		" busbw_GBps FROM collective_results", -1, &s, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
	ck_assert_int_eq(sqlite3_column_int64(s, 0), id);
	ck_assert_str_eq((const char *)sqlite3_column_text(s, 1), "allreduce");
	ck_assert_str_eq((const char *)sqlite3_column_text(s, 2), "ring");
	ck_assert_int_eq(sqlite3_column_int(s, 3), 8);
	ck_assert_int_eq(sqlite3_column_int(s, 4), 2);
	ck_assert_double_eq(sqlite3_column_double(s, 5), row.bytes);
	ck_assert_double_eq(sqlite3_column_double(s, 6), row.time_s);
	ck_assert_double_eq(sqlite3_column_double(s, 7), row.algbw_GBps);
	ck_assert_double_eq(sqlite3_column_double(s, 8), row.busbw_GBps);
	ck_assert_int_eq(sqlite3_step(s), SQLITE_DONE);
	sqlite3_finalize(s);
	sim_store_close(st);
	free(path);
	tmp_clear(&t);
}
END_TEST

/* A jobs row and job_links rows; a job that does not fit has no times. A
 * failed run leaves neither. */
START_TEST(test_jobs_rows)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store");
	char *path = tmp_path(&t, "jobs.db");
	struct sim_store *st = open_ok(path);
	sqlite3 *db = sim_store_db(st);
	ck_assert_int_gt(sim_store_run_begin(st, "clustersim run jobs.yaml", "{}", "flow", 48), 0);
	struct sim_store_job_row a = {
		.job = 0, .name = "a", .model = "gpt3-1.3b", .strategy = "ddp", .first_node = 1,
		.nodes = 2, .first_rank = 8, .gpus = 16, .dp = 16, .tp = 1, .pp = 1, .cp = 1,
		.params = 1.3e9, .peak_bytes = 2.5e10, .capacity_bytes = 8.5e10, .fits = 1,
		.alone = { 0.0947, 0.0946, 0.0948, 0.0949, 6.9e5, 0.3968, 4 },
		.shared = { 0.0957, 0.0956, 0.0958, 0.0959, 6.8e5, 0.3928, 18 },
	}, b = { .job = 1, .name = "b", .gpus = 16, .first_rank = 24, .fits = 0 };
	ck_assert_int_eq(sim_store_job(st, &a), 0);
	ck_assert_int_eq(sim_store_job(st, &b), 0);
	ck_assert_int_eq(sim_store_job_link(st, "rail0.leaf1.up", 0, 5e10, 3.5e8), 0);
	ck_assert_int_eq(sim_store_job_link(st, "rail0.leaf1.up", 1, 5e10, 3.4e8), 0);
	ck_assert_int_eq(sim_store_run_end(st, 1000, 10, 0.01), 0);
	ck_assert_query_str(db, "a|gpt3-1.3b|ddp|1|2|8|16|16|1|1|1",
			    "SELECT name || '|' || model || '|' || strategy || '|' || first_node ||"
			    " '|' || nodes || '|' || first_rank || '|' || gpus || '|' || dp || '|' ||"
			    " tp || '|' || pp || '|' || cp FROM jobs WHERE job = 0");
	ck_assert_double_eq(q_double(db, "SELECT alone_p99_s FROM jobs WHERE job = 0"), 0.0949);
	ck_assert_double_eq(q_double(db, "SELECT shared_mfu FROM jobs WHERE job = 0"), 0.3928);
	ck_assert_int_eq(q_int(db, "SELECT shared_steps FROM jobs WHERE job = 0"), 18);
	ck_assert_query_str(db, "NULL", "SELECT shared_step_time_s FROM jobs WHERE job = 1");
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM job_links WHERE link = 'rail0.leaf1.up'"),
			 2);
	ck_assert_double_eq(q_double(db, "SELECT bytes FROM job_links WHERE job = 1"), 3.4e8);
	/* A failed run keeps no jobs rows. */
	ck_assert_int_gt(sim_store_run_begin(st, "clustersim run jobs.yaml", "{}", "flow", 48), 0);
	ck_assert_int_eq(sim_store_job(st, &a), 0);
	ck_assert_int_eq(sim_store_job_link(st, "rail0.leaf1.up", 0, 5e10, 3.5e8), 0);
	ck_assert_int_eq(sim_store_run_fail(st, "broken"), 0);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM jobs"), 2);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM job_links"), 2);
	sim_store_close(st);
	free(path);
	tmp_clear(&t);
}
END_TEST

/* A file of schema version 3 (before the jobs tables) opens: it gains them
 * and becomes the current version, its runs untouched. */
START_TEST(test_version3_upgrade)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store");
	char *path = tmp_path(&t, "v3.db");
	struct sim_store *st = open_ok(path);
	ck_assert_int_gt(sim_store_run_begin(st, "clustersim run x.yaml", "{}", "flow", 2), 0);
	ck_assert_int_eq(sim_store_run_end(st, 5, 1, 0.1), 0);
	sim_store_close(st);
	sqlite3 *db;
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "DROP TABLE jobs; DROP TABLE job_links; "
				      "PRAGMA user_version = 3", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	st = open_ok(path);
	db = sim_store_db(st);
	ck_assert_int_eq(q_int(db, "PRAGMA user_version"), SIM_STORE_SCHEMA_VERSION);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM jobs"), 0);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM job_links"), 0);
	ck_assert_query_str(db, "complete", "SELECT status FROM runs");
	sim_store_close(st);
	free(path);
	tmp_clear(&t);
}
END_TEST

/* A file of schema version 4 (before the ops' labels) opens: op_defs gains
 * the label columns and the ops view shows them; its runs keep NULL
 * labels, a new run's ops have theirs. */
START_TEST(test_version4_labels)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store");
	char *path = tmp_path(&t, "v4.db");
	struct sim_store *st = open_ok(path);
	ck_assert_int_gt(sim_store_run_begin(st, "clustersim run x.yaml", "{}", "flow", 1), 0);
	fake_op(st, 0, SIM_OP_COMPUTE, "L1.mb0.fwd.qkv", 0, 10, 1, 1);
	ck_assert_int_eq(sim_store_run_end(st, 10, 1, 0.1), 0);
	sim_store_close(st);
	sqlite3 *db;
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, SCHEMA_V4_DOWNGRADE, NULL, NULL, NULL),
		SQLITE_OK);
	sqlite3_close(db);
	st = open_ok(path);
	db = sim_store_db(st);
	ck_assert_int_eq(q_int(db, "PRAGMA user_version"), SIM_STORE_SCHEMA_VERSION);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM pragma_table_info('ops')"), 15);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM ops WHERE run_id = 1 AND phase IS NULL "
			       "AND name = 'L1.mb0.fwd.qkv'"), 1);
	ck_assert_int_gt(sim_store_run_begin(st, "clustersim run x.yaml", "{}", "flow", 1), 0);
	struct sim_op op = {
		.kind = SIM_OP_COMPUTE, .name = "L2.mb1.fwd.qkv", .dur_ps = 10,
		.layer = 2, .mb = 1, .chunk = -1, .phase = SIM_PHASE_FWD, .kernel = "qkv",
	};
	sim_store_recorder.op_done(st, 0, &op, 0, 10);
	ck_assert_int_eq(sim_store_run_end(st, 10, 1, 0.1), 0);
	ck_assert_query_str(db, "2|1||fwd|qkv", "SELECT layer || '|' || mb || '|' || "
			    "ifnull(chunk, '') || '|' || phase || '|' || kernel FROM ops WHERE "
			    "run_id = 2");
	sim_store_close(st);
	/* Opened again: nothing left to migrate. */
	st = open_ok(path);
	sim_store_close(st);
	free(path);
	tmp_clear(&t);
}
END_TEST

START_TEST(test_last_complete)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store");
	char *path = tmp_path(&t, "last.db");
	struct sim_store *st = open_ok(path);

	ck_assert_int_eq(sim_store_last_complete(st), -1);
	int64_t id = sim_store_run_begin(st, "run", "{}", "flow", 1);
	ck_assert_int_eq(sim_store_last_complete(st), -1);  /* running is not complete */
	ck_assert_int_eq(sim_store_run_end(st, 0, 0, 0), 0);
	ck_assert_int_eq(sim_store_last_complete(st), id);
	ck_assert_int_gt(sim_store_run_begin(st, "run", "{}", "flow", 1), id);
	ck_assert_int_eq(sim_store_run_fail(st, "no"), 0);
	ck_assert_int_eq(sim_store_last_complete(st), id);
	sim_store_close(st);
	free(path);
	tmp_clear(&t);
}
END_TEST

/* ---- errors ------------------------------------------------------------- */

START_TEST(test_recorder_error)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store");
	char *path = tmp_path(&t, "err.db");
	struct sim_store *st = open_ok(path);
	sqlite3 *db = sim_store_db(st);
	/* Make the database refuse one op, as a full disk would. */
	ck_assert_int_eq(sqlite3_exec(db,
		"CREATE TRIGGER refuse BEFORE INSERT ON op_defs WHEN NEW.name = 'bad'"
		" BEGIN SELECT RAISE(ABORT, 'injected failure'); END", NULL, NULL, NULL),
		SQLITE_OK);

	int64_t id = sim_store_run_begin(st, "run", "{}", "flow", 8);
	fake_ops(st, 10);
	fake_op(st, 0, SIM_OP_COMPUTE, "bad", 100, 200, 0, 0);
	fake_ops(st, 10);  /* not recorded: the run is broken */
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM op_defs"), 1);
	ck_assert_uint_eq(sim_store_ops_stored(st, 0), 2);  /* two of the first ten */
	ck_assert_int_eq(sim_store_rank(st, 0, 0, 0, NULL, NULL), -1);
	ck_assert_int_eq(sim_store_run_end(st, 1000, 10, 0), -1);
	ck_assert_msg(strstr(sim_store_error(st), "injected failure") != NULL,
		      "error: %s", sim_store_error(st));
	ck_assert_int_eq(sim_store_run_fail(st, sim_store_error(st)), 0);
	ck_assert_query_str(db, "failed", "SELECT status FROM runs WHERE id = %lld",
			    (long long)id);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM ops"), 0);

	/* The store is usable again. */
	int64_t next = complete_run(st, 4);
	ck_assert_int_eq(sim_store_last_complete(st), next);
	sim_store_close(st);
	free(path);
	tmp_clear(&t);
}
END_TEST

START_TEST(test_misuse)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store");
	char *path = tmp_path(&t, "misuse.db");
	struct sim_store *st = open_ok(path);

	ck_assert_int_eq(sim_store_run_end(st, 0, 0, 0), -1);
	ck_assert_msg(strstr(sim_store_error(st), "no run in progress") != NULL,
		      "error: %s", sim_store_error(st));
	ck_assert_int_eq(sim_store_run_fail(st, "x"), -1);
	int64_t id = sim_store_run_begin(st, "run", "{}", "flow", 2);
	ck_assert_int_gt(id, 0);
	ck_assert_int_eq(sim_store_run_begin(st, "run", "{}", "flow", 2), -1);
	ck_assert_msg(strstr(sim_store_error(st), "in progress") != NULL,
		      "error: %s", sim_store_error(st));
	ck_assert_int_eq(sim_store_rank(st, 1, 0, 1, NULL, NULL), 0);
	ck_assert_int_eq(sim_store_rank(st, 1, 0, 1, NULL, NULL), -1);  /* the same rank twice */
	ck_assert_msg(strstr(sim_store_error(st), "UNIQUE") != NULL,
		      "error: %s", sim_store_error(st));
	ck_assert_int_eq(sim_store_run_end(st, 0, 0, 0), -1);
	ck_assert_int_eq(sim_store_run_fail(st, "duplicate rank"), 0);
	ck_assert_int_eq(sim_store_last_complete(st), -1);
	sim_store_close(st);
	free(path);
	tmp_clear(&t);
}
END_TEST

START_TEST(test_close_running)
{
	struct tmp t = { .dir = "" };
	tmp_init(&t, "test_store");
	char *path = tmp_path(&t, "close.db");
	struct sim_store *st = open_ok(path);
	int64_t id = sim_store_run_begin(st, "run", "{}", "flow", 8);
	fake_ops(st, 100);
	sim_store_close(st);

	st = open_ok(path);
	sqlite3 *db = sim_store_db(st);
	ck_assert_query_str(db, "failed", "SELECT status FROM runs WHERE id = %lld",
			    (long long)id);
	ck_assert_int_eq(q_int(db, "SELECT count(*) FROM ops"), 0);
	sim_store_close(st);
	free(path);
	tmp_clear(&t);
}
END_TEST

static Suite *store_suite(void)
{
	Suite *s = suite_create("store");
	TCase *tc = tcase_create("open");
	tcase_add_test(tc, test_open_create);
	tcase_add_test(tc, test_reopen);
	tcase_add_test(tc, test_not_sqlite);
	tcase_add_test(tc, test_wrong_version);
	tcase_add_test(tc, test_foreign_untouched);
	tcase_add_test(tc, test_application_id);
	suite_add_tcase(s, tc);

	tc = tcase_create("runs");
	tcase_set_timeout(tc, 120);  /* 200,000 rows under sanitizers */
	tcase_add_test(tc, test_run_lifecycle);
	tcase_add_test(tc, test_many_ops);
	tcase_add_test(tc, test_run_fail);
	tcase_add_test(tc, test_second_run);
	tcase_add_test(tc, test_coll_result);
	tcase_add_test(tc, test_jobs_rows);
	tcase_add_test(tc, test_version3_upgrade);
	tcase_add_test(tc, test_version4_labels);
	tcase_add_test(tc, test_last_complete);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, test_recorder_error);
	tcase_add_test(tc, test_misuse);
	tcase_add_test(tc, test_close_running);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(store_suite());
}
