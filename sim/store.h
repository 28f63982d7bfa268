/*
 * store.h - the SQLite recorder: runs, ranks, ops, link totals and
 * collective benchmark rows (docs/schema.md documents every table).
 *
 * A struct sim_store owns one database connection (WAL, busy timeout) and its
 * prepared statements. Rows of a run are buffered (timelines in per-rank
 * blocks) and written in large transactions; a run's status is 'running' from sim_store_run_begin() and
 * becomes 'complete' only in sim_store_run_end(), after all its rows are
 * written, so readers that select complete runs never see a partial one.
 * sim_store_run_fail() marks it 'failed' (its rows are deleted). Memory rows
 * come from the recorder's mem callback, metrics from sim_store_metric().
 *
 * Every function returns 0 on success or -1 with a message in the store
 * (sim_store_error()); none aborts on a database error.
 */
#ifndef SIM_STORE_H
#define SIM_STORE_H

#include <stdint.h>

#include "sim/sim.h"

struct sim_store;

/* The schema version written in PRAGMA user_version. */
#define SIM_STORE_SCHEMA_VERSION 8

/* PRAGMA application_id of every clustersim database: 0x434c534d, "CLSM"
 * in ASCII (decimal, as the pragma is written). */
#define SIM_STORE_APPLICATION_ID 1129075533

/*
 * Open (creating if needed) the database at path and its schema. NULL with
 * err. Before anything is written the file is identified: a new or empty
 * file, or a database with clustersim's application_id, or one of an older
 * clustersim (no application_id, a user_version and clustersim's tables),
 * is opened and given the id; anything else (another program's SQLite
 * file, a file that is not SQLite, another schema version) is refused and
 * left exactly as it was.
 */
struct sim_store *sim_store_open(const char *path, char *err, size_t errlen);

/* Why sim_store_open_why() failed. */
enum sim_store_fail {
	SIM_STORE_FAIL_NONE = 0,
	SIM_STORE_NOT_OURS,      /* not a clustersim database this version writes, or a
				  * path in no folder: bad input                        */
	SIM_STORE_UNWRITABLE,    /* cannot be created or written: a read-only file,
				  * permissions, a full disk, a file-size limit, I/O   */
};
/* sim_store_open(), saying in *why (when not NULL) why it failed. */
struct sim_store *sim_store_open_why(const char *path, enum sim_store_fail *why, char *err,
				     size_t errlen);
void sim_store_close(struct sim_store *st);
const char *sim_store_error(const struct sim_store *st);

/*
 * Start a run: inserts a runs row with status 'running' and returns its id
 * (> 0), or -1. command is the command line, config the effective
 * configuration as JSON text, fidelity "flow" or "analytic".
 */
int64_t sim_store_run_begin(struct sim_store *st, const char *command,
			    const char *config_json, const char *fidelity,
			    uint32_t nranks);

/* The recorder: pass &sim_store_recorder with the store as ctx. */
extern const struct sim_recorder_ops sim_store_recorder;

/* Where a rank's time went in the run (sim_rank_stats), for its ranks row. */
struct sim_store_rank_summary {
	sim_ps compute_ps;       /* compute stream busy                         */
	sim_ps exposed_comm_ps;  /* communicating while the compute stream idles */
	sim_ps idle_ps;          /* neither, up to the end of the run           */
	sim_ps end_ps;           /* its last op's end                           */
	double peak_bytes;       /* peak memory                                 */
	sim_ps interference_ps;  /* compute time added by communication beside it
				  * (part of compute_ps)                        */
};

/* Rank's summary from the engine's counters, its idle time up to end (the
 * end of the run, or of the step). */
void sim_store_rank_summary_of(const struct sim *sim, uint32_t rank, sim_ps end,
			       struct sim_store_rank_summary *out);

/*
 * One rank's placement, its tp, cp, pp, dp, ep coordinates (NULL: none, for
 * runs without a parallel layout) and its summary (NULL: none). The row also
 * counts the rank's ops recorded so far (ops_stored), so call it after the
 * simulation.
 */
int sim_store_rank(struct sim_store *st, uint32_t rank, uint32_t node, uint32_t local_gpu,
		   const uint32_t coords[5], const struct sim_store_rank_summary *sum);

/* Ops of a rank recorded in the run in progress (written or buffered). */
uint32_t sim_store_ops_stored(const struct sim_store *st, uint32_t rank);

/* Every link with its totals; names come from the topology. */
int sim_store_links(struct sim_store *st, const struct sim *sim,
		    const struct sim_topo_ops *topo_ops, void *topo);

/* One row of `clustersim collective` (one size of one algorithm). */
struct sim_store_coll_row {
	const char *op;
	const char *algo;
	uint32_t ranks;
	uint32_t channels;
	double bytes;
	double time_s;
	double algbw_GBps;
	double busbw_GBps;
};
int sim_store_coll_result(struct sim_store *st, const struct sim_store_coll_row *row);

/* One job of a run of several (a jobs row): where it runs, its layout and
 * memory, and its steps alone on its GPUs and shared with the other jobs
 * (written as NULL unless it fits). */
struct sim_store_job_steps {
	double step_time_s, p50_s, p90_s, p99_s, tokens_per_s, mfu;
	uint32_t steps;           /* steps timed                              */
};
struct sim_store_job_row {
	uint32_t job;
	char name[64], model[64], strategy[8];
	uint32_t first_node, nodes, first_rank, gpus;
	double start_s;               /* its first step's start                 */
	uint32_t dp, tp, pp, cp;
	double params, peak_bytes, capacity_bytes;
	int fits;
	struct sim_store_job_steps alone, shared;
};
int sim_store_job(struct sim_store *st, const struct sim_store_job_row *row);
/* A link that more than one job crosses: what job moves on it per step
 * when alone (a job_links row). */
int sim_store_job_link(struct sim_store *st, const char *link, uint32_t job, double bw_Bps,
		       double bytes);

/* Names of the memory categories (sim_program_mem) for memory rows; the
 * strings must outlive the store. */
void sim_store_mem_names(struct sim_store *st, const char *const *names, unsigned n);

/* One named figure of the run's report (metrics table). */
int sim_store_metric(struct sim_store *st, const char *name, double value);

/* Flush buffered rows and mark the run complete. */
int sim_store_run_end(struct sim_store *st, sim_ps sim_end_ps, uint64_t events, double wall_s);
/* Discard the run's rows and mark it failed. */
int sim_store_run_fail(struct sim_store *st, const char *why);

/*
 * Sweeps (clustersim sweep): a sweep is found by its signature (the caller's
 * unambiguous text of the scenario's content, overrides and varied keys), so
 * rerunning the same sweep resumes it; sim_store_sweep_open finds or creates
 * it in one transaction, so two identical sweeps started at once share one
 * row (*resumed says whether it existed). Each point is stored in its own
 * transaction, with its figures (NAN: none) and the values of the varied
 * keys.
 */
#define SIM_STORE_POINT_FIGURES 14
/* The figures' columns of sweep_points, in the order of fig[] (the writer
 * and the readers of sim/store_read.h index them alike). */
extern const char *const sim_store_point_figure[SIM_STORE_POINT_FIGURES];
struct sim_store_point {
	uint32_t point;
	const char *status;     /* ok, no_fit, invalid, failed */
	const char *reason;     /* why not ok, or NULL         */
	/* step_time_s, tokens_per_s, mfu, hfu, peak_bytes, capacity_bytes, fits,
	 * compute_s, exposed_comm_s, bubble_s, idle_s, gpus, dp, micro_batches */
	double fig[SIM_STORE_POINT_FIGURES];
	const char *const *keys, *const *values;
	size_t nvalues;
};
int64_t sim_store_sweep_open(struct sim_store *st, const char *signature, const char *command,
			     const char *scenario, const char *vary_json, int *resumed);
int sim_store_sweep_has(struct sim_store *st, int64_t sweep, uint32_t point);
int sim_store_sweep_point(struct sim_store *st, int64_t sweep, const struct sim_store_point *p);
/* A stored point: 1 if found (status, reason and figures filled), else 0. */
int sim_store_sweep_get(struct sim_store *st, int64_t sweep, uint32_t point, char *status,
			size_t slen, char *reason, size_t rlen, double fig[SIM_STORE_POINT_FIGURES]);

/* Id of the newest complete run, or -1 if there is none. */
int64_t sim_store_last_complete(struct sim_store *st);

/* The open connection, for tests that inspect what was written (readers
 * use sim/store_read.h). */
struct sqlite3 *sim_store_db(struct sim_store *st);

/*
 * Reading one stored run back for `clustersim report` (sim/store_report.c),
 * through a reader (sim/store_read.h). sim_store_report_read:
 * its command, its metrics rows (with runs.events and runs.wall_s as the
 * rows run.events and run.wall_s) and a lookup of its configuration
 * (runs.config), in *rep (always set: the caller frees it, after reading
 * reader's error when it failed). 0, or on failure sqlite's message in
 * err and SIM_STORE_REPORT_QUERY when a query cannot be prepared (the
 * file lacks clustersim's tables; the reader keeps it, for
 * sim_store_read_error and sim_store_read_kind), SIM_STORE_REPORT_READ
 * when a row cannot be read, SIM_STORE_REPORT_CONFIG when runs.config is
 * not JSON.
 */
struct sim_store_read;
struct sim_store_report;
enum sim_store_report_fail {
	SIM_STORE_REPORT_QUERY = 1,
	SIM_STORE_REPORT_READ,
	SIM_STORE_REPORT_CONFIG,
};
int sim_store_report_read(struct sim_store_read *r, int64_t run, struct sim_store_report **rep,
			  char *err, size_t errlen);
void sim_store_report_free(struct sim_store_report *rep);
/* runs.command, or NULL when not recorded. */
const char *sim_store_report_command(const struct sim_store_report *rep);
/* A metrics row by name (run.events, run.wall_s included); 0 when absent. */
double sim_store_report_metric(const struct sim_store_report *rep, const char *name);
/* Whether the run stored a metrics row at all (run.* do not count). */
int sim_store_report_has_metrics(const struct sim_store_report *rep);
/* A configuration value: a scenario key ("model.layers": the object is
 * flat) or of the cluster ("cluster.gpu": nested). A number (true is 1; 0
 * when absent), or a string in buf ("" when absent). */
double sim_store_report_num(struct sim_store_report *rep, const char *key);
const char *sim_store_report_str(struct sim_store_report *rep, const char *key, char *buf,
				 size_t len);

/*
 * Rows of a stored run, read one at a time: its collective_results in the
 * order written (op and ranks are not filled; algo lives until the next
 * call), or its job_links busiest link first (by the sum of its bytes),
 * then by link and job. NULL when the query cannot be prepared; next: 1 a
 * row, 0 the end, -1 an error (sqlite's message in err).
 */
struct sim_store_rows;
struct sim_store_rows *sim_store_report_coll_rows(struct sim_store_read *r, int64_t run,
						  char *err, size_t errlen);
int sim_store_report_coll_next(struct sim_store_rows *q, struct sim_store_coll_row *row,
			       char *err, size_t errlen);
struct sim_store_job_link_row {
	const char *link;         /* NULL in a row without one             */
	uint32_t job;
	double bw_Bps, bytes;
};
struct sim_store_rows *sim_store_report_link_rows(struct sim_store_read *r, int64_t run,
						  char *err, size_t errlen);
int sim_store_report_link_next(struct sim_store_rows *q, struct sim_store_job_link_row *row,
			       char *err, size_t errlen);
void sim_store_rows_free(struct sim_store_rows *q);
/* A stored run's jobs rows in order, at most max; 0, or -1 with err. */
int sim_store_report_jobs(struct sim_store_read *r, int64_t run, struct sim_store_job_row *job,
			  size_t max, size_t *n, char *err, size_t errlen);


/*
 * A plan of `clustersim plan --db` (tables plans and plan_layouts,
 * docs/schema.md): its head, and one row per simulated layout in the
 * ranking's order. sim_store_plan_write stores them in one transaction on
 * db (a writer's: sim_store_db) and returns the plan's id, or -1 with err;
 * sim_store_plan_read reads plan `id` (0: the newest) from db into *rows
 * (malloc'd, *n; sim_store_plan_rows_free), 0, 1 if there is no such plan,
 * -1 with err. The figures of a row: mfu, tokens_per_s, peak_bytes,
 * reserve_bytes, capacity_bytes, compute_s, interference_s, bubble_s,
 * exposed_comm_s, idle_s, exposed_tp_s, exposed_dp_s, exposed_pp_s,
 * exposed_cp_s, exposed_host_s, in that order; NaN is NULL.
 */
struct sim_store_plan_head {
	char command[2048], scenario[1024];
	uint32_t gpus;
	uint64_t candidates, fits, invalid, no_memory, held_out, replaced;
	int collapsed;
	double rho, wall_s;
	int64_t id;
};
#define SIM_STORE_PLAN_FIGS 15
struct sim_store_plan_row {
	uint32_t estimate_rank;
	uint32_t tp, sp, pp, vpp, cp, ep, dp, micro_batch, zero;
	char recompute[16];
	char schedule[24];                /* "" where the file has none (version 6) */
	uint32_t tp_overlap;              /* 0 where the file has none (6, 7) */
	double estimate_s, step_time_s, flow_step_time_s;
	char *failed;                     /* or NULL                          */
	double fig[SIM_STORE_PLAN_FIGS];
	char families[256];
	int compared;
};
struct sqlite3;
int64_t sim_store_plan_write(struct sqlite3 *db, const struct sim_store_plan_head *h,
			     const struct sim_store_plan_row *rows, size_t n, char *err,
			     size_t errlen);
int sim_store_plan_read(struct sqlite3 *db, int64_t id, struct sim_store_plan_head *h,
			struct sim_store_plan_row **rows, size_t *n, char *err, size_t errlen);
void sim_store_plan_rows_free(struct sim_store_plan_row *rows, size_t n);

#endif
