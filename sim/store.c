/*
 * store.c - the SQLite recorder (store.h); docs/schema.md documents the
 * tables written here.
 *
 * One connection in WAL mode with a busy timeout; every statement is prepared
 * once in sim_store_open() and reused (reset and cleared after each step).
 *
 * Invariants of a run:
 *  - The runs row is inserted and committed alone, with status 'running',
 *    before any of the run's rows; a write transaction is then kept open and
 *    committed every STORE_BATCH_ROWS rows, so memory stays bounded and no
 *    row costs an fsync.
 *  - Timelines are written as blocks: the recorder keeps up to
 *    STORE_BLOCK_ROWS finished ops per rank in memory and writes a rank's
 *    buffer, when full and at the end of the run, as consecutive rows of
 *    `timeline` (STORE_MULTI_ROWS rows per INSERT statement) and one
 *    `timeline_blocks` row naming the rank and the rowid range. A row is
 *    four integers (stream, op, start, end); what an op is (kind, name,
 *    bytes, FLOPs) is written once per run in `op_defs`; the `ops` view
 *    joins the three, blocks first (CROSS JOIN fixes that order: left to
 *    itself, the planner may build an automatic index over the timeline
 *    for a query that names a rank without a run). Without a per-row index, the writer stays above 2
 *    million rows a second (docs/performance.md), and a rank's timeline is
 *    still found through the small block index.
 *  - The status becomes 'complete' in the same transaction as the last rows,
 *    so a reader that selects complete runs never sees a partial one.
 *  - The first failed write of a run "breaks" it: st->err keeps that first
 *    message, later writes are skipped, sim_store_run_end() returns -1 and
 *    the caller is expected to call sim_store_run_fail(). The recorder
 *    callback cannot return an error, which is why the error is sticky.
 *
 * Nothing here aborts on a database error: every failure is -1 with the
 * message (including sqlite3_errmsg) in st->err.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "sim/store.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0.1.0"
#endif

#define STR_(x) #x
#define STR(x) STR_(x)

/* Rows written between two commits of a run. */
#define STORE_BATCH_ROWS 262144u
/* Finished ops a rank's buffer holds before it is written as a block. */
#define STORE_BLOCK_ROWS 256u
/* Rows per multi-row INSERT (timeline and memory). */
#define STORE_MULTI_ROWS 64
/* How long a writer waits for another connection's lock, in ms. */
#define STORE_BUSY_TIMEOUT_MS 10000

static void store_op_done(void *ctx, uint32_t rank, const struct sim_op *op,
			  sim_ps start, sim_ps end);
static void store_forget(struct sim_store *st);
static void store_mem(void *ctx, uint32_t rank, sim_ps t, unsigned cat, double bytes_now);

const struct sim_recorder_ops sim_store_recorder = {
	.op_done = store_op_done,
	.mem = store_mem,
};

/* The schema; every statement is idempotent (see docs/schema.md). */
static const char store_schema[] =
	"CREATE TABLE IF NOT EXISTS runs (\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  created_utc TEXT NOT NULL,\n"
	"  command TEXT,\n"
	"  config TEXT,\n"
	"  fidelity TEXT,\n"
	"  status TEXT NOT NULL CHECK (status IN ('running', 'complete', 'failed')),\n"
	"  ranks INTEGER,\n"
	"  sim_end_ps INTEGER,\n"
	"  events INTEGER,\n"
	"  wall_s REAL,\n"
	"  error TEXT,\n"
	"  version TEXT);\n"
	"CREATE TABLE IF NOT EXISTS ranks (\n"
	"  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
	"  rank INTEGER NOT NULL,\n"
	"  node INTEGER,\n"
	"  local_gpu INTEGER,\n"
	"  tp INTEGER, cp INTEGER, pp INTEGER, dp INTEGER, ep INTEGER,\n"
	"  compute_ps INTEGER, exposed_comm_ps INTEGER, idle_ps INTEGER, end_ps INTEGER,\n"
	"  peak_bytes REAL,\n"
	"  ops_stored INTEGER,\n"
	"  interference_ps INTEGER,\n"
	"  PRIMARY KEY (run_id, rank));\n"
	"CREATE TABLE IF NOT EXISTS op_defs (\n"
	"  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
	"  op INTEGER NOT NULL,\n"
	"  kind TEXT,\n"
	"  name TEXT,\n"
	"  bytes REAL,\n"
	"  flops REAL,\n"
	"  layer INTEGER,\n"
	"  mb INTEGER,\n"
	"  chunk INTEGER,\n"
	"  phase TEXT,\n"
	"  kernel TEXT,\n"
	"  PRIMARY KEY (run_id, op)) WITHOUT ROWID;\n"
	"CREATE TABLE IF NOT EXISTS timeline (\n"
	"  stream INTEGER,\n"
	"  op INTEGER,\n"
	"  start_ps INTEGER,\n"
	"  end_ps INTEGER);\n"
	"CREATE TABLE IF NOT EXISTS timeline_blocks (\n"
	"  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
	"  rank INTEGER NOT NULL,\n"
	"  first_row INTEGER NOT NULL,\n"
	"  last_row INTEGER NOT NULL);\n"
	"CREATE INDEX IF NOT EXISTS timeline_blocks_by_rank\n"
	"  ON timeline_blocks (run_id, rank, first_row);\n"
	"CREATE TRIGGER IF NOT EXISTS timeline_blocks_delete AFTER DELETE ON timeline_blocks\n"
	"  BEGIN DELETE FROM timeline WHERE rowid BETWEEN OLD.first_row AND OLD.last_row; END;\n"
	"CREATE VIEW IF NOT EXISTS ops (run_id, rank, stream, kind, name, start_ps, end_ps,\n"
	"    bytes, flops, id, layer, mb, chunk, phase, kernel) AS\n"
	"  SELECT b.run_id, b.rank, t.stream, d.kind, d.name, t.start_ps, t.end_ps,\n"
	"         d.bytes, d.flops, t.rowid, d.layer, d.mb, d.chunk, d.phase, d.kernel\n"
	"  FROM timeline_blocks b\n"
	"  CROSS JOIN timeline t ON t.rowid BETWEEN b.first_row AND b.last_row\n"
	"  CROSS JOIN op_defs d ON d.run_id = b.run_id AND d.op = t.op;\n"
	"CREATE TABLE IF NOT EXISTS links (\n"
	"  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
	"  link INTEGER NOT NULL,\n"
	"  name TEXT,\n"
	"  bw_Bps REAL,\n"
	"  bytes REAL,\n"
	"  busy_ps INTEGER,\n"
	"  PRIMARY KEY (run_id, link));\n"
	"CREATE TABLE IF NOT EXISTS collective_results (\n"
	"  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
	"  op TEXT,\n"
	"  algo TEXT,\n"
	"  ranks INTEGER,\n"
	"  channels INTEGER,\n"
	"  bytes REAL,\n"
	"  time_s REAL,\n"
	"  algbw_GBps REAL,\n"
	"  busbw_GBps REAL);\n"
	"CREATE TABLE IF NOT EXISTS memory (\n"
	"  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
	"  rank INTEGER NOT NULL,\n"
	"  t_ps INTEGER NOT NULL,\n"
	"  category TEXT NOT NULL,\n"
	"  bytes REAL NOT NULL);\n"
	"CREATE TABLE IF NOT EXISTS sweeps (\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  created_utc TEXT NOT NULL,\n"
	"  signature TEXT NOT NULL UNIQUE,\n"
	"  command TEXT,\n"
	"  scenario TEXT,\n"
	"  vary TEXT);\n"
	"CREATE TABLE IF NOT EXISTS sweep_points (\n"
	"  sweep_id INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,\n"
	"  point INTEGER NOT NULL,\n"
	"  status TEXT NOT NULL,\n"
	"  reason TEXT,\n"
	"  step_time_s REAL, tokens_per_s REAL, mfu REAL, hfu REAL,\n"
	"  peak_bytes REAL, capacity_bytes REAL, fits INTEGER,\n"
	"  compute_s REAL, exposed_comm_s REAL, bubble_s REAL, idle_s REAL,\n"
	"  gpus INTEGER, dp INTEGER, micro_batches INTEGER,\n"
	"  PRIMARY KEY (sweep_id, point));\n"
	"CREATE TABLE IF NOT EXISTS sweep_values (\n"
	"  sweep_id INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,\n"
	"  point INTEGER NOT NULL,\n"
	"  key TEXT NOT NULL,\n"
	"  value TEXT NOT NULL,\n"
	"  PRIMARY KEY (sweep_id, point, key));\n"
	"CREATE TABLE IF NOT EXISTS jobs (\n"
	"  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
	"  job INTEGER NOT NULL,\n"
	"  name TEXT NOT NULL,\n"
	"  model TEXT, strategy TEXT,\n"
	"  first_node INTEGER, nodes INTEGER, first_rank INTEGER, gpus INTEGER, start_s REAL,\n"
	"  dp INTEGER, tp INTEGER, pp INTEGER, cp INTEGER,\n"
	"  params REAL, peak_bytes REAL, capacity_bytes REAL, fits INTEGER,\n"
	"  alone_step_time_s REAL, alone_p50_s REAL, alone_p90_s REAL, alone_p99_s REAL,\n"
	"  alone_tokens_per_s REAL, alone_mfu REAL, alone_steps INTEGER,\n"
	"  shared_step_time_s REAL, shared_p50_s REAL, shared_p90_s REAL, shared_p99_s REAL,\n"
	"  shared_tokens_per_s REAL, shared_mfu REAL, shared_steps INTEGER,\n"
	"  PRIMARY KEY (run_id, job));\n"
	"CREATE TABLE IF NOT EXISTS job_links (\n"
	"  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
	"  link TEXT NOT NULL,\n"
	"  job INTEGER NOT NULL,\n"
	"  bw_Bps REAL,\n"
	"  bytes REAL,\n"
	"  PRIMARY KEY (run_id, link, job));\n"
	"CREATE TABLE IF NOT EXISTS plans (\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  created_utc TEXT NOT NULL,\n"
	"  command TEXT,\n"
	"  scenario TEXT,\n"
	"  gpus INTEGER,\n"
	"  candidates INTEGER, fits INTEGER, invalid INTEGER, no_memory INTEGER,\n"
	"  held_out INTEGER, replaced INTEGER,\n"
	"  collapsed INTEGER, spearman_rho REAL, wall_s REAL);\n"
	"CREATE TABLE IF NOT EXISTS plan_layouts (\n"
	"  plan_id INTEGER NOT NULL REFERENCES plans(id) ON DELETE CASCADE,\n"
	"  place INTEGER NOT NULL,\n"
	"  estimate_rank INTEGER,\n"
	"  tp INTEGER, sp INTEGER, pp INTEGER, vpp INTEGER, cp INTEGER, ep INTEGER, dp INTEGER,\n"
	"  micro_batch INTEGER, zero INTEGER, recompute TEXT,\n"
	"  estimate_s REAL, step_time_s REAL, flow_step_time_s REAL, failed TEXT,\n"
	"  mfu REAL, tokens_per_s REAL, peak_bytes REAL, reserve_bytes REAL, capacity_bytes REAL,\n"
	"  compute_s REAL, interference_s REAL, bubble_s REAL, exposed_comm_s REAL, idle_s REAL,\n"
	"  exposed_tp_s REAL, exposed_dp_s REAL, exposed_pp_s REAL, exposed_cp_s REAL,\n"
	"  exposed_host_s REAL,\n"
	"  families TEXT,\n"
	"  compared INTEGER,\n"
	"  schedule TEXT,\n"
	"  tp_overlap INTEGER,\n"
	"  PRIMARY KEY (plan_id, place));\n"
	"CREATE TABLE IF NOT EXISTS metrics (\n"
	"  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
	"  name TEXT NOT NULL,\n"
	"  value REAL,\n"
	"  PRIMARY KEY (run_id, name));\n"
	"PRAGMA application_id = " STR(SIM_STORE_APPLICATION_ID) ";\n"
	"PRAGMA user_version = " STR(SIM_STORE_SCHEMA_VERSION) ";";

/*
 * Connection settings. WAL lets readers (export, a second `report`) work
 * while a run is written; synchronous NORMAL syncs only at checkpoints, which
 * is safe in WAL mode (a power cut may lose the last commits, never corrupt).
 * The 16 MiB page cache holds the B-tree pages a batch touches (the
 * timeline's last pages, the block index, the op definitions).
 */
static const char *const store_pragmas[] = {
	"PRAGMA journal_mode = WAL",
	"PRAGMA synchronous = NORMAL",
	"PRAGMA foreign_keys = ON",
	"PRAGMA cache_size = -16384",
};

/* The prepared statements, one table: add an enum entry and its SQL. */
enum store_stmt {
	STMT_INSERT_RUN,
	STMT_INSERT_RANK,
	STMT_INSERT_DEF,
	STMT_INSERT_TL,
	STMT_INSERT_TL_MULTI,
	STMT_INSERT_BLOCK,
	STMT_INSERT_MEM_MULTI,
	STMT_INSERT_LINK,
	STMT_INSERT_COLL,
	STMT_INSERT_MEM,
	STMT_INSERT_METRIC,
	STMT_INSERT_JOB,
	STMT_INSERT_JOB_LINK,
	STMT_END_RUN,
	STMT_FAIL_RUN,
	STMT_DELETE_BLOCKS,
	STMT_DELETE_DEFS,
	STMT_DELETE_RANKS,
	STMT_DELETE_LINKS,
	STMT_DELETE_COLLS,
	STMT_DELETE_MEM,
	STMT_DELETE_METRICS,
	STMT_DELETE_JOBS,
	STMT_DELETE_JOB_LINKS,
	STMT_LAST_COMPLETE,
	STMT_SWEEP_FIND,
	STMT_SWEEP_INSERT,
	STMT_SWEEP_HAS,
	STMT_SWEEP_POINT,
	STMT_SWEEP_VALUE,
	STMT_SWEEP_GET,
	STMT_N
};

static const char *const store_sql[STMT_N] = {
	[STMT_INSERT_RUN] = "INSERT INTO runs (created_utc, command, config, fidelity,"
			    " status, ranks, version) VALUES (?, ?, ?, ?, 'running', ?, ?)",
	[STMT_INSERT_RANK] = "INSERT INTO ranks (run_id, rank, node, local_gpu, tp, cp, pp, dp,"
			     " ep, compute_ps, exposed_comm_ps, idle_ps, end_ps, peak_bytes,"
			     " ops_stored, interference_ps) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
			     " ?, ?, ?, ?)",
	[STMT_INSERT_DEF] = "INSERT INTO op_defs (run_id, op, kind, name, bytes, flops, layer,"
			    " mb, chunk, phase, kernel) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	[STMT_INSERT_TL] = "INSERT INTO timeline (stream, op, start_ps, end_ps) VALUES (?, ?, ?, ?)",
	[STMT_INSERT_TL_MULTI] = NULL,  /* built by store_prepare: STORE_MULTI_ROWS rows */
	[STMT_INSERT_BLOCK] = "INSERT INTO timeline_blocks (run_id, rank, first_row, last_row)"
			      " VALUES (?, ?, ?, ?)",
	[STMT_INSERT_MEM_MULTI] = NULL,  /* likewise */
	[STMT_INSERT_LINK] = "INSERT INTO links (run_id, link, name, bw_Bps, bytes, busy_ps)"
			     " VALUES (?, ?, ?, ?, ?, ?)",
	[STMT_INSERT_COLL] = "INSERT INTO collective_results (run_id, op, algo, ranks,"
			     " channels, bytes, time_s, algbw_GBps, busbw_GBps)"
			     " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
	[STMT_INSERT_MEM] = "INSERT INTO memory (run_id, rank, t_ps, category, bytes)"
			    " VALUES (?, ?, ?, ?, ?)",
	[STMT_INSERT_METRIC] = "INSERT OR REPLACE INTO metrics (run_id, name, value)"
			       " VALUES (?, ?, ?)",
	[STMT_INSERT_JOB] = "INSERT INTO jobs (run_id, job, name, model, strategy, first_node,"
			    " nodes, first_rank, gpus, dp, tp, pp, cp, params, peak_bytes,"
			    " capacity_bytes, fits, alone_step_time_s, alone_p50_s, alone_p90_s,"
			    " alone_p99_s, alone_tokens_per_s, alone_mfu, alone_steps,"
			    " shared_step_time_s, shared_p50_s, shared_p90_s, shared_p99_s,"
			    " shared_tokens_per_s, shared_mfu, shared_steps, start_s) VALUES (?, ?,"
			    " ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
			    " ?, ?, ?, ?, ?, ?)",
	[STMT_INSERT_JOB_LINK] = "INSERT INTO job_links (run_id, link, job, bw_Bps, bytes)"
				 " VALUES (?, ?, ?, ?, ?)",
	[STMT_END_RUN] = "UPDATE runs SET status = 'complete', sim_end_ps = ?,"
			 " events = ?, wall_s = ? WHERE id = ?",
	[STMT_FAIL_RUN] = "UPDATE runs SET status = 'failed', error = ? WHERE id = ?",
	[STMT_DELETE_BLOCKS] = "DELETE FROM timeline_blocks WHERE run_id = ?",
	[STMT_DELETE_DEFS] = "DELETE FROM op_defs WHERE run_id = ?",
	[STMT_DELETE_RANKS] = "DELETE FROM ranks WHERE run_id = ?",
	[STMT_DELETE_LINKS] = "DELETE FROM links WHERE run_id = ?",
	[STMT_DELETE_COLLS] = "DELETE FROM collective_results WHERE run_id = ?",
	[STMT_DELETE_MEM] = "DELETE FROM memory WHERE run_id = ?",
	[STMT_DELETE_METRICS] = "DELETE FROM metrics WHERE run_id = ?",
	[STMT_DELETE_JOBS] = "DELETE FROM jobs WHERE run_id = ?",
	[STMT_DELETE_JOB_LINKS] = "DELETE FROM job_links WHERE run_id = ?",
	[STMT_LAST_COMPLETE] = "SELECT max(id) FROM runs WHERE status = 'complete'",
	[STMT_SWEEP_FIND] = "SELECT id FROM sweeps WHERE signature = ?",
	[STMT_SWEEP_INSERT] = "INSERT OR IGNORE INTO sweeps (created_utc, signature, command, scenario,"
			      " vary)"
			      " VALUES (?, ?, ?, ?, ?)",
	[STMT_SWEEP_HAS] = "SELECT 1 FROM sweep_points WHERE sweep_id = ? AND point = ?",
	[STMT_SWEEP_POINT] = NULL,  /* built by store_prepare from sim_store_point_figure */
	[STMT_SWEEP_GET] = NULL,    /* likewise */
	[STMT_SWEEP_VALUE] = "INSERT OR REPLACE INTO sweep_values (sweep_id, point, key, value)"
			     " VALUES (?, ?, ?, ?)",
};

/* The figure columns of sweep_points, in the schema's order; the sweep
 * statements below and the readers (store_read.c) name them from here. */
const char *const sim_store_point_figure[SIM_STORE_POINT_FIGURES] = {
	"step_time_s", "tokens_per_s", "mfu", "hfu", "peak_bytes", "capacity_bytes", "fits",
	"compute_s", "exposed_comm_s", "bubble_s", "idle_s", "gpus", "dp", "micro_batches",
};

/* A finished op waiting in its rank's buffer. */
struct store_tl_row {
	sim_ps start, end;
	uint32_t def;
	uint32_t stream;
};

struct store_rank_buf {
	struct store_tl_row *rows;   /* STORE_BLOCK_ROWS, allocated on first use */
	uint32_t n;                  /* rows waiting                             */
	uint32_t stored;             /* rows written                             */
};

/* A memory change waiting for its multi-row insert. */
struct store_mem_row {
	sim_ps t;
	double bytes;
	uint32_t rank, cat;
};

/*
 * The run's op definitions: the engine's op (a pointer into a program, alive
 * while the run records) -> its op_defs id. Open addressing, under half full.
 * A hit is checked against the op's fields and name, so a program freed and
 * another allocated at the same address never borrow each other's rows.
 */
struct store_def {
	const struct sim_op *op;
	uint32_t id;
	uint8_t kind;
	uint32_t stream;
	double bytes, flops;
	char *name;
	uint32_t label;        /* label_hash of its label (fits the padding) */
};

struct store_defs {
	struct store_def *slot;
	uint32_t cap, n;       /* slots, slots in use                        */
	uint32_t next_id;      /* the next op_defs id of the run             */
};

struct sim_store {
	sqlite3 *db;
	sqlite3_stmt *stmt[STMT_N];
	int64_t run_id;     /* the run in progress, 0 if none              */
	uint32_t pending;   /* rows written since the last commit          */
	int broken;         /* a write of this run failed; err says which  */
	const char *mem_names[SIM_MEM_CATS];  /* category names of memory rows */
	struct store_rank_buf *bufs;          /* by rank                        */
	uint32_t nbufs;
	struct store_defs defs;
	struct store_mem_row mem[STORE_MULTI_ROWS];
	uint32_t nmem;
	enum sim_store_fail fail;             /* why opening failed            */
	char err[512];
};

/* ---- errors ------------------------------------------------------------ */

__attribute__((format(printf, 2, 3)))
static int store_err(struct sim_store *st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(st->err, sizeof st->err, fmt, ap);
	va_end(ap);
	return -1;
}

/* "what: <SQLite's message>", with the system's reason for an I/O error
 * ("disk I/O error (File too large)"): SQLite's record of it, else errno,
 * which the failed call left; call before anything else touches the db. */
static int store_db_err(struct sim_store *st, const char *what)
{
	int e = errno;
	int code = sqlite3_errcode(st->db) & 0xff, sys = sqlite3_system_errno(st->db);
	if (!sys && (code == SQLITE_IOERR || code == SQLITE_CANTOPEN))
		sys = e;
	if (sys && (code == SQLITE_IOERR || code == SQLITE_FULL || code == SQLITE_CANTOPEN))
		return store_err(st, "%s: %s (%s)", what, sqlite3_errmsg(st->db), strerror(sys));
	return store_err(st, "%s: %s", what, sqlite3_errmsg(st->db));
}

/* ---- statements and transactions ---------------------------------------- */

/* Run SQL without results (BEGIN, COMMIT, PRAGMA ...). */
static int store_exec(struct sim_store *st, const char *sql, const char *what)
{
	if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return store_db_err(st, what);
	return 0;
}

/*
 * Run sql, trying again while another connection holds a lock that
 * SQLite's busy handler does not wait for: two processes opening one new
 * file at once both switch it to WAL, and the second gets SQLITE_BUSY at
 * once (SQLite does not wait where waiting could deadlock). store_retry:
 * whether rc is such a lock and the busy timeout is not over yet, after a
 * 10 ms nap.
 */
static int store_retry(int rc, int *waited_ms)
{
	if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || *waited_ms >= STORE_BUSY_TIMEOUT_MS)
		return 0;
	const struct timespec nap = { 0, 10 * 1000 * 1000 };
	nanosleep(&nap, NULL);
	*waited_ms += 10;
	return 1;
}

static int store_exec_retry(struct sim_store *st, const char *sql, const char *what)
{
	int rc, waited_ms = 0;
	while ((rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL)) != SQLITE_OK)
		if (!store_retry(rc, &waited_ms))
			return store_db_err(st, what);
	return 0;
}

/* Step a write statement to completion and make it ready for reuse. */
static int store_step(struct sim_store *st, sqlite3_stmt *s, const char *what)
{
	int rc = sqlite3_step(s);
	int ret = rc == SQLITE_DONE ? 0 : store_db_err(st, what);
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return ret;
}

/* Bind text, or NULL for a NULL pointer; the caller steps before s dies. */
static void bind_text(sqlite3_stmt *s, int i, const char *text)
{
	if (text)
		sqlite3_bind_text(s, i, text, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, i);
}

/* v, or NULL when it is negative (a label's "none"). */
static void bind_int_or_null(sqlite3_stmt *s, int i, int64_t v)
{
	if (v >= 0)
		sqlite3_bind_int64(s, i, v);
	else
		sqlite3_bind_null(s, i);
}

/* Roll back the open transaction, if any (SQLite may have done so already). */
static void store_rollback(struct sim_store *st)
{
	if (!sqlite3_get_autocommit(st->db))
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
}

/* Mark the run broken: its later writes are skipped, run_end fails. */
static int store_break(struct sim_store *st)
{
	st->broken = 1;
	return -1;
}

/* Fail unless a run is in progress and unbroken; err keeps its first error. */
static int store_check_run(struct sim_store *st, const char *who)
{
	if (st->run_id <= 0)
		return store_err(st, "%s: no run in progress", who);
	return st->broken ? -1 : 0;
}

/* Commit the rows written so far and open the next transaction. */
static int store_commit_batch(struct sim_store *st)
{
	if (store_exec(st, "COMMIT", "committing rows") < 0 ||
	    store_exec(st, "BEGIN", "starting a transaction") < 0)
		return store_break(st);
	st->pending = 0;
	return 0;
}

/* Count rows written; commit every STORE_BATCH_ROWS rows. */
static int store_count(struct sim_store *st, uint32_t rows)
{
	st->pending += rows;
	if (st->pending < STORE_BATCH_ROWS)
		return 0;
	return store_commit_batch(st);
}

/* Step one row insert of the run; commit every STORE_BATCH_ROWS rows. */
static int store_row(struct sim_store *st, sqlite3_stmt *s, const char *what)
{
	sqlite3_bind_int64(s, 1, st->run_id);
	if (store_step(st, s, what) < 0)
		return store_break(st);
	return store_count(st, 1);
}

/* Step an insert whose parameters are all bound again before the next
 * step (no clearing: the multi-row statements bind hundreds). */
static int store_step_bound(struct sim_store *st, sqlite3_stmt *s, const char *what)
{
	int rc = sqlite3_step(s);
	sqlite3_reset(s);
	if (rc != SQLITE_DONE) {
		store_db_err(st, what);
		return store_break(st);
	}
	return 0;
}

/* ---- opening ------------------------------------------------------------ */

/* Open the connection; a path that cannot be opened is named in the error. */
static int store_connect(struct sim_store *st, const char *path)
{
	int rc = sqlite3_open_v2(path, &st->db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
	if (rc != SQLITE_OK) {
		/* A missing folder is a bad path; a folder or file that may not
		 * be written, a failure while running. */
		int sys = st->db ? sqlite3_system_errno(st->db) : 0;
		st->fail = sys == ENOENT || sys == ENOTDIR || sys == EISDIR ? SIM_STORE_NOT_OURS
									: SIM_STORE_UNWRITABLE;
		return store_err(st, "%s: cannot open database: %s%s%s%s", path,
				 st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc),
				 sys ? " (" : "", sys ? strerror(sys) : "", sys ? ")" : "");
	}
	sqlite3_busy_timeout(st->db, STORE_BUSY_TIMEOUT_MS);
	return 0;
}

/* An error while reading path's header: say plainly if it is not SQLite
 * (bad input); another (an I/O error) is a failure. */
static int store_path_err(struct sim_store *st, const char *path)
{
	if (sqlite3_errcode(st->db) == SQLITE_NOTADB) {
		st->fail = SIM_STORE_NOT_OURS;
		return store_err(st, "%s: not a SQLite database (%s); it is left as it was",
				 path, sqlite3_errmsg(st->db));
	}
	st->fail = SIM_STORE_UNWRITABLE;
	return store_db_err(st, path);
}

/*
 * Whose file path is, read before anything is written to it: clustersim's
 * (its application_id), new (an empty or zero-length file: no id, version
 * or schema object), or an older clustersim's (no id, but a user_version and
 * the runs and ranks tables). Anything else is refused, untouched. Its
 * schema version in *version, whether it has the id in *has_id. One
 * statement, so one snapshot: another process creating the schema at the
 * same moment is seen before or after, never half-way; retried while a
 * writer's lock is one SQLite's busy handler does not wait for.
 */
static int store_identify(struct sim_store *st, const char *path, int *version, int *has_id)
{
	static const char sql[] =
		"SELECT (SELECT application_id FROM pragma_application_id), "
		"(SELECT user_version FROM pragma_user_version), "
		"(SELECT count(*) FROM sqlite_master), "
		"(SELECT count(*) FROM sqlite_master WHERE type = 'table' "
		"AND name IN ('runs', 'ranks'))";
	int v[4] = { 0 }, rc, waited_ms = 0;
	do {
		sqlite3_stmt *s;
		if ((rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL)) != SQLITE_OK)
			continue;
		if ((rc = sqlite3_step(s)) == SQLITE_ROW)
			for (int k = 0; k < 4; k++)
				v[k] = sqlite3_column_int(s, k);
		sqlite3_finalize(s);
	} while (rc != SQLITE_ROW && store_retry(rc, &waited_ms));
	if (rc != SQLITE_ROW)
		return store_path_err(st, path);
	int app = v[0], objects = v[2], ours = v[3];
	*version = v[1];
	*has_id = app == SIM_STORE_APPLICATION_ID;
	if (*has_id || (app == 0 && *version == 0 && objects == 0) ||
	    (app == 0 && *version != 0 && ours == 2))
		return 0;
	st->fail = SIM_STORE_NOT_OURS;
	return store_err(st, "%s: a SQLite database of another program, not clustersim's "
			 "(application_id %d, user_version %d, %d tables, views or indexes): it "
			 "is left as it was; give --db a new file or a clustersim database",
			 path, app, *version, objects);
}

/* PRAGMA user_version (-1 if it cannot be read). */
static int store_user_version(struct sim_store *st)
{
	sqlite3_stmt *s;
	int v = -1;
	if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &s, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	return v;
}

/*
 * A database of version 3 to 7: the columns it lacks (the ops' labels in
 * op_defs, version 5; the ranks' interference_ps, version 6; the plan
 * layouts' schedule, version 7, and tp_overlap, version 8, where it has
 * plan_layouts: store_schema
 * makes the table whole where it has none), and the ops
 * view dropped for store_schema to make it again with them. Its earlier runs' ops have NULL labels; the readers
 * derive them from the names (store_read.c). Inside the schema's
 * transaction; 0 or -1.
 */
static int store_migrate_columns(struct sim_store *st)
{
	static const struct { const char *table, *col; } cols[] = {
		{ "op_defs", "layer INTEGER" }, { "op_defs", "mb INTEGER" },
		{ "op_defs", "chunk INTEGER" }, { "op_defs", "phase TEXT" },
		{ "op_defs", "kernel TEXT" }, { "ranks", "interference_ps INTEGER" },
		{ "plan_layouts", "schedule TEXT" }, { "plan_layouts", "tp_overlap INTEGER" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cols); i++) {
		char sql[160];
		size_t n = strcspn(cols[i].col, " ");
		/* the column's count, and whether the table is there at all */
		snprintf(sql, sizeof(sql), "SELECT count(*) FILTER (WHERE name = '%.*s'), "
			 "count(*) = 0 FROM pragma_table_info('%s')", (int)n, cols[i].col,
			 cols[i].table);
		sqlite3_stmt *s;
		int have = 0;
		if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
			return store_db_err(st, "adding the columns of a newer schema");
		if (sqlite3_step(s) == SQLITE_ROW)
			have = sqlite3_column_int(s, 0) || sqlite3_column_int(s, 1);
		sqlite3_finalize(s);
		snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s", cols[i].table,
			 cols[i].col);
		if (!have && store_exec(st, sql, "adding the columns of a newer schema") < 0)
			return -1;
	}
	return store_exec(st, "DROP VIEW IF EXISTS ops", "adding the columns of a newer schema");
}

/* Check whose file it is and its schema version, set the pragmas, create
 * the tables if new (and the application_id if missing). */
static int store_schema_init(struct sim_store *st, const char *path)
{
	int version = 0, has_id = 0;
	if (store_identify(st, path, &version, &has_id) < 0)
		return -1;
	/* Version 3 lacks the jobs tables, which creating the schema adds;
	 * versions 3 and 4 the ops' labels and 3 to 5 the ranks' interference,
	 * which store_migrate_columns adds. */
	if (version != 0 && (version < 3 || version > SIM_STORE_SCHEMA_VERSION)) {
		st->fail = SIM_STORE_NOT_OURS;
		return store_err(st, "%s: database schema version %d, but this clustersim "
				 "(%s) reads and writes version %d; use a new database file",
				 path, version, PACKAGE_VERSION, SIM_STORE_SCHEMA_VERSION);
	}
	/* From here on a failure is one of writing. */
	st->fail = SIM_STORE_UNWRITABLE;
	for (size_t i = 0; i < ARRAY_SIZE(store_pragmas); i++)
		if (store_exec_retry(st, store_pragmas[i], store_pragmas[i]) < 0)
			return -1;
	if (version == SIM_STORE_SCHEMA_VERSION && has_id)
		return 0;
	if (store_exec_retry(st, "BEGIN IMMEDIATE", "creating the schema") < 0)
		return -1;
	/* Read again under the write lock: another writer may have migrated. */
	if (version >= 3 && version < SIM_STORE_SCHEMA_VERSION)
		version = store_user_version(st);
	if ((version >= 3 && version < SIM_STORE_SCHEMA_VERSION && store_migrate_columns(st) < 0) ||
	    store_exec(st, store_schema, "creating the schema") < 0 ||
	    store_exec(st, "COMMIT", "creating the schema") < 0) {
		store_rollback(st);
		return -1;
	}
	return 0;
}

/* "INSERT ... VALUES (?, ...), (?, ...), ..." with rows groups of cols. */
static char *multi_insert_sql(const char *head, unsigned cols, unsigned rows)
{
	size_t len = strlen(head) + (size_t)rows * (3 * cols + 3) + 1;
	char *sql = xmalloc(len), *p = sql;
	p += sprintf(p, "%s", head);
	for (unsigned r = 0; r < rows; r++) {
		p += sprintf(p, "%s(", r ? "," : " VALUES ");
		for (unsigned c = 0; c < cols; c++)
			p += sprintf(p, c ? ",?" : "?");
		p += sprintf(p, ")");
	}
	return sql;
}

/* The figure columns, ", "-separated, with sep before the first. */
static void point_figures(char *buf, size_t len, const char *sep)
{
	size_t used = 0;
	for (int i = 0; i < SIM_STORE_POINT_FIGURES; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : sep,
					 sim_store_point_figure[i]);
	BUG_ON(used >= len);
}

/* Prepare every statement of store_sql once, the multi-row inserts and
 * the sweep statements. */
static int store_prepare(struct sim_store *st)
{
	char *multi[STMT_N] = { 0 }, figs[400];
	point_figures(figs, sizeof(figs), ", ");
	char *head = xasprintf("INSERT OR REPLACE INTO sweep_points (sweep_id, point, status, "
			       "reason%s)", figs);
	multi[STMT_SWEEP_POINT] = multi_insert_sql(head, 4 + SIM_STORE_POINT_FIGURES, 1);
	free(head);
	multi[STMT_SWEEP_GET] = xasprintf("SELECT status, reason%s FROM sweep_points WHERE "
					  "sweep_id = ? AND point = ?", figs);
	multi[STMT_INSERT_TL_MULTI] = multi_insert_sql(
		"INSERT INTO timeline (stream, op, start_ps, end_ps)", 4, STORE_MULTI_ROWS);
	multi[STMT_INSERT_MEM_MULTI] = multi_insert_sql(
		"INSERT INTO memory (run_id, rank, t_ps, category, bytes)", 5, STORE_MULTI_ROWS);
	int rc = 0;
	for (int i = 0; i < STMT_N && !rc; i++)
		if (sqlite3_prepare_v3(st->db, multi[i] ? multi[i] : store_sql[i], -1,
				       SQLITE_PREPARE_PERSISTENT, &st->stmt[i], NULL) != SQLITE_OK)
			rc = store_db_err(st, "preparing statements");
	for (int i = 0; i < STMT_N; i++)
		free(multi[i]);
	return rc;
}

/* Open path (creating it and its schema if needed). NULL with err on failure. */
struct sim_store *sim_store_open_why(const char *path, enum sim_store_fail *why, char *err,
				     size_t errlen)
{
	struct sim_store *st = xcalloc(1, sizeof *st);
	if (store_connect(st, path) < 0 || store_schema_init(st, path) < 0 ||
	    store_prepare(st) < 0) {
		snprintf(err, errlen, "%s", st->err);
		if (why)
			*why = st->fail ? st->fail : SIM_STORE_UNWRITABLE;
		sim_store_close(st);
		return NULL;
	}
	if (why)
		*why = SIM_STORE_FAIL_NONE;
	return st;
}

struct sim_store *sim_store_open(const char *path, char *err, size_t errlen)
{
	return sim_store_open_why(path, NULL, err, errlen);
}

/*
 * Close the store. A run still in progress is marked failed first (its rows
 * are discarded), so no run is left 'running' by a clean exit. NULL is fine.
 */
void sim_store_close(struct sim_store *st)
{
	if (!st)
		return;
	if (st->run_id > 0)
		sim_store_run_fail(st, "the store was closed before the run ended");
	if (st->db)
		store_rollback(st);
	for (int i = 0; i < STMT_N; i++)
		sqlite3_finalize(st->stmt[i]);
	sqlite3_close(st->db);
	store_forget(st);
	free(st);
}

/* The last error message ("" if none). */
const char *sim_store_error(const struct sim_store *st)
{
	return st->err;
}

/* The open connection, for readers that run their own queries. */
struct sqlite3 *sim_store_db(struct sim_store *st)
{
	return st->db;
}

/* ---- runs --------------------------------------------------------------- */

/* Wall-clock time of day in UTC, ISO-8601 ("2024-05-01T12:00:00Z"). */
static void store_utc_now(char *buf, size_t len)
{
	time_t now = time(NULL);
	struct tm *tm = gmtime(&now);
	if (!tm || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", tm))
		snprintf(buf, len, "unknown");
}

/*
 * Insert the runs row ('running') in its own committed transaction, then
 * open the transaction that the run's rows are written in.
 */
int64_t sim_store_run_begin(struct sim_store *st, const char *command,
			    const char *config_json, const char *fidelity,
			    uint32_t nranks)
{
	if (st->run_id > 0)
		return store_err(st, "run %lld is still in progress", (long long)st->run_id);
	char now[32];
	store_utc_now(now, sizeof now);
	sqlite3_stmt *s = st->stmt[STMT_INSERT_RUN];
	bind_text(s, 1, now);
	bind_text(s, 2, command);
	bind_text(s, 3, config_json);
	bind_text(s, 4, fidelity);
	sqlite3_bind_int64(s, 5, nranks);
	bind_text(s, 6, PACKAGE_VERSION);
	if (store_step(st, s, "inserting the run") < 0)
		return -1;
	if (store_exec(st, "BEGIN", "starting a transaction") < 0)
		return -1;
	st->run_id = sqlite3_last_insert_rowid(st->db);
	store_forget(st);
	st->pending = 0;
	st->broken = 0;
	st->err[0] = '\0';
	return st->run_id;
}

/* ---- the recorder: timelines and memory ---------------------------------- */

static uint32_t def_hash(const struct sim_op *op)
{
	uint64_t k = (uint64_t)(uintptr_t)op;
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (uint32_t)k;
}

/* The label of op in 32 bits: a definition keeps this, not a copy, to tell
 * a changed op at a known address (whose name, written from the same
 * facts, changes with it anyway). */
static uint32_t label_hash(const struct sim_op *op)
{
	uint64_t k = (uint64_t)(uint32_t)op->layer * 0x9e3779b97f4a7c15ULL;
	k ^= ((uint64_t)(uint16_t)op->mb << 16 | (uint16_t)op->chunk) * 0xc2b2ae3d27d4eb4fULL;
	k ^= ((uint64_t)op->phase << 56) ^ (uint64_t)(uintptr_t)op->kernel;
	k ^= k >> 29;
	k *= 0xff51afd7ed558ccdULL;
	return (uint32_t)(k ^ (k >> 32));
}

static int def_matches(const struct store_def *d, const struct sim_op *op)
{
	return d->op == op && d->kind == op->kind && d->stream == op->stream &&
	       d->bytes == op->bytes && d->flops == op->flops &&
	       strcmp(d->name, op->name ? op->name : "") == 0 && d->label == label_hash(op);
}

static void defs_clear(struct store_defs *m)
{
	for (uint32_t i = 0; i < m->cap; i++)
		free(m->slot[i].name);
	free(m->slot);
	*m = (struct store_defs){ 0 };
}

/* Put d (its slot being empty) where a probe for d->op starts looking. */
static void defs_place(struct store_defs *m, const struct store_def *d)
{
	uint32_t i = def_hash(d->op) & (m->cap - 1);
	while (m->slot[i].name)
		i = (i + 1) & (m->cap - 1);
	m->slot[i] = *d;
}

static void defs_grow(struct store_defs *m)
{
	struct store_defs old = *m;
	m->cap = old.cap ? 2 * old.cap : 1024;
	m->slot = xcalloc(m->cap, sizeof(*m->slot));
	for (uint32_t i = 0; i < old.cap; i++)
		if (old.slot[i].name)
			defs_place(m, &old.slot[i]);
	free(old.slot);
}

/*
 * The op_defs id of op, writing its definition on first sight; -1 after a
 * failed write. A changed op at a known address gets a new id and replaces
 * the old entry (the rows already written keep their definition).
 */
static int64_t store_def_of(struct sim_store *st, const struct sim_op *op)
{
	struct store_defs *m = &st->defs;
	if (2 * (m->n + 1) > m->cap)
		defs_grow(m);
	uint32_t i = def_hash(op) & (m->cap - 1);
	while (m->slot[i].name && m->slot[i].op != op)
		i = (i + 1) & (m->cap - 1);
	struct store_def *d = &m->slot[i];
	if (d->name && def_matches(d, op))
		return d->id;
	if (!d->name)
		m->n++;
	free(d->name);
	*d = (struct store_def){
		.op = op, .id = m->next_id++, .kind = op->kind, .stream = op->stream,
		.bytes = op->bytes, .flops = op->flops, .name = xstrdup(op->name ? op->name : ""),
		.label = label_hash(op),
	};
	sqlite3_stmt *q = st->stmt[STMT_INSERT_DEF];
	sqlite3_bind_int64(q, 2, d->id);
	bind_text(q, 3, sim_op_kind_name((enum sim_op_kind)op->kind));
	bind_text(q, 4, d->name);
	sqlite3_bind_double(q, 5, op->bytes);
	sqlite3_bind_double(q, 6, op->kind == SIM_OP_COMPUTE ? op->flops : 0.0);
	bind_int_or_null(q, 7, op->layer);
	bind_int_or_null(q, 8, op->mb);
	bind_int_or_null(q, 9, op->chunk);
	bind_text(q, 10, sim_phase_name((enum sim_phase)op->phase));
	bind_text(q, 11, op->kernel);
	if (store_row(st, q, "recording an op definition") < 0)
		return -1;
	return d->id;
}

/*
 * Write a rank's buffered ops as one block: consecutive timeline rows,
 * STORE_MULTI_ROWS per statement and the rest one by one, then the block
 * row with the rowid range. Rowids are consecutive because the open write
 * transaction is the only writer and each new row gets the largest rowid
 * plus one.
 */
static int store_flush_rank(struct sim_store *st, uint32_t rank)
{
	struct store_rank_buf *b = &st->bufs[rank];
	if (b->n == 0)
		return 0;
	int64_t first = -1;
	uint32_t i = 0;
	for (; b->n - i >= STORE_MULTI_ROWS; i += STORE_MULTI_ROWS) {
		sqlite3_stmt *q = st->stmt[STMT_INSERT_TL_MULTI];
		for (int k = 0; k < STORE_MULTI_ROWS; k++) {
			const struct store_tl_row *r = &b->rows[i + (uint32_t)k];
			sqlite3_bind_int(q, 4 * k + 1, (int)r->stream);
			sqlite3_bind_int64(q, 4 * k + 2, r->def);
			sqlite3_bind_int64(q, 4 * k + 3, r->start);
			sqlite3_bind_int64(q, 4 * k + 4, r->end);
		}
		if (store_step_bound(st, q, "recording a timeline") < 0)
			return -1;
		if (first < 0)
			first = sqlite3_last_insert_rowid(st->db) - (STORE_MULTI_ROWS - 1);
	}
	for (; i < b->n; i++) {
		sqlite3_stmt *q = st->stmt[STMT_INSERT_TL];
		const struct store_tl_row *r = &b->rows[i];
		sqlite3_bind_int(q, 1, (int)r->stream);
		sqlite3_bind_int64(q, 2, r->def);
		sqlite3_bind_int64(q, 3, r->start);
		sqlite3_bind_int64(q, 4, r->end);
		if (store_step_bound(st, q, "recording a timeline") < 0)
			return -1;
		if (first < 0)
			first = sqlite3_last_insert_rowid(st->db);
	}
	sqlite3_stmt *q = st->stmt[STMT_INSERT_BLOCK];
	sqlite3_bind_int64(q, 2, rank);
	sqlite3_bind_int64(q, 3, first);
	sqlite3_bind_int64(q, 4, sqlite3_last_insert_rowid(st->db));
	uint32_t n = b->n;
	b->stored += n;
	b->n = 0;
	if (store_row(st, q, "recording a timeline block") < 0)
		return -1;
	return store_count(st, n);
}

/* The recorder: buffer a finished op in its rank's block. Errors are kept
 * for run_end. */
static void store_op_done(void *ctx, uint32_t rank, const struct sim_op *op,
			  sim_ps start, sim_ps end)
{
	struct sim_store *st = ctx;
	if (store_check_run(st, "recording an op") < 0)
		return;
	st->bufs = xgrow_zeroed(st->bufs, &st->nbufs, rank, sizeof(*st->bufs), 64);
	int64_t def = store_def_of(st, op);
	if (def < 0)
		return;
	struct store_rank_buf *b = &st->bufs[rank];
	if (!b->rows)
		b->rows = xmalloc(STORE_BLOCK_ROWS * sizeof(*b->rows));
	b->rows[b->n++] = (struct store_tl_row){
		.start = start, .end = end, .def = (uint32_t)def, .stream = op->stream,
	};
	if (b->n == STORE_BLOCK_ROWS)
		store_flush_rank(st, rank);
}

static const char *store_mem_name(const struct sim_store *st, unsigned cat, char *buf,
				  size_t len)
{
	const char *name = cat < SIM_MEM_CATS ? st->mem_names[cat] : NULL;
	if (!name) {
		snprintf(buf, len, "cat%u", cat);
		name = buf;
	}
	return name;
}

/* Write the buffered memory rows: STORE_MULTI_ROWS at once, or one by one
 * (the end of a run). */
static int store_flush_mem(struct sim_store *st)
{
	char b[STORE_MULTI_ROWS][16];
	if (st->nmem == STORE_MULTI_ROWS) {
		sqlite3_stmt *q = st->stmt[STMT_INSERT_MEM_MULTI];
		for (int k = 0; k < STORE_MULTI_ROWS; k++) {
			const struct store_mem_row *r = &st->mem[k];
			sqlite3_bind_int64(q, 5 * k + 1, st->run_id);
			sqlite3_bind_int64(q, 5 * k + 2, r->rank);
			sqlite3_bind_int64(q, 5 * k + 3, r->t);
			bind_text(q, 5 * k + 4, store_mem_name(st, r->cat, b[k], sizeof(b[k])));
			sqlite3_bind_double(q, 5 * k + 5, r->bytes);
		}
		st->nmem = 0;
		if (store_step_bound(st, q, "recording memory") < 0)
			return -1;
		return store_count(st, STORE_MULTI_ROWS);
	}
	for (uint32_t k = 0; k < st->nmem; k++) {
		sqlite3_stmt *q = st->stmt[STMT_INSERT_MEM];
		const struct store_mem_row *r = &st->mem[k];
		sqlite3_bind_int64(q, 2, r->rank);
		sqlite3_bind_int64(q, 3, r->t);
		bind_text(q, 4, store_mem_name(st, r->cat, b[0], sizeof(b[0])));
		sqlite3_bind_double(q, 5, r->bytes);
		if (store_row(st, q, "recording memory") < 0)
			return -1;
	}
	st->nmem = 0;
	return 0;
}

/* The recorder: one memory row per change of a rank's category. */
static void store_mem(void *ctx, uint32_t rank, sim_ps t, unsigned cat, double bytes_now)
{
	struct sim_store *st = ctx;
	if (store_check_run(st, "recording memory") < 0)
		return;
	st->mem[st->nmem++] = (struct store_mem_row){
		.t = t, .bytes = bytes_now, .rank = rank, .cat = cat,
	};
	if (st->nmem == STORE_MULTI_ROWS)
		store_flush_mem(st);
}

/* Write every buffered row of the run (rank by rank) before it ends. */
static int store_flush_all(struct sim_store *st)
{
	for (uint32_t r = 0; r < st->nbufs && !st->broken; r++)
		store_flush_rank(st, r);
	if (!st->broken)
		store_flush_mem(st);
	return st->broken ? -1 : 0;
}

/* Forget the run's buffers and definitions (a new run, or a failed one). */
static void store_forget(struct sim_store *st)
{
	for (uint32_t r = 0; r < st->nbufs; r++)
		free(st->bufs[r].rows);
	free(st->bufs);
	st->bufs = NULL;
	st->nbufs = 0;
	st->nmem = 0;
	defs_clear(&st->defs);
}

uint32_t sim_store_ops_stored(const struct sim_store *st, uint32_t rank)
{
	return rank < st->nbufs ? st->bufs[rank].stored + st->bufs[rank].n : 0;
}

void sim_store_mem_names(struct sim_store *st, const char *const *names, unsigned n)
{
	for (unsigned i = 0; i < SIM_MEM_CATS; i++)
		st->mem_names[i] = i < n ? names[i] : NULL;
}

int sim_store_metric(struct sim_store *st, const char *name, double value)
{
	if (store_check_run(st, "sim_store_metric") < 0)
		return -1;
	sqlite3_stmt *s = st->stmt[STMT_INSERT_METRIC];
	bind_text(s, 2, name);
	sqlite3_bind_double(s, 3, value);
	return store_row(st, s, "recording a metric");
}

/* ---- sweeps ------------------------------------------------------------ */

/* Step a statement once outside a run; 0, or -1 with the error kept. */
static int sweep_step(struct sim_store *st, sqlite3_stmt *q, const char *what)
{
	int rc = sqlite3_step(q);
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return store_db_err(st, what);
	return 0;
}

/*
 * Find the sweep of this signature or create it, in one write transaction:
 * two identical sweeps started at once on one database both get the one
 * row (INSERT OR IGNORE, then the select), never a UNIQUE error. BEGIN
 * IMMEDIATE waits (busy timeout) while the other holds the lock.
 */
int64_t sim_store_sweep_open(struct sim_store *st, const char *signature, const char *command,
			     const char *scenario, const char *vary_json, int *resumed)
{
	if (store_exec_retry(st, "BEGIN IMMEDIATE", "creating the sweep") < 0)
		return -1;
	char now[32];
	store_utc_now(now, sizeof(now));
	sqlite3_stmt *q = st->stmt[STMT_SWEEP_INSERT];
	bind_text(q, 1, now);
	bind_text(q, 2, signature);
	bind_text(q, 3, command);
	bind_text(q, 4, scenario);
	bind_text(q, 5, vary_json);
	if (sweep_step(st, q, "creating the sweep") < 0) {
		store_rollback(st);
		return -1;
	}
	*resumed = sqlite3_changes(st->db) == 0;
	q = st->stmt[STMT_SWEEP_FIND];
	bind_text(q, 1, signature);
	int rc = sqlite3_step(q);
	int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : -1;
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	if (id < 0) {
		if (rc == SQLITE_DONE)
			store_err(st, "creating the sweep: its row is missing");
		else
			store_db_err(st, "finding the sweep");
		store_rollback(st);
		return -1;
	}
	if (store_exec(st, "COMMIT", "creating the sweep") < 0) {
		store_rollback(st);
		return -1;
	}
	return id;
}

int sim_store_sweep_has(struct sim_store *st, int64_t sweep, uint32_t point)
{
	sqlite3_stmt *q = st->stmt[STMT_SWEEP_HAS];
	sqlite3_bind_int64(q, 1, sweep);
	sqlite3_bind_int64(q, 2, point);
	int rc = sqlite3_step(q);
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	return rc == SQLITE_ROW;
}

int sim_store_sweep_get(struct sim_store *st, int64_t sweep, uint32_t point, char *status,
			size_t slen, char *reason, size_t rlen, double fig[SIM_STORE_POINT_FIGURES])
{
	sqlite3_stmt *q = st->stmt[STMT_SWEEP_GET];
	sqlite3_bind_int64(q, 1, sweep);
	sqlite3_bind_int64(q, 2, point);
	int rc = sqlite3_step(q), found = rc == SQLITE_ROW;
	if (found) {
		const char *s0 = (const char *)sqlite3_column_text(q, 0);
		const char *s1 = (const char *)sqlite3_column_text(q, 1);
		snprintf(status, slen, "%s", s0 ? s0 : "");
		snprintf(reason, rlen, "%s", s1 ? s1 : "");
		for (int i = 0; i < SIM_STORE_POINT_FIGURES; i++)
			fig[i] = sqlite3_column_type(q, 2 + i) == SQLITE_NULL
					 ? NAN : sqlite3_column_double(q, 2 + i);
	}
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	return found;
}

int sim_store_sweep_point(struct sim_store *st, int64_t sweep, const struct sim_store_point *p)
{
	if (store_exec(st, "BEGIN IMMEDIATE", "storing a sweep point") < 0)
		return -1;
	sqlite3_stmt *q = st->stmt[STMT_SWEEP_POINT];
	sqlite3_bind_int64(q, 1, sweep);
	sqlite3_bind_int64(q, 2, p->point);
	bind_text(q, 3, p->status);
	bind_text(q, 4, p->reason);
	for (int i = 0; i < SIM_STORE_POINT_FIGURES; i++)
		if (isnan(p->fig[i]))
			sqlite3_bind_null(q, 5 + i);
		else
			sqlite3_bind_double(q, 5 + i, p->fig[i]);
	int rc = sweep_step(st, q, "storing a sweep point");
	for (size_t k = 0; rc == 0 && k < p->nvalues; k++) {
		q = st->stmt[STMT_SWEEP_VALUE];
		sqlite3_bind_int64(q, 1, sweep);
		sqlite3_bind_int64(q, 2, p->point);
		bind_text(q, 3, p->keys[k]);
		bind_text(q, 4, p->values[k]);
		rc = sweep_step(st, q, "storing a sweep value");
	}
	if (rc < 0) {
		store_exec(st, "ROLLBACK", "storing a sweep point");
		return -1;
	}
	return store_exec(st, "COMMIT", "storing a sweep point");
}

void sim_store_rank_summary_of(const struct sim *sim, uint32_t rank, sim_ps end,
			       struct sim_store_rank_summary *out)
{
	const struct sim_rank_stats *rs = sim_rank_stats(sim, rank);
	*out = (struct sim_store_rank_summary){
		.compute_ps = rs->compute_ps, .exposed_comm_ps = rs->exposed_comm_ps,
		.idle_ps = end - rs->compute_ps - rs->exposed_comm_ps,
		.end_ps = sim_rank_end(sim, rank), .peak_bytes = rs->mem_peak,
		.interference_ps = rs->interference_ps,
	};
}

/* One ranks row: where a rank sits, and where its time went. */
int sim_store_rank(struct sim_store *st, uint32_t rank, uint32_t node, uint32_t local_gpu,
		   const uint32_t coords[5], const struct sim_store_rank_summary *sum)
{
	if (store_check_run(st, "sim_store_rank") < 0)
		return -1;
	sqlite3_stmt *s = st->stmt[STMT_INSERT_RANK];
	sqlite3_bind_int64(s, 2, rank);
	sqlite3_bind_int64(s, 3, node);
	sqlite3_bind_int64(s, 4, local_gpu);
	for (int i = 0; i < 5; i++)
		if (coords)
			sqlite3_bind_int64(s, 5 + i, coords[i]);
		else
			sqlite3_bind_null(s, 5 + i);
	if (sum) {
		sqlite3_bind_int64(s, 10, sum->compute_ps);
		sqlite3_bind_int64(s, 11, sum->exposed_comm_ps);
		sqlite3_bind_int64(s, 12, sum->idle_ps);
		sqlite3_bind_int64(s, 13, sum->end_ps);
		sqlite3_bind_double(s, 14, sum->peak_bytes);
		sqlite3_bind_int64(s, 16, sum->interference_ps);
	}
	sqlite3_bind_int64(s, 15, sim_store_ops_stored(st, rank));
	return store_row(st, s, "recording a rank");
}

/* One links row for a link that carried bytes. */
static int store_link(struct sim_store *st, uint32_t link, const char *name,
		      const struct sim_link_stats *ls)
{
	sqlite3_stmt *s = st->stmt[STMT_INSERT_LINK];
	sqlite3_bind_int64(s, 2, link);
	bind_text(s, 3, name);
	sqlite3_bind_double(s, 4, ls->bw_Bps);
	sqlite3_bind_double(s, 5, ls->bytes);
	sqlite3_bind_int64(s, 6, ls->busy_ps);
	return store_row(st, s, "recording a link");
}

/*
 * The totals of every link that carried bytes (idle links are not stored:
 * a 16,384-GPU cluster has many). O(links), once per run.
 */
int sim_store_links(struct sim_store *st, const struct sim *sim,
		    const struct sim_topo_ops *topo_ops, void *topo)
{
	if (store_check_run(st, "sim_store_links") < 0)
		return -1;
	uint32_t n = sim_nlinks(sim);
	for (uint32_t l = 0; l < n; l++) {
		struct sim_link_stats ls;
		char name[128];
		sim_link_stats(sim, l, &ls);
		if (!(ls.bytes > 0))
			continue;
		if (topo_ops && topo_ops->link_name)
			topo_ops->link_name(topo, ls.tag, name, sizeof name);
		else
			snprintf(name, sizeof name, "link%u", l);
		if (store_link(st, l, name, &ls) < 0)
			return -1;
	}
	return 0;
}

/* One collective_results row. */
int sim_store_coll_result(struct sim_store *st, const struct sim_store_coll_row *row)
{
	if (store_check_run(st, "sim_store_coll_result") < 0)
		return -1;
	sqlite3_stmt *s = st->stmt[STMT_INSERT_COLL];
	bind_text(s, 2, row->op);
	bind_text(s, 3, row->algo);
	sqlite3_bind_int64(s, 4, row->ranks);
	sqlite3_bind_int64(s, 5, row->channels);
	sqlite3_bind_double(s, 6, row->bytes);
	sqlite3_bind_double(s, 7, row->time_s);
	sqlite3_bind_double(s, 8, row->algbw_GBps);
	sqlite3_bind_double(s, 9, row->busbw_GBps);
	return store_row(st, s, "recording a collective result");
}

/* Bind a job's steps from column i on (seven columns). */
static void bind_job_steps(sqlite3_stmt *s, int i, const struct sim_store_job_steps *st)
{
	const double v[] = { st->step_time_s, st->p50_s, st->p90_s, st->p99_s, st->tokens_per_s,
			     st->mfu };
	for (size_t k = 0; k < ARRAY_SIZE(v); k++)
		sqlite3_bind_double(s, i + (int)k, v[k]);
	sqlite3_bind_int64(s, i + (int)ARRAY_SIZE(v), st->steps);
}

int sim_store_job(struct sim_store *st, const struct sim_store_job_row *row)
{
	if (store_check_run(st, "sim_store_job") < 0)
		return -1;
	sqlite3_stmt *s = st->stmt[STMT_INSERT_JOB];
	const uint32_t place[] = { row->first_node, row->nodes, row->first_rank, row->gpus,
				   row->dp, row->tp, row->pp, row->cp };
	sqlite3_bind_int64(s, 2, row->job);
	for (int i = 0; i < (int)ARRAY_SIZE(place); i++)  /* columns 6 to 13 */
		sqlite3_bind_int64(s, 6 + i, place[i]);
	bind_text(s, 3, row->name);
	bind_text(s, 4, row->model);
	bind_text(s, 5, row->strategy);
	sqlite3_bind_double(s, 14, row->params);
	sqlite3_bind_double(s, 15, row->peak_bytes);
	sqlite3_bind_double(s, 16, row->capacity_bytes);
	sqlite3_bind_int(s, 17, row->fits);
	sqlite3_bind_double(s, 32, row->start_s);
	if (row->fits) {
		bind_job_steps(s, 18, &row->alone);
		bind_job_steps(s, 25, &row->shared);
	}
	return store_row(st, s, "recording a job");
}

int sim_store_job_link(struct sim_store *st, const char *link, uint32_t job, double bw_Bps,
		       double bytes)
{
	if (store_check_run(st, "sim_store_job_link") < 0)
		return -1;
	sqlite3_stmt *s = st->stmt[STMT_INSERT_JOB_LINK];
	bind_text(s, 2, link);
	sqlite3_bind_int64(s, 3, job);
	sqlite3_bind_double(s, 4, bw_Bps);
	sqlite3_bind_double(s, 5, bytes);
	return store_row(st, s, "recording a job's link");
}

/*
 * Mark the run complete in the transaction of its last rows and commit, so
 * the rows and the status become visible together. After -1 (a failed write
 * earlier in the run, or now) the run is still in progress: call run_fail.
 */
int sim_store_run_end(struct sim_store *st, sim_ps sim_end_ps, uint64_t events,
		      double wall_s)
{
	if (store_check_run(st, "sim_store_run_end") < 0 || store_flush_all(st) < 0)
		return -1;
	sqlite3_stmt *s = st->stmt[STMT_END_RUN];
	sqlite3_bind_int64(s, 1, sim_end_ps);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)events);
	sqlite3_bind_double(s, 3, wall_s);
	sqlite3_bind_int64(s, 4, st->run_id);
	if (store_step(st, s, "completing the run") < 0 ||
	    store_exec(st, "COMMIT", "committing the run") < 0)
		return store_break(st);
	st->run_id = 0;
	return 0;
}

/* Delete the run's rows from every table that holds them. */
static int store_delete_rows(struct sim_store *st)
{
	/* Deleting a block deletes its timeline rows (trigger). */
	static const enum store_stmt del[] = {
		STMT_DELETE_BLOCKS, STMT_DELETE_DEFS, STMT_DELETE_RANKS, STMT_DELETE_LINKS,
		STMT_DELETE_COLLS, STMT_DELETE_MEM, STMT_DELETE_METRICS, STMT_DELETE_JOBS,
		STMT_DELETE_JOB_LINKS,
	};
	for (size_t i = 0; i < ARRAY_SIZE(del); i++) {
		sqlite3_stmt *s = st->stmt[del[i]];
		sqlite3_bind_int64(s, 1, st->run_id);
		if (store_step(st, s, "discarding the run's rows") < 0)
			return -1;
	}
	return 0;
}

/* Delete the rows and set status and error, in one transaction. */
static int store_fail_txn(struct sim_store *st, const char *why)
{
	if (store_exec(st, "BEGIN", "failing the run") < 0)
		return -1;
	sqlite3_stmt *s = st->stmt[STMT_FAIL_RUN];
	if (store_delete_rows(st) < 0)
		goto fail;
	bind_text(s, 1, why ? why : "failed");
	sqlite3_bind_int64(s, 2, st->run_id);
	if (store_step(st, s, "failing the run") < 0 ||
	    store_exec(st, "COMMIT", "failing the run") < 0)
		goto fail;
	return 0;
fail:
	store_rollback(st);
	return -1;
}

/*
 * Roll back the open transaction, delete everything the run wrote (rows
 * committed in earlier batches included) and mark it failed with why. The
 * run is over afterwards even if this fails (its row then stays 'running').
 */
int sim_store_run_fail(struct sim_store *st, const char *why)
{
	if (st->run_id <= 0)
		return store_err(st, "sim_store_run_fail: no run in progress");
	store_rollback(st);
	store_forget(st);
	int ret = store_fail_txn(st, why);
	st->run_id = 0;
	st->broken = 0;
	st->pending = 0;
	return ret;
}

/* Id of the newest complete run, or -1 (none, or an error: see err). */
int64_t sim_store_last_complete(struct sim_store *st)
{
	sqlite3_stmt *s = st->stmt[STMT_LAST_COMPLETE];
	int64_t id = -1;
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
		id = sqlite3_column_int64(s, 0);
	else if (rc != SQLITE_ROW)
		store_db_err(st, "finding the last complete run");
	sqlite3_reset(s);
	return id;
}

/* ---- plans (clustersim plan --db) ------------------------------------------------- */

static int plan_sql_fail(sqlite3 *db, char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "%s: %s", what, sqlite3_errmsg(db));
	return -1;
}

/* Bind a double, NULL for NaN. */
static void plan_bind_num(sqlite3_stmt *s, int i, double x)
{
	if (isnan(x))
		sqlite3_bind_null(s, i);
	else
		sqlite3_bind_double(s, i, x);
}

/* A column as a double, NaN for NULL. */
static double plan_col_num(sqlite3_stmt *s, int i)
{
	return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, i);
}

int64_t sim_store_plan_write(sqlite3 *db, const struct sim_store_plan_head *h,
			     const struct sim_store_plan_row *rows, size_t n, char *err,
			     size_t errlen)
{
	static const char head_sql[] =
		"INSERT INTO plans (created_utc, command, scenario, gpus, candidates, fits, invalid, "
		"no_memory, held_out, replaced, collapsed, spearman_rho, wall_s) VALUES "
		"(strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
	static const char row_sql[] =
		"INSERT INTO plan_layouts (plan_id, place, estimate_rank, tp, sp, pp, vpp, cp, ep, dp, "
		"micro_batch, zero, recompute, estimate_s, step_time_s, flow_step_time_s, failed, mfu, "
		"tokens_per_s, peak_bytes, reserve_bytes, capacity_bytes, compute_s, interference_s, "
		"bubble_s, exposed_comm_s, idle_s, exposed_tp_s, exposed_dp_s, exposed_pp_s, "
		"exposed_cp_s, exposed_host_s, families, compared, schedule, tp_overlap) VALUES (?, ?, "
		"?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
		"?, ?, ?, ?, ?)";
	sqlite3_stmt *s = NULL;
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return plan_sql_fail(db, err, errlen, "starting the plan's transaction");
	if (sqlite3_prepare_v2(db, head_sql, -1, &s, NULL) != SQLITE_OK)
		goto fail;
	sqlite3_bind_text(s, 1, h->command, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 2, h->scenario, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 3, h->gpus);
	const uint64_t counts[] = { h->candidates, h->fits, h->invalid, h->no_memory, h->held_out,
				    h->replaced };
	for (int i = 0; i < 6; i++)
		sqlite3_bind_int64(s, 4 + i, (sqlite3_int64)counts[i]);
	sqlite3_bind_int(s, 10, h->collapsed);
	plan_bind_num(s, 11, h->rho);
	sqlite3_bind_double(s, 12, h->wall_s);
	if (sqlite3_step(s) != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(s);
	int64_t id = sqlite3_last_insert_rowid(db);
	if (sqlite3_prepare_v2(db, row_sql, -1, &s, NULL) != SQLITE_OK)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		const struct sim_store_plan_row *r = &rows[i];
		int k = 1;
		sqlite3_reset(s);
		sqlite3_clear_bindings(s);
		sqlite3_bind_int64(s, k++, id);
		sqlite3_bind_int64(s, k++, (sqlite3_int64)i + 1);
		sqlite3_bind_int64(s, k++, r->estimate_rank);
		const uint32_t keys[] = { r->tp, r->sp, r->pp, r->vpp, r->cp, r->ep, r->dp,
					  r->micro_batch, r->zero };
		for (size_t j = 0; j < sizeof(keys) / sizeof(keys[0]); j++)
			sqlite3_bind_int64(s, k++, keys[j]);
		sqlite3_bind_text(s, k++, r->recompute, -1, SQLITE_TRANSIENT);
		sqlite3_bind_double(s, k++, r->estimate_s);
		plan_bind_num(s, k++, r->step_time_s);
		plan_bind_num(s, k++, r->flow_step_time_s);
		if (r->failed)
			sqlite3_bind_text(s, k++, r->failed, -1, SQLITE_TRANSIENT);
		else
			sqlite3_bind_null(s, k++);
		for (int j = 0; j < SIM_STORE_PLAN_FIGS; j++)
			plan_bind_num(s, k++, r->fig[j]);
		sqlite3_bind_text(s, k++, r->families, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(s, k++, r->compared);
		sqlite3_bind_text(s, k++, r->schedule, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(s, k++, r->tp_overlap);
		if (sqlite3_step(s) != SQLITE_DONE)
			goto fail;
	}
	sqlite3_finalize(s);
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		return plan_sql_fail(db, err, errlen, "storing the plan");
	return id;
fail:
	plan_sql_fail(db, err, errlen, "storing the plan");
	sqlite3_finalize(s);
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

void sim_store_plan_rows_free(struct sim_store_plan_row *rows, size_t n)
{
	for (size_t i = 0; rows && i < n; i++)
		free(rows[i].failed);
	free(rows);
}

int sim_store_plan_read(sqlite3 *db, int64_t id, struct sim_store_plan_head *h,
			struct sim_store_plan_row **rowsp, size_t *np, char *err, size_t errlen)
{
	sqlite3_stmt *s = NULL;
	*rowsp = NULL, *np = 0;
	memset(h, 0, sizeof(*h));
	const char *q = id ? "SELECT id, command, scenario, gpus, candidates, fits, invalid, "
			     "no_memory, held_out, replaced, collapsed, spearman_rho, wall_s FROM plans "
			     "WHERE id = ?"
			   : "SELECT id, command, scenario, gpus, candidates, fits, invalid, "
			     "no_memory, held_out, replaced, collapsed, spearman_rho, wall_s FROM plans "
			     "ORDER BY id DESC LIMIT 1";
	if (sqlite3_prepare_v2(db, q, -1, &s, NULL) != SQLITE_OK)
		return plan_sql_fail(db, err, errlen, "reading the plans");
	if (id)
		sqlite3_bind_int64(s, 1, id);
	int rc = sqlite3_step(s);
	if (rc != SQLITE_ROW) {
		sqlite3_finalize(s);
		return rc == SQLITE_DONE ? 1 : plan_sql_fail(db, err, errlen, "reading the plans");
	}
	h->id = sqlite3_column_int64(s, 0);
	snprintf(h->command, sizeof(h->command), "%s",
		 sqlite3_column_text(s, 1) ? (const char *)sqlite3_column_text(s, 1) : "");
	snprintf(h->scenario, sizeof(h->scenario), "%s",
		 sqlite3_column_text(s, 2) ? (const char *)sqlite3_column_text(s, 2) : "");
	h->gpus = (uint32_t)sqlite3_column_int64(s, 3);
	uint64_t *counts[] = { &h->candidates, &h->fits, &h->invalid, &h->no_memory, &h->held_out,
			       &h->replaced };
	for (int i = 0; i < 6; i++)
		*counts[i] = (uint64_t)sqlite3_column_int64(s, 4 + i);
	h->collapsed = sqlite3_column_int(s, 10);
	h->rho = plan_col_num(s, 11);
	h->wall_s = sqlite3_column_double(s, 12);
	sqlite3_finalize(s);
	/* A version 6 file read as it is has no schedule column, a version 6
	 * or 7 file no tp_overlap. */
	int sched = 0, ov = 0;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FILTER (WHERE name = 'schedule'), "
			       "count(*) FILTER (WHERE name = 'tp_overlap') "
			       "FROM pragma_table_info('plan_layouts')", -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW) {
		sched = sqlite3_column_int(s, 0) > 0;
		ov = sqlite3_column_int(s, 1) > 0;
	}
	sqlite3_finalize(s);
	char rows_sql[800];
	snprintf(rows_sql, sizeof(rows_sql),
		 "SELECT estimate_rank, tp, sp, pp, vpp, cp, ep, dp, micro_batch, zero, recompute, "
		 "estimate_s, step_time_s, flow_step_time_s, failed, mfu, tokens_per_s, peak_bytes, "
		 "reserve_bytes, capacity_bytes, compute_s, interference_s, bubble_s, exposed_comm_s, "
		 "idle_s, exposed_tp_s, exposed_dp_s, exposed_pp_s, exposed_cp_s, exposed_host_s, "
		 "families, compared, %s, %s FROM plan_layouts WHERE plan_id = ? ORDER BY place",
		 sched ? "schedule" : "NULL", ov ? "tp_overlap" : "0");
	if (sqlite3_prepare_v2(db, rows_sql, -1, &s, NULL) != SQLITE_OK)
		return plan_sql_fail(db, err, errlen, "reading the plan's layouts");
	sqlite3_bind_int64(s, 1, h->id);
	size_t cap = 16, n = 0;
	struct sim_store_plan_row *v = xcalloc(cap, sizeof(*v));
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (n == cap)
			v = xreallocarray(v, cap *= 2, sizeof(*v));
		struct sim_store_plan_row *r = &v[n];
		memset(r, 0, sizeof(*r));
		r->estimate_rank = (uint32_t)sqlite3_column_int64(s, 0);
		uint32_t *keys[] = { &r->tp, &r->sp, &r->pp, &r->vpp, &r->cp, &r->ep, &r->dp,
				     &r->micro_batch, &r->zero };
		for (int j = 0; j < 9; j++)
			*keys[j] = (uint32_t)sqlite3_column_int64(s, 1 + j);
		snprintf(r->recompute, sizeof(r->recompute), "%s",
			 sqlite3_column_text(s, 10) ? (const char *)sqlite3_column_text(s, 10) : "");
		r->estimate_s = plan_col_num(s, 11);
		r->step_time_s = plan_col_num(s, 12);
		r->flow_step_time_s = plan_col_num(s, 13);
		if (sqlite3_column_text(s, 14))
			r->failed = xstrdup((const char *)sqlite3_column_text(s, 14));
		for (int j = 0; j < SIM_STORE_PLAN_FIGS; j++)
			r->fig[j] = plan_col_num(s, 15 + j);
		snprintf(r->families, sizeof(r->families), "%s",
			 sqlite3_column_text(s, 30) ? (const char *)sqlite3_column_text(s, 30) : "");
		r->compared = sqlite3_column_int(s, 31);
		snprintf(r->schedule, sizeof(r->schedule), "%s",
			 sqlite3_column_text(s, 32) ? (const char *)sqlite3_column_text(s, 32) : "");
		r->tp_overlap = (uint32_t)sqlite3_column_int64(s, 33);
		n++;
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE) {
		sim_store_plan_rows_free(v, n);
		return plan_sql_fail(db, err, errlen, "reading the plan's layouts");
	}
	*rowsp = v, *np = n;
	return 0;
}
