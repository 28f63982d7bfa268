/*
 * cmd_validate.c - `clustersim validate`: run every published case of
 * scenarios/validation/ (cases.csv: training runs and memory figures;
 * collectives.csv: nccl-tests sweeps and single figures), compare each
 * prediction with its measurement, and write the table docs/validation.md
 * holds, or check that file against it.
 *
 * The page is a function of the cases, the presets and the simulator only:
 * no wall times, no dates, numbers at fixed precision. So --check can fail
 * CI when the committed page is stale.
 */
#include "tools/cli.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/bench.h"
#include "collectives/coll.h"
#include "collectives/nccl.h"
#include "parallel/compute.h"
#include "parallel/model.h"
#include "parallel/train.h"
#include "scenarios/scenario.h"
#include "scenarios/train_of.h"
#include "sim/outfile.h"
#include "sim/sheet.h"
#include "sim/util.h"
#include "topology/topo.h"

static const struct cli_opt validate_opts[] = {
	{ "quick", 0, CLI_FLAG, NULL, NULL,
	  "analytic fidelity (closed-form collectives): the whole set in well under a minute; "
	  "without it every case runs in flow fidelity" },
	{ "dir", 0, CLI_STR, "DIR", "DATADIR/validation",
	  "the cases: DIR/cases.csv, DIR/collectives.csv and the files they name" },
	{ "output", 'o', CLI_FILE_OUT, "FILE", NULL, "write the Markdown page (docs/validation.md)" },
	{ "check", 0, CLI_FILE_IN, "FILE", NULL,
	  "compare the Markdown page with FILE; exit 1 if it would change" },
	{ "json", 0, CLI_FLAG, NULL, NULL, "print a JSON object instead of the page" },
	{ 0 },
};

/* Sizes from which the collective target applies (issue: "above 64 MB"). */
#define COLL_TARGET_BYTES 67108864.0
/* The target on training throughput and bus bandwidth: 10 %. */
#define TARGET_ERR 0.10

enum metric { M_TFLOPS, M_ITERATION, M_MODEL_STATES };

struct vcase {
	char *id, *file, *group, *unit, *formula, *source;
	enum metric metric;
	double measured, predicted;   /* predicted < 0: no prediction     */
	char why[160];                /* why not, or a remark              */
	uint32_t gpus, tp, pp, dp, vpp;
	char cluster[32], gpu[32];
	char compute[160];            /* "table h200, launch 1.1 us"      */
};

struct vpoint {
	double bytes, measured_Bps, predicted_Bps;
};

struct vcoll {
	char *id, *log, *cluster, *algo, *source, *note;
	uint32_t nodes, ranks;
	int per_nic;                  /* figures per NIC: bus bandwidth / NICs */
	int inplace;                  /* the log's in-place times: it has no others */
	enum nccl_op op;
	struct vpoint *pts;
	size_t npts;
};

struct validation {
	const char *dir;
	int quick;
	struct vcase *cases;
	size_t ncases;
	struct vcoll *colls;
	size_t ncolls;
};

static void validation_free(struct validation *v)
{
	for (size_t i = 0; i < v->ncases; i++) {
		struct vcase *c = &v->cases[i];
		free(c->id), free(c->file), free(c->group), free(c->unit), free(c->formula);
		free(c->source);
	}
	for (size_t i = 0; i < v->ncolls; i++) {
		struct vcoll *c = &v->colls[i];
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
static int formula_flops(const char *formula, const struct par_model *m,
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

/* Read DIR/name and find its columns: CLI_OK, or CLI_BADINPUT with a message. */
static int read_table(struct cli_args *a, const struct validation *v, const char *name,
		      const char *const *names, size_t n, int *col, struct sheet *sh)
{
	char err[512];
	if (sheet_read(sh, v->dir, name, err, sizeof(err)) == 0 &&
	    sheet_cols(sh, names, col, n, err, sizeof(err)) == 0)
		return CLI_OK;
	if (sh->path)
		sheet_free(sh);
	return cli_error(a, CLI_BADINPUT, "%s", err);
}

static int read_cases(struct cli_args *a, struct validation *v)
{
	static const char *const names[] = { "id", "file", "group", "metric", "value", "unit",
					     "formula", "source" };
	struct sheet sh;
	int col[ARRAY_SIZE(names)];
	char err[512];
	if (read_table(a, v, "cases.csv", names, ARRAY_SIZE(names), col, &sh) != CLI_OK)
		return CLI_BADINPUT;
	v->cases = xcalloc(sh.nrows, sizeof(*v->cases));
	int rc = CLI_OK;
	for (size_t r = 0; r < sh.nrows && rc == CLI_OK; r++) {
		struct vcase *c = &v->cases[v->ncases++];
		const char *metric = sheet_cell(&sh, r, col[3]);
		c->id = xstrdup(sheet_cell(&sh, r, col[0]));
		c->file = xstrdup(sheet_cell(&sh, r, col[1]));
		c->group = xstrdup(sheet_cell(&sh, r, col[2]));
		c->unit = xstrdup(sheet_cell(&sh, r, col[5]));
		c->formula = xstrdup(sheet_cell(&sh, r, col[6]));
		c->source = xstrdup(sheet_cell(&sh, r, col[7]));
		c->predicted = -1;
		if (!strcmp(metric, "achieved_tflops_per_gpu"))
			c->metric = M_TFLOPS;
		else if (!strcmp(metric, "iteration_time"))
			c->metric = M_ITERATION;
		else if (!strcmp(metric, "model_state_memory_per_gpu"))
			c->metric = M_MODEL_STATES;
		else
			rc = cli_error(a, CLI_BADINPUT, "%s:%zu: column 'metric': expected "
				       "achieved_tflops_per_gpu, iteration_time or "
				       "model_state_memory_per_gpu, got '%s'", sh.path, sh.line[r],
				       metric);
		if (rc == CLI_OK && sheet_pos(&sh, r, col[4], &c->measured, err, sizeof(err)) < 0)
			rc = cli_error(a, CLI_BADINPUT, "%s", err);
		if (rc == CLI_OK && c->metric == M_TFLOPS && strcmp(c->formula, "megatron_sc21") &&
		    strcmp(c->formula, "megatron_core"))
			rc = cli_error(a, CLI_BADINPUT, "%s:%zu: column 'formula': expected "
				       "megatron_sc21 or megatron_core for a TFLOP/s figure, got "
				       "'%s'", sh.path, sh.line[r], c->formula);
		if (rc == CLI_OK && (!*c->id || !*c->file || !*c->group))
			rc = cli_error(a, CLI_BADINPUT, "%s:%zu: id, file and group must not be "
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
static void sweep_points(struct vcoll *c, const struct nccl_log *log)
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
			c->pts[c->npts++] = (struct vpoint){
				S, S * nccl_busbw_factor(log->op, log->ranks) / t, -1 };
	}
}

static int read_collectives(struct cli_args *a, struct validation *v)
{
	static const char *const names[] = { "id", "log", "cluster", "nodes", "algo", "bytes",
					     "measured_GBps", "per", "source", "note" };
	struct sheet sh;
	int col[ARRAY_SIZE(names)];
	char err[512];
	if (read_table(a, v, "collectives.csv", names, ARRAY_SIZE(names), col, &sh) != CLI_OK)
		return CLI_BADINPUT;
	v->colls = xcalloc(sh.nrows, sizeof(*v->colls));
	int rc = CLI_OK;
	for (size_t r = 0; r < sh.nrows && rc == CLI_OK; r++) {
		struct vcoll *c = &v->colls[v->ncolls++];
		double nodes;
		c->id = xstrdup(sheet_cell(&sh, r, col[0]));
		c->log = xstrdup(sheet_cell(&sh, r, col[1]));
		c->cluster = xstrdup(sheet_cell(&sh, r, col[2]));
		c->algo = xstrdup(sheet_cell(&sh, r, col[4]));
		c->source = xstrdup(sheet_cell(&sh, r, col[8]));
		c->note = xstrdup(sheet_cell(&sh, r, col[9]));
		const char *per = sheet_cell(&sh, r, col[7]);
		if (strcmp(per, "gpu") && strcmp(per, "nic")) {
			rc = cli_error(a, CLI_BADINPUT, "%s:%zu: column 'per': expected gpu (bus "
				       "bandwidth) or nic (bus bandwidth per NIC of a node), got "
				       "'%s'", sh.path, sh.line[r], per);
			break;
		}
		c->per_nic = !strcmp(per, "nic");
		if (sheet_pos(&sh, r, col[3], &nodes, err, sizeof(err)) < 0 ||
		    nodes != floor(nodes) || nodes > 4096) {
			rc = cli_error(a, CLI_BADINPUT, "%s:%zu: column 'nodes': expected a whole "
				       "number of nodes, 1 to 4096", sh.path, sh.line[r]);
			break;
		}
		c->nodes = (uint32_t)nodes;
		if (!coll_find(c->algo)) {
			rc = cli_error(a, CLI_BADINPUT, "%s:%zu: column 'algo': expected one of %s, "
				       "got '%s'", sh.path, sh.line[r], coll_names(), c->algo);
			break;
		}
		if (*c->log) {  /* a sweep: every size of an nccl-tests log */
			struct nccl_log log;
			char *path = xasprintf("%s/%s", v->dir, c->log);
			int bad = nccl_log_read(&log, path, err, sizeof(err));
			free(path);
			if (bad)
				rc = cli_error(a, CLI_BADINPUT, "%s", err);
			else if (log.op != NCCL_OP_ALLREDUCE || log.ranks < 2)
				rc = cli_error(a, CLI_BADINPUT, "%s: expected an all_reduce_perf log "
					       "with its rank lines", log.name);
			if (rc == CLI_OK)
				sweep_points(c, &log);
			if (!bad)
				nccl_log_free(&log);
			continue;
		}
		/* One figure: an all-reduce of `bytes` over every GPU of the nodes. */
		double bytes, gbps;
		if (sheet_pos(&sh, r, col[5], &bytes, err, sizeof(err)) < 0 ||
		    sheet_pos(&sh, r, col[6], &gbps, err, sizeof(err)) < 0) {
			rc = cli_error(a, CLI_BADINPUT, "%s (a row without a log gives bytes and "
				       "measured_GBps)", err);
			break;
		}
		c->op = NCCL_OP_ALLREDUCE;
		c->pts = xcalloc(1, sizeof(*c->pts));
		c->pts[c->npts++] = (struct vpoint){ bytes, gbps * 1e9, -1 };
	}
	sheet_free(&sh);
	return rc;
}

/* ---- running ------------------------------------------------------------------------ */

static void describe_compute(struct vcase *c, const struct scn *s)
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

static int run_case(struct cli_args *a, struct validation *v, struct vcase *c)
{
	char *path = xasprintf("%s/%s", v->dir, c->file);
	const char *sets[] = { v->quick ? "sim.fidelity=analytic" : "sim.fidelity=flow" };
	struct scn s;
	char err[SCN_ERRLEN];
	int rc = CLI_OK;
	if (scn_load(&s, path, sets, 1, err, sizeof(err)) < 0) {
		rc = cli_error(a, CLI_BADINPUT, "case %s: %s", c->id, err);
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
		&s.compute, topo_gpu_find(s.cluster.gpu), s.training.precision, s.datadir, err,
		sizeof(err));
	if (!cm)
		return cli_error(a, CLI_BADINPUT, "case %s: %s: compute: %s", c->id, s.path, err);
	struct par_train t;
	struct par_report r;
	scn_train_of(&t, &s, cm);
	if (par_train_plan(&t, &r, err, sizeof(err)) < 0) {
		rc = cli_error(a, CLI_BADINPUT, "case %s: %s: %s", c->id, s.path, err);
	} else if (c->metric == M_MODEL_STATES) {
		c->predicted = r.memory.model_states / 1e9;
		if (!r.memory.fits)
			snprintf(c->why, sizeof(c->why), "needs %.1f GB of %.1f GB: not run",
				 r.memory.peak / 1e9, r.memory.capacity / 1e9);
	} else if (!r.memory.fits) {
		snprintf(c->why, sizeof(c->why), "does not fit: %.1f GB of %.1f GB",
			 r.memory.peak / 1e9, r.memory.capacity / 1e9);
	} else if (par_train_simulate(&t, &r, err, sizeof(err)) < 0) {
		rc = cli_error(a, CLI_FAIL, "case %s: %s: the step could not finish: %s", c->id,
			       s.path, err);
	} else if (c->metric == M_ITERATION) {
		c->predicted = r.step_time_s;
	} else {
		double F = 0;
		formula_flops(c->formula, &s.model, &s.training, &F);
		c->predicted = F / (r.step_time_s * r.gpus) / 1e12;
	}
	par_compute_model_free(cm);
	return rc;
}

static int run_collective(struct cli_args *a, struct validation *v, struct vcoll *c)
{
	struct coll_bench_config cfg = { .op = SIM_COLL_ALLREDUCE,
					 .algo = coll_find(c->algo),
					 .fidelity = v->quick ? SIM_FIDELITY_ANALYTIC
							      : SIM_FIDELITY_FLOW };
	char err[512];
	if (scn_cluster_preset(&cfg.cluster, c->cluster, err, sizeof(err)) < 0)
		return cli_error(a, CLI_BADINPUT, "%s: column 'cluster': %s", c->id, err);
	cfg.cluster.nodes = c->nodes;
	cfg.nranks = c->ranks ? c->ranks : c->nodes * cfg.cluster.gpus_per_node;
	c->ranks = cfg.nranks;
	struct coll_bench *b = coll_bench_new(&cfg, err, sizeof(err));
	if (!b)
		return cli_error(a, CLI_BADINPUT, "%s: %s", c->id, err);
	int rc = CLI_OK;
	double per = c->per_nic ? cfg.cluster.nics_per_node : 1;
	for (size_t i = 0; i < c->npts && rc == CLI_OK; i++) {
		struct coll_bench_result res;
		if (coll_bench_check(b, c->pts[i].bytes, err, sizeof(err)) < 0)
			rc = cli_error(a, CLI_BADINPUT, "%s: %s", c->id, err);
		else if (coll_bench_run(b, c->pts[i].bytes, &res, err, sizeof(err)) < 0)
			rc = cli_error(a, CLI_FAIL, "%s: %s", c->id, err);
		else
			c->pts[i].predicted_Bps = res.busbw_Bps / per;
	}
	coll_bench_free(b);
	return rc;
}

/* ---- summaries --------------------------------------------------------------------- */

/* The case's error as the metric is published: predicted / measured - 1. */
static double case_err(const struct vcase *c)
{
	return c->predicted / c->measured - 1;
}

/* The error in training throughput: time cases count as 1/time. */
static double throughput_err(const struct vcase *c)
{
	return c->metric == M_ITERATION ? c->measured / c->predicted - 1 : case_err(c);
}

struct stats {
	size_t n, missing;
	double median, worst;
};

static struct stats stats_of(double *e, size_t n, size_t missing)
{
	struct stats s = { .n = n, .missing = missing };
	if (n) {
		gsl_sort(e, 1, n);
		s.median = gsl_stats_median_from_sorted_data(e, 1, n);
		s.worst = e[n - 1];
	}
	return s;
}

/* Absolute errors of the cases of a group (NULL: every training case). */
static struct stats case_stats(const struct validation *v, const char *group, int throughput)
{
	double *e = xmalloc((v->ncases + 1) * sizeof(double));
	size_t n = 0, missing = 0;
	for (size_t i = 0; i < v->ncases; i++) {
		const struct vcase *c = &v->cases[i];
		if (group ? strcmp(c->group, group) != 0 : c->metric == M_MODEL_STATES)
			continue;
		if (c->predicted < 0)
			missing++;
		else
			e[n++] = fabs(throughput ? throughput_err(c) : case_err(c));
	}
	struct stats s = stats_of(e, n, missing);
	free(e);
	return s;
}

static struct stats coll_stats(const struct vcoll *c, double min_bytes)
{
	double *e = xmalloc((c->npts + 1) * sizeof(double));
	size_t n = 0;
	for (size_t i = 0; i < c->npts; i++)
		if (c->pts[i].bytes >= min_bytes)
			e[n++] = fabs(c->pts[i].predicted_Bps / c->pts[i].measured_Bps - 1);
	struct stats s = stats_of(e, n, 0);
	free(e);
	return s;
}

/* ---- the page ------------------------------------------------------------------------ */

static const char *metric_label(enum metric m)
{
	return m == M_TFLOPS ? "TFLOP/s per GPU" : m == M_ITERATION ? "iteration s"
								     : "model states GB";
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
		const struct vcase *c = &v->cases[i];
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

static void print_stats_row(FILE *f, const char *label, struct stats s)
{
	if (s.n)
		fprintf(f, "| %s | %zu | %.1f %% | %.1f %% |%s\n", label, s.n, s.median * 100,
			s.worst * 100, s.missing ? " some not predicted |" : "");
	else
		fprintf(f, "| %s | 0 | - | - |\n", label);
}

static void print_page(FILE *f, const struct validation *v)
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

	struct stats tput = case_stats(v, NULL, 1);
	fprintf(f, "## Training runs\n\n**Training throughput: median absolute error %.1f %% "
		"over %zu cases (target: at most %.0f %%), worst %.1f %%.** Throughput is the "
		"published TFLOP/s per GPU, or 1 / iteration time.\n\n", tput.median * 100,
		tput.n, TARGET_ERR * 100, tput.worst * 100);
	fprintf(f, "| group | cases | median abs. error | worst |\n|---|---|---|---|\n");
	for (size_t i = 0; i < v->ncases; i++) {
		size_t j;
		for (j = 0; j < i && strcmp(v->cases[j].group, v->cases[i].group); j++)
			;
		if (j == i)
			print_stats_row(f, v->cases[i].group, case_stats(v, v->cases[i].group, 0));
	}
	fprintf(f, "\nErrors are predicted / measured - 1 of the metric as published.\n\n");
	fprintf(f, "| case | GPUs | TP | PP | DP | VPP | metric | measured | predicted | error |\n"
		"|---|---|---|---|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < v->ncases; i++) {
		const struct vcase *c = &v->cases[i];
		fprintf(f, "| %s | %u | %u | %u | %u | %u | %s | %g | ", c->id, c->gpus, c->tp,
			c->pp, c->dp, c->vpp, metric_label(c->metric), c->measured);
		int prec = c->metric == M_TFLOPS ? 1 : 2;
		if (c->predicted < 0)
			fprintf(f, "- | %s |\n", c->why);
		else if (*c->why)
			fprintf(f, "%.*f | %+.1f %% (%s) |\n", prec, c->predicted, case_err(c) * 100,
				c->why);
		else
			fprintf(f, "%.*f | %+.1f %% |\n", prec, c->predicted, case_err(c) * 100);
	}

	fprintf(f, "\n## Collectives\n\nBus bandwidth of all-reduce, measured by nccl-tests "
		"(out-of-place times, or in-place where a log has only those) and simulated on "
		"the case's preset. Target: within %.0f %% at 64 MiB and above.\n",
		TARGET_ERR * 100);
	for (size_t i = 0; i < v->ncolls; i++) {
		const struct vcoll *c = &v->colls[i];
		if (!*c->log)
			continue;
		struct stats big = coll_stats(c, COLL_TARGET_BYTES), all = coll_stats(c, 0);
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
		const struct vcoll *c = &v->colls[i];
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

static void print_json(const struct validation *v)
{
	struct stats tput = case_stats(v, NULL, 1);
	printf("{\"fidelity\": \"%s\", \"throughput_median_abs_error\": %.4f, "
	       "\"throughput_worst_abs_error\": %.4f, \"cases\": [",
	       v->quick ? "analytic" : "flow", tput.median, tput.worst);
	for (size_t i = 0; i < v->ncases; i++) {
		const struct vcase *c = &v->cases[i];
		printf("%s{\"id\": \"%s\", \"group\": \"%s\", \"metric\": \"%s\", "
		       "\"measured\": %g, \"predicted\": ", i ? ", " : "", c->id, c->group,
		       c->metric == M_TFLOPS ? "achieved_tflops_per_gpu"
		       : c->metric == M_ITERATION ? "iteration_time" : "model_state_memory_per_gpu",
		       c->measured);
		if (c->predicted < 0)
			printf("null, \"error\": null}");
		else
			printf("%.6g, \"error\": %.4f}", c->predicted, case_err(c));
	}
	printf("], \"collectives\": [");
	for (size_t i = 0; i < v->ncolls; i++) {
		const struct vcoll *c = &v->colls[i];
		printf("%s{\"id\": \"%s\", \"cluster\": \"%s\", \"ranks\": %u, \"times\": "
		       "%s, \"points\": [", i ? ", " : "", c->id, c->cluster, c->ranks,
		       !*c->log ? "null" : c->inplace ? "\"in-place\"" : "\"out-of-place\"");
		for (size_t k = 0; k < c->npts; k++)
			printf("%s{\"bytes\": %.0f, \"measured_busbw_Bps\": %.6g, "
			       "\"predicted_busbw_Bps\": %.6g}", k ? ", " : "", c->pts[k].bytes,
			       c->pts[k].measured_Bps, c->pts[k].predicted_Bps);
		printf("]}");
	}
	printf("]}\n");
}

/* Compare the page with a file; report the first differing line. */
static int check_page(struct cli_args *a, const char *page, size_t len, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return cli_error(a, CLI_BADINPUT, "option --check: cannot read %s", path);
	size_t cap = len + 65536, n = 0;
	char *old = xmalloc(cap);
	for (size_t got; n < cap && (got = fread(old + n, 1, cap - n, f)) > 0;)
		n += got;
	fclose(f);
	int rc = CLI_OK;
	if (n != len || memcmp(old, page, len)) {
		size_t i = 0, line = 1;
		for (; i < n && i < len && old[i] == page[i]; i++)
			line += old[i] == '\n';
		rc = cli_error(a, CLI_FAIL, "%s is stale: line %zu differs from what the simulator "
			       "writes now; run `make validate` (clustersim validate%s -o %s) and "
			       "commit it", path, line, cli_has(a, "quick") ? " --quick" : "", path);
	}
	free(old);
	return rc;
}

static int validate_run(struct cli_args *a)
{
	if (a->npos)
		return cli_error(a, CLI_BADINPUT, "unexpected argument '%s' (the cases come from "
				 "--dir)", a->pos[0]);
	char *dir = cli_has(a, "dir") ? xstrdup(cli_str(a, "dir", ""))
				      : xasprintf("%s/validation", scn_datadir());
	struct validation v = { .dir = dir, .quick = cli_has(a, "quick") };
	int rc = CLI_OK;
	static const char *const tables[] = { "cases.csv", "collectives.csv" };
	for (size_t i = 0; rc == CLI_OK && cli_has(a, "output") && i < ARRAY_SIZE(tables); i++) {
		char *in = xasprintf("%s/%s", dir, tables[i]), *what = xasprintf("'%s'", in);
		rc = cli_check_same(a, "option -o", cli_str(a, "output", ""), what, in);
		free(in);
		free(what);
	}
	if (rc == CLI_OK)
		rc = read_cases(a, &v);
	if (rc == CLI_OK)
		rc = read_collectives(a, &v);
	for (size_t i = 0; rc == CLI_OK && i < v.ncases; i++) {
		fprintf(stderr, "validate: %s (%zu of %zu)\n", v.cases[i].id, i + 1, v.ncases);
		rc = run_case(a, &v, &v.cases[i]);
	}
	for (size_t i = 0; rc == CLI_OK && i < v.ncolls; i++)
		rc = run_collective(a, &v, &v.colls[i]);
	if (rc == CLI_OK) {
		char *page = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&page, &len);
		if (!mem)
			BUG("open_memstream failed");
		print_page(mem, &v);
		fclose(mem);
		if (cli_has(a, "json"))
			print_json(&v);
		else if (!cli_has(a, "output") && !cli_has(a, "check"))
			fwrite(page, 1, len, stdout);
		if (cli_has(a, "output")) {
			const char *out = cli_str(a, "output", "");
			struct sim_out o;
			if ((rc = cli_out_open(a, "option -o", out, &o)) == CLI_OK) {
				fwrite(page, 1, len, o.f);
				rc = cli_out_commit(a, "option -o", &o, CLI_OK);
			}
			if (rc == CLI_OK)
				fprintf(stderr, "validate: wrote %s\n", out);
		}
		if (rc == CLI_OK && cli_has(a, "check"))
			rc = check_page(a, page, len, cli_str(a, "check", ""));
		free(page);
	}
	validation_free(&v);
	free(dir);
	return rc;
}

const struct cli_cmd cli_cmd_validate = {
	.name = "validate",
	.usage = "[--quick] [-o FILE | --check FILE] [--json] [--dir DIR]",
	.summary = "Compare predictions with published training runs and nccl-tests sweeps.",
	.description =
		"Runs every case of scenarios/validation/ (cases.csv: Megatron-LM, Megatron-Core "
		"and ZeRO figures; collectives.csv: nccl-tests sweeps, published or measured "
		"for clustersim) and compares each prediction with the measurement: TFLOP/s per "
		"GPU counted with the "
		"paper's own FLOP formula, iteration time, model-state memory, bus bandwidth. "
		"Prints the Markdown page of docs/validation.md: the calibration used, each case "
		"with its error, the median and worst absolute error per group, and every "
		"size of the collective sweeps. --check FILE fails (exit 1) when FILE differs "
		"from that page, so a committed page is always the current one; `make "
		"validate` rewrites it. Progress goes to standard error. With --json the object "
		"has fidelity, throughput_median_abs_error and throughput_worst_abs_error "
		"(fractions), cases [{id, group, metric, measured, predicted, error}] "
		"(predicted and error null where the case does not run) and collectives [{id, "
		"cluster, ranks, times (\"out-of-place\" or \"in-place\": the log's column; "
		"null for a single figure), points [{bytes, measured_busbw_Bps, "
		"predicted_busbw_Bps}]}].",
	.opts = validate_opts,
	.run = validate_run,
};
