/*
 * trace.c - the Chrome trace of a stored run (see trace.h).
 *
 * Two passes over the run's ops, both by the store module
 * (sim/store_read.h), as in svg.c. The first (trace_new) groups the ops of
 * the window by (rank, stream): those are the threads, and their counts
 * give the number of events before anything is written, so that the
 * caller can warn about a trace too big to view. The second (trace_write)
 * reads the chosen ranks' ops in (rank, start) order through a cursor and
 * writes one event per op as it reads it: a trace of millions of ops costs
 * reading them, not holding them.
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

#include "sim/store_read.h"
#include "sim/units.h"
#include "sim/util.h"

/* One (rank, stream) with ops in the window: a thread of the trace. */
struct thread {
	int rank, stream;
	size_t ops;
};

struct trace {
	struct sim_store_read *db;
	int64_t run;
	const struct gantt_opts *o;
	struct gantt_window w;
	struct sim_store_window win;  /* w for the store          */
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
		"pp recv prev", "pp recv next", "cp send", "cp recv", "tp recv",
	};
	if (stream >= 0 && stream < (int)ARRAY_SIZE(names))
		return names[stream];
	snprintf(buf, len, "stream %d", stream);
	return buf;
}

static int db_fail(struct trace *t)
{
	sim_errf(t->err, t->errlen, "reading the database: %s", sim_store_read_error(t->db));
	return GANTT_FAIL;
}

static void add_thread(void *ctx, const struct sim_store_stream *s)
{
	struct trace *t = ctx;
	t->nproc += t->nth == 0 || t->th[t->nth - 1].rank != s->rank;
	t->th = xreallocarray(t->th, t->nth + 1, sizeof(*t->th));
	t->th[t->nth++] = (struct thread){ .rank = s->rank, .stream = s->stream, .ops = s->ops };
	t->events += s->ops + 1;
}

/*
 * The threads and the events: per rank a process_name and a
 * process_sort_index, per thread a thread_name, per op one event.
 * O(ops of the chosen ranks' span): one grouped scan of the index.
 */
static int load_threads(struct trace *t)
{
	t->win = (struct sim_store_window){ .run = t->run, .ranks = t->o->ranks,
					    .nranks = t->o->nranks, .from_ps = t->w.from_ps,
					    .to_ps = t->w.to_ps };
	int rc = sim_store_read_streams(t->db, &t->win, SIM_STORE_COUNT, add_thread, t);
	if (rc != SIM_STORE_READ_OK)
		return db_fail(t);
	t->events += 2 * t->nproc;
	return GANTT_OK;
}

int trace_new(struct sim_store_read *db, int64_t run, const struct gantt_opts *o,
	      struct trace **out, char *err, size_t errlen)
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

/* A REAL column as a JSON number; NULL (NAN), NaN and infinities as null. */
static void json_real(FILE *f, double v)
{
	if (!isfinite(v))
		fputs("null", f);
	else
		fprintf(f, "%.17g", v);
}

/* ---- the trace --------------------------------------------------------------------- */

/* The metadata events of one rank: its process's name and place, from the
 * ranks table ("rank 3 (node 0, GPU 3)"; "rank 3" without a row). */
static int write_process(struct trace *t, int rank, FILE *f)
{
	int found, node, gpu;
	if (sim_store_read_rank_place(t->db, t->run, rank, &found, &node, &gpu) !=
	    SIM_STORE_READ_OK)
		return db_fail(t);
	char name[96];
	int n = snprintf(name, sizeof(name), "rank %d", rank);
	if (found)
		snprintf(name + n, sizeof(name) - (size_t)n, " (node %d, GPU %d)", node, gpu);
	fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_name\",\"args\":"
		"{\"name\":\"%s\"}},\n", rank, name);
	fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_sort_index\",\"args\":"
		"{\"sort_index\":%d}},\n", rank, rank);
	return GANTT_OK;
}

/* Every process and thread name, before the ops. */
static int write_metadata(struct trace *t, FILE *f)
{
	int rc = GANTT_OK;
	char buf[32];
	for (size_t i = 0; i < t->nth && rc == GANTT_OK; i++) {
		const struct thread *th = &t->th[i];
		if (i == 0 || th[-1].rank != th->rank)
			rc = write_process(t, th->rank, f);
		fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\",\"args\":"
			"{\"name\":\"%s\"}},\n", th->rank, th->stream,
			trace_stream_name(th->stream, buf, sizeof(buf)));
	}
	return rc;
}

/* One op as a complete event. */
static void write_op(const struct sim_store_op *op, FILE *f, int first)
{
	fprintf(f, "%s{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":", first ? "" : ",\n",
		op->rank, op->stream);
	json_us(f, op->start_ps);
	fputs(",\"dur\":", f);
	json_us(f, op->end_ps - op->start_ps);
	fputs(",\"name\":", f);
	cli_json_str(f, op->name);
	fputs(",\"cat\":", f);
	cli_json_str(f, op->kind);
	fputs(",\"args\":{\"bytes\":", f);
	json_real(f, op->bytes);
	fputs(",\"flops\":", f);
	json_real(f, op->flops);
	fputs(",\"kind\":", f);
	cli_json_str(f, op->kind);
	fputs("}}", f);
}

/* Every op of the chosen ranks in the window, by rank and time. */
static int write_ops(struct trace *t, FILE *f)
{
	struct sim_store_ops *q = sim_store_ops_open(t->db, &t->win, SIM_STORE_BY_RANK);
	if (!q)
		return db_fail(t);
	struct sim_store_op op;
	int rc, first = 1;
	while ((rc = sim_store_ops_next(q, &op)) == 1) {
		write_op(&op, f, first);
		first = 0;
	}
	sim_store_ops_close(q);
	return rc == 0 ? GANTT_OK : db_fail(t);
}

/* otherData: where the trace comes from (the runs row) and its window. */
static int write_other(struct trace *t, FILE *f)
{
	struct sim_store_run_row row;
	int rc = sim_store_read_run(t->db, t->run, &row);
	const char *const keys[] = { "command", "fidelity", "created_utc", "version" };
	const char *const vals[] = { row.command, row.fidelity, row.created_utc, row.version };
	fprintf(f, "\"otherData\":{\"clustersim_run\":%lld,\"ranks\":%d", (long long)t->run,
		t->w.nranks);
	for (int i = 0; rc == SIM_STORE_READ_OK && i < (int)ARRAY_SIZE(keys); i++) {
		fprintf(f, ",\"%s\":", keys[i]);
		cli_json_str(f, vals[i]);
	}
	fprintf(f, ",\"from_ps\":%" PRId64 ",\"to_ps\":%" PRId64 "}", t->w.from_ps, t->w.to_ps);
	sim_store_run_row_free(&row);
	return rc == SIM_STORE_READ_OK ? GANTT_OK : db_fail(t);
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
