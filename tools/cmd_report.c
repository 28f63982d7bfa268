/*
 * cmd_report.c - `clustersim report DB`: print a stored run's report again
 * from the database alone, without simulating anything. A run of
 * `clustersim run` is reported as that command reports it, in text or
 * JSON: its metrics rows are put back into a struct par_report by the
 * description of a run's result (parallel/result.h) and printed by the
 * printers `run` uses, with what the text names of the scenario from
 * runs.config (the effective configuration). A run of `clustersim
 * collective` is printed as that command's table (or JSON), from
 * collective_results.
 *
 * The database is opened read-only (cli_read_open) and read through
 * the store module's reader (sim/store_read.h, sim/store_report.c).
 */
#include "tools/cli.h"

#include <stdlib.h>
#include <string.h>

#include "parallel/dp.h"
#include "parallel/goodput.h"
#include "parallel/jobs.h"
#include "parallel/result.h"
#include "parallel/result_text.h"
#include "parallel/train.h"
#include "scenarios/plan_sim.h"
#include "sim/store.h"
#include "sim/store_read.h"
#include "sim/util.h"

static const struct cli_opt report_opts[] = {
	{ "run", 'r', CLI_COUNT, "ID", "the newest complete run", "which run to report" },
	{ "plan", 0, CLI_STR, "ID", NULL,
	  "print a stored plan (clustersim plan --db) instead of a run: its id, or last" },
	{ "json", 0, CLI_FLAG, NULL, NULL,
	  "print one JSON object: the keys of clustersim run --json (or of clustersim "
	  "collective --json for a collective run)" },
	{ 0 },
};

/* The run being reported. */
struct report {
	struct cli_args *a;
	struct sim_store_read *db;
	long long run;
	struct sim_store_report *rep;
};

/* ---- reading the run --------------------------------------------------------------- */

static int db_fail(struct report *r, const char *err)
{
	return cli_error(r->a, CLI_FAIL, "reading %s: %s", r->a->pos[0], err);
}

static double cfg_num(struct report *r, const char *key)
{
	return sim_store_report_num(r->rep, key);
}

static unsigned cfg_u(struct report *r, const char *key)
{
	return (unsigned)cfg_num(r, key);
}

static const char *cfg_str(struct report *r, const char *key, char *buf, size_t len)
{
	return sim_store_report_str(r->rep, key, buf, len);
}

static double metric(const struct report *r, const char *name)
{
	return sim_store_report_metric(r->rep, name);
}

static unsigned metric_u(const struct report *r, const char *name)
{
	return (unsigned)metric(r, name);
}

/* sim_store_report_metric as par_result_from_metrics' get. */
static double get_metric(void *ctx, const char *name)
{
	return sim_store_report_metric(ctx, name);
}

/* Read the run: its command, configuration and metrics. */
static int report_load(struct report *r)
{
	char err[512];
	int rc = sim_store_report_read(r->db, r->run, &r->rep, err, sizeof(err));
	if (rc == SIM_STORE_REPORT_QUERY)
		return cli_read_error(r->a, r->db, r->a->pos[0]);
	if (rc == SIM_STORE_REPORT_CONFIG)
		return cli_error(r->a, CLI_BADINPUT, "run %lld of %s: its configuration is not JSON "
				 "(%s)", r->run, r->a->pos[0], err);
	return rc ? db_fail(r, err) : CLI_OK;
}

/* The data-parallel strategy as `clustersim run` names it: parallel.strategy
 * when the run names one, else the one its aliases name (par_dp_strategy_of;
 * runs stored before parallel.strategy have only the aliases). */
static const char *strategy(struct report *r)
{
	char buf[64];
	const char *name = cfg_str(r, "parallel.strategy", buf, sizeof(buf));
	const struct par_dp_strategy *s = name && strcmp(name, "auto") ? par_dp_find(name) : NULL;
	if (s)
		return s->name;
	unsigned zero = cfg_u(r, "parallel.zero");
	int fsdp = cfg_num(r, "parallel.fsdp.enabled") != 0;
	return fsdp || zero <= 3 ? par_dp_of_aliases(zero, fsdp)->name : "?";
}

/* What the text report names of the scenario, from runs.config; the
 * strings live in bufs. */
struct setting_bufs {
	char preset[64], gpu[64], cluster[64], fid[16], sym[16], jit[32], gspeed[32];
};

static void setting_of(struct report *r, struct par_result_setting *s, struct setting_bufs *b)
{
	cfg_str(r, "model.preset", b->preset, sizeof(b->preset));
	cfg_str(r, "cluster.gpu", b->gpu, sizeof(b->gpu));
	cfg_str(r, "cluster.preset", b->cluster, sizeof(b->cluster));
	cfg_str(r, "sim.fidelity", b->fid, sizeof(b->fid));
	cfg_str(r, "sim.symmetry", b->sym, sizeof(b->sym));
	/* Runs stored before the variability section existed have none. */
	if (!*cfg_str(r, "variability.jitter", b->jit, sizeof(b->jit)))
		snprintf(b->jit, sizeof(b->jit), "none");
	if (!*cfg_str(r, "variability.gpu", b->gspeed, sizeof(b->gspeed)))
		snprintf(b->gspeed, sizeof(b->gspeed), "none");
	*s = (struct par_result_setting){
		.preset = b->preset, .gpu = b->gpu, .cluster = b->cluster, .fidelity = b->fid,
		.symmetry_dp = !strcmp(b->sym, "dp"),
		.layers = cfg_u(r, "model.layers"), .hidden = cfg_u(r, "model.hidden"),
		.tp = cfg_u(r, "parallel.tp"), .pp = cfg_u(r, "parallel.pp"),
		.cp = cfg_u(r, "parallel.cp"), .ep = cfg_u(r, "parallel.ep"),
		.micro_batch = cfg_u(r, "training.micro_batch"), .seq = cfg_u(r, "training.seq"),
		.experts = cfg_u(r, "model.moe.experts"), .top_k = cfg_u(r, "model.moe.top_k"),
		.offload = cfg_num(r, "parallel.offload.enabled") != 0,
		.jitter = b->jit, .jitter_cv = cfg_num(r, "variability.jitter_cv"),
		.gpu_speed = b->gspeed, .gpu_cv = cfg_num(r, "variability.gpu_cv"),
		.stragglers = cfg_u(r, "variability.stragglers"),
		.straggler_slowdown = cfg_num(r, "variability.straggler_slowdown"),
		.seed = (unsigned long long)cfg_num(r, "sim.seed"),
	};
}

/* The run's report as `clustersim run` made it: the metrics rows, the
 * strategy from the configuration, runs.events. */
static void report_of(struct report *r, struct par_report *out)
{
	*out = (struct par_report){ 0 };
	par_result_from_metrics(out, "", PAR_RESULT_G_ALL, 0, get_metric, r->rep);
	out->strategy = strategy(r);
	out->events = (uint64_t)metric(r, "run.events");
}

/* ---- a run of clustersim run ------------------------------------------------------- */

static const char *command(struct report *r)
{
	const char *c = sim_store_report_command(r->rep);
	return c ? c : "(command not recorded)";
}

static void print_run(struct report *r, int json)
{
	struct par_report rep;
	report_of(r, &rep);
	if (json) {
		par_result_json(stdout, &rep, metric(r, "run.wall_s"));
		return;
	}
	struct par_result_setting s;
	struct setting_bufs b;
	setting_of(r, &s, &b);
	printf("clustersim report: run %lld of %s: %s\n", r->run, r->a->pos[0], command(r));
	par_result_text(stdout, &s, &rep);
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

/* One row of collective_results. */
static void coll_row(const struct sim_store_coll_row *row, int json, int first)
{
	char algo[64];
	sim_json_escape(row->algo, algo, sizeof(algo));
	unsigned ch = row->channels;
	double b = row->bytes, t = row->time_s, alg = row->algbw_GBps, bus = row->busbw_GBps;
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
	char err[512];
	struct sim_store_rows *q = sim_store_report_coll_rows(r->db, r->run, err, sizeof(err));
	if (!q)
		return db_fail(r, err);
	if (json)
		coll_json_head(r);
	else
		coll_heading(r);
	struct sim_store_coll_row row;
	int rc, first = 1;
	for (; (rc = sim_store_report_coll_next(q, &row, err, sizeof(err))) == 1; first = 0)
		coll_row(&row, json, first);
	if (json)
		printf("],\"wall_s\":%.6f}\n", metric(r, "run.wall_s"));
	sim_store_rows_free(q);
	return rc == 0 ? CLI_OK : db_fail(r, err);
}

/* ---- a run of several jobs ----------------------------------------------------------- */

/* The job_links rows as links, busiest first (as run orders them). */
static int read_links(struct report *r, struct par_link_share **links, size_t *n)
{
	char err[512];
	struct sim_store_rows *q = sim_store_report_link_rows(r->db, r->run, err, sizeof(err));
	if (!q)
		return db_fail(r, err);
	struct sim_store_job_link_row row;
	int rc;
	while ((rc = sim_store_report_link_next(q, &row, err, sizeof(err))) == 1) {
		if (!row.link || row.job >= PAR_MAX_JOBS)
			continue;
		if (!*n || strcmp((*links)[*n - 1].name, row.link)) {
			*links = xreallocarray(*links, *n + 1, sizeof(**links));
			(*links)[(*n)++] = (struct par_link_share){ .bw_Bps = row.bw_Bps };
			snprintf((*links)[*n - 1].name, sizeof((*links)[0].name), "%s", row.link);
		}
		(*links)[*n - 1].bytes[row.job] = row.bytes;
	}
	sim_store_rows_free(q);
	return rc == 0 ? CLI_OK : db_fail(r, err);
}

/* The report of `clustersim run` on a scenario with a jobs list. */
static int print_jobs(struct report *r, int json)
{
	struct sim_store_job_row job[PAR_MAX_JOBS];
	struct par_link_share *links = NULL;
	size_t n = 0, nlinks = 0;
	char err[512];
	int rc = sim_store_report_jobs(r->db, r->run, job, PAR_MAX_JOBS, &n, err, sizeof(err)) < 0
		 ? db_fail(r, err) : CLI_OK;
	if (rc == CLI_OK)
		rc = read_links(r, &links, &nlinks);
	if (rc != CLI_OK) {
		free(links);
		return rc;
	}
	char gpu[32], preset[64], topo[32], fid[16];
	struct par_report run = { 0 };  /* the stragglers of the run together */
	par_result_from_metrics(&run, "", PAR_RESULT_G_STRAGGLERS, 0, get_metric, r->rep);
	struct par_goodput goodput[PAR_MAX_JOBS];
	for (size_t i = 0; i < n; i++) {
		char prefix[80];
		struct par_report one = { 0 };
		snprintf(prefix, sizeof(prefix), "job.%s.", job[i].name);
		par_result_from_metrics(&one, prefix, PAR_RESULT_G_FAILURES, 0, get_metric, r->rep);
		goodput[i] = one.goodput;
	}
	int ideal = !strcmp(cfg_str(r, "cluster.topology", topo, sizeof(topo)), "ideal");
	struct par_jobs_view v = {
		.gpu = cfg_str(r, "cluster.gpu", gpu, sizeof(gpu)),
		.preset = cfg_str(r, "cluster.preset", preset, sizeof(preset)),
		.fidelity = cfg_str(r, "sim.fidelity", fid, sizeof(fid)),
		.gpus = cfg_u(r, "cluster.nodes") * (ideal ? 1 : cfg_u(r, "cluster.gpus_per_node")),
		.steps = metric_u(r, "steps"), .ideal = ideal, .job = job, .n = n, .links = links,
		.nlinks = nlinks, .goodput = goodput, .stragglers = run.stragglers,
		.nstragglers = run.nstragglers,
		.events = (unsigned long long)metric(r, "run.events"), .wall_s = metric(r, "run.wall_s"),
	};
	if (json) {
		par_jobs_json(stdout, &v);
	} else {
		struct par_result_setting s;
		struct setting_bufs b;
		setting_of(r, &s, &b);
		printf("clustersim report: run %lld of %s: %s\n", r->run, r->a->pos[0], command(r));
		par_jobs_text(stdout, &v);
		par_result_variability(stdout, &s, run.stragglers, run.nstragglers);
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
	if (!sim_store_report_has_metrics(r->rep))
		return cli_error(r->a, CLI_BADINPUT, "run %lld of %s stored no report (its metrics "
				 "table has no rows)", r->run, r->a->pos[0]);
	if (metric(r, "jobs") > 0)
		return print_jobs(r, json);
	print_run(r, json);
	return CLI_OK;
}

int cli_read_plan(struct cli_args *a, struct scn_plan_head *h, struct scn_plan_layout **v,
		  size_t *n)
{
	const char *which = cli_str(a, "plan", "last");
	long long id = 0;
	if (strcmp(which, "last")) {
		char *end;
		id = strtoll(which, &end, 10);
		if (*end || id < 1)
			return cli_error(a, CLI_BADINPUT, "option --plan: expected a plan's id (a whole "
					 "number from 1) or last, got '%s'", which);
	}
	struct sim_store_read *db;
	int rc = cli_read_open(a, &db);
	if (rc != CLI_OK)
		return rc;
	char err[512];
	int got = scn_plan_load(sim_store_read_db(db), id, h, v, n, err, sizeof(err));
	sim_store_read_close(db);
	if (got < 0)
		return cli_error(a, CLI_FAIL, "reading %s: %s", a->pos[0], err);
	if (got > 0 || !*n) {
		scn_plan_free(*v, *n);
		free(*v);
		return cli_error(a, CLI_BADINPUT, "%s has no plan%s%s (clustersim plan --db stores "
				 "one)", a->pos[0], id ? " " : "", id ? which : "");
	}
	return CLI_OK;
}

/* --plan: a stored plan's counts, ranking and Spearman's rho, as plan
 * printed them. */
static int report_plan(struct cli_args *a)
{
	if (cli_has(a, "json") || cli_has(a, "run"))
		return cli_error(a, CLI_BADINPUT, "option --plan: prints text, without --run or "
				 "--json (query the plans and plan_layouts tables for more)");
	struct scn_plan_head h;
	struct scn_plan_layout *v;
	size_t n;
	int rc = cli_read_plan(a, &h, &v, &n);
	if (rc != CLI_OK)
		return rc;
	printf("clustersim report: plan %lld of %s: %s\n", (long long)h.s.id, a->pos[0],
	       h.s.command);
	printf("%s on %u GPUs: %llu layouts, %llu valid and fitting (%llu invalid, %llu out of "
	       "memory, %llu held out by --fix and --exclude); %zu simulated (%llu more did not fit "
	       "after all and were replaced)%s\n\n", h.s.scenario, h.s.gpus,
	       (unsigned long long)h.s.candidates, (unsigned long long)h.s.fits,
	       (unsigned long long)h.s.invalid, (unsigned long long)h.s.no_memory,
	       (unsigned long long)h.s.held_out, n, (unsigned long long)h.s.replaced,
	       h.s.collapsed ? ", one data-parallel replica for all" : "");
	scn_plan_print_table(stdout, v, n, n);
	if (h.s.rho == h.s.rho)
		printf("\nEstimate against the analytic simulation: Spearman's rho %.3f over the "
		       "simulated layouts.\n", h.s.rho);
	if (h.compare_at < n) {
		char name[128];
		scn_plan_layout_name(&v[h.compare_at].c, name, sizeof(name));
		printf("The --compare layout was #%zu: %s.\n", h.compare_at + 1, name);
	}
	scn_plan_free(v, n);
	free(v);
	return CLI_OK;
}

static int report_run(struct cli_args *a)
{
	if (a->npos != 1)
		return cli_error(a, CLI_BADINPUT, "expected one database file (clustersim report DB)");
	if (cli_has(a, "plan"))
		return report_plan(a);
	struct report r = { .a = a };
	if (cli_count(a, "run", 1, INT64_MAX, &r.run) < 0)
		return CLI_BADINPUT;
	int rc = cli_read_open(a, &r.db);
	if (rc != CLI_OK)
		return rc;
	rc = cli_read_run(a, r.db, &r.run);
	if (rc == CLI_OK)
		rc = report_load(&r);
	if (rc == CLI_OK)
		rc = report_print(&r);
	sim_store_report_free(r.rep);
	sim_store_read_close(r.db);
	return rc;
}

const struct cli_cmd cli_cmd_report = {
	.name = "report",
	.usage = "DB [--run ID] [--json] | DB --plan ID|last",
	.summary = "Print a stored run's report again, from the database alone.",
	.description =
		"Reads a database written with --db and prints the report of one complete\n"
		"run (--run, else the newest complete one) without simulating anything; with\n"
		"--plan ID (or last), a plan stored by clustersim plan --db instead: its counts,\n"
		"its whole ranking as plan printed it, Spearman's rho and the --compare layout.\n"
		"\n"
		"For a run of clustersim run: a first line naming the run and its command,\n"
		"then the lines of that command's text report (model, cluster, layout, memory\n"
		"and its breakdown, experts and offload when configured, step time, tokens/s,\n"
		"MFU and HFU, the critical rank's breakdown, the pipeline when pp > 1). With\n"
		"--json, the object clustersim run --json printed, key for key, wall_s\n"
		"included (runs.wall_s). The figures come from the metrics table, the rest\n"
		"from runs.config; the strategy from its parallel.strategy (or, for runs\n"
		"stored before that key, parallel.zero and parallel.fsdp.enabled).\n"
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
