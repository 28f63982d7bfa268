/*
 * store_report.c - reading a stored run back for `clustersim report`
 * (store.h): its metrics rows, its configuration by key (json_extract() on
 * runs.config), its collective_results, jobs and job_links rows. The
 * schema is sim/store.c's; every query here reads tables it writes. The
 * connection is a reader's (sim/store_read.h), which keeps a failure to
 * prepare a query as its own, for sim_store_read_error().
 */
#include "sim/store.h"
#include "sim/store_read.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/util.h"

/* One figure of the run: a metrics row, or a column of its runs row. */
struct metric {
	char name[112];           /* job.NAME.failures.checkpoint_bytes fits */
	double v;
};

struct sim_store_report {
	struct sim_store_read *r;
	sqlite3 *db;
	int64_t run;
	sqlite3_stmt *cfg;        /* json_extract(config, ?2), command    */
	struct metric *m;
	size_t nm;
	char *command;            /* runs.command, may be NULL          */
};

struct sim_store_rows {
	sqlite3 *db;
	sqlite3_stmt *q;
};

static void db_message(sqlite3 *db, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s", sqlite3_errmsg(db));
}

/* The configuration lookup for key, left on its row; SQLITE_ROW or an error. */
static int cfg_step(struct sim_store_report *rep, const char *key)
{
	char path[128];
	if (!strncmp(key, "cluster.", 8))
		snprintf(path, sizeof(path), "$.%s", key);
	else
		snprintf(path, sizeof(path), "$.\"%s\"", key);
	sqlite3_reset(rep->cfg);
	sqlite3_bind_text(rep->cfg, 2, path, -1, SQLITE_TRANSIENT);
	return sqlite3_step(rep->cfg);
}

double sim_store_report_num(struct sim_store_report *rep, const char *key)
{
	return cfg_step(rep, key) == SQLITE_ROW ? sqlite3_column_double(rep->cfg, 0) : 0;
}

const char *sim_store_report_str(struct sim_store_report *rep, const char *key, char *buf,
				 size_t len)
{
	const char *s = NULL;
	if (cfg_step(rep, key) == SQLITE_ROW)
		s = (const char *)sqlite3_column_text(rep->cfg, 0);
	snprintf(buf, len, "%s", s ? s : "");
	return buf;
}

double sim_store_report_metric(const struct sim_store_report *rep, const char *name)
{
	for (size_t i = 0; i < rep->nm; i++)  /* O(metrics), ~60 */
		if (!strcmp(rep->m[i].name, name))
			return rep->m[i].v;
	return 0;
}

int sim_store_report_has_metrics(const struct sim_store_report *rep)
{
	for (size_t i = 0; i < rep->nm; i++)
		if (strncmp(rep->m[i].name, "run.", 4))
			return 1;
	return 0;
}

const char *sim_store_report_command(const struct sim_store_report *rep)
{
	return rep->command;
}

static void metric_add(struct sim_store_report *rep, const char *name, double v)
{
	rep->m = xreallocarray(rep->m, rep->nm + 1, sizeof(*rep->m));
	snprintf(rep->m[rep->nm].name, sizeof(rep->m[rep->nm].name), "%s", name);
	rep->m[rep->nm++].v = v;
}

/* The metrics rows, then runs.events and runs.wall_s; 0 or a failure. */
static int load_metrics(struct sim_store_report *rep)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(rep->db, "SELECT name, value FROM metrics WHERE run_id = ?1 UNION "
			       "ALL SELECT 'run.events', events FROM runs WHERE id = ?1 UNION ALL "
			       "SELECT 'run.wall_s', wall_s FROM runs WHERE id = ?1",
			       -1, &q, NULL) != SQLITE_OK)
		return SIM_STORE_REPORT_QUERY;
	sqlite3_bind_int64(q, 1, rep->run);
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW)
		metric_add(rep, (const char *)sqlite3_column_text(q, 0), sqlite3_column_double(q, 1));
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : SIM_STORE_REPORT_READ;
}

/* The configuration lookup, runs.command and the metrics; 0 or a failure. */
static int report_load(struct sim_store_report *rep)
{
	if (sqlite3_prepare_v2(rep->db, "SELECT json_extract(config, ?2), command FROM runs "
			       "WHERE id = ?1", -1, &rep->cfg, NULL) != SQLITE_OK)
		return SIM_STORE_REPORT_QUERY;
	sqlite3_bind_int64(rep->cfg, 1, rep->run);
	int rc = cfg_step(rep, "command");
	if (rc == SQLITE_ROW && sqlite3_column_text(rep->cfg, 1))
		rep->command = xstrdup((const char *)sqlite3_column_text(rep->cfg, 1));
	if (rc != SQLITE_ROW)
		return SIM_STORE_REPORT_CONFIG;
	return load_metrics(rep);
}

int sim_store_report_read(struct sim_store_read *r, int64_t run, struct sim_store_report **out,
			  char *err, size_t errlen)
{
	struct sim_store_report *rep = *out = xcalloc(1, sizeof(*rep));
	rep->r = r;
	rep->db = sim_store_read_db(r);
	rep->run = run;
	int rc = report_load(rep);
	if (rc == SIM_STORE_REPORT_QUERY)
		sim_store_read_note(r);
	if (rc)
		db_message(rep->db, err, errlen);
	return rc;
}

void sim_store_report_free(struct sim_store_report *rep)
{
	if (!rep)
		return;
	sqlite3_finalize(rep->cfg);
	free(rep->m);
	free(rep->command);
	free(rep);
}

/* ---- rows one at a time ---------------------------------------------------------- */

static struct sim_store_rows *rows_of(struct sim_store_read *r, const char *sql, int64_t run,
				      char *err, size_t errlen)
{
	sqlite3 *db = sim_store_read_db(r);
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
		db_message(db, err, errlen);
		return NULL;
	}
	sqlite3_bind_int64(q, 1, run);
	struct sim_store_rows *rows = xmalloc(sizeof(*rows));
	*rows = (struct sim_store_rows){ .db = db, .q = q };
	return rows;
}

/* Step q: 1 on a row, 0 at the end, -1 with err. */
static int rows_step(struct sim_store_rows *rows, char *err, size_t errlen)
{
	int rc = sqlite3_step(rows->q);
	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	db_message(rows->db, err, errlen);
	return -1;
}

void sim_store_rows_free(struct sim_store_rows *rows)
{
	if (!rows)
		return;
	sqlite3_finalize(rows->q);
	free(rows);
}

struct sim_store_rows *sim_store_report_coll_rows(struct sim_store_read *r, int64_t run,
						  char *err, size_t errlen)
{
	return rows_of(r, "SELECT coalesce(algo, ''), channels, bytes, time_s, algbw_GBps, "
		       "busbw_GBps FROM collective_results WHERE run_id = ?1 ORDER BY rowid", run,
		       err, errlen);
}

int sim_store_report_coll_next(struct sim_store_rows *rows, struct sim_store_coll_row *row,
			       char *err, size_t errlen)
{
	int rc = rows_step(rows, err, errlen);
	if (rc != 1)
		return rc;
	sqlite3_stmt *q = rows->q;
	*row = (struct sim_store_coll_row){
		.algo = (const char *)sqlite3_column_text(q, 0),
		.channels = (uint32_t)sqlite3_column_int(q, 1),
		.bytes = sqlite3_column_double(q, 2), .time_s = sqlite3_column_double(q, 3),
		.algbw_GBps = sqlite3_column_double(q, 4), .busbw_GBps = sqlite3_column_double(q, 5),
	};
	return 1;
}

struct sim_store_rows *sim_store_report_link_rows(struct sim_store_read *r, int64_t run,
						  char *err, size_t errlen)
{
	return rows_of(r, "SELECT l.link, l.job, l.bw_Bps, l.bytes FROM job_links l "
		       "JOIN (SELECT link, sum(bytes) AS total FROM job_links WHERE run_id = ?1 "
		       "GROUP BY link) t USING (link) WHERE l.run_id = ?1 "
		       "ORDER BY t.total DESC, l.link, l.job", run, err, errlen);
}

int sim_store_report_link_next(struct sim_store_rows *rows, struct sim_store_job_link_row *row,
			       char *err, size_t errlen)
{
	int rc = rows_step(rows, err, errlen);
	if (rc != 1)
		return rc;
	sqlite3_stmt *q = rows->q;
	*row = (struct sim_store_job_link_row){
		.link = (const char *)sqlite3_column_text(q, 0),
		.job = (uint32_t)sqlite3_column_int(q, 1),
		.bw_Bps = sqlite3_column_double(q, 2), .bytes = sqlite3_column_double(q, 3),
	};
	return 1;
}

/* ---- the jobs rows ---------------------------------------------------------------- */

/* Columns from i on as a job's steps (seven). */
static void job_steps(sqlite3_stmt *q, int i, struct sim_store_job_steps *out)
{
	*out = (struct sim_store_job_steps){
		sqlite3_column_double(q, i), sqlite3_column_double(q, i + 1),
		sqlite3_column_double(q, i + 2), sqlite3_column_double(q, i + 3),
		sqlite3_column_double(q, i + 4), sqlite3_column_double(q, i + 5),
		(uint32_t)sqlite3_column_int64(q, i + 6),
	};
}

static void column_str(sqlite3_stmt *q, int i, char *buf, size_t len)
{
	const char *t = (const char *)sqlite3_column_text(q, i);
	snprintf(buf, len, "%s", t ? t : "");
}

int sim_store_report_jobs(struct sim_store_read *r, int64_t run, struct sim_store_job_row *job,
			  size_t max, size_t *n, char *err, size_t errlen)
{
	struct sim_store_rows *rows = rows_of(r, "SELECT job, name, model, strategy, first_node, "
		"nodes, first_rank, gpus, dp, tp, pp, cp, params, peak_bytes, capacity_bytes, fits, "
		"alone_step_time_s, alone_p50_s, alone_p90_s, alone_p99_s, alone_tokens_per_s, "
		"alone_mfu, alone_steps, shared_step_time_s, shared_p50_s, shared_p90_s, "
		"shared_p99_s, shared_tokens_per_s, shared_mfu, shared_steps, start_s FROM jobs "
		"WHERE run_id = ?1 ORDER BY job", run, err, errlen);
	if (!rows)
		return -1;
	sqlite3_stmt *q = rows->q;
	int rc = 0;  /* with max rows read, the rest are not */
	for (*n = 0; *n < max && (rc = rows_step(rows, err, errlen)) == 1; (*n)++) {
		struct sim_store_job_row *j = &job[*n];
		uint32_t *u[] = { &j->first_node, &j->nodes, &j->first_rank, &j->gpus, &j->dp,
				  &j->tp, &j->pp, &j->cp };
		j->job = (uint32_t)sqlite3_column_int(q, 0);
		column_str(q, 1, j->name, sizeof(j->name));
		column_str(q, 2, j->model, sizeof(j->model));
		column_str(q, 3, j->strategy, sizeof(j->strategy));
		for (size_t k = 0; k < ARRAY_SIZE(u); k++)
			*u[k] = (uint32_t)sqlite3_column_int64(q, 4 + (int)k);
		j->params = sqlite3_column_double(q, 12);
		j->peak_bytes = sqlite3_column_double(q, 13);
		j->capacity_bytes = sqlite3_column_double(q, 14);
		j->fits = sqlite3_column_int(q, 15);
		job_steps(q, 16, &j->alone);
		job_steps(q, 23, &j->shared);
		j->start_s = sqlite3_column_double(q, 30);
	}
	sim_store_rows_free(rows);
	return rc < 0 ? -1 : 0;
}
