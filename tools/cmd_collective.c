/*
 * cmd_collective.c - `clustersim collective`: run one collective over every
 * rank of a cluster at a range of sizes and print what nccl-tests prints
 * (time, algorithm bandwidth, bus bandwidth), as a table, JSON or CSV, and
 * optionally store the timeline in SQLite.
 *
 * Everything is validated before the database is opened, so bad input never
 * leaves a partial run behind.
 */
#include "tools/cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collectives/bench.h"
#include "collectives/bench_sweep.h"
#include "collectives/coll.h"
#include "scenarios/scenario.h"
#include "sim/outfile.h"
#include "sim/store.h"
#include "topology/topo.h"

#define MAX_ALGOS 8
#define MAX_SIZES 64

static const struct cli_opt coll_opts[] = {
	{ "op", 'o', CLI_STR, "OP", "allreduce",
	  "allreduce, reducescatter, allgather, alltoall or broadcast" },
	{ "algo", 'a', CLI_STR, "ALGO[,ALGO...]", "auto",
	  "ring, rd, hd, hier, pairwise or auto (fastest by closed form); a comma list "
	  "runs each" },
	{ "cluster", 'c', CLI_STR, "PRESET", "ideal", "cluster preset (clustersim presets)" },
	{ "nodes", 'N', CLI_COUNT, "N", NULL, "use every GPU of N nodes" },
	{ "ranks", 'n', CLI_COUNT, "N", NULL, "use N ranks (GPUs), filling nodes in order" },
	{ "minbytes", 'b', CLI_BYTES, "SIZE", "1MiB", "smallest size (n of SPEC.md)" },
	{ "maxbytes", 'e', CLI_BYTES, "SIZE", "1GiB", "largest size" },
	{ "stepfactor", 'f', CLI_COUNT, "F", "2", "multiply the size by F from one row to the next" },
	{ "channels", 0, CLI_COUNT, "C", "ring: one per NIC rail across nodes, else 1",
	  "split the data over C channels (rings)" },
	{ "root", 0, CLI_COUNT, "RANK", "0", "root of a broadcast" },
	{ "fidelity", 0, CLI_STR, "F", "flow",
	  "flow (chunked transfers on links, contention) or analytic (closed forms)" },
	{ "chunk", 0, CLI_BYTES, "SIZE", "512KiB", "size of the chunks messages move in (flow)" },
	{ "alpha", 0, CLI_TIME, "TIME", "10us", "latency of the ideal cluster's links" },
	{ "bw", 0, CLI_RATE, "RATE", "50GB/s", "bandwidth of the ideal cluster's links" },
	{ "set", 0, CLI_LIST, "cluster.KEY=VALUE", NULL,
	  "override a cluster key, with units (repeatable; clustersim presets lists them)" },
	{ "db", 0, CLI_FILE_DB, "FILE", NULL, "store the runs, timelines and link totals in SQLite" },
	{ "json", 0, CLI_FLAG, NULL, NULL, "print a JSON object instead of the table" },
	{ "csv", 0, CLI_FILE_OUT, "FILE", NULL, "also write the rows as CSV" },
	{ 0 },
};

/* Everything the options say, checked. */
struct coll_job {
	struct coll_bench_config bench;
	const struct sim_coll_algo *algos[MAX_ALGOS];  /* NULL entry = auto */
	int nalgos;
	double sizes[MAX_SIZES];
	int nsizes;
};

static int parse_algos(struct cli_args *a, struct coll_job *job)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", cli_str(a, "algo", "auto"));
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (job->nalgos == MAX_ALGOS)
			return cli_error(a, CLI_BADINPUT, "option --algo: at most %d algorithms",
					 MAX_ALGOS);
		const struct sim_coll_algo *al = strcmp(tok, "auto") ? coll_find(tok) : NULL;
		if (strcmp(tok, "auto") && !al)
			return cli_error(a, CLI_BADINPUT, "option --algo: unknown algorithm '%s': "
					 "expected auto or one of %s", tok, coll_names());
		job->algos[job->nalgos++] = al;
	}
	if (!job->nalgos)
		return cli_error(a, CLI_BADINPUT, "option --algo: expected an algorithm name");
	return CLI_OK;
}

/* Cluster preset, --set overrides, --alpha/--bw, and the rank count. */
static int parse_cluster(struct cli_args *a, struct coll_job *job)
{
	struct topo_config *c = &job->bench.cluster;
	char err[512];
	if (scn_cluster_preset(c, cli_str(a, "cluster", "ideal"), err, sizeof(err)) < 0)
		return cli_error(a, CLI_BADINPUT, "option --cluster: %s", err);
	int nodes_set = 0, nsets;
	const char **sets = cli_list(a, "set", &nsets);
	for (int k = 0; k < nsets; k++) {
		const char *kv = sets[k], *eq = strchr(kv, '=');
		if (!eq || strncmp(kv, "cluster.", 8))
			return cli_error(a, CLI_BADINPUT, "option --set: expected cluster.KEY=VALUE, "
					 "got '%s'", kv);
		char key[64];
		snprintf(key, sizeof(key), "%.*s", (int)(eq - kv - 8), kv + 8);
		if (!strcmp(key, "preset") ? scn_cluster_preset(c, eq + 1, err, sizeof(err)) < 0
					   : topo_config_set(c, key, eq + 1, err, sizeof(err)) < 0)
			return cli_error(a, CLI_BADINPUT, "option --set: %s", err);
		nodes_set |= !strcmp(key, "nodes");
	}
	if ((cli_has(a, "alpha") || cli_has(a, "bw")) && c->kind != TOPO_IDEAL)
		return cli_error(a, CLI_BADINPUT, "options --alpha and --bw set the ideal cluster's "
				 "links; for %s use --set cluster.network.latency=... and "
				 "--set cluster.network.bandwidth=...", c->preset);
	if (cli_units(a, "alpha", &c->net_lat_s) < 0 || cli_units(a, "bw", &c->net_bw_Bps) < 0)
		return CLI_BADINPUT;
	if (cli_has(a, "bw") && !(c->net_bw_Bps > 0))
		return cli_error(a, CLI_BADINPUT, "option --bw: expected a rate above 0");
	if (cli_has(a, "nodes") == cli_has(a, "ranks"))
		return cli_error(a, CLI_BADINPUT, "give exactly one of --nodes N and --ranks N");
	long long n = 0;
	uint32_t gpn = c->kind == TOPO_IDEAL ? 1 : c->gpus_per_node;
	if (cli_count(a, "nodes", 1, TOPO_MAX_RANKS, &n) < 0 ||
	    cli_count(a, "ranks", 1, TOPO_MAX_RANKS, &n) < 0)
		return CLI_BADINPUT;
	if (cli_has(a, "nodes")) {
		if ((unsigned long long)n * gpn > TOPO_MAX_RANKS)
			return cli_error(a, CLI_BADINPUT, "option --nodes: %lld nodes of %u GPUs are "
					 "more than %u ranks", n, gpn, TOPO_MAX_RANKS);
		c->nodes = (uint32_t)n;
		job->bench.nranks = (uint32_t)n * gpn;
	} else {
		job->bench.nranks = (uint32_t)n;
		if (!nodes_set)
			c->nodes = (uint32_t)((n + gpn - 1) / gpn);
	}
	return CLI_OK;
}

static int parse_sizes(struct cli_args *a, struct coll_job *job)
{
	double lo = 1048576, hi = 1073741824;
	long long f = 2;
	if (cli_units(a, "minbytes", &lo) < 0 || cli_units(a, "maxbytes", &hi) < 0 ||
	    cli_count(a, "stepfactor", 2, 1024, &f) < 0)
		return CLI_BADINPUT;
	if (!(lo > 0))
		return cli_error(a, CLI_BADINPUT, "option --minbytes: expected a size above 0");
	if (hi < lo)
		return cli_error(a, CLI_BADINPUT, "option --maxbytes: %.0f B is below --minbytes "
				 "(%.0f B)", hi, lo);
	for (double s = lo; s <= hi * (1 + 1e-12); s *= (double)f) {
		if (job->nsizes == MAX_SIZES)
			return cli_error(a, CLI_BADINPUT, "--minbytes to --maxbytes by --stepfactor "
					 "gives more than %d sizes", MAX_SIZES);
		job->sizes[job->nsizes++] = s;
	}
	return CLI_OK;
}

static int parse_job(struct cli_args *a, struct coll_job *job)
{
	memset(job, 0, sizeof(*job));
	if (a->npos)
		return cli_error(a, CLI_BADINPUT, "unexpected argument '%s'", a->pos[0]);
	int op = sim_coll_op_parse(cli_str(a, "op", "allreduce"));
	if (op < 0)
		return cli_error(a, CLI_BADINPUT, "option --op: unknown operation '%s': expected "
				 "allreduce, reducescatter, allgather, alltoall or broadcast",
				 cli_str(a, "op", ""));
	job->bench.op = (enum sim_coll_op)op;
	const char *fid = cli_str(a, "fidelity", "flow");
	if (strcmp(fid, "flow") && strcmp(fid, "analytic"))
		return cli_error(a, CLI_BADINPUT, "option --fidelity: expected flow or analytic, "
				 "got '%s'", fid);
	job->bench.fidelity = strcmp(fid, "flow") ? SIM_FIDELITY_ANALYTIC : SIM_FIDELITY_FLOW;
	long long ch = 0, root = 0;
	job->bench.chunk_bytes = SIM_DEFAULT_CHUNK_BYTES;
	if (cli_count(a, "channels", 1, 64, &ch) < 0 ||
	    cli_count(a, "root", 0, TOPO_MAX_RANKS - 1, &root) < 0 ||
	    cli_units(a, "chunk", &job->bench.chunk_bytes) < 0)
		return CLI_BADINPUT;
	if (!(job->bench.chunk_bytes >= 1))
		return cli_error(a, CLI_BADINPUT, "option --chunk: expected a size of at least 1B");
	job->bench.channels = (unsigned)ch;
	job->bench.root = (uint32_t)root;
	int rc;
	if ((rc = parse_algos(a, job)) || (rc = parse_cluster(a, job)) || (rc = parse_sizes(a, job)))
		return rc;
	return CLI_OK;
}

/* Build every algorithm's bench and check every size before running any. */
static int check_job(struct cli_args *a, struct coll_job *job, struct coll_bench **benches)
{
	char err[512];
	for (int i = 0; i < job->nalgos; i++) {
		struct coll_bench_config c = job->bench;
		c.algo = job->algos[i];
		benches[i] = coll_bench_new(&c, err, sizeof(err));
		if (!benches[i])
			return cli_error(a, CLI_BADINPUT, "%s", err);
		for (int s = 0; s < job->nsizes; s++)
			if (coll_bench_check(benches[i], job->sizes[s], err, sizeof(err)) < 0)
				return cli_error(a, CLI_BADINPUT, "option --algo: %s", err);
	}
	return CLI_OK;
}

static int run_algo(struct cli_args *a, const struct coll_job *job, int i,
		    struct coll_bench *b, struct sim_store *st, struct coll_bench_row *rows)
{
	char err[8192];
	struct coll_bench_config cfg = job->bench;
	cfg.algo = job->algos[i];
	int rc = coll_bench_sweep(b, &cfg, job->sizes, job->nsizes, st, a->line, rows, err,
				  sizeof(err));
	if (rc == COLL_SWEEP_STORE)
		return cli_error(a, CLI_FAIL, "--db: %s", err);
	/* Past the simulated clock the input is the cause. */
	if (rc < 0)
		return cli_error(a, rc == COLL_BENCH_CLOCK ? CLI_BADINPUT : CLI_FAIL, "%s", err);
	return CLI_OK;
}

static void print_table(const struct coll_job *job, const struct coll_bench_row *rows, int n)
{
	const struct topo_config *c = &job->bench.cluster;
	printf("# clustersim collective: %s on %u ranks of %s", sim_coll_op_name(job->bench.op),
	       job->bench.nranks, c->preset);
	if (c->kind != TOPO_IDEAL)
		printf(" (%u nodes of %u GPUs)", (job->bench.nranks + c->gpus_per_node - 1) /
		       c->gpus_per_node, c->gpus_per_node);
	printf(", fidelity %s\n#\n", sim_fidelity_name(job->bench.fidelity));
	printf("# %8s %8s %16s %14s %12s %12s\n", "algo", "channels", "size(B)", "time(us)",
	       "algbw(GB/s)", "busbw(GB/s)");
	for (int i = 0; i < n; i++)
		printf("  %8s %8u %16.0f %14.3f %12.3f %12.3f\n", rows[i].algo, rows[i].channels,
		       rows[i].bytes, rows[i].r.time_s * 1e6, rows[i].r.algbw_Bps / 1e9,
		       rows[i].r.busbw_Bps / 1e9);
}

static void print_json(const struct coll_job *job, const struct coll_bench_row *rows, int n,
		       double wall_s)
{
	printf("{\"op\":\"%s\",\"cluster\":\"%s\",\"ranks\":%u,\"fidelity\":\"%s\",\"rows\":[",
	       sim_coll_op_name(job->bench.op), job->bench.cluster.preset, job->bench.nranks,
	       sim_fidelity_name(job->bench.fidelity));
	for (int i = 0; i < n; i++)
		printf("%s{\"algo\":\"%s\",\"channels\":%u,\"bytes\":%.17g,\"time_s\":%.9g,"
		       "\"algbw_GBps\":%.9g,\"busbw_GBps\":%.9g}", i ? "," : "", rows[i].algo,
		       rows[i].channels, rows[i].bytes, rows[i].r.time_s, rows[i].r.algbw_Bps / 1e9,
		       rows[i].r.busbw_Bps / 1e9);
	printf("],\"wall_s\":%.6f}\n", wall_s);
}

/* Write the rows to --csv, opened before the runs, and put it in place. */
static int write_csv(struct cli_args *a, struct sim_out *o, const struct coll_job *job,
		     const struct coll_bench_row *rows, int n)
{
	FILE *f = o->f;
	const char *head[] = { "op", "algo", "ranks", "channels", "bytes", "time_s",
			       "algbw_GBps", "busbw_GBps" };
	for (size_t i = 0; i < ARRAY_SIZE(head); i++)
		cli_csv_field(f, head[i], i == 0);
	fputc('\n', f);
	for (int i = 0; i < n; i++) {
		char v[6][40];
		snprintf(v[0], 40, "%u", job->bench.nranks);
		snprintf(v[1], 40, "%u", rows[i].channels);
		snprintf(v[2], 40, "%.17g", rows[i].bytes);
		snprintf(v[3], 40, "%.9g", rows[i].r.time_s);
		snprintf(v[4], 40, "%.9g", rows[i].r.algbw_Bps / 1e9);
		snprintf(v[5], 40, "%.9g", rows[i].r.busbw_Bps / 1e9);
		cli_csv_field(f, sim_coll_op_name(job->bench.op), 1);
		cli_csv_field(f, rows[i].algo, 0);
		for (int k = 0; k < 6; k++)
			cli_csv_field(f, v[k], 0);
		fputc('\n', f);
	}
	return cli_out_commit(a, "option --csv", o, CLI_OK);
}

static int collective_run(struct cli_args *a)
{
	struct coll_job job;
	struct coll_bench *benches[MAX_ALGOS] = { 0 };
	struct coll_bench_row *rows = NULL;
	struct sim_store *st = NULL;
	int rc = parse_job(a, &job);
	if (rc == CLI_OK)
		rc = check_job(a, &job, benches);
	struct sim_out csv = { 0 };
	if (rc == CLI_OK && cli_has(a, "csv"))  /* an unwritable file fails before the runs */
		rc = cli_out_open(a, "option --csv", cli_str(a, "csv", ""), &csv);
	if (rc == CLI_OK && cli_has(a, "db"))
		rc = cli_store_open(a, cli_str(a, "db", ""), &st);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int n = job.nalgos * job.nsizes;
	rows = xcalloc((size_t)(n ? n : 1), sizeof(*rows));
	for (int i = 0; rc == CLI_OK && i < job.nalgos; i++)
		rc = run_algo(a, &job, i, benches[i], st, rows + i * job.nsizes);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	if (rc == CLI_OK) {
		if (cli_has(a, "json"))
			print_json(&job, rows, n, wall);
		else
			print_table(&job, rows, n);
		if (cli_has(a, "csv"))
			rc = write_csv(a, &csv, &job, rows, n);
	}
	if (csv.f)  /* not written: the old file stays */
		sim_out_abort(&csv);
	for (int i = 0; i < MAX_ALGOS; i++)
		coll_bench_free(benches[i]);
	sim_store_close(st);
	free(rows);
	return rc;
}

const struct cli_cmd cli_cmd_collective = {
	.name = "collective",
	.usage = "--op OP --algo ALGO --cluster PRESET (--nodes N | --ranks N) "
		 "[-b MIN] [-e MAX] [-f FACTOR] [OPTIONS]",
	.summary = "Simulate one collective over every rank and print nccl-tests figures.",
	.description =
		"Runs the collective at sizes MIN, MIN*F, ... up to MAX, one after another, and\n"
		"prints for each the time from the first rank's start to the last rank's end,\n"
		"the algorithm bandwidth (size / time) and the bus bandwidth (algbw x 2(p-1)/p\n"
		"for all-reduce, x (p-1)/p for reduce-scatter, all-gather and all-to-all, x 1\n"
		"for broadcast), as nccl-tests does. Size is n of SPEC.md: the full buffer of\n"
		"each rank. With --json the object has a \"rows\" array of {algo, channels,\n"
		"bytes, time_s, algbw_GBps, busbw_GBps} and \"wall_s\", the simulator's own\n"
		"run time (the only field that differs between two identical runs).",
	.opts = coll_opts,
	.run = collective_run,
};
