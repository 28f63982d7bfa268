/*
 * validation.c - the published cases and the simulator's predictions of
 * them (validation.h).
 */
#include "scenarios/validation.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/bench.h"
#include "collectives/coll.h"
#include "parallel/compute.h"
#include "parallel/model.h"
#include "parallel/step.h"
#include "parallel/train.h"
#include "scenarios/scenario.h"
#include "scenarios/train_of.h"
#include "sim/sheet.h"
#include "sim/units.h"
#include "sim/util.h"
#include "topology/topo.h"

#define COLL_TARGET_BYTES VAL_COLL_TARGET_BYTES
#define TARGET_ERR VAL_TARGET_ERR

/* err = the message; rc. */
__attribute__((format(printf, 4, 5)))
static int fail(int rc, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

void val_free(struct validation *v)
{
	for (size_t i = 0; i < v->ncases; i++) {
		struct val_case *c = &v->cases[i];
		free(c->id), free(c->file), free(c->group), free(c->unit), free(c->formula);
		free(c->source);
	}
	for (size_t i = 0; i < v->ncolls; i++) {
		struct val_coll *c = &v->colls[i];
		free(c->id), free(c->log), free(c->cluster), free(c->algo), free(c->source);
		free(c->note), free(c->pts);
	}
	free(v->cases);
	free(v->colls);
}

/* ---- FLOP counts of the papers ---------------------------------------------------- */

/*
 * FLOPs of one step as the case's source counted them
 * (scenarios/validation/README.md):
 * megatron_sc21: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)), recomputation included;
 * megatron_core: 12 B s L h^2 [(1 + g/a + s/h)(d a/h) + (f/h) k gamma + V/(2 L h)].
 */
int val_formula_flops(const char *formula, const struct par_model *m,
			 const struct par_training *t, double *out)
{
	double B = t->global_batch, s = t->seq, l = m->layers, h = m->hidden, V = m->vocab;
	if (!strcmp(formula, "megatron_sc21")) {
		*out = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
		return 0;
	}
	if (!strcmp(formula, "megatron_core")) {
		double a = m->heads, g = m->kv_heads ? m->kv_heads : m->heads;
		double d = m->head_dim ? m->head_dim : h / a;
		double f = m->moe.experts && m->moe.expert_ffn ? m->moe.expert_ffn : m->ffn;
		double k = m->moe.experts ? m->moe.top_k : 1;
		double gamma = m->activation == PAR_SWIGLU ? 1.5 : 1;
		*out = 12 * B * s * l * h * h *
		       ((1 + g / a + s / h) * (d * a / h) + f / h * k * gamma + V / (2 * l * h));
		return 0;
	}
	return -1;
}

/* ---- reading the cases ------------------------------------------------------------- */

/* Read DIR/name and find its columns: VAL_OK, or VAL_BADINPUT with a message. */
static int read_table(const struct validation *v, const char *name,
		      const char *const *names, size_t n, int *col, struct sheet *sh,
		      char *err, size_t errlen)
{
	char e[512];
	if (sheet_read(sh, v->dir, name, e, sizeof(e)) == 0 &&
	    sheet_cols(sh, names, col, n, e, sizeof(e)) == 0)
		return VAL_OK;
	if (sh->path)
		sheet_free(sh);
	return fail(VAL_BADINPUT, err, errlen, "%s", e);
}

/* Each metric's name in cases.csv and the JSON, and its label on the page. */
static const struct { const char *name, *label; } metrics[] = {
	[VAL_TFLOPS] = { "achieved_tflops_per_gpu", "TFLOP/s per GPU" },
	[VAL_ITERATION] = { "iteration_time", "iteration s" },
	[VAL_MODEL_STATES] = { "model_state_memory_per_gpu", "model states GB" },
	[VAL_TOKENS] = { "tokens_per_s_per_gpu", "tokens/s per GPU" },
};

static int read_cases(struct validation *v, char *err, size_t errlen)
{
	static const char *const names[] = { "id", "file", "group", "metric", "value", "unit",
					     "formula", "source" };
	struct sheet sh;
	int col[ARRAY_SIZE(names)];
	char e[512];
	if (read_table(v, "cases.csv", names, ARRAY_SIZE(names), col, &sh, err, errlen) != VAL_OK)
		return VAL_BADINPUT;
	v->cases = xcalloc(sh.nrows, sizeof(*v->cases));
	int rc = VAL_OK;
	for (size_t r = 0; r < sh.nrows && rc == VAL_OK; r++) {
		struct val_case *c = &v->cases[v->ncases++];
		const char *metric = sheet_cell(&sh, r, col[3]);
		c->id = xstrdup(sheet_cell(&sh, r, col[0]));
		c->file = xstrdup(sheet_cell(&sh, r, col[1]));
		c->group = xstrdup(sheet_cell(&sh, r, col[2]));
		c->unit = xstrdup(sheet_cell(&sh, r, col[5]));
		c->formula = xstrdup(sheet_cell(&sh, r, col[6]));
		c->source = xstrdup(sheet_cell(&sh, r, col[7]));
		c->predicted = -1;
		size_t mi = 0;
		while (mi < ARRAY_SIZE(metrics) && strcmp(metric, metrics[mi].name))
			mi++;
		if (mi < ARRAY_SIZE(metrics))
			c->metric = (enum val_metric)mi;
		else
			rc = fail(VAL_BADINPUT, err, errlen, "%s:%zu: column 'metric': expected "
				       "achieved_tflops_per_gpu, iteration_time, "
				       "model_state_memory_per_gpu or tokens_per_s_per_gpu, got '%s'",
				       sh.path, sh.line[r], metric);
		if (rc == VAL_OK && sheet_pos(&sh, r, col[4], &c->measured, e, sizeof(e)) < 0)
			rc = fail(VAL_BADINPUT, err, errlen, "%s", e);
		if (rc == VAL_OK && c->metric == VAL_TFLOPS && strcmp(c->formula, "megatron_sc21") &&
		    strcmp(c->formula, "megatron_core"))
			rc = fail(VAL_BADINPUT, err, errlen, "%s:%zu: column 'formula': expected "
				       "megatron_sc21 or megatron_core for a TFLOP/s figure, got "
				       "'%s'", sh.path, sh.line[r], c->formula);
		if (rc == VAL_OK && (!*c->id || !*c->file || !*c->group))
			rc = fail(VAL_BADINPUT, err, errlen, "%s:%zu: id, file and group must not be "
				       "empty", sh.path, sh.line[r]);
	}
	sheet_free(&sh);
	return rc;
}

/*
 * A sweep's sizes and measured bus bandwidths: from the out-of-place times,
 * or the in-place ones where the log has no others (as
 * tools/measure_allreduce.py writes them).
 */
static void sweep_points(struct val_coll *c, const struct nccl_log *log)
{
	c->op = log->op;
	c->ranks = log->ranks;
	c->inplace = 1;
	for (size_t i = 0; i < log->nrows && c->inplace; i++)
		if (log->rows[i].time_s[0] > 0)
			c->inplace = 0;
	c->pts = xcalloc(log->nrows, sizeof(*c->pts));
	for (size_t i = 0; i < log->nrows; i++) {
		double t = log->rows[i].time_s[c->inplace], S = log->rows[i].bytes;
		if (t > 0)
			c->pts[c->npts++] = (struct val_point){
				S, S * nccl_busbw_factor(log->op, log->ranks) / t, -1 };
	}
}

static int read_collectives(struct validation *v, char *err, size_t errlen)
{
	static const char *const names[] = { "id", "log", "cluster", "nodes", "algo", "bytes",
					     "measured_GBps", "per", "source", "note" };
	struct sheet sh;
	int col[ARRAY_SIZE(names)];
	char e[512];
	if (read_table(v, "collectives.csv", names, ARRAY_SIZE(names), col, &sh, err, errlen) != VAL_OK)
		return VAL_BADINPUT;
	v->colls = xcalloc(sh.nrows, sizeof(*v->colls));
	int rc = VAL_OK;
	for (size_t r = 0; r < sh.nrows && rc == VAL_OK; r++) {
		struct val_coll *c = &v->colls[v->ncolls++];
		double nodes;
		c->id = xstrdup(sheet_cell(&sh, r, col[0]));
		c->log = xstrdup(sheet_cell(&sh, r, col[1]));
		c->cluster = xstrdup(sheet_cell(&sh, r, col[2]));
		c->algo = xstrdup(sheet_cell(&sh, r, col[4]));
		c->source = xstrdup(sheet_cell(&sh, r, col[8]));
		c->note = xstrdup(sheet_cell(&sh, r, col[9]));
		const char *per = sheet_cell(&sh, r, col[7]);
		if (strcmp(per, "gpu") && strcmp(per, "nic")) {
			rc = fail(VAL_BADINPUT, err, errlen, "%s:%zu: column 'per': expected gpu (bus "
				       "bandwidth) or nic (bus bandwidth per NIC of a node), got "
				       "'%s'", sh.path, sh.line[r], per);
			break;
		}
		c->per_nic = !strcmp(per, "nic");
		if (sheet_pos(&sh, r, col[3], &nodes, e, sizeof(e)) < 0 ||
		    nodes != floor(nodes) || nodes > 4096) {
			rc = fail(VAL_BADINPUT, err, errlen, "%s:%zu: column 'nodes': expected a whole "
				       "number of nodes, 1 to 4096", sh.path, sh.line[r]);
			break;
		}
		c->nodes = (uint32_t)nodes;
		if (!coll_find(c->algo)) {
			rc = fail(VAL_BADINPUT, err, errlen, "%s:%zu: column 'algo': expected one of %s, "
				       "got '%s'", sh.path, sh.line[r], coll_names(), c->algo);
			break;
		}
		if (*c->log) {  /* a sweep: every size of an nccl-tests log */
			struct nccl_log log;
			char *path = xasprintf("%s/%s", v->dir, c->log);
			int bad = nccl_log_read(&log, path, e, sizeof(e));
			free(path);
			if (bad)
				rc = fail(VAL_BADINPUT, err, errlen, "%s", e);
			else if (log.op != NCCL_OP_ALLREDUCE || log.ranks < 2)
				rc = fail(VAL_BADINPUT, err, errlen, "%s: expected an all_reduce_perf log "
					       "with its rank lines", log.name);
			if (rc == VAL_OK)
				sweep_points(c, &log);
			if (!bad)
				nccl_log_free(&log);
			continue;
		}
		/* One figure: an all-reduce of `bytes` over every GPU of the nodes. */
		double bytes, gbps;
		if (sheet_pos(&sh, r, col[5], &bytes, e, sizeof(e)) < 0 ||
		    sheet_pos(&sh, r, col[6], &gbps, e, sizeof(e)) < 0) {
			rc = fail(VAL_BADINPUT, err, errlen, "%s (a row without a log gives bytes and "
				       "measured_GBps)", e);
			break;
		}
		c->op = NCCL_OP_ALLREDUCE;
		c->pts = xcalloc(1, sizeof(*c->pts));
		c->pts[c->npts++] = (struct val_point){ bytes, gbps * 1e9, -1 };
	}
	sheet_free(&sh);
	return rc;
}

/* ---- running ------------------------------------------------------------------------ */

static void describe_compute(struct val_case *c, const struct scn *s)
{
	char launch[32];
	sim_units_format(SIM_UNIT_TIME, s->compute.launch_s, launch, sizeof(launch));
	if (s->compute.efficiency > 0)
		snprintf(c->compute, sizeof(c->compute), "flat efficiency %g, launch %s",
			 s->compute.efficiency, launch);
	else
		snprintf(c->compute, sizeof(c->compute), "calibration table %s, launch %s",
			 s->compute.table, launch);
}

int val_run_case(struct validation *v, size_t i, char *err, size_t errlen)
{
	struct val_case *c = &v->cases[i];
	char *path = xasprintf("%s/%s", v->dir, c->file);
	const char *sets[] = { v->quick ? "sim.fidelity=analytic" : "sim.fidelity=flow" };
	struct scn s;
	char e[SCN_ERRLEN];
	int rc = VAL_OK;
	if (scn_load(&s, path, sets, 1, e, sizeof(e)) < 0) {
		rc = fail(VAL_BADINPUT, err, errlen, "case %s: %s", c->id, e);
		free(path);
		return rc;
	}
	free(path);
	c->gpus = scn_gpus(&s);
	c->tp = s.parallel.tp, c->pp = s.parallel.pp, c->dp = s.parallel.dp;
	c->vpp = s.parallel.vpp;
	snprintf(c->cluster, sizeof(c->cluster), "%s", s.cluster.preset);
	snprintf(c->gpu, sizeof(c->gpu), "%s", s.cluster.gpu);
	describe_compute(c, &s);
	struct par_compute_model *cm = par_compute_model_new(
		&s.compute, topo_gpu_find(s.cluster.gpu), s.training.precision, s.datadir, e,
		sizeof(e));
	if (!cm)
		return fail(VAL_BADINPUT, err, errlen, "case %s: %s: compute: %s", c->id, s.path, e);
	struct par_train t;
	struct par_report r;
	struct par_step st;
	scn_train_of(&t, &s, cm);
	if (par_step_resolve(&st, &t, e, sizeof(e)) < 0 ||
	    par_train_plan(&st, &r, e, sizeof(e)) < 0) {
		rc = fail(VAL_BADINPUT, err, errlen, "case %s: %s: %s", c->id, s.path, e);
	} else if (c->metric == VAL_MODEL_STATES) {
		c->predicted = r.memory.model_states / 1e9;
		if (!r.memory.fits)
			snprintf(c->why, sizeof(c->why), "needs %.1f GB and %.1f GB reserved, of "
				 "%.1f GB: not run", r.memory.peak / 1e9,
				 r.memory.reserve.total / 1e9, r.memory.capacity / 1e9);
	} else if (!r.memory.fits) {
		snprintf(c->why, sizeof(c->why), "does not fit: %.1f GB and %.1f GB reserved, of "
			 "%.1f GB", r.memory.peak / 1e9, r.memory.reserve.total / 1e9,
			 r.memory.capacity / 1e9);
	} else if (par_train_simulate(&st, &r, e, sizeof(e)) < 0) {
		rc = fail(VAL_FAIL, err, errlen, "case %s: %s: the step could not finish: %s", c->id,
			       s.path, e);
	} else if (c->metric == VAL_ITERATION) {
		c->predicted = r.step_time_s;
	} else if (c->metric == VAL_TOKENS) {
		c->predicted = r.tokens_per_s / r.gpus;
	} else {
		double F = 0;
		val_formula_flops(c->formula, &s.model, &s.training, &F);
		c->predicted = F / (r.step_time_s * r.gpus) / 1e12;
	}
	par_step_free(&st);
	par_compute_model_free(cm);
	return rc;
}

int val_run_coll(struct validation *v, size_t i, char *err, size_t errlen)
{
	struct val_coll *c = &v->colls[i];
	struct coll_bench_config cfg = { .op = SIM_COLL_ALLREDUCE,
					 .algo = coll_find(c->algo),
					 .fidelity = v->quick ? SIM_FIDELITY_ANALYTIC
							      : SIM_FIDELITY_FLOW };
	char e[512];
	if (scn_cluster_preset(&cfg.cluster, c->cluster, e, sizeof(e)) < 0)
		return fail(VAL_BADINPUT, err, errlen, "%s: column 'cluster': %s", c->id, e);
	cfg.cluster.nodes = c->nodes;
	cfg.nranks = c->ranks ? c->ranks : c->nodes * cfg.cluster.gpus_per_node;
	c->ranks = cfg.nranks;
	struct coll_bench *b = coll_bench_new(&cfg, e, sizeof(e));
	if (!b)
		return fail(VAL_BADINPUT, err, errlen, "%s: %s", c->id, e);
	int rc = VAL_OK;
	double per = c->per_nic ? cfg.cluster.nics_per_node : 1;
	for (size_t k = 0; k < c->npts && rc == VAL_OK; k++) {
		struct coll_bench_result res;
		if (coll_bench_check(b, c->pts[k].bytes, e, sizeof(e)) < 0)
			rc = fail(VAL_BADINPUT, err, errlen, "%s: %s", c->id, e);
		else if (coll_bench_run(b, c->pts[k].bytes, &res, e, sizeof(e)) < 0)
			rc = fail(VAL_FAIL, err, errlen, "%s: %s", c->id, e);
		else
			c->pts[k].predicted_Bps = res.busbw_Bps / per;
	}
	coll_bench_free(b);
	return rc;
}

/* ---- summaries --------------------------------------------------------------------- */

double val_case_err(const struct val_case *c)
{
	return c->predicted / c->measured - 1;
}

double val_throughput_err(const struct val_case *c)
{
	return c->metric == VAL_ITERATION ? c->measured / c->predicted - 1 : val_case_err(c);
}

static struct val_stats stats_of(double *e, size_t n, size_t missing)
{
	struct val_stats s = { .n = n, .missing = missing };
	if (n) {
		gsl_sort(e, 1, n);
		s.median = gsl_stats_median_from_sorted_data(e, 1, n);
		s.worst = e[n - 1];
	}
	return s;
}

/* Absolute errors of the cases of a group (NULL: every training case). */
struct val_stats val_case_stats(const struct validation *v, const char *group, int throughput)
{
	double *e = xmalloc((v->ncases + 1) * sizeof(double));
	size_t n = 0, missing = 0;
	for (size_t i = 0; i < v->ncases; i++) {
		const struct val_case *c = &v->cases[i];
		if (group ? strcmp(c->group, group) != 0 : c->metric == VAL_MODEL_STATES)
			continue;
		if (c->predicted < 0)
			missing++;
		else
			e[n++] = fabs(throughput ? val_throughput_err(c) : val_case_err(c));
	}
	struct val_stats s = stats_of(e, n, missing);
	free(e);
	return s;
}

struct val_stats val_coll_stats(const struct val_coll *c, double min_bytes)
{
	double *e = xmalloc((c->npts + 1) * sizeof(double));
	size_t n = 0;
	for (size_t i = 0; i < c->npts; i++)
		if (c->pts[i].bytes >= min_bytes)
			e[n++] = fabs(c->pts[i].predicted_Bps / c->pts[i].measured_Bps - 1);
	struct val_stats s = stats_of(e, n, 0);
	free(e);
	return s;
}

/* ---- the page ------------------------------------------------------------------------ */

static const char *metric_label(enum val_metric m)
{
	return (size_t)m < ARRAY_SIZE(metrics) ? metrics[m].label : "?";
}

static void print_calibration(FILE *f, const struct validation *v)
{
	fprintf(f, "## Calibration used\n\nOne cluster preset per GPU type and fabric and one "
		"compute model per GPU serve every case (scenarios/clusters/ and "
		"docs/calibration.md say where each figure comes from):\n\n");
	fprintf(f, "| cluster preset | GPU | NVLink per GPU | network per NIC | source |\n"
		"|---|---|---|---|---|\n");
	char seen[16][32];
	size_t nseen = 0;
	for (size_t i = 0; i < v->ncases + v->ncolls; i++) {
		const char *name = i < v->ncases ? v->cases[i].cluster : v->colls[i - v->ncases].cluster;
		size_t k;
		for (k = 0; k < nseen && strcmp(seen[k], name); k++)
			;
		if (k < nseen || nseen == ARRAY_SIZE(seen) || !*name)
			continue;
		snprintf(seen[nseen++], sizeof(seen[0]), "%s", name);
		struct topo_config t;
		char err[256], b1[32], b2[32], b3[32], b4[32];
		if (scn_cluster_preset(&t, name, err, sizeof(err)) < 0)
			continue;
		fprintf(f, "| %s | %s | %s, %s | %s, %s | %s |\n", name, t.gpu,
			sim_units_format(SIM_UNIT_RATE, t.nvlink_bw_Bps, b1, sizeof(b1)),
			sim_units_format(SIM_UNIT_TIME, t.nvlink_lat_s, b2, sizeof(b2)),
			sim_units_format(SIM_UNIT_RATE, t.net_bw_Bps, b3, sizeof(b3)),
			sim_units_format(SIM_UNIT_TIME, t.net_lat_s, b4, sizeof(b4)), t.source);
	}
	fprintf(f, "\n| GPU | compute model | cases |\n|---|---|---|\n");
	for (size_t i = 0; i < v->ncases; i++) {
		const struct val_case *c = &v->cases[i];
		size_t j, n = 0;
		for (j = 0; j < i; j++)
			if (!strcmp(v->cases[j].gpu, c->gpu) && !strcmp(v->cases[j].compute, c->compute))
				break;
		if (j < i || !*c->gpu)
			continue;
		for (j = i; j < v->ncases; j++)
			n += !strcmp(v->cases[j].gpu, c->gpu) && !strcmp(v->cases[j].compute, c->compute);
		fprintf(f, "| %s | %s (efficiencies scaled by the GPU's datasheet peaks) | %zu |\n",
			c->gpu, c->compute, n);
	}
	fprintf(f, "\n");
}

static void print_stats_row(FILE *f, const char *label, struct val_stats s)
{
	if (s.n)
		fprintf(f, "| %s | %zu | %.1f %% | %.1f %% |%s\n", label, s.n, s.median * 100,
			s.worst * 100, s.missing ? " some not predicted |" : "");
	else
		fprintf(f, "| %s | 0 | - | - |\n", label);
}

void val_write_page(FILE *f, const struct validation *v)
{
	fprintf(f, "# Validation\n\n<!-- Written by `clustersim validate%s -o "
		"docs/validation.md` (`make validate`). Do not edit: CI fails when this page "
		"differs from what the simulator writes. -->\n\n", v->quick ? " --quick" : "");
	fprintf(f, "How close clustersim's predictions come to published measurements, and "
		"to sweeps measured for clustersim. Every case is a scenario in "
		"scenarios/validation/, its source and assumptions in its header and in "
		"scenarios/validation/README.md; cases.csv and collectives.csv list the "
		"measured figures and their sources. Nothing is tuned per case. "
		"Fidelity: %s. What the differences come from: "
		"[docs/validation-notes.md](validation-notes.md).\n\n",
		v->quick ? "analytic (closed-form collectives)" : "flow (transfers on links)");
	print_calibration(f, v);

	struct val_stats tput = val_case_stats(v, NULL, 1);
	fprintf(f, "## Training runs\n\n**Training throughput: median absolute error %.1f %% "
		"over %zu cases (target: at most %.0f %%), worst %.1f %%.** Throughput is the "
		"published TFLOP/s or tokens/s per GPU, or 1 / iteration time.\n\n", tput.median * 100,
		tput.n, TARGET_ERR * 100, tput.worst * 100);
	fprintf(f, "| group | cases | median abs. error | worst |\n|---|---|---|---|\n");
	for (size_t i = 0; i < v->ncases; i++) {
		size_t j;
		for (j = 0; j < i && strcmp(v->cases[j].group, v->cases[i].group); j++)
			;
		if (j == i)
			print_stats_row(f, v->cases[i].group, val_case_stats(v, v->cases[i].group, 0));
	}
	fprintf(f, "\nErrors are predicted / measured - 1 of the metric as published.\n\n");
	fprintf(f, "| case | GPUs | TP | PP | DP | VPP | metric | measured | predicted | error |\n"
		"|---|---|---|---|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < v->ncases; i++) {
		const struct val_case *c = &v->cases[i];
		fprintf(f, "| %s | %u | %u | %u | %u | %u | %s | %g | ", c->id, c->gpus, c->tp,
			c->pp, c->dp, c->vpp, metric_label(c->metric), c->measured);
		int prec = c->metric == VAL_TFLOPS || c->metric == VAL_TOKENS ? 1 : 2;
		if (c->predicted < 0)
			fprintf(f, "- | %s |\n", c->why);
		else if (*c->why)
			fprintf(f, "%.*f | %+.1f %% (%s) |\n", prec, c->predicted, val_case_err(c) * 100,
				c->why);
		else
			fprintf(f, "%.*f | %+.1f %% |\n", prec, c->predicted, val_case_err(c) * 100);
	}

	fprintf(f, "\n## Collectives\n\nBus bandwidth of all-reduce, measured by nccl-tests "
		"(out-of-place times, or in-place where a log has only those) and simulated on "
		"the case's preset. Target: within %.0f %% at 64 MiB and above.\n",
		TARGET_ERR * 100);
	for (size_t i = 0; i < v->ncolls; i++) {
		const struct val_coll *c = &v->colls[i];
		if (!*c->log)
			continue;
		struct val_stats big = val_coll_stats(c, COLL_TARGET_BYTES), all = val_coll_stats(c, 0);
		fprintf(f, "\n### %s\n\n%s on %u GPUs of %s, algorithm %s%s. Source: %s.%s%s\n\n",
			c->id, nccl_op_test(c->op), c->ranks, c->cluster, c->algo,
			c->inplace ? ", in-place times" : "", c->source, *c->note ? " " : "",
			c->note);
		fprintf(f, "**From 64 MiB: worst absolute error %.1f %% over %zu sizes** (all "
			"%zu sizes: median %.1f %%, worst %.1f %%).\n\n", big.worst * 100, big.n,
			all.n, all.median * 100, all.worst * 100);
		fprintf(f, "| size (B) | measured GB/s | predicted GB/s | error |\n"
			"|---|---|---|---|\n");
		for (size_t k = 0; k < c->npts; k++)
			fprintf(f, "| %.0f | %.2f | %.2f | %+.1f %% |\n", c->pts[k].bytes,
				c->pts[k].measured_Bps / 1e9, c->pts[k].predicted_Bps / 1e9,
				(c->pts[k].predicted_Bps / c->pts[k].measured_Bps - 1) * 100);
	}
	fprintf(f, "\n### Single figures\n\n| id | all-reduce | measured GB/s | predicted GB/s "
		"| error | note |\n|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < v->ncolls; i++) {
		const struct val_coll *c = &v->colls[i];
		if (*c->log)
			continue;
		char sz[32];
		fprintf(f, "| %s | %s on %u GPUs of %s, %s%s | %.1f | %.1f | %+.1f %% | %s |\n",
			c->id, sim_units_format(SIM_UNIT_BYTES, c->pts[0].bytes, sz, sizeof(sz)),
			c->ranks, c->cluster, c->algo, c->per_nic ? ", per NIC" : "", c->pts[0].measured_Bps / 1e9,
			c->pts[0].predicted_Bps / 1e9,
			(c->pts[0].predicted_Bps / c->pts[0].measured_Bps - 1) * 100, c->note);
	}
}

void val_write_json(FILE *f, const struct validation *v)
{
	struct val_stats tput = val_case_stats(v, NULL, 1);
	fprintf(f, "{\"fidelity\": \"%s\", \"throughput_median_abs_error\": %.4f, "
	       "\"throughput_worst_abs_error\": %.4f, \"cases\": [",
	       v->quick ? "analytic" : "flow", tput.median, tput.worst);
	for (size_t i = 0; i < v->ncases; i++) {
		const struct val_case *c = &v->cases[i];
		fprintf(f, "%s{\"id\": \"%s\", \"group\": \"%s\", \"metric\": \"%s\", "
		       "\"measured\": %g, \"predicted\": ", i ? ", " : "", c->id, c->group,
		       metrics[c->metric].name,
		       c->measured);
		if (c->predicted < 0)
			fprintf(f, "null, \"error\": null}");
		else
			fprintf(f, "%.6g, \"error\": %.4f}", c->predicted, val_case_err(c));
	}
	fprintf(f, "], \"collectives\": [");
	for (size_t i = 0; i < v->ncolls; i++) {
		const struct val_coll *c = &v->colls[i];
		fprintf(f, "%s{\"id\": \"%s\", \"cluster\": \"%s\", \"ranks\": %u, \"times\": "
		       "%s, \"points\": [", i ? ", " : "", c->id, c->cluster, c->ranks,
		       !*c->log ? "null" : c->inplace ? "\"in-place\"" : "\"out-of-place\"");
		for (size_t k = 0; k < c->npts; k++)
			fprintf(f, "%s{\"bytes\": %.0f, \"measured_busbw_Bps\": %.6g, "
			       "\"predicted_busbw_Bps\": %.6g}", k ? ", " : "", c->pts[k].bytes,
			       c->pts[k].measured_Bps, c->pts[k].predicted_Bps);
		fprintf(f, "]}");
	}
	fprintf(f, "]}\n");
}

int val_read(struct validation *v, const char *dir, int quick, char *err, size_t errlen)
{
	*v = (struct validation){ .dir = dir, .quick = quick };
	int rc = read_cases(v, err, errlen);
	return rc == VAL_OK ? read_collectives(v, err, errlen) : rc;
}
