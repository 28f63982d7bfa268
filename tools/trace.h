/*
 * trace.h - a stored run's timeline in the Chrome trace event format, for
 * `clustersim export --trace`: a JSON object that Perfetto
 * (ui.perfetto.dev) and chrome://tracing open. Each rank is a process
 * (pid = rank, named "rank R (node N, GPU G)" from the ranks table), each
 * of its streams a thread (tid = stream, named by trace_stream_name()),
 * each op of non-zero length a complete event ("ph":"X") with ts and dur
 * in microseconds, its name, its kind as category, and args {bytes, flops,
 * kind}. Zero-length ops (markers) are left out.
 *
 * The caller owns the database reader (sim/store_read.h; the run must be
 * complete) and the output stream. A struct trace holds the run's window
 * and its threads, never its ops: trace_write() streams them from the
 * database.
 * Results are those of svg.h (GANTT_OK, GANTT_BADINPUT, GANTT_FAIL), and
 * messages about the options name --ranks, --from and --to.
 */
#ifndef TOOLS_TRACE_H
#define TOOLS_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tools/svg.h"

/* Viewers struggle above this many events, and callers say so. */
#define TRACE_MAX_EVENTS 1000000

struct trace;

/*
 * Find what a trace of run `run` with the options o would hold: the
 * window, the (rank, stream) threads with ops in it, and the number of
 * events (trace_events()). *out is a new trace (trace_free()), NULL on
 * error. GANTT_BADINPUT when no op of the chosen ranks lies in the window.
 */
int trace_new(struct sim_store_read *db, int64_t run, const struct gantt_opts *o,
	      struct trace **out, char *err, size_t errlen);
void trace_free(struct trace *t);

/* Events the trace holds: metadata and ops. */
size_t trace_events(const struct trace *t);

/*
 * Write the trace to out, reading the ops as it goes. GANTT_OK, or
 * GANTT_FAIL with err (part of the trace may have been written).
 */
int trace_write(struct trace *t, FILE *out, char *err, size_t errlen);

/* The name of a rank's stream: compute, grads, params, host, tp, pp send
 * next, ..., else "stream N" (in buf). */
const char *trace_stream_name(int stream, char *buf, size_t len);

#endif
