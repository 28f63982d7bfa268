/*
 * store_read.h - reading a clustersim database: the reader half of the
 * store module (sim/store.h writes; docs/schema.md documents the tables).
 * Every query over the schema lives in sim/store_read.c, next to the
 * writer's sim/store.c; the tools call these functions and hold no SQL.
 *
 * A struct sim_store_read is one read-only connection: opening it never
 * creates or changes the file. Functions that query return
 * SIM_STORE_READ_OK (0), SIM_STORE_READ_NOT_OURS when the file is not
 * SQLite or lacks clustersim's tables (bad input), or SIM_STORE_READ_FAIL
 * for anything else (an I/O error, a file-size limit), with SQLite's message
 * in sim_store_read_error(). Nothing large is held: the timeline and the
 * CSV of a table are read through cursors, one row at a time.
 */
#ifndef SIM_STORE_READ_H
#define SIM_STORE_READ_H

#include <stddef.h>
#include <stdint.h>

#include "sim/sim.h"

struct sim_store_read;

enum {
	SIM_STORE_READ_OK = 0,
	SIM_STORE_READ_NOT_OURS = -1,  /* not SQLite, or not clustersim's tables */
	SIM_STORE_READ_FAIL = -2,      /* could not be read                      */
};

/*
 * Open path read-only (busy timeout 10 s). NULL when the file cannot be
 * read (access(2): *errnum holds errno, err is empty) or SQLite cannot open
 * it (*errnum is 0, err holds SQLite's message).
 */
struct sim_store_read *sim_store_read_open(const char *path, int *errnum, char *err,
					   size_t errlen);
void sim_store_read_close(struct sim_store_read *r);
/* The message of the last failed query (SQLite's). */
const char *sim_store_read_error(const struct sim_store_read *r);
/* SIM_STORE_READ_NOT_OURS or SIM_STORE_READ_FAIL for the last failed query. */
int sim_store_read_kind(const struct sim_store_read *r);

/* ---- runs ------------------------------------------------------------------------ */

/* What sim_store_read_pick() found. */
enum sim_store_pick {
	SIM_STORE_PICKED = 1,     /* *run is the run to read                        */
	SIM_STORE_NO_RUN,         /* no run of that id                              */
	SIM_STORE_NOT_COMPLETE,   /* the run's status (in status) is not complete   */
	SIM_STORE_NONE_COMPLETE,  /* no id given and no run is complete             */
};
/*
 * The run to read: id when id > 0 (if it exists and is complete), else the
 * newest complete run, in *run. A pick (> 0), or an error (< 0). A file
 * without a runs table is SIM_STORE_READ_NOT_OURS: that is how a database
 * of something else is told apart.
 */
int sim_store_read_pick(struct sim_store_read *r, int64_t id, int64_t *run, char *status,
			size_t slen);

/* A runs row; strings are NULL when not recorded, owned by the row. */
struct sim_store_run_row {
	char *command, *fidelity, *created_utc, *version;
	int ranks;
};
/* Read run's row: OK, 1 when there is no such run (row zeroed), or an error. */
int sim_store_read_run(struct sim_store_read *r, int64_t run, struct sim_store_run_row *row);
void sim_store_run_row_free(struct sim_store_run_row *row);

/* Whether run labelled any op with phase ph: 1, 0, or an error (< 0). */
int sim_store_read_has_phase(struct sim_store_read *r, int64_t run, enum sim_phase ph);

/* The run's rank count and end: sim_end_ps, else its last op's end, else 0.
 * OK, 1 when there is no such run, or an error. */
int sim_store_read_extent(struct sim_store_read *r, int64_t run, int *nranks, int64_t *end_ps);

/* A rank's place (ranks row): OK with *found 0 when the row or its node is
 * not recorded, or an error. */
int sim_store_read_rank_place(struct sim_store_read *r, int64_t run, int rank, int *found,
			      int *node, int *local_gpu);

/* ---- the timeline (the ops view) --------------------------------------------------- */

/*
 * A part of a run's timeline: the ops of non-zero length of the chosen
 * ranks that overlap [from_ps, to_ps).
 */
struct sim_store_window {
	int64_t run;
	const int *ranks;     /* ascending, no repeats; NULL or nranks 0: every rank */
	size_t nranks;
	int64_t from_ps, to_ps;
};

/* One (rank, stream) with ops in a window: its first start and last end
 * (SIM_STORE_SPAN), or the number of its ops (SIM_STORE_COUNT). */
struct sim_store_stream {
	int rank, stream;
	int64_t first_ps, last_ps;
	size_t ops;
};
enum sim_store_stream_figure { SIM_STORE_SPAN, SIM_STORE_COUNT };
/* Call fn for each (rank, stream) of the window, by rank then stream, with
 * the figure asked for (only that one is computed: either costs a step per
 * op). One grouped scan of the block index: O(ops of the chosen ranks' span). */
int sim_store_read_streams(struct sim_store_read *r, const struct sim_store_window *w,
			   enum sim_store_stream_figure fig,
			   void (*fn)(void *ctx, const struct sim_store_stream *s), void *ctx);

/* One op as read; the strings live until the next sim_store_ops_next(). */
struct sim_store_op {
	int rank, stream;
	const char *kind, *name;   /* NULL when not recorded       */
	int64_t start_ps, end_ps;
	double bytes, flops;       /* NAN when not recorded        */
	/* Its label (struct sim_op_label): -1, SIM_PHASE_NONE and NULL for
	 * none. A run written before the labels (schema version 4 and
	 * earlier) has them derived from its names as those versions wrote
	 * them (docs/schema.md). */
	int layer, mb, chunk;
	enum sim_phase phase;
	const char *kernel;
};

/* The order of a cursor over the window's ops. */
enum sim_store_ops_order {
	SIM_STORE_BY_RANK,      /* every chosen rank, by rank, start, id         */
	SIM_STORE_BY_STREAM,    /* one rank (sim_store_ops_rank), by stream, start, id */
};
struct sim_store_ops;
/* A cursor over the window's ops (w must outlive it). NULL on error. */
struct sim_store_ops *sim_store_ops_open(struct sim_store_read *r,
					 const struct sim_store_window *w,
					 enum sim_store_ops_order order);
/* With SIM_STORE_BY_STREAM: read the ops of rank (again from the start). */
void sim_store_ops_rank(struct sim_store_ops *c, int rank);
/* The next op in *op: 1, 0 at the end, or an error. */
int sim_store_ops_next(struct sim_store_ops *c, struct sim_store_op *op);
void sim_store_ops_close(struct sim_store_ops *c);

/* ---- whole tables (export --csv --table) ---------------------------------------- */

/* The tables that can be exported, in the order of messages. per_run: the
 * rows of one run, else every row (the sweep tables, which no run owns). */
size_t sim_store_table_count(void);
const char *sim_store_table_name(size_t i);
int sim_store_table_per_run(size_t i);

/* A cursor over table i's rows (of run, when per_run), every column as
 * SQLite's text of it (NULL for NULL), in the table's own column order. */
struct sim_store_rows;
struct sim_store_rows *sim_store_rows_open(struct sim_store_read *r, size_t table, int64_t run);
size_t sim_store_rows_columns(const struct sim_store_rows *c);
const char *sim_store_rows_name(const struct sim_store_rows *c, size_t col);
/* The next row: 1 (sim_store_rows_text valid until the next call), 0 at
 * the end, or an error. */
int sim_store_rows_next(struct sim_store_rows *c);
const char *sim_store_rows_text(const struct sim_store_rows *c, size_t col);
void sim_store_rows_close(struct sim_store_rows *c);

/* ---- sweeps (plot) ------------------------------------------------------------------ */

/* The sweep: id's when id > 0, else the newest; its command (else its
 * scenario, else NULL; caller frees). OK, 1 when there is none, or an error. */
int sim_store_read_sweep(struct sim_store_read *r, int64_t id, int64_t *sweep, char **command);

/* One varied value of a sweep point, with the point's status, reason and
 * figure fig (NAN when NULL); strings live during the call. */
struct sim_store_point_value {
	int64_t point;
	const char *status, *reason;
	double fig;
	const char *key, *value;
};
/* Call fn for each varied value of each point of sweep, by point then in
 * the order the values were stored; fig is the index of a figure of
 * sim_store_point_figure[] (SIM_STORE_POINT_FIGURES, sim/store.h). */
int sim_store_read_points(struct sim_store_read *r, int64_t sweep, int fig,
			  void (*fn)(void *ctx, const struct sim_store_point_value *v),
			  void *ctx);

/* ---- step times (plot --steps) ------------------------------------------------------ */

/* Complete runs with 2 steps or more (metric step.1, or job.NAME.alone.step.1
 * of a run of several jobs), ascending, in a new array. */
int sim_store_read_step_runs(struct sim_store_read *r, int64_t **runs, size_t *n);
/* The names of run's jobs, by job (none in a file of schema 3, which has no
 * jobs table). */
int sim_store_read_job_names(struct sim_store_read *r, int64_t run,
			     void (*fn)(void *ctx, const char *name), void *ctx);
/* The values of metrics named prefix + a step number (digits only), not
 * NULL, ascending, in a new array (*n of them). An error leaves what was
 * read before it. */
int sim_store_read_steps(struct sim_store_read *r, int64_t run, const char *prefix,
			 double **v, size_t *n);

/* Values of keys of run's configuration (runs.config, a JSON object keyed
 * by scenario key). Per key: present 0 when absent or NULL; else text
 * (until the next call), as a number and as an integer. */
struct sim_store_config_value {
	int present;
	char text[64];
	double num;
	long long inum;
};
int sim_store_read_config(struct sim_store_read *r, int64_t run, const char *const *keys,
			  size_t n, struct sim_store_config_value *out);

/* ---- for the store module's other readers (sim/store_report.c) ---------------------- */

/*
 * The connection, for statements of the store module's own files (not for
 * the tools: they use the calls above). sim_store_read_note() keeps the
 * connection's last error as the reader's (after such a statement failed),
 * for sim_store_read_error() and sim_store_read_kind().
 */
struct sqlite3;
struct sqlite3 *sim_store_read_db(const struct sim_store_read *r);
void sim_store_read_note(struct sim_store_read *r);

#endif
