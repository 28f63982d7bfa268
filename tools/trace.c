/*
 * trace.c - the Chrome trace of a stored run (see trace.h).
 *
 * Two passes over the run's ops, both in SQL, as in svg.c. The first
 * (trace_new) groups the ops of the window by (rank, stream): those are
 * the threads, and their counts give the number of events before anything
 * is written, so that the caller can warn about a trace too big to view.
 * The second (trace_write) reads the chosen ranks' ops in (rank, start)
 * order (their timeline blocks found through timeline_blocks_by_rank, each
 * rank's ops sorted by SQLite) and writes one event per op as it reads it:
 * a trace of millions of ops costs reading them, not holding them.
 *
 * Times are picoseconds in the database and microseconds in the trace,
 * written as whole microseconds and six decimals with integer arithmetic:
 * exact, with no rounding through a double. Every string from the database
 * goes through cli_json_str(), which escapes what JSON requires and writes
 * invalid UTF-8 as U+FFFD, so the file always parses.
 */
#include "tools/cli.h"
#include "tools/trace.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/units.h"
#include "sim/util.h"

/* One (rank, stream) with ops in the window: a thread of the trace. */
struct thread {
	int rank, stream;
	size_t ops;
};

struct trace {
	sqlite3 *db;
	int64_t run;
	const struct gantt_opts *o;
	struct gantt_window w;
	struct thread *th;        /* ascending (rank, stream)     */
	size_t nth;
	size_t nproc;             /* distinct ranks among them    */
	size_t events;
	char *err;
	size_t errlen;
};

/* The streams of parallel/train-int.h (enum of STREAM_*), in its order. */
const char *trace_stream_name(int stream, char *buf, size_t len)
{
	static const char *const names[] = {
		"compute", "grads", "params", "host", "tp", "pp send next", "pp send prev",
		"pp recv prev", "pp recv next", "cp send", "cp recv",
	};
	if (stream >= 0 && stream < (int)ARRAY_SIZE(names))
		return names[stream];
	snprintf(buf, len, "stream %d", stream);
	return buf;
}

static int db_fail(struct trace *t)
{
	sim_errf(t->err, t->errlen, "reading the database: %s", sqlite3_errmsg(t->db));
	return GANTT_FAIL;
}

/* Bind the run (1), the window (2, 3) and the bounds of the ranks (4, 5). */
static void bind_window(const struct trace *t, sqlite3_stmt *q)
{
	sqlite3_bind_int64(q, 1, t->run);
	sqlite3_bind_int64(q, 2, t->w.from_ps);
	sqlite3_bind_int64(q, 3, t->w.to_ps);
	sqlite3_bind_int(q, 4, t->w.rank_lo);
	sqlite3_bind_int(q, 5, t->w.rank_hi);
}

/* Ops of a chosen rank, of non-zero length, that overlap the window. */
#define OPS_WHERE "WHERE run_id = ?1 AND rank BETWEEN ?4 AND ?5 AND end_ps > ?2 AND " \
	"start_ps < ?3 AND end_ps > start_ps "

/*
 * The threads and the events: per rank a process_name and a
 * process_sort_index, per thread a thread_name, per op one event.
 * O(ops of the chosen ranks' span): one grouped scan of the index.
 */
static int load_threads(struct trace *t)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(t->db, "SELECT rank, stream, count(*) FROM ops " OPS_WHERE
			       "GROUP BY rank, stream ORDER BY rank, stream", -1, &q,
			       NULL) != SQLITE_OK)
		return db_fail(t);
	bind_window(t, q);
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct thread th = { .rank = sqlite3_column_int(q, 0),
				     .stream = sqlite3_column_int(q, 1),
				     .ops = (size_t)sqlite3_column_int64(q, 2) };
		if (!gantt_rank_chosen(t->o, th.rank))
			continue;
		t->nproc += t->nth == 0 || t->th[t->nth - 1].rank != th.rank;
		t->th = xreallocarray(t->th, t->nth + 1, sizeof(*t->th));
		t->th[t->nth++] = th;
		t->events += th.ops + 1;
	}
	t->events += 2 * t->nproc;
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? GANTT_OK : db_fail(t);
}

int trace_new(sqlite3 *db, int64_t run, const struct gantt_opts *o, struct trace **out,
	      char *err, size_t errlen)
{
	struct trace *t = xcalloc(1, sizeof(*t));
	*t = (struct trace){ .db = db, .run = run, .o = o, .err = err, .errlen = errlen };
	char a[48], b[48];
	int rc = gantt_window_of(db, run, o, &t->w, err, errlen);
	if (rc == GANTT_OK)
		rc = load_threads(t);
	if (rc == GANTT_OK && t->nth == 0)
		rc = sim_errf(err, errlen, "nothing to export: run %lld stored no ops of the chosen "
			      "ranks from %s to %s (see --record of clustersim run)", (long long)run,
			      sim_units_format(SIM_UNIT_TIME, sim_ps_to_s(t->w.from_ps), a, sizeof(a)),
			      sim_units_format(SIM_UNIT_TIME, sim_ps_to_s(t->w.to_ps), b, sizeof(b)));
	if (rc != GANTT_OK) {
		trace_free(t);
		t = NULL;
	}
	*out = t;
	return rc;
}

void trace_free(struct trace *t)
{
	if (t)
		free(t->th);
	free(t);
}

size_t trace_events(const struct trace *t)
{
	return t->events;
}

/* ---- JSON values ------------------------------------------------------------------- */

/* A time in ps as microseconds, exactly: "12.345678". */
static void json_us(FILE *f, int64_t t_ps)
{
	uint64_t a = t_ps < 0 ? -(uint64_t)t_ps : (uint64_t)t_ps;
	fprintf(f, "%s%" PRIu64 ".%06" PRIu64, t_ps < 0 ? "-" : "", a / 1000000, a % 1000000);
}

/* A REAL column as a JSON number; NULL, NaN and infinities as null. */
static void json_real(FILE *f, sqlite3_stmt *q, int col)
{
	double v = sqlite3_column_double(q, col);
	if (sqlite3_column_type(q, col) == SQLITE_NULL || !isfinite(v))
		fputs("null", f);
	else
		fprintf(f, "%.17g", v);
}

/* ---- the trace --------------------------------------------------------------------- */

/* The metadata events of one rank: its process's name and place, from the
 * ranks table ("rank 3 (node 0, GPU 3)"; "rank 3" without a row). */
static int write_process(struct trace *t, sqlite3_stmt *q, int rank, FILE *f)
{
	sqlite3_reset(q);
	sqlite3_bind_int(q, 2, rank);
	int rc = sqlite3_step(q);
	char name[96];
	int n = snprintf(name, sizeof(name), "rank %d", rank);
	if (rc == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL)
		snprintf(name + n, sizeof(name) - (size_t)n, " (node %d, GPU %d)",
			 sqlite3_column_int(q, 0), sqlite3_column_int(q, 1));
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_fail(t);
	fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_name\",\"args\":"
		"{\"name\":\"%s\"}},\n", rank, name);
	fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_sort_index\",\"args\":"
		"{\"sort_index\":%d}},\n", rank, rank);
	return GANTT_OK;
}

/* Every process and thread name, before the ops. */
static int write_metadata(struct trace *t, FILE *f)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(t->db, "SELECT node, local_gpu FROM ranks WHERE run_id = ?1 AND "
			       "rank = ?2", -1, &q, NULL) != SQLITE_OK)
		return db_fail(t);
	sqlite3_bind_int64(q, 1, t->run);
	int rc = GANTT_OK;
	char buf[32];
	for (size_t i = 0; i < t->nth && rc == GANTT_OK; i++) {
		const struct thread *th = &t->th[i];
		if (i == 0 || th[-1].rank != th->rank)
			rc = write_process(t, q, th->rank, f);
		fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\",\"args\":"
			"{\"name\":\"%s\"}},\n", th->rank, th->stream,
			trace_stream_name(th->stream, buf, sizeof(buf)));
	}
	sqlite3_finalize(q);
	return rc;
}

/* One op as a complete event; the row is (rank, stream, kind, name,
 * start_ps, end_ps, bytes, flops). */
static void write_op(sqlite3_stmt *q, FILE *f, int first)
{
	const char *kind = (const char *)sqlite3_column_text(q, 2);
	int64_t s = sqlite3_column_int64(q, 4), e = sqlite3_column_int64(q, 5);
	fprintf(f, "%s{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":", first ? "" : ",\n",
		sqlite3_column_int(q, 0), sqlite3_column_int(q, 1));
	json_us(f, s);
	fputs(",\"dur\":", f);
	json_us(f, e - s);
	fputs(",\"name\":", f);
	cli_json_str(f, (const char *)sqlite3_column_text(q, 3));
	fputs(",\"cat\":", f);
	cli_json_str(f, kind);
	fputs(",\"args\":{\"bytes\":", f);
	json_real(f, q, 6);
	fputs(",\"flops\":", f);
	json_real(f, q, 7);
	fputs(",\"kind\":", f);
	cli_json_str(f, kind);
	fputs("}}", f);
}

/* Every op of the chosen ranks in the window, by rank and time. */
static int write_ops(struct trace *t, FILE *f)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(t->db, "SELECT rank, stream, kind, name, start_ps, end_ps, bytes, "
			       "flops FROM ops " OPS_WHERE "ORDER BY rank, start_ps, id", -1, &q,
			       NULL) != SQLITE_OK)
		return db_fail(t);
	bind_window(t, q);
	int rc, first = 1;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (!gantt_rank_chosen(t->o, sqlite3_column_int(q, 0)))
			continue;
		write_op(q, f, first);
		first = 0;
	}
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? GANTT_OK : db_fail(t);
}

/* otherData: where the trace comes from (the runs row) and its window. */
static int write_other(struct trace *t, FILE *f)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(t->db, "SELECT command, fidelity, created_utc, version FROM runs "
			       "WHERE id = ?1", -1, &q, NULL) != SQLITE_OK)
		return db_fail(t);
	sqlite3_bind_int64(q, 1, t->run);
	int rc = sqlite3_step(q);
	static const char *const keys[] = { "command", "fidelity", "created_utc", "version" };
	fprintf(f, "\"otherData\":{\"clustersim_run\":%lld,\"ranks\":%d", (long long)t->run,
		t->w.nranks);
	for (int i = 0; rc == SQLITE_ROW && i < (int)ARRAY_SIZE(keys); i++) {
		fprintf(f, ",\"%s\":", keys[i]);
		cli_json_str(f, (const char *)sqlite3_column_text(q, i));
	}
	fprintf(f, ",\"from_ps\":%" PRId64 ",\"to_ps\":%" PRId64 "}", t->w.from_ps, t->w.to_ps);
	sqlite3_finalize(q);
	return rc == SQLITE_ROW ? GANTT_OK : db_fail(t);
}

int trace_write(struct trace *t, FILE *out, char *err, size_t errlen)
{
	t->err = err;
	t->errlen = errlen;
	fputs("{\"traceEvents\":[\n", out);
	int rc = write_metadata(t, out);
	if (rc == GANTT_OK)
		rc = write_ops(t, out);
	if (rc == GANTT_OK) {
		fputs("\n],\n\"displayTimeUnit\":\"ms\",\n", out);
		rc = write_other(t, out);
		fputs("}\n", out);
	}
	if (rc == GANTT_OK && (fflush(out) != 0 || ferror(out))) {
		sim_errf(err, errlen, "error writing the trace: %s", strerror(errno));
		rc = GANTT_FAIL;
	}
	return rc;
}
