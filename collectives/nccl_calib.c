/*
 * nccl_calib.c - the ring fitted to nccl-tests logs, and the preset that
 * reproduces the fit (nccl_calib.h).
 */
#include "collectives/nccl_calib.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/bench.h"
#include "collectives/coll.h"
#include "sim/units.h"
#include "sim/util.h"
#include "topology/topo.h"

/* err = the message; -1. */
__attribute__((format(printf, 3, 4)))
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

void nccl_calib_free(struct nccl_calib *c)
{
	for (int i = 0; i < c->nlogs; i++)
		nccl_log_free(&c->logs[i]);
	free(c->scope[0].pts);
	free(c->scope[1].pts);
}

int nccl_calib_read(struct nccl_calib *c, const char *const *paths, int n,
		    const struct nccl_calib_opts *o, char *err, size_t errlen)
{
	BUG_ON(n > NCCL_CALIB_MAX_LOGS);
	char e[512];
	c->inplace = o->inplace;
	for (int i = 0; i < n; i++) {
		struct nccl_log *log = &c->logs[c->nlogs];
		if (nccl_log_read(log, paths[i], e, sizeof(e)) < 0)
			return fail(err, errlen, "%s", e);
		c->nlogs++;
		if (o->op != NCCL_OP_NONE)
			log->op = o->op;
		if (log->op == NCCL_OP_NONE)
			return fail(err, errlen, "%s: which collective? The log has no "
				    "\"Collective test starting\" line and its name no test "
				    "name: give --op", log->name);
		if (o->ranks)
			log->ranks = o->ranks;
		if (log->ranks < 2)
			return fail(err, errlen, "%s: %s: expected the ranks of the test "
				    "(\"#  Rank ...\" lines of the log, or --ranks)", log->name,
				    log->ranks ? "one rank" : "no rank lines");
		uint32_t nodes = o->nodes ? o->nodes : log->hosts ? log->hosts : 1;
		if (nodes > log->ranks)
			return fail(err, errlen, "%s: %u nodes for %u ranks: expected at "
				    "most one node per rank", log->name, nodes, log->ranks);
		c->log_scope[c->nlogs - 1] = nodes > 1;
		struct nccl_scope *s = &c->scope[nodes > 1];
		if (!s->ranks)
			s->ranks = log->ranks, s->nodes = nodes;
		s->pts = xreallocarray(s->pts, s->npts + log->nrows, sizeof(*s->pts));
		for (size_t r = 0; r < log->nrows; r++) {
			double t = log->rows[r].time_s[c->inplace];
			if (t > 0)
				s->pts[s->npts++] = (struct nccl_point){ log->op, log->ranks,
									 log->rows[r].bytes, t };
		}
	}
	return 0;
}

int nccl_calib_fit(struct nccl_calib *c, double lo, int lo_given, double hi, int hi_given,
		   char *err, size_t errlen)
{
	char e[512];
	for (int k = 0; k < 2; k++) {
		struct nccl_scope *s = &c->scope[k];
		s->name = k ? "network (across nodes)" : "NVLink domain (inside a node)";
		s->inter = k;
		if (!s->npts) {
			if (s->ranks)
				return fail(err, errlen, "the %s logs have no %s times%s", s->name,
					    c->inplace ? "in-place" : "out-of-place",
					    c->inplace ? "" : " (fit the in-place ones with --inplace)");
			continue;
		}
		nccl_fit_range(s->pts, s->npts, &s->lo, &s->hi);
		if ((s->lo_given = lo_given))
			s->lo = lo;
		if ((s->hi_given = hi_given))
			s->hi = hi;
		if (s->lo > s->hi)
			return fail(err, errlen, "the fit's range is empty: --fit-min %.0f "
				    "bytes is above --fit-max %.0f bytes", s->lo, s->hi);
		if (nccl_fit(s->pts, s->npts, s->lo, s->hi, &s->fit, e, sizeof(e)) < 0)
			return fail(err, errlen, "%s: %s", s->name, e);
		s->fitted = 1;
	}
	return 0;
}

const struct nccl_scope *nccl_calib_scope_of(const struct nccl_calib *c, int i)
{
	const struct nccl_scope *s = &c->scope[c->log_scope[i]];
	return s->fitted ? s : NULL;
}

void nccl_calib_write_text(FILE *out, const struct nccl_calib *c)
{
	char b1[32], b2[32];
	for (int i = 0; i < c->nlogs; i++) {
		const struct nccl_log *log = &c->logs[i];
		const struct nccl_scope *s = nccl_calib_scope_of(c, i);
		if (!s)
			continue;
		fprintf(out, "# %s: %s, %u ranks, %s, %s times\n", log->name, nccl_op_test(log->op),
		       log->ranks, s->inter ? "across nodes" : "inside one node",
		       c->inplace ? "in-place" : "out-of-place");
		fprintf(out, "# %13s %12s %12s %12s %12s %8s\n", "size(B)", "time(us)", "busbw(GB/s)",
		       "fit(us)", "fit busbw", "error");
		double f = nccl_busbw_factor(log->op, log->ranks);
		for (size_t r = 0; r < log->nrows; r++) {
			double t = log->rows[r].time_s[c->inplace], S = log->rows[r].bytes;
			if (t <= 0)
				continue;
			double tf = nccl_ring_time_s(log->op, log->ranks, S, s->fit.alpha_s,
						     s->fit.bw_Bps);
			fprintf(out, "  %13.0f %12.2f %12.2f %12.2f %12.2f %+7.1f%%%s\n", S, t * 1e6,
			       S * f / t / 1e9, tf * 1e6, S * f / tf / 1e9, (tf / t - 1) * 100,
			       S >= s->lo && S <= s->hi ? "  fit" : "");
		}
		fprintf(out, "\n");
	}
	for (int k = 0; k < 2; k++) {
		const struct nccl_scope *s = &c->scope[k];
		if (!s->fitted)
			continue;
		fprintf(out, "%s, ring: alpha %.3g us per step (+/- %.2g), bus bandwidth %.4g GB/s "
		       "(+/- %.2g)\n", s->name, s->fit.alpha_s * 1e6, s->fit.alpha_sd_s * 1e6,
		       s->fit.bw_Bps / 1e9, s->fit.bw_sd_Bps / 1e9);
		fprintf(out, "  fitted on %zu times from %s to %s (%s), weights 1/t^2\n", s->fit.used,
		       sim_units_format(SIM_UNIT_BYTES, s->lo, b1, sizeof(b1)),
		       sim_units_format(SIM_UNIT_BYTES, s->hi, b2, sizeof(b2)),
		       s->lo_given || s->hi_given ? "--fit-min/--fit-max"
						  : "bandwidth-bound: bus bandwidth at least half "
						    "its peak");
		fprintf(out, "  time error in the range: median %.1f %%, worst %.1f %%\n",
		       s->fit.median_err * 100, s->fit.worst_err * 100);
		if (s->fit.alpha_fixed)
			fprintf(out, "  the range does not resolve the latency (it fitted negative): "
			       "alpha set to 0; add smaller sizes with --fit-min\n");
	}
}

void nccl_calib_write_json(FILE *out, const struct nccl_calib *c)
{
	fprintf(out, "{\"inplace\": %s, \"fits\": [", c->inplace ? "true" : "false");
	int first = 1;
	for (int k = 0; k < 2; k++) {
		const struct nccl_scope *s = &c->scope[k];
		if (!s->fitted)
			continue;
		fprintf(out, "%s{\"scope\": \"%s\", \"ranks\": %u, \"nodes\": %u, \"alpha_s\": %.6g, "
		       "\"alpha_sd_s\": %.3g, \"busbw_Bps\": %.6g, \"busbw_sd_Bps\": %.3g, "
		       "\"fit_min_bytes\": %.0f, \"fit_max_bytes\": %.0f, \"points\": %zu, "
		       "\"median_error\": %.4f, \"worst_error\": %.4f, \"alpha_fixed\": %s}",
		       first ? "" : ", ", s->inter ? "network" : "nvlink", s->ranks, s->nodes,
		       s->fit.alpha_s, s->fit.alpha_sd_s, s->fit.bw_Bps, s->fit.bw_sd_Bps, s->lo,
		       s->hi, s->fit.used, s->fit.median_err, s->fit.worst_err,
		       s->fit.alpha_fixed ? "true" : "false");
		first = 0;
	}
	fprintf(out, "], \"rows\": [");
	first = 1;
	for (int i = 0; i < c->nlogs; i++) {
		const struct nccl_log *log = &c->logs[i];
		const struct nccl_scope *s = nccl_calib_scope_of(c, i);
		char name[512];
		sim_json_escape(log->name, name, sizeof(name));
		for (size_t r = 0; s && r < log->nrows; r++) {
			double t = log->rows[r].time_s[c->inplace], S = log->rows[r].bytes;
			if (t <= 0)
				continue;
			double tf = nccl_ring_time_s(log->op, log->ranks, S, s->fit.alpha_s,
						     s->fit.bw_Bps);
			fprintf(out, "%s{\"file\": \"%s\", \"op\": \"%s\", \"ranks\": %u, \"bytes\": %.0f, "
			       "\"time_s\": %.6g, \"fit_time_s\": %.6g, \"in_fit\": %s}",
			       first ? "" : ", ", name, nccl_op_coll(log->op), log->ranks, S, t, tf,
			       S >= s->lo && S <= s->hi ? "true" : "false");
			first = 0;
		}
	}
	fprintf(out, "]}\n");
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
static void scope_coll(const struct nccl_scope *s, enum sim_coll_op *op,
		       const struct sim_coll_algo **algo)
{
	*op = nccl_op_sim(s->pts[0].op);
	*algo = *op == SIM_COLL_ALLTOALL ? &coll_pairwise : &coll_ring;
}

/* The simulated collective's own α and B on cluster t (closed form, two sizes). */
static int simulated_alpha_bw(const struct nccl_scope *s,
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
static int network_figures(const struct nccl_calib *c, struct topo_config *t, char *err,
			   size_t errlen)
{
	const struct nccl_scope *s = &c->scope[1];
	double alpha0, bw0, alpha1, bw1;
	char e[512];
	if (simulated_alpha_bw(s, t, &alpha0, &bw0, e, sizeof(e)) < 0)
		return fail(err, errlen, "the logs across nodes on --base: %s", e);
	double k = bw0 / t->net_bw_Bps, h = alpha0 - t->net_lat_s;
	t->net_bw_Bps = s->fit.bw_Bps / k;
	t->net_lat_s = fmax(0, s->fit.alpha_s - h);
	if (simulated_alpha_bw(s, t, &alpha1, &bw1, e, sizeof(e)) < 0)
		return fail(err, errlen, "the logs across nodes on --base: %s", e);
	if (fabs(bw1 / s->fit.bw_Bps - 1) > 0.01)
		return fail(err, errlen, "the bus bandwidth across nodes, %.4g GB/s, "
				 "is not the network's to give on --base (NVLink or the fabric "
				 "limits the simulated ring to %.4g GB/s)", s->fit.bw_Bps / 1e9,
				 bw1 / 1e9);
	return 0;
}

/* Fewest and most ranks among the logs inside one node. */
static void node_ranks(const struct nccl_calib *c, uint32_t *lo, uint32_t *hi)
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
const char *nccl_calib_caveat(const struct nccl_calib *c, uint32_t gpus_per_node, char *buf,
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

int nccl_calib_apply(const struct nccl_calib *c, struct topo_config *t, const char *base,
		     char *err, size_t errlen)
{
	const struct nccl_scope *in = &c->scope[0], *out = &c->scope[1];
	if (in->fitted && in->ranks > t->gpus_per_node)
		return fail(err, errlen, "a log inside one node has %u ranks, but %s has "
			    "%u GPUs per node", in->ranks, base, t->gpus_per_node);
	if (in->fitted) {
		t->nvlink_bw_Bps = in->fit.bw_Bps;
		t->nvlink_lat_s = in->fit.alpha_s;
	}
	return out->fitted ? network_figures(c, t, err, errlen) : 0;
}

void nccl_calib_write_preset(FILE *f, const struct nccl_calib *c, const struct topo_config *tc,
			     const char *base, const char *args, const char *caveat)
{
	const struct topo_config t = *tc;
	const struct nccl_scope *in = &c->scope[0], *out = &c->scope[1];
	fprintf(f, "# Written by: clustersim%s\n", args ? args : "");
	fprintf(f, "# The cluster preset %s with the ring latency and bandwidth fitted to "
		"nccl-tests logs\n# (%s times, weighted least squares):\n", base,
		c->inplace ? "in-place" : "out-of-place");
	for (int i = 0; i < c->nlogs; i++)
		fprintf(f, "#   %s: %s, %u ranks\n", c->logs[i].name,
			nccl_op_test(c->logs[i].op), c->logs[i].ranks);
	for (int k = 0; k < 2; k++) {
		const struct nccl_scope *s = &c->scope[k];
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
	if (*caveat)
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
}
