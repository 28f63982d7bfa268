/*
 * cmd_report.c - `clustersim report DB`: print a stored run's report again
 * from the database alone, without simulating anything. A run of
 * `clustersim run` is reported as that command reports it, in text or
 * JSON, from runs.config (the effective configuration) and the metrics
 * table; a run of `clustersim collective` as that command's table (or
 * JSON), from collective_results.
 *
 * Configuration values come out of runs.config through SQLite's
 * json_extract(); the run's metrics are read once into a small array and
 * looked up by name. The database is opened read-only (export_db_open).
 */
#include "tools/cli.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/goodput.h"
#include "parallel/jobs.h"
#include "parallel/train.h"
#include "sim/store.h"
#include "sim/util.h"

static const struct cli_opt report_opts[] = {
	{ "run", 'r', CLI_COUNT, "ID", "the newest complete run", "which run to report" },
	{ "json", 0, CLI_FLAG, NULL, NULL,
	  "print one JSON object: the keys of clustersim run --json (or of clustersim "
	  "collective --json for a collective run)" },
	{ 0 },
};

/* One figure of the run: a metrics row, or a column of its runs row. */
struct metric {
	char name[112];           /* job.NAME.failures.checkpoint_bytes fits */
	double v;
};

/* The run being reported. */
struct report {
	struct cli_args *a;
	sqlite3 *db;
	long long run;
	sqlite3_stmt *cfg;        /* json_extract(config, ?2), command    */
	struct metric *m;
	size_t nm;
	char *command;            /* runs.command, may be NULL          */
};

/* ---- reading the run --------------------------------------------------------------- */

static int db_fail(struct report *r)
{
	return cli_error(r->a, CLI_FAIL, "reading %s: %s", r->a->pos[0], sqlite3_errmsg(r->db));
}

/*
 * The configuration value of a scenario key ("model.layers": the JSON
 * object is flat) or of the cluster ("cluster.gpu": nested). The statement
 * is left on its row for the caller to read; SQLITE_ROW or an error.
 */
static int cfg_step(struct report *r, const char *key)
{
	char path[128];
	if (!strncmp(key, "cluster.", 8))
		snprintf(path, sizeof(path), "$.%s", key);
	else
		snprintf(path, sizeof(path), "$.\"%s\"", key);
	sqlite3_reset(r->cfg);
	sqlite3_bind_text(r->cfg, 2, path, -1, SQLITE_TRANSIENT);
	return sqlite3_step(r->cfg);
}

/* A number of the configuration (true is 1); 0 when absent. */
static double cfg_num(struct report *r, const char *key)
{
	return cfg_step(r, key) == SQLITE_ROW ? sqlite3_column_double(r->cfg, 0) : 0;
}

static unsigned cfg_u(struct report *r, const char *key)
{
	return (unsigned)cfg_num(r, key);
}

/* A string of the configuration, in buf; "" when absent. */
static const char *cfg_str(struct report *r, const char *key, char *buf, size_t len)
{
	const char *s = NULL;
	if (cfg_step(r, key) == SQLITE_ROW)
		s = (const char *)sqlite3_column_text(r->cfg, 0);
	snprintf(buf, len, "%s", s ? s : "");
	return buf;
}

/* A metric by name; 0 when the run did not store it. O(metrics), ~30. */
static double metric(const struct report *r, const char *name)
{
	for (size_t i = 0; i < r->nm; i++)
		if (!strcmp(r->m[i].name, name))
			return r->m[i].v;
	return 0;
}

static unsigned metric_u(const struct report *r, const char *name)
{
	return (unsigned)metric(r, name);
}

static void metric_add(struct report *r, const char *name, double v)
{
	r->m = xreallocarray(r->m, r->nm + 1, sizeof(*r->m));
	snprintf(r->m[r->nm].name, sizeof(r->m[r->nm].name), "%s", name);
	r->m[r->nm++].v = v;
}

/* The metrics rows, then runs.events and runs.wall_s as "run.events" and
 * "run.wall_s", and runs.command. */
static int load_metrics(struct report *r)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(r->db, "SELECT name, value FROM metrics WHERE run_id = ?1 UNION ALL "
			       "SELECT 'run.events', events FROM runs WHERE id = ?1 UNION ALL "
			       "SELECT 'run.wall_s', wall_s FROM runs WHERE id = ?1",
			       -1, &q, NULL) != SQLITE_OK)
		return cli_db_error(r->a, r->db, r->a->pos[0]);
	sqlite3_bind_int64(q, 1, r->run);
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW)
		metric_add(r, (const char *)sqlite3_column_text(q, 0), sqlite3_column_double(q, 1));
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? CLI_OK : db_fail(r);
}

/* Prepare the configuration lookups and read the metrics and command. */
static int report_load(struct report *r)
{
	if (sqlite3_prepare_v2(r->db, "SELECT json_extract(config, ?2), command FROM runs "
			       "WHERE id = ?1", -1, &r->cfg, NULL) != SQLITE_OK)
		return cli_db_error(r->a, r->db, r->a->pos[0]);
	sqlite3_bind_int64(r->cfg, 1, r->run);
	int rc = cfg_step(r, "command");
	if (rc == SQLITE_ROW && sqlite3_column_text(r->cfg, 1))
		r->command = xstrdup((const char *)sqlite3_column_text(r->cfg, 1));
	if (rc != SQLITE_ROW)
		return cli_error(r->a, CLI_BADINPUT, "run %lld of %s: its configuration is not JSON "
				 "(%s)", r->run, r->a->pos[0], sqlite3_errmsg(r->db));
	return load_metrics(r);
}

/* ZeRO stage and FSDP as `clustersim run` names the strategy (the choice
 * of parallel/train.c's dp_strategy()). */
static const char *strategy(struct report *r)
{
	static const char *const by_zero[] = { "ddp", "zero1", "zero2", "zero3" };
	unsigned zero = cfg_u(r, "parallel.zero");
	if (cfg_num(r, "parallel.fsdp.enabled"))
		return "fsdp";
	return zero < ARRAY_SIZE(by_zero) ? by_zero[zero] : "?";
}

/* ---- the text of clustersim run ---------------------------------------------------- */

static void text_model(struct report *r)
{
	char preset[64], gpu[64], cluster[64], fid[16], sym[16];
	cfg_str(r, "model.preset", preset, sizeof(preset));
	printf("  model       %s%s%.2f B parameters, %u layers, hidden %u\n", preset,
	       preset[0] ? ": " : "", metric(r, "params") / 1e9, cfg_u(r, "model.layers"),
	       cfg_u(r, "model.hidden"));
	printf("  cluster     %u x %s (%s), %s fidelity%s\n", metric_u(r, "gpus"),
	       cfg_str(r, "cluster.gpu", gpu, sizeof(gpu)),
	       cfg_str(r, "cluster.preset", cluster, sizeof(cluster)),
	       cfg_str(r, "sim.fidelity", fid, sizeof(fid)),
	       strcmp(cfg_str(r, "sim.symmetry", sym, sizeof(sym)), "dp") ? ""
	       : ", data-parallel replica 0 simulated for all (sim.symmetry dp)");
	printf("  layout      dp %u (%s), tp %u, pp %u, cp %u; %u micro-batch%s of %u x %u "
	       "tokens per replica\n", metric_u(r, "dp"), strategy(r), cfg_u(r, "parallel.tp"),
	       cfg_u(r, "parallel.pp"), cfg_u(r, "parallel.cp"), metric_u(r, "micro_batches"),
	       metric_u(r, "micro_batches") == 1 ? "" : "es", cfg_u(r, "training.micro_batch"),
	       cfg_u(r, "training.seq"));
}

/* The memory line and its breakdown by category (par_mem_name order). */
static void text_memory(struct report *r)
{
	printf("  memory      peak %.2f GB of %.2f GB per GPU: %s; model states %.2f GB held "
	       "from the start\n             at the peak: ", metric(r, "memory.peak") / 1e9,
	       metric(r, "memory.capacity") / 1e9,
	       metric(r, "memory.fits") ? "fits" : "OUT OF MEMORY",
	       metric(r, "memory.model_states") / 1e9);
	for (int c = 0; c < PAR_MEM_NCATS; c++) {
		char name[48];
		snprintf(name, sizeof(name), "memory.%s", par_mem_name(c));
		printf("%s%s %.2f GB", c ? ", " : "", par_mem_name(c), metric(r, name) / 1e9);
	}
	printf("\n");
}

/* Experts and offload, when the configuration has them. */
static void text_options(struct report *r)
{
	if (cfg_num(r, "model.moe.experts"))
		printf("  experts     %u experts, top %u, EP %u: the busiest GPU routes %.3fx the "
		       "even share (%.1f %% of tokens dropped over capacity), adding %.6f s per "
		       "step\n", cfg_u(r, "model.moe.experts"), cfg_u(r, "model.moe.top_k"),
		       cfg_u(r, "parallel.ep"), metric(r, "moe.imbalance"),
		       100 * metric(r, "moe.dropped"), metric(r, "moe.imbalance_s"));
	if (cfg_num(r, "parallel.offload.enabled"))
		printf("  offload     %.2f GB of optimizer states on the CPU; PCIe copies and the "
		       "CPU step take %.6f s per step\n", metric(r, "offload.saved_bytes") / 1e9,
		       metric(r, "offload.host_s"));
}

/* The variability line of `clustersim run`, from the configuration and
 * the stored straggler ranks. */
static void text_variability(struct report *r)
{
	char jit[32], gpu[32];
	unsigned ranks[8], n = metric_u(r, "stragglers.n");
	/* Runs stored before the section existed have none. */
	if (!*cfg_str(r, "variability.jitter", jit, sizeof(jit)))
		snprintf(jit, sizeof(jit), "none");
	if (!*cfg_str(r, "variability.gpu", gpu, sizeof(gpu)))
		snprintf(gpu, sizeof(gpu), "none");
	if (n > ARRAY_SIZE(ranks))
		n = ARRAY_SIZE(ranks);
	for (unsigned i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "straggler.%u", i);
		ranks[i] = metric_u(r, name);
	}
	cli_print_variability(jit, cfg_num(r, "variability.jitter_cv"), gpu,
			      cfg_num(r, "variability.gpu_cv"), cfg_u(r, "variability.stragglers"),
			      cfg_num(r, "variability.straggler_slowdown"), ranks, n,
			      (unsigned long long)cfg_num(r, "sim.seed"));
}

/* Step time, where the critical rank's time went, and the pipeline. */
static void text_time(struct report *r)
{
	double bubble = metric(r, "bubble_s"), pipe = metric(r, "pipeline_s");
	unsigned crit = metric_u(r, "critical_rank");
	printf("  step time   %.6f s   tokens/s %.0f   MFU %.4f   HFU %.4f\n",
	       metric(r, "step_time_s"), metric(r, "tokens_per_s"), metric(r, "mfu"),
	       metric(r, "hfu"));
	cli_print_steps(metric_u(r, "steps"), metric(r, "step_time_p50_s"),
			metric(r, "step_time_p90_s"), metric(r, "step_time_p99_s"),
			metric(r, "step_time_min_s"), metric(r, "step_time_max_s"));
	text_variability(r);
	cli_print_failures("  failures    ", metric(r, "failures.job_mtbf_s"),
			   metric_u(r, "gpus"), metric(r, "failures.checkpoint_bytes"),
			   metric(r, "failures.checkpoint_s"), metric(r, "failures.interval_s"),
			   metric(r, "failures.young_s"), metric(r, "failures.goodput"),
			   metric(r, "failures.interruptions"), metric(r, "failures.useful_s"));
	printf("  rank %-6u compute %.6f s, exposed communication %.6f s, bubble %.6f s, "
	       "idle %.6f s\n", crit, metric(r, "compute_s"), metric(r, "exposed_comm_s"), bubble,
	       metric(r, "idle_s"));
	if (cfg_u(r, "parallel.pp") > 1)
		printf("  pipeline    bubble %.4f of the pipeline phase (%.6f s, first forward to "
		       "last backward of rank %u); memory peaks on stage %u\n",
		       pipe > 0 ? bubble / pipe : 0, pipe, crit, metric_u(r, "busiest_stage"));
}

/* The report of `clustersim run`, after a line naming the run. */
static void print_text(struct report *r)
{
	printf("clustersim report: run %lld of %s: %s\n", r->run, r->a->pos[0],
	       r->command ? r->command : "(command not recorded)");
	text_model(r);
	text_memory(r);
	text_options(r);
	if (metric(r, "memory.fits"))
		text_time(r);
}

/* ---- the JSON of clustersim run ---------------------------------------------------- */

enum jtype {
	J_NUM,        /* a metric, as fmt prints it                       */
	J_BOOL,       /* a metric, 0 false, else true                     */
	J_STRATEGY,   /* the strategy, from the configuration             */
	J_MEMCATS,    /* memory.NAME of every category, %.17g             */
	J_STRAGGLERS, /* [straggler.0, ...] of stragglers.n              */
	J_OPEN,       /* "key":{                                          */
	J_CLOSE,      /* }                                                */
};

/* One key of `clustersim run --json`, in its order and with its format. */
struct jfield {
	enum jtype type;
	const char *key;      /* the JSON key (none for J_MEMCATS, J_CLOSE) */
	const char *metric;   /* where the value comes from; NULL: the key  */
	const char *fmt;
	int fits;             /* FITS_NULL: null, FITS_ONLY: left out, when
			       * the layout does not fit                     */
};

enum { FITS_ANY, FITS_NULL, FITS_ONLY };

/* The keys of print_json() in tools/cmd_run.c, in its order: keep the two
 * in step. A field without .metric reads the metric named as its key. */
static const struct jfield run_json[] = {
	{ .type = J_NUM, .key = "step_time_s", .fmt = "%.9g", .fits = FITS_NULL },
	{ .type = J_NUM, .key = "tokens_per_s", .fmt = "%.9g", .fits = FITS_NULL },
	{ .type = J_NUM, .key = "mfu", .fmt = "%.6g", .fits = FITS_NULL },
	{ .type = J_NUM, .key = "hfu", .fmt = "%.6g", .fits = FITS_NULL },
	{ .type = J_NUM, .key = "steps", .fmt = "%.0f", .fits = FITS_ONLY },
	{ .type = J_NUM, .key = "step_time_p50_s", .fmt = "%.9g", .fits = FITS_ONLY },
	{ .type = J_NUM, .key = "step_time_p90_s", .fmt = "%.9g", .fits = FITS_ONLY },
	{ .type = J_NUM, .key = "step_time_p99_s", .fmt = "%.9g", .fits = FITS_ONLY },
	{ .type = J_NUM, .key = "step_time_min_s", .fmt = "%.9g", .fits = FITS_ONLY },
	{ .type = J_NUM, .key = "step_time_max_s", .fmt = "%.9g", .fits = FITS_ONLY },
	{ .type = J_OPEN, .key = "failures" },
	{ .type = J_NUM, .key = "job_mtbf_s", .metric = "failures.job_mtbf_s", .fmt = "%.9g" },
	{ .type = J_NUM, .key = "checkpoint_bytes", .metric = "failures.checkpoint_bytes",
	  .fmt = "%.17g" },
	{ .type = J_NUM, .key = "checkpoint_s", .metric = "failures.checkpoint_s", .fmt = "%.9g" },
	{ .type = J_NUM, .key = "young_s", .metric = "failures.young_s", .fmt = "%.9g" },
	{ .type = J_NUM, .key = "interval_s", .metric = "failures.interval_s", .fmt = "%.9g" },
	{ .type = J_NUM, .key = "goodput", .metric = "failures.goodput", .fmt = "%.9g" },
	{ .type = J_NUM, .key = "interruptions", .metric = "failures.interruptions", .fmt = "%.9g" },
	{ .type = J_NUM, .key = "useful_s", .metric = "failures.useful_s", .fmt = "%.9g" },
	{ .type = J_CLOSE },
	{ .type = J_STRAGGLERS, .key = "stragglers" },
	{ .type = J_OPEN, .key = "memory" },
	{ .type = J_MEMCATS },
	{ .type = J_NUM, .key = "model_states", .metric = "memory.model_states", .fmt = "%.17g" },
	{ .type = J_NUM, .key = "peak", .metric = "memory.peak", .fmt = "%.17g" },
	{ .type = J_NUM, .key = "capacity", .metric = "memory.capacity", .fmt = "%.17g" },
	{ .type = J_BOOL, .key = "fits", .metric = "memory.fits" },
	{ .type = J_CLOSE },
	{ .type = J_STRATEGY, .key = "strategy" },
	{ .type = J_OPEN, .key = "offload" },
	{ .type = J_NUM, .key = "saved_bytes", .metric = "offload.saved_bytes", .fmt = "%.17g" },
	{ .type = J_NUM, .key = "host_s", .metric = "offload.host_s", .fmt = "%.9g" },
	{ .type = J_CLOSE },
	{ .type = J_OPEN, .key = "moe" },
	{ .type = J_NUM, .key = "imbalance", .metric = "moe.imbalance", .fmt = "%.9g" },
	{ .type = J_NUM, .key = "dropped", .metric = "moe.dropped", .fmt = "%.9g" },
	{ .type = J_NUM, .key = "imbalance_s", .metric = "moe.imbalance_s", .fmt = "%.9g" },
	{ .type = J_CLOSE },
	{ .type = J_OPEN, .key = "breakdown", .fits = FITS_ONLY },
	{ .type = J_NUM, .key = "compute_s", .fmt = "%.9g", .fits = FITS_ONLY },
	{ .type = J_NUM, .key = "exposed_comm_s", .fmt = "%.9g", .fits = FITS_ONLY },
	{ .type = J_NUM, .key = "bubble_s", .fmt = "%.9g", .fits = FITS_ONLY },
	{ .type = J_NUM, .key = "idle_s", .fmt = "%.9g", .fits = FITS_ONLY },
	{ .type = J_CLOSE, .fits = FITS_ONLY },
	{ .type = J_NUM, .key = "pipeline_s", .fmt = "%.9g", .fits = FITS_ONLY },
	{ .type = J_NUM, .key = "critical_rank", .fmt = "%.0f", .fits = FITS_ONLY },
	{ .type = J_NUM, .key = "events", .metric = "run.events", .fmt = "%.0f", .fits = FITS_ONLY },
	{ .type = J_NUM, .key = "gpus", .fmt = "%.0f" },
	{ .type = J_NUM, .key = "dp", .fmt = "%.0f" },
	{ .type = J_NUM, .key = "micro_batches", .fmt = "%.0f" },
	{ .type = J_NUM, .key = "params", .fmt = "%.17g" },
	{ .type = J_NUM, .key = "flops_per_token", .fmt = "%.17g" },
	{ .type = J_NUM, .key = "wall_s", .metric = "run.wall_s", .fmt = "%.6f" },
};

/* The value of one field (after its key). */
static void json_value(struct report *r, const struct jfield *f, int fits)
{
	double v = metric(r, f->metric ? f->metric : f->key);
	if (f->type == J_BOOL)
		fputs(v ? "true" : "false", stdout);
	else if (f->type == J_STRATEGY)
		printf("\"%s\"", strategy(r));
	else if (f->type == J_STRAGGLERS) {
		putchar('[');
		for (unsigned i = 0; i < metric_u(r, "stragglers.n"); i++) {
			char name[32];
			snprintf(name, sizeof(name), "straggler.%u", i);
			printf("%s%u", i ? "," : "", metric_u(r, name));
		}
		putchar(']');
	}
	else if (!fits && f->fits == FITS_NULL)
		fputs("null", stdout);
	else
		printf(f->fmt, v);
}

/* Every memory category, as "name":bytes, in par_mem_name order. */
static void json_memcats(struct report *r)
{
	for (int c = 0; c < PAR_MEM_NCATS; c++) {
		char name[48];
		snprintf(name, sizeof(name), "memory.%s", par_mem_name(c));
		printf("%s\"%s\":%.17g", c ? "," : "", par_mem_name(c), metric(r, name));
	}
}

static void print_json(struct report *r)
{
	int fits = metric(r, "memory.fits") != 0, comma = 0;
	putchar('{');
	for (size_t i = 0; i < ARRAY_SIZE(run_json); i++) {
		const struct jfield *f = &run_json[i];
		if (!fits && f->fits == FITS_ONLY)
			continue;
		if (comma && f->type != J_CLOSE)
			putchar(',');
		comma = f->type != J_OPEN;
		if (f->type == J_CLOSE)
			putchar('}');
		else if (f->type == J_MEMCATS)
			json_memcats(r);
		else
			printf("\"%s\":%s", f->key, f->type == J_OPEN ? "{" : "");
		if (f->type != J_OPEN && f->type != J_CLOSE && f->type != J_MEMCATS)
			json_value(r, f, fits);
	}
	printf("}\n");
}

/* ---- a collective benchmark -------------------------------------------------------- */

/* The heading of `clustersim collective`'s table, from the configuration. */
static void coll_heading(struct report *r)
{
	char op[32], preset[64], topo[32], fid[16];
	unsigned ranks = cfg_u(r, "ranks"), gpn = cfg_u(r, "cluster.gpus_per_node");
	printf("# clustersim collective: %s on %u ranks of %s", cfg_str(r, "op", op, sizeof(op)),
	       ranks, cfg_str(r, "cluster.preset", preset, sizeof(preset)));
	if (strcmp(cfg_str(r, "cluster.topology", topo, sizeof(topo)), "ideal") && gpn)
		printf(" (%u nodes of %u GPUs)", (ranks + gpn - 1) / gpn, gpn);
	printf(", fidelity %s\n#\n", cfg_str(r, "fidelity", fid, sizeof(fid)));
	printf("# %8s %8s %16s %14s %12s %12s\n", "algo", "channels", "size(B)", "time(us)",
	       "algbw(GB/s)", "busbw(GB/s)");
}

/* The opening of `clustersim collective --json`, up to its rows. */
static void coll_json_head(struct report *r)
{
	char op[32], preset[64], fid[16], esc[192];
	cfg_str(r, "cluster.preset", preset, sizeof(preset));
	sim_json_escape(preset, esc, sizeof(esc));
	printf("{\"op\":\"%s\",\"cluster\":\"%s\",\"ranks\":%u,\"fidelity\":\"%s\",\"rows\":[",
	       cfg_str(r, "op", op, sizeof(op)), esc, cfg_u(r, "ranks"),
	       cfg_str(r, "fidelity", fid, sizeof(fid)));
}

/* One row of collective_results (algo, channels, bytes, time_s, algbw, busbw). */
static void coll_row(sqlite3_stmt *q, int json, int first)
{
	char algo[64];
	sim_json_escape((const char *)sqlite3_column_text(q, 0), algo, sizeof(algo));
	unsigned ch = (unsigned)sqlite3_column_int(q, 1);
	double b = sqlite3_column_double(q, 2), t = sqlite3_column_double(q, 3);
	double alg = sqlite3_column_double(q, 4), bus = sqlite3_column_double(q, 5);
	if (json)
		printf("%s{\"algo\":\"%s\",\"channels\":%u,\"bytes\":%.17g,\"time_s\":%.9g,"
		       "\"algbw_GBps\":%.9g,\"busbw_GBps\":%.9g}", first ? "" : ",", algo, ch, b,
		       t, alg, bus);
	else
		printf("  %8s %8u %16.0f %14.3f %12.3f %12.3f\n", algo, ch, b, t * 1e6, alg, bus);
}

/* The run's table as `clustersim collective` printed it (or its JSON). */
static int print_collective(struct report *r, int json)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(r->db, "SELECT coalesce(algo, ''), channels, bytes, time_s, "
			       "algbw_GBps, busbw_GBps FROM collective_results WHERE run_id = ?1 "
			       "ORDER BY rowid", -1, &q, NULL) != SQLITE_OK)
		return db_fail(r);
	sqlite3_bind_int64(q, 1, r->run);
	if (json)
		coll_json_head(r);
	else
		coll_heading(r);
	int rc, first = 1;
	for (; (rc = sqlite3_step(q)) == SQLITE_ROW; first = 0)
		coll_row(q, json, first);
	if (json)
		printf("],\"wall_s\":%.6f}\n", metric(r, "run.wall_s"));
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? CLI_OK : db_fail(r);
}

/* ---- a run of several jobs ----------------------------------------------------------- */

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

/* The jobs rows, in order; CLI_OK or an error printed. */
static int read_jobs(struct report *r, struct sim_store_job_row *job, size_t *n)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(r->db, "SELECT job, name, model, strategy, first_node, nodes, "
			       "first_rank, gpus, dp, tp, pp, cp, params, peak_bytes, capacity_bytes, "
			       "fits, alone_step_time_s, alone_p50_s, alone_p90_s, alone_p99_s, "
			       "alone_tokens_per_s, alone_mfu, alone_steps, shared_step_time_s, "
			       "shared_p50_s, shared_p90_s, shared_p99_s, shared_tokens_per_s, "
			       "shared_mfu, shared_steps, start_s FROM jobs "
			       "WHERE run_id = ?1 ORDER BY job", -1, &q, NULL) != SQLITE_OK)
		return db_fail(r);
	sqlite3_bind_int64(q, 1, r->run);
	int rc;
	for (*n = 0; (rc = sqlite3_step(q)) == SQLITE_ROW && *n < PAR_MAX_JOBS; (*n)++) {
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
	sqlite3_finalize(q);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? CLI_OK : db_fail(r);
}

/* The job_links rows as links, busiest first (as run orders them). */
static int read_links(struct report *r, struct par_link_share **links, size_t *n)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(r->db, "SELECT l.link, l.job, l.bw_Bps, l.bytes FROM job_links l "
			       "JOIN (SELECT link, sum(bytes) AS total FROM job_links WHERE run_id = ?1 "
			       "GROUP BY link) t USING (link) WHERE l.run_id = ?1 "
			       "ORDER BY t.total DESC, l.link, l.job", -1, &q, NULL) != SQLITE_OK)
		return db_fail(r);
	sqlite3_bind_int64(q, 1, r->run);
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(q, 0);
		unsigned job = (unsigned)sqlite3_column_int(q, 1);
		if (!name || job >= PAR_MAX_JOBS)
			continue;
		if (!*n || strcmp((*links)[*n - 1].name, name)) {
			*links = xreallocarray(*links, *n + 1, sizeof(**links));
			(*links)[(*n)++] = (struct par_link_share){ .bw_Bps = sqlite3_column_double(q, 2) };
			snprintf((*links)[*n - 1].name, sizeof((*links)[0].name), "%s", name);
		}
		(*links)[*n - 1].bytes[job] = sqlite3_column_double(q, 3);
	}
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? CLI_OK : db_fail(r);
}

/* The report of `clustersim run` on a scenario with a jobs list. */
static int print_jobs(struct report *r, int json)
{
	struct sim_store_job_row job[PAR_MAX_JOBS];
	struct par_link_share *links = NULL;
	size_t n = 0, nlinks = 0;
	int rc = read_jobs(r, job, &n);
	if (rc == CLI_OK)
		rc = read_links(r, &links, &nlinks);
	if (rc != CLI_OK) {
		free(links);
		return rc;
	}
	char gpu[32], preset[64], topo[32], fid[16];
	unsigned stragglers[8], ns = metric_u(r, "stragglers.n");
	ns = ns < ARRAY_SIZE(stragglers) ? ns : ARRAY_SIZE(stragglers);
	for (unsigned i = 0; i < ns; i++) {
		char name[32];
		snprintf(name, sizeof(name), "straggler.%u", i);
		stragglers[i] = metric_u(r, name);
	}
	struct par_goodput goodput[PAR_MAX_JOBS];
	for (size_t i = 0; i < n; i++) {
		double g[CLI_GOODPUT_N];
		for (size_t k = 0; k < CLI_GOODPUT_N; k++) {
			char name[112];
			snprintf(name, sizeof(name), "job.%s.failures.%s", job[i].name,
				 cli_goodput_keys[k]);
			g[k] = metric(r, name);
		}
		cli_goodput_from(&goodput[i], g);
	}
	int ideal = !strcmp(cfg_str(r, "cluster.topology", topo, sizeof(topo)), "ideal");
	struct cli_jobs_view v = {
		.gpu = cfg_str(r, "cluster.gpu", gpu, sizeof(gpu)),
		.preset = cfg_str(r, "cluster.preset", preset, sizeof(preset)),
		.fidelity = cfg_str(r, "sim.fidelity", fid, sizeof(fid)),
		.gpus = cfg_u(r, "cluster.nodes") * (ideal ? 1 : cfg_u(r, "cluster.gpus_per_node")),
		.steps = metric_u(r, "steps"), .ideal = ideal, .job = job, .n = n, .links = links,
		.nlinks = nlinks, .goodput = goodput, .stragglers = stragglers, .nstragglers = ns,
		.events = (unsigned long long)metric(r, "run.events"), .wall_s = metric(r, "run.wall_s"),
	};
	if (json) {
		cli_jobs_json(&v);
	} else {
		printf("clustersim report: run %lld of %s: %s\n", r->run, r->a->pos[0],
		       r->command ? r->command : "(command not recorded)");
		cli_jobs_text(&v);
		text_variability(r);
	}
	free(links);
	return CLI_OK;
}

/* ---- the command ------------------------------------------------------------------- */

/* Print the run's report: a collective's table, else clustersim run's. */
static int report_print(struct report *r)
{
	char cmd[32];
	int json = cli_has(r->a, "json");
	if (!strcmp(cfg_str(r, "command", cmd, sizeof(cmd)), "collective"))
		return print_collective(r, json);
	int any = 0;
	for (size_t i = 0; i < r->nm; i++)
		any |= strncmp(r->m[i].name, "run.", 4) != 0;
	if (!any)
		return cli_error(r->a, CLI_BADINPUT, "run %lld of %s stored no report (its metrics "
				 "table has no rows)", r->run, r->a->pos[0]);
	if (metric(r, "jobs") > 0)
		return print_jobs(r, json);
	if (json)
		print_json(r);
	else
		print_text(r);
	return CLI_OK;
}

static int report_run(struct cli_args *a)
{
	if (a->npos != 1)
		return cli_error(a, CLI_BADINPUT, "expected one database file (clustersim report DB)");
	struct report r = { .a = a };
	if (cli_count(a, "run", 1, INT64_MAX, &r.run) < 0)
		return CLI_BADINPUT;
	int rc = export_db_open(a, &r.db);
	if (rc != CLI_OK)
		return rc;
	rc = export_db_run(a, r.db, &r.run);
	if (rc == CLI_OK)
		rc = report_load(&r);
	if (rc == CLI_OK)
		rc = report_print(&r);
	sqlite3_finalize(r.cfg);
	sqlite3_close(r.db);
	free(r.m);
	free(r.command);
	return rc;
}

const struct cli_cmd cli_cmd_report = {
	.name = "report",
	.usage = "DB [--run ID] [--json]",
	.summary = "Print a stored run's report again, from the database alone.",
	.description =
		"Reads a database written with --db and prints the report of one complete\n"
		"run (--run, else the newest complete one) without simulating anything.\n"
		"\n"
		"For a run of clustersim run: a first line naming the run and its command,\n"
		"then the lines of that command's text report (model, cluster, layout, memory\n"
		"and its breakdown, experts and offload when configured, step time, tokens/s,\n"
		"MFU and HFU, the critical rank's breakdown, the pipeline when pp > 1). With\n"
		"--json, the object clustersim run --json printed, key for key, wall_s\n"
		"included (runs.wall_s). The figures come from the metrics table, the rest\n"
		"from runs.config; the strategy (ddp, zero1, zero2, zero3, fsdp) from its\n"
		"parallel.zero and parallel.fsdp.enabled.\n"
		"\n"
		"For a run of clustersim run on a scenario with a jobs list: the cluster line,\n"
		"each job's lines and the shared links, from the jobs and job_links tables,\n"
		"as run printed them (or its JSON).\n"
		"\n"
		"For a run of clustersim collective (one run per algorithm): its table from\n"
		"collective_results, as the command printed it, or its JSON with --json.",
	.opts = report_opts,
	.run = report_run,
};
