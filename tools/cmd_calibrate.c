/*
 * cmd_calibrate.c - `clustersim calibrate nccl FILE...`: fit the ring's
 * latency and bandwidth to nccl-tests logs, print the fit and its
 * residuals, and write a cluster preset with the fitted figures.
 *
 * Logs are grouped by scope (every rank on one host: the NVLink domain;
 * several hosts: the network) and each scope is fitted jointly over its
 * logs (collectives/nccl.h). The preset is the --base cluster with the
 * fitted scope's latency and bandwidth replaced, and says so in its header.
 */
#include "tools/cli.h"

#include <errno.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collectives/bench.h"
#include "collectives/coll.h"
#include "collectives/nccl.h"
#include "parallel/compute.h"
#include "scenarios/scenario.h"
#include "sim/outfile.h"
#include "sim/util.h"
#include "topology/topo.h"

#define MAX_LOGS 7

static const struct cli_opt calib_opts[] = {
	{ "op", 0, CLI_STR, "OP", "from the log",
	  "nccl: the collective of every log: all_reduce_perf, all_gather_perf, reduce_scatter_perf "
	  "or alltoall_perf (the log's \"Collective test starting\" line, else its file name)" },
	{ "ranks", 'n', CLI_COUNT, "N", "the log's rank lines",
	  "nccl: ranks of every log, for logs without the \"#  Rank ...\" lines" },
	{ "nodes", 'N', CLI_COUNT, "N", "the log's hosts",
	  "nccl: nodes every log spans: 1 fits the NVLink domain, more the network" },
	{ "inplace", 0, CLI_FLAG, NULL, NULL, "nccl: fit the in-place times (default: out-of-place)" },
	{ "fit-min", 0, CLI_BYTES, "SIZE", "bandwidth-bound range",
	  "nccl: smallest size of the fit (default: from where the bus bandwidth stays at least "
	  "half its peak)" },
	{ "fit-max", 0, CLI_BYTES, "SIZE", "largest measured", "nccl: largest size of the fit" },
	{ "base", 'c', CLI_STR, "PRESET", NULL,
	  "nccl: the cluster preset the logs were measured on (GPU, nodes, NICs); needed by -o" },
	{ "gpu", 0, CLI_STR, "PRESET", NULL,
	  "gemm: the GPU the table was measured on (a GPU preset of clustersim presets); "
	  "required" },
	{ "tables", 0, CLI_STR, "NAME", "next to FILE, else h200",
	  "gemm: the calibration table whose attention, memory-bound and copy tables complete "
	  "the folder -o writes" },
	{ "output", 'o', CLI_FILE_OUT, "PATH", NULL,
	  "nccl: write the base preset with the fitted latency and bandwidth as a cluster "
	  "preset YAML (put it in clusters/ next to a scenario to name it); gemm: write a "
	  "calibration folder (put it at calibration/NAME/ next to a scenario and set "
	  "compute.efficiency: NAME)" },
	{ "json", 0, CLI_FLAG, NULL, NULL, "print a JSON object instead of the tables" },
	{ 0 },
};

/* One scope's logs and fit. */
struct scope {
	const char *name;            /* "NVLink domain" or "network"  */
	int inter;                   /* across nodes                  */
	struct nccl_point *pts;
	size_t npts;
	double lo, hi;
	int lo_given, hi_given;
	struct nccl_fit fit;
	int fitted;
	uint32_t ranks, nodes;       /* of its first log              */
};

struct calib {
	struct nccl_log logs[MAX_LOGS];
	int log_scope[MAX_LOGS];     /* index into scope[] of each log */
	int nlogs;
	int inplace;
	struct scope scope[2];       /* [0] inside a node, [1] across  */
};

static void calib_free(struct calib *c)
{
	for (int i = 0; i < c->nlogs; i++)
		nccl_log_free(&c->logs[i]);
	free(c->scope[0].pts);
	free(c->scope[1].pts);
}

/* Read every log and give each its op, ranks and scope. */
static int read_logs(struct cli_args *a, struct calib *c)
{
	enum nccl_op op = NCCL_OP_NONE;
	long long ranks = 0, nodes = 0;
	char err[512];

	if (cli_has(a, "op") && (op = nccl_op_from_name(cli_str(a, "op", ""))) == NCCL_OP_NONE)
		return cli_error(a, CLI_BADINPUT, "option --op: unknown collective '%s': expected "
				 "all_reduce_perf, all_gather_perf, reduce_scatter_perf or "
				 "alltoall_perf", cli_str(a, "op", ""));
	if (cli_count(a, "ranks", 2, TOPO_MAX_RANKS, &ranks) < 0 ||
	    cli_count(a, "nodes", 1, TOPO_MAX_RANKS, &nodes) < 0)
		return CLI_BADINPUT;
	c->inplace = cli_has(a, "inplace");
	if (a->npos < 2)
		return cli_error(a, CLI_BADINPUT, "nccl: expected at least one nccl-tests log "
				 "(the output of all_reduce_perf and the like)");
	if (a->npos - 1 > MAX_LOGS)
		return cli_error(a, CLI_BADINPUT, "nccl: at most %d logs at once", MAX_LOGS);
	for (int i = 1; i < a->npos; i++) {
		struct nccl_log *log = &c->logs[c->nlogs];
		if (nccl_log_read(log, a->pos[i], err, sizeof(err)) < 0)
			return cli_error(a, CLI_BADINPUT, "%s", err);
		c->nlogs++;
		if (op != NCCL_OP_NONE)
			log->op = op;
		if (log->op == NCCL_OP_NONE)
			return cli_error(a, CLI_BADINPUT, "%s: which collective? The log has no "
					 "\"Collective test starting\" line and its name no test "
					 "name: give --op", log->name);
		if (ranks)
			log->ranks = (uint32_t)ranks;
		if (log->ranks < 2)
			return cli_error(a, CLI_BADINPUT, "%s: %s: expected the ranks of the test "
					 "(\"#  Rank ...\" lines of the log, or --ranks)", log->name,
					 log->ranks ? "one rank" : "no rank lines");
		uint32_t n = nodes ? (uint32_t)nodes : log->hosts ? log->hosts : 1;
		if (n > log->ranks)
			return cli_error(a, CLI_BADINPUT, "%s: %u nodes for %u ranks: expected at "
					 "most one node per rank", log->name, n, log->ranks);
		c->log_scope[c->nlogs - 1] = n > 1;
		struct scope *s = &c->scope[n > 1];
		if (!s->ranks)
			s->ranks = log->ranks, s->nodes = n;
		s->pts = xreallocarray(s->pts, s->npts + log->nrows, sizeof(*s->pts));
		for (size_t r = 0; r < log->nrows; r++) {
			double t = log->rows[r].time_s[c->inplace];
			if (t > 0)
				s->pts[s->npts++] = (struct nccl_point){ log->op, log->ranks,
									 log->rows[r].bytes, t };
		}
	}
	return CLI_OK;
}

static int fit_scopes(struct cli_args *a, struct calib *c)
{
	double lo = 0, hi = 0;
	char err[512];
	if (cli_units(a, "fit-min", &lo) < 0 || cli_units(a, "fit-max", &hi) < 0)
		return CLI_BADINPUT;
	for (int k = 0; k < 2; k++) {
		struct scope *s = &c->scope[k];
		s->name = k ? "network (across nodes)" : "NVLink domain (inside a node)";
		s->inter = k;
		if (!s->npts) {
			if (s->ranks)
				return cli_error(a, CLI_BADINPUT, "the %s logs have no %s times%s",
						 s->name, c->inplace ? "in-place" : "out-of-place",
						 c->inplace ? "" : " (fit the in-place ones with --inplace)");
			continue;
		}
		nccl_fit_range(s->pts, s->npts, &s->lo, &s->hi);
		if ((s->lo_given = cli_has(a, "fit-min")))
			s->lo = lo;
		if ((s->hi_given = cli_has(a, "fit-max")))
			s->hi = hi;
		if (s->lo > s->hi)
			return cli_error(a, CLI_BADINPUT, "the fit's range is empty: --fit-min %.0f "
					 "bytes is above --fit-max %.0f bytes", s->lo, s->hi);
		if (nccl_fit(s->pts, s->npts, s->lo, s->hi, &s->fit, err, sizeof(err)) < 0)
			return cli_error(a, CLI_BADINPUT, "%s: %s", s->name, err);
		s->fitted = 1;
	}
	return CLI_OK;
}

/* The scope of log i, when it was fitted. */
static const struct scope *scope_of(const struct calib *c, int i)
{
	const struct scope *s = &c->scope[c->log_scope[i]];
	return s->fitted ? s : NULL;
}

static void print_tables(const struct calib *c)
{
	char b1[32], b2[32];
	for (int i = 0; i < c->nlogs; i++) {
		const struct nccl_log *log = &c->logs[i];
		const struct scope *s = scope_of(c, i);
		if (!s)
			continue;
		printf("# %s: %s, %u ranks, %s, %s times\n", log->name, nccl_op_test(log->op),
		       log->ranks, s->inter ? "across nodes" : "inside one node",
		       c->inplace ? "in-place" : "out-of-place");
		printf("# %13s %12s %12s %12s %12s %8s\n", "size(B)", "time(us)", "busbw(GB/s)",
		       "fit(us)", "fit busbw", "error");
		double f = nccl_busbw_factor(log->op, log->ranks);
		for (size_t r = 0; r < log->nrows; r++) {
			double t = log->rows[r].time_s[c->inplace], S = log->rows[r].bytes;
			if (t <= 0)
				continue;
			double tf = nccl_ring_time_s(log->op, log->ranks, S, s->fit.alpha_s,
						     s->fit.bw_Bps);
			printf("  %13.0f %12.2f %12.2f %12.2f %12.2f %+7.1f%%%s\n", S, t * 1e6,
			       S * f / t / 1e9, tf * 1e6, S * f / tf / 1e9, (tf / t - 1) * 100,
			       S >= s->lo && S <= s->hi ? "  fit" : "");
		}
		printf("\n");
	}
	for (int k = 0; k < 2; k++) {
		const struct scope *s = &c->scope[k];
		if (!s->fitted)
			continue;
		printf("%s, ring: alpha %.3g us per step (+/- %.2g), bus bandwidth %.4g GB/s "
		       "(+/- %.2g)\n", s->name, s->fit.alpha_s * 1e6, s->fit.alpha_sd_s * 1e6,
		       s->fit.bw_Bps / 1e9, s->fit.bw_sd_Bps / 1e9);
		printf("  fitted on %zu times from %s to %s (%s), weights 1/t^2\n", s->fit.used,
		       sim_units_format(SIM_UNIT_BYTES, s->lo, b1, sizeof(b1)),
		       sim_units_format(SIM_UNIT_BYTES, s->hi, b2, sizeof(b2)),
		       s->lo_given || s->hi_given ? "--fit-min/--fit-max"
						  : "bandwidth-bound: bus bandwidth at least half "
						    "its peak");
		printf("  time error in the range: median %.1f %%, worst %.1f %%\n",
		       s->fit.median_err * 100, s->fit.worst_err * 100);
		if (s->fit.alpha_fixed)
			printf("  the range does not resolve the latency (it fitted negative): "
			       "alpha set to 0; add smaller sizes with --fit-min\n");
	}
}

static void print_json(const struct calib *c)
{
	printf("{\"inplace\": %s, \"fits\": [", c->inplace ? "true" : "false");
	int first = 1;
	for (int k = 0; k < 2; k++) {
		const struct scope *s = &c->scope[k];
		if (!s->fitted)
			continue;
		printf("%s{\"scope\": \"%s\", \"ranks\": %u, \"nodes\": %u, \"alpha_s\": %.6g, "
		       "\"alpha_sd_s\": %.3g, \"busbw_Bps\": %.6g, \"busbw_sd_Bps\": %.3g, "
		       "\"fit_min_bytes\": %.0f, \"fit_max_bytes\": %.0f, \"points\": %zu, "
		       "\"median_error\": %.4f, \"worst_error\": %.4f, \"alpha_fixed\": %s}",
		       first ? "" : ", ", s->inter ? "network" : "nvlink", s->ranks, s->nodes,
		       s->fit.alpha_s, s->fit.alpha_sd_s, s->fit.bw_Bps, s->fit.bw_sd_Bps, s->lo,
		       s->hi, s->fit.used, s->fit.median_err, s->fit.worst_err,
		       s->fit.alpha_fixed ? "true" : "false");
		first = 0;
	}
	printf("], \"rows\": [");
	first = 1;
	for (int i = 0; i < c->nlogs; i++) {
		const struct nccl_log *log = &c->logs[i];
		const struct scope *s = scope_of(c, i);
		char name[512];
		sim_json_escape(log->name, name, sizeof(name));
		for (size_t r = 0; s && r < log->nrows; r++) {
			double t = log->rows[r].time_s[c->inplace], S = log->rows[r].bytes;
			if (t <= 0)
				continue;
			double tf = nccl_ring_time_s(log->op, log->ranks, S, s->fit.alpha_s,
						     s->fit.bw_Bps);
			printf("%s{\"file\": \"%s\", \"op\": \"%s\", \"ranks\": %u, \"bytes\": %.0f, "
			       "\"time_s\": %.6g, \"fit_time_s\": %.6g, \"in_fit\": %s}",
			       first ? "" : ", ", name, nccl_op_coll(log->op), log->ranks, S, t, tf,
			       S >= s->lo && S <= s->hi ? "true" : "false");
			first = 0;
		}
	}
	printf("]}\n");
}

/* YAML text: quotes and backslashes escaped. */
static void yaml_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
	fputc('"', f);
}

/* The op and algorithm of a scope's first log, as the engine names them. */
static void scope_coll(const struct scope *s, enum sim_coll_op *op,
		       const struct sim_coll_algo **algo)
{
	*op = nccl_op_sim(s->pts[0].op);
	*algo = *op == SIM_COLL_ALLTOALL ? &coll_pairwise : &coll_ring;
}

/* The simulated collective's own α and B on cluster t (closed form, two sizes). */
static int simulated_alpha_bw(const struct calib *c, const struct scope *s,
			      const struct topo_config *t, double *alpha, double *bw, char *err,
			      size_t errlen)
{
	struct coll_bench_config cfg = { .cluster = *t, .nranks = s->ranks,
					 .fidelity = SIM_FIDELITY_ANALYTIC };
	cfg.cluster.nodes = s->nodes;
	scope_coll(s, &cfg.op, &cfg.algo);
	struct coll_bench *b = coll_bench_new(&cfg, err, errlen);
	if (!b)
		return -1;
	const double S[2] = { s->lo, s->hi > s->lo ? s->hi : 2 * s->lo };
	struct coll_bench_result r[2];
	int rc = 0;
	for (int i = 0; i < 2 && rc == 0; i++)
		rc = coll_bench_check(b, S[i], err, errlen) ||
		     coll_bench_run(b, S[i], &r[i], err, errlen) ? -1 : 0;
	coll_bench_free(b);
	if (rc)
		return -1;
	enum nccl_op op = s->pts[0].op;
	double f = nccl_busbw_factor(op, s->ranks);
	*bw = (S[1] - S[0]) * f / (r[1].time_s - r[0].time_s);
	*alpha = (r[0].time_s - S[0] * f / *bw) / nccl_ring_steps(op, s->ranks);
	return 0;
}

/*
 * The network's latency and bandwidth that make the simulated collective
 * across nodes match the fit. How the bus bandwidth follows from a NIC's
 * depends on the fabric (one ring channel per NIC rail, NICs shared by
 * GPUs), so it is read off the simulator: with the base preset's figures
 * it gives a bus bandwidth k times the NIC's and a step latency h above
 * network.latency (switch hops), so B_nic = B / k and latency = α - h.
 * The result is simulated again to check it reproduces the fit.
 */
static int network_figures(struct cli_args *a, const struct calib *c, struct topo_config *t)
{
	const struct scope *s = &c->scope[1];
	double alpha0, bw0, alpha1, bw1;
	char err[512];
	if (simulated_alpha_bw(c, s, t, &alpha0, &bw0, err, sizeof(err)) < 0)
		return cli_error(a, CLI_BADINPUT, "the logs across nodes on --base: %s", err);
	double k = bw0 / t->net_bw_Bps, h = alpha0 - t->net_lat_s;
	t->net_bw_Bps = s->fit.bw_Bps / k;
	t->net_lat_s = fmax(0, s->fit.alpha_s - h);
	if (simulated_alpha_bw(c, s, t, &alpha1, &bw1, err, sizeof(err)) < 0)
		return cli_error(a, CLI_BADINPUT, "the logs across nodes on --base: %s", err);
	if (fabs(bw1 / s->fit.bw_Bps - 1) > 0.01)
		return cli_error(a, CLI_BADINPUT, "the bus bandwidth across nodes, %.4g GB/s, "
				 "is not the network's to give on --base (NVLink or the fabric "
				 "limits the simulated ring to %.4g GB/s)", s->fit.bw_Bps / 1e9,
				 bw1 / 1e9);
	return CLI_OK;
}

/* Fewest and most ranks among the logs inside one node. */
static void node_ranks(const struct calib *c, uint32_t *lo, uint32_t *hi)
{
	*lo = UINT32_MAX, *hi = 0;
	for (int i = 0; i < c->nlogs; i++)
		if (c->log_scope[i] == 0) {
			*lo = c->logs[i].ranks < *lo ? c->logs[i].ranks : *lo;
			*hi = c->logs[i].ranks > *hi ? c->logs[i].ranks : *hi;
		}
}

/*
 * The caveat of NVLink figures fitted on fewer ranks than a node has: the
 * bus bandwidth a ring reaches depends on the number of ranks (2 H200
 * reached 15 % less than 4 at 64 MiB; docs/calibration.md), which the
 * ring's closed form does not follow. NULL when the logs span the node.
 */
static const char *ranks_caveat(const struct calib *c, uint32_t gpus_per_node, char *buf,
				size_t len)
{
	uint32_t lo, hi;
	node_ranks(c, &lo, &hi);
	if (!c->scope[0].fitted || (lo == gpus_per_node && hi == gpus_per_node))
		return NULL;
	char who[32];
	if (lo == hi)
		snprintf(who, sizeof(who), "%u", lo);
	else
		snprintf(who, sizeof(who), "%u to %u", lo, hi);
	snprintf(buf, len, "The NVLink figures come from logs of %s of the node's %u GPUs; a "
		 "ring's bus bandwidth depends on how many GPUs take part (docs/calibration.md, "
		 "\"Two H200: out of sample\"), so collectives over other counts may differ.",
		 who, gpus_per_node);
	return buf;
}

static int write_preset(struct cli_args *a, const struct calib *c, char *caveat,
			size_t caveat_len)
{
	const char *path = cli_str(a, "output", NULL), *base = cli_str(a, "base", NULL);
	struct topo_config t;
	char err[512];
	if (!base)
		return cli_error(a, CLI_BADINPUT, "option -o/--output needs --base PRESET: the "
				 "cluster the logs were measured on (its GPU, nodes and NICs)");
	if (scn_cluster_preset(&t, base, err, sizeof(err)) < 0)
		return cli_error(a, CLI_BADINPUT, "option --base: %s", err);
	if (t.kind != TOPO_FATTREE)
		return cli_error(a, CLI_BADINPUT, "option --base: '%s' is not a fat tree of NVLink "
				 "nodes: the fit sets NVLink and network figures", base);
	const struct scope *in = &c->scope[0], *out = &c->scope[1];
	if (in->fitted && in->ranks > t.gpus_per_node)
		return cli_error(a, CLI_BADINPUT, "a log inside one node has %u ranks, but %s has "
				 "%u GPUs per node", in->ranks, base, t.gpus_per_node);
	if (in->fitted) {
		t.nvlink_bw_Bps = in->fit.bw_Bps;
		t.nvlink_lat_s = in->fit.alpha_s;
	}
	if (out->fitted && network_figures(a, c, &t) != CLI_OK)
		return CLI_BADINPUT;
	struct sim_out o;
	int rc = cli_out_open(a, "option -o", path, &o);
	if (rc != CLI_OK)
		return rc;
	FILE *f = o.f;
	/* The command as typed, with the program's own path as its name. */
	const char *args = a->line ? strchr(a->line, ' ') : NULL;
	fprintf(f, "# Written by: clustersim%s\n", args ? args : "");
	fprintf(f, "# The cluster preset %s with the ring latency and bandwidth fitted to "
		"nccl-tests logs\n# (%s times, weighted least squares):\n", base,
		c->inplace ? "in-place" : "out-of-place");
	for (int i = 0; i < c->nlogs; i++)
		fprintf(f, "#   %s: %s, %u ranks\n", c->logs[i].name,
			nccl_op_test(c->logs[i].op), c->logs[i].ranks);
	for (int k = 0; k < 2; k++) {
		const struct scope *s = &c->scope[k];
		if (!s->fitted)
			continue;
		fprintf(f, "# - %s: alpha %.4g us per ring step, bus bandwidth %.4g GB/s, from %zu "
			"sizes of %.0f to %.0f bytes;\n#   time error there: median %.1f %%, worst "
			"%.1f %%.\n", s->name, s->fit.alpha_s * 1e6, s->fit.bw_Bps / 1e9,
			s->fit.used, s->lo, s->hi, s->fit.median_err * 100, s->fit.worst_err * 100);
	}
	if (out->fitted)
		fprintf(f, "# - network: the NIC bandwidth (%.4g GB/s) and latency (%.4g us) with "
			"which the simulated\n#   %s across %u nodes reproduces the fit.\n",
			t.net_bw_Bps / 1e9, t.net_lat_s * 1e6, nccl_op_coll(out->pts[0].op),
			out->nodes);
	if (ranks_caveat(c, t.gpus_per_node, caveat, caveat_len))
		fprintf(f, "# %s\n", caveat);
	fprintf(f, "# Everything else is %s's.\ncluster:\n  topology: fattree\n", base);
	char desc[256], src[1024];
	snprintf(desc, sizeof(desc), "%s, latency and bandwidth fitted to nccl-tests", base);
	snprintf(src, sizeof(src), "%s (%s); %s%s%s fitted by clustersim calibrate nccl", base,
		 t.source, in->fitted ? "NVLink" : "", in->fitted && out->fitted ? " and " : "",
		 out->fitted ? "network" : "");
	fprintf(f, "  description: ");
	yaml_str(f, desc);
	fprintf(f, "\n  source: ");
	yaml_str(f, src);
	fprintf(f, "\n  gpu: %s\n  nodes: %u\n  gpus_per_node: %u\n", t.gpu, t.nodes,
		t.gpus_per_node);
	fprintf(f, "  nvlink:\n    bandwidth: %.6gGB/s\n    latency: %.6gus\n",
		t.nvlink_bw_Bps / 1e9, t.nvlink_lat_s * 1e6);
	fprintf(f, "  network:\n    bandwidth: %.6gGB/s\n    latency: %.6gus\n"
		"    nics_per_node: %u\n    oversubscription: %g\n    nodes_per_leaf: %u\n"
		"    hop_latency: %.6gus\n", t.net_bw_Bps / 1e9, t.net_lat_s * 1e6, t.nics_per_node,
		t.oversub, t.nodes_per_leaf, t.hop_lat_s * 1e6);
	fprintf(f, "  pcie:\n    bandwidth: %.6gGB/s\n", t.pcie_bw_Bps / 1e9);
	return cli_out_commit(a, "option -o", &o, CLI_OK);
}

static int calibrate_nccl(struct cli_args *a)
{
	struct calib c = { 0 };
	char caveat[512] = "";
	int rc = read_logs(a, &c);
	if (rc == CLI_OK)
		rc = fit_scopes(a, &c);
	if (rc == CLI_OK && cli_has(a, "output"))
		rc = write_preset(a, &c, caveat, sizeof(caveat));
	if (rc == CLI_OK) {
		if (cli_has(a, "json"))
			print_json(&c);
		else
			print_tables(&c);
		if (cli_has(a, "output") && !cli_has(a, "json"))
			printf("wrote %s%s%s\n", cli_str(a, "output", ""), *caveat ? "\n" : "",
			       caveat);
	}
	calib_free(&c);
	return rc;
}

/* ---- gemm ------------------------------------------------------------------------ */

/* |t_fit / t - 1| of every row under one fit, sorted; median and worst row. */
static void gemm_errors(const struct par_gemm_table *t, enum par_gemm_fit fit, double *median,
			double *worst, size_t *worst_line)
{
	double *e = xmalloc(t->nrows * sizeof(double));
	BUG_ON(t->nrows == 0);  /* sheet_read refuses a table without rows */
	*worst = -1;
	*worst_line = t->rows[0].line;
	for (size_t i = 0; i < t->nrows; i++) {
		e[i] = fabs(t->rows[i].eff / t->rows[i].fit[fit] - 1);
		BUG_ON(!isfinite(e[i]));  /* par_gemm_table_fit checked every row */
		if (e[i] > *worst)
			*worst = e[i], *worst_line = t->rows[i].line;
	}
	gsl_sort(e, 1, t->nrows);
	*median = gsl_stats_median_from_sorted_data(e, 1, t->nrows);
	free(e);
}

static void gemm_print(const char *file, const struct topo_gpu *gpu,
		       const struct par_gemm_table *t, int json)
{
	double med[2], worst[2];
	size_t line[2];
	for (int k = 0; k < 2; k++)
		gemm_errors(t, (enum par_gemm_fit)k, &med[k], &worst[k], &line[k]);
	if (json) {
		char name[512];
		sim_json_escape(file, name, sizeof(name));
		printf("{\"file\": \"%s\", \"gpu\": \"%s\", \"rows\": %zu, \"fits\": {"
		       "\"flops\": {\"median_error\": %.4f, \"worst_error\": %.4f}, "
		       "\"flops_mindim\": {\"median_error\": %.4f, \"worst_error\": %.4f}}, "
		       "\"efficiency\": [", name, gpu->name, t->nrows, med[0], worst[0], med[1],
		       worst[1]);
		for (size_t i = 0; i < t->nflops; i++)
			printf("%s{\"flops\": %.6g, \"flops_only\": %.4f, \"f\": %.4f}",
			       i ? ", " : "", t->flops[i].x, t->flops[i].y, t->f[i].y);
		printf("], \"mindim_factor\": [");
		for (size_t i = 0; i < t->ng; i++)
			printf("%s{\"mindim\": %.0f, \"g\": %.4f}", i ? ", " : "", t->g[i].x,
			       t->g[i].y);
		printf("]}\n");
		return;
	}
	double lo = 1, hi = 0;
	for (size_t i = 0; i < t->nrows; i++)
		lo = fmin(lo, t->rows[i].eff), hi = fmax(hi, t->rows[i].eff);
	printf("# %s: %zu GEMMs measured on %s (dense bf16 peak %.1f TFLOP/s)\n", file,
	       t->nrows, gpu->name, gpu->bf16 / 1e12);
	printf("# measured efficiency %.3f to %.3f of the peak\n", lo, hi);
	printf("# time error of each fit over the rows, |t_fit / t - 1|:\n");
	printf("#   FLOPs only                  median %.2f %%, worst %.1f %% (line %zu)\n",
	       med[0] * 100, worst[0] * 100, line[0]);
	printf("#   FLOPs x smallest dimension  median %.2f %%, worst %.1f %% (line %zu): the "
	       "compute model's\n", med[1] * 100, worst[1] * 100, line[1]);
	printf("\n# efficiency by FLOP count\n# %14s %12s %10s\n", "FLOPs", "FLOPs only",
	       "f (x g)");
	for (size_t i = 0; i < t->nflops; i++)
		printf("  %14.4g %12.4f %10.4f\n", t->flops[i].x, t->flops[i].y, t->f[i].y);
	printf("\n# factor g by the smallest of M, N and K\n# %8s %8s\n", "dim", "g");
	for (size_t i = 0; i < t->ng; i++)
		printf("  %8.0f %8.4f\n", t->g[i].x, t->g[i].y);
}

/* Copy the file from into out; 0, or -1 if from cannot be read (errors
 * writing out are found when it is committed). */
static int copy_into(const char *from, FILE *out)
{
	FILE *in = fopen(from, "rb");
	char buf[65536];
	size_t n;
	if (!in)
		return -1;
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, n, out);
	int rc = ferror(in) ? -1 : 0;
	fclose(in);
	return rc;
}

/* The tables calibrate gemm copies unchanged into the new folder. */
static const char *const other_names[] = { "attention.csv", "membound.csv", "ceilings.csv" };

/* The first of other_names that folder dir lacks, or NULL. */
static const char *missing_table(const char *dir)
{
	for (size_t i = 0; i < ARRAY_SIZE(other_names); i++) {
		char *p = xasprintf("%s/%s", dir, other_names[i]);
		int ok = access(p, R_OK) == 0;
		free(p);
		if (!ok)
			return other_names[i];
	}
	return NULL;
}

/* Where the other three tables come from: FILE's folder if it has them
 * all, else the calibration table --tables names (h200). */
static char *other_tables(struct cli_args *a, const char *file)
{
	char tmp[1024];
	snprintf(tmp, sizeof(tmp), "%s", file);
	char *dir = xstrdup(dirname(tmp));
	if (!cli_has(a, "tables") && !missing_table(dir))
		return dir;
	free(dir);
	return xasprintf("%s/calibration/%s", scn_datadir(), cli_str(a, "tables", "h200"));
}

/* The files of a calibration folder that calibrate gemm writes: its own
 * four, then the copies of other_names. */
enum { GEMM_CSV, GEMM_EFFICIENCY, GEMM_GPU, GEMM_README, GEMM_COPIES, GEMM_FILES = 7 };
static const char *const gemm_names[GEMM_FILES] = {
	[GEMM_CSV] = "gemm.csv", [GEMM_EFFICIENCY] = "efficiency.csv", [GEMM_GPU] = "gpu.txt",
	[GEMM_README] = "README.md", [GEMM_COPIES] = "attention.csv", "membound.csv",
	"ceilings.csv",
};

/* Refuse a file of the folder that is a table read: FILE, or one of the
 * tables copied (-o naming the folder they come from). */
static int gemm_check_files(struct cli_args *a, const char *dir, const char *file,
			    const char *from)
{
	int rc = CLI_OK;
	size_t nin = 1 + ARRAY_SIZE(other_names);
	char *in[1 + ARRAY_SIZE(other_names)] = { xstrdup(file) };
	for (size_t k = 1; k < nin; k++)
		in[k] = xasprintf("%s/%s", from, other_names[k - 1]);
	for (size_t i = 0; i < GEMM_FILES && rc == CLI_OK; i++) {
		char *out = xasprintf("%s/%s", dir, gemm_names[i]);
		for (size_t k = 0; k < nin && rc == CLI_OK; k++) {
			char *what = xasprintf("'%s'", in[k]);
			rc = cli_check_same(a, "option -o", out, what, in[k]);
			free(what);
		}
		free(out);
	}
	for (size_t k = 0; k < nin; k++)
		free(in[k]);
	return rc;
}

/* Write the contents of every file of the folder (the copies from from). */
static int gemm_fill(struct cli_args *a, FILE *const f[GEMM_FILES], const char *file,
		     const char *from, const struct topo_gpu *gpu, const struct par_gemm_table *t)
{
	fprintf(f[GEMM_CSV], "M,N,K,flops,ms,efficiency\n");
	for (size_t i = 0; i < t->nrows; i++) {
		const struct par_gemm_row *r = &t->rows[i];
		fprintf(f[GEMM_CSV], "%.0f,%.0f,%.0f,%.9g,%.9g,%.6f\n", r->m, r->n, r->k, r->flops,
			r->ms, r->eff);
	}
	FILE *e = f[GEMM_EFFICIENCY];
	fprintf(e, "curve,x,efficiency\n");
	for (size_t i = 0; i < t->nflops; i++)
		fprintf(e, "flops,%.9g,%.6f\n", t->flops[i].x, t->flops[i].y);
	for (size_t i = 0; i < t->nf; i++)
		fprintf(e, "flops_mindim_f,%.9g,%.6f\n", t->f[i].x, t->f[i].y);
	for (size_t i = 0; i < t->ng; i++)
		fprintf(e, "flops_mindim_g,%.9g,%.6f\n", t->g[i].x, t->g[i].y);
	fprintf(f[GEMM_GPU], "%s\n", gpu->name);
	const char *args = a->line ? strchr(a->line, ' ') : NULL;
	FILE *r = f[GEMM_README];
	fprintf(r, "# Calibration table\n\nWritten by `clustersim%s`.\n\n", args ? args : "");
	fprintf(r, "- gemm.csv: the %zu GEMMs of %s, measured on %s; `efficiency` is "
		"flops / (ms x its dense bf16 peak, %.1f TFLOP/s).\n", t->nrows, file, gpu->name,
		gpu->bf16 / 1e12);
	fprintf(r, "- efficiency.csv: the points the compute model's GEMM curves pass "
		"through (docs/calibration.md): `flops` (FLOPs only), `flops_mindim_f` and "
		"`flops_mindim_g` (the default two-factor fit, x the smallest of M, N, K). "
		"The model refits gemm.csv when it loads this folder; this file is for "
		"people and other tools.\n");
	fprintf(r, "- gpu.txt: the GPU preset the tables were measured on.\n");
	fprintf(r, "- attention.csv, membound.csv, ceilings.csv: copied from %s.\n", from);
	for (size_t i = 0; i < ARRAY_SIZE(other_names); i++) {
		char *src = xasprintf("%s/%s", from, other_names[i]);
		int bad = copy_into(src, f[GEMM_COPIES + i]) < 0;
		if (bad)
			cli_error(a, CLI_FAIL, "cannot read %s: %s", src, strerror(errno));
		free(src);
		if (bad)
			return CLI_FAIL;
	}
	return CLI_OK;
}

/*
 * Write the calibration folder -o DIR: all its files or none. Each is
 * written to a temporary file beside it (sim/outfile.h); only when every
 * one is complete are they renamed into place, so an error (a full disk, a
 * table that cannot be read) leaves the folder's old files as they were.
 */
static int gemm_write(struct cli_args *a, const char *file, const struct topo_gpu *gpu,
		      const struct par_gemm_table *t)
{
	const char *dir = cli_str(a, "output", "");
	char *from = other_tables(a, file);
	const char *missing = missing_table(from);
	int rc = CLI_OK, made = 0;
	if (missing)
		rc = cli_error(a, CLI_BADINPUT, "no such table: %s/%s", from, missing);
	if (rc == CLI_OK)
		rc = gemm_check_files(a, dir, file, from);
	if (rc == CLI_OK && mkdir(dir, 0777) == 0)
		made = 1;
	else if (rc == CLI_OK && errno != EEXIST)
		rc = cli_error(a, errno == ENOENT || errno == ENOTDIR ? CLI_BADINPUT : CLI_FAIL,
			       "option -o: cannot make the folder %s: %s", dir, strerror(errno));
	struct sim_out out[GEMM_FILES] = { 0 };
	FILE *f[GEMM_FILES] = { 0 };
	size_t opened = 0;
	for (; rc == CLI_OK && opened < GEMM_FILES; opened++) {
		char *path = xasprintf("%s/%s", dir, gemm_names[opened]);
		rc = cli_out_open(a, "option -o", path, &out[opened]);
		f[opened] = out[opened].f;
		free(path);
		if (rc != CLI_OK)
			break;
	}
	if (rc == CLI_OK)
		rc = gemm_fill(a, f, file, from, gpu, t);
	/* A write that failed shows on its FILE: commit that one first, which
	 * says why and removes it, then abandon the others. */
	for (size_t i = 0; rc == CLI_OK && i < GEMM_FILES; i++)
		if (fflush(f[i]) != 0 || ferror(f[i])) {
			cli_out_commit(a, "option -o", &out[i], CLI_OK);
			rc = CLI_FAIL;
		}
	for (size_t i = 0; i < opened && i < GEMM_FILES; i++)
		if (out[i].f)
			rc = cli_out_commit(a, "option -o", &out[i], rc);
	if (rc != CLI_OK && made)
		rmdir(dir);   /* only if nothing else is in it */
	free(from);
	return rc;
}

static int calibrate_gemm(struct cli_args *a)
{
	if (a->npos != 2)
		return cli_error(a, CLI_BADINPUT, "gemm: expected one measured table (gemm.csv, "
				 "as tools/measure_kernels.py writes it)");
	if (!cli_has(a, "gpu"))
		return cli_error(a, CLI_BADINPUT, "gemm: --gpu PRESET is required: the GPU the "
				 "table was measured on (its datasheet peak turns times into "
				 "efficiencies)");
	const struct topo_gpu *gpu = topo_gpu_find(cli_str(a, "gpu", ""));
	if (!gpu)
		return cli_error(a, CLI_BADINPUT, "option --gpu: unknown GPU preset '%s' (see "
				 "clustersim presets)", cli_str(a, "gpu", ""));
	struct par_gemm_table t;
	char err[512];
	if (par_gemm_table_fit(a->pos[1], gpu, &t, err, sizeof(err)) < 0)
		return cli_error(a, CLI_BADINPUT, "%s", err);
	int rc = cli_has(a, "output") ? gemm_write(a, a->pos[1], gpu, &t) : CLI_OK;
	if (rc == CLI_OK) {
		gemm_print(a->pos[1], gpu, &t, cli_has(a, "json"));
		if (cli_has(a, "output") && !cli_has(a, "json"))
			printf("\nwrote %s/ (gemm.csv, efficiency.csv, gpu.txt, README.md and the "
			       "other tables)\n", cli_str(a, "output", ""));
	}
	par_gemm_table_free(&t);
	return rc;
}

static int calibrate_run(struct cli_args *a)
{
	if (a->npos == 0)
		return cli_error(a, CLI_BADINPUT, "expected what to calibrate: nccl FILE... or gemm "
				 "FILE.csv");
	if (!strcmp(a->pos[0], "nccl"))
		return calibrate_nccl(a);
	if (!strcmp(a->pos[0], "gemm"))
		return calibrate_gemm(a);
	return cli_error(a, CLI_BADINPUT, "unknown calibration '%s': expected nccl or gemm",
			 a->pos[0]);
}

const struct cli_cmd cli_cmd_calibrate = {
	.name = "calibrate",
	.usage = "nccl FILE... [OPTIONS] | gemm FILE.csv --gpu PRESET [-o DIR]",
	.summary = "Fit the network to nccl-tests logs, or GEMM efficiency to a kernel table.",
	.description =
		"`calibrate nccl` reads the output of nccl-tests (all_reduce_perf, "
		"all_gather_perf, reduce_scatter_perf, alltoall_perf: their text tables, "
		"out-of-place or in-place columns) and fits the ring's closed form "
		"t = steps x alpha + S x f / B to the times by weighted least squares (GSL; "
		"weights 1/t^2, so every size counts by its relative error). steps is 2(n-1) "
		"for all-reduce and n-1 for the others; f is nccl-tests' bus-bandwidth factor, "
		"so B is the ring's bus bandwidth over the fitted range (measured bandwidth can "
		"keep rising past it: docs/calibration.md). Logs whose ranks sit on one host "
		"fit the NVLink domain; logs across hosts fit the network; several logs of one "
		"scope fit together. Where nccl-tests is not built, tools/measure_allreduce.py "
		"writes such a log from PyTorch, with in-place times: fit them with --inplace.\n\n"
		"The fit covers the bandwidth-bound sizes by default (from where the bus "
		"bandwidth stays at least half its peak), where training's messages lie; "
		"--fit-min and --fit-max choose another range. The tables give every size's "
		"measured and fitted time and the error; sizes outside the range are shown too. "
		"With -o and --base the base preset is written with the fitted latency and "
		"bandwidth (docs/calibration.md); when the logs inside a node used fewer "
		"GPUs than --base's node has, the file and the output say that collectives "
		"over other counts may differ.\n\n"
		"`calibrate gemm` reads a measured GEMM table (gemm.csv in the format of "
		"scenarios/calibration/h200/, as tools/measure_kernels.py writes it on your "
		"GPU), turns each row into an efficiency against --gpu's dense bf16 peak, fits "
		"the compute model's two curves (efficiency by FLOP count; and by FLOP count "
		"times a factor by the smallest of M, N, K) and prints them with each fit's time "
		"error over the rows. With -o DIR it writes a calibration folder: gemm.csv with "
		"an efficiency column, efficiency.csv (the curves' points), gpu.txt, README.md, "
		"and the attention, memory-bound and copy tables (from FILE's folder when it has "
		"them, else --tables). A scenario uses it as compute.efficiency: NAME when it "
		"sits at calibration/NAME/ next to the scenario.",
	.opts = calib_opts,
	.run = calibrate_run,
	.pos_words = 1,   /* nccl or gemm, then the files it reads */
};
