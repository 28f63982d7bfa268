/*
 * compute.c - the compute model of compute.h: roofline times whose
 * efficiencies come from measured calibration tables.
 *
 * Loading reads the four CSVs of datadir/calibration/TABLE/ (sim/sheet.h), by
 * column name, and turns every measurement into a dimensionless efficiency
 * against the datasheet figures of the GPU the table was measured on:
 *
 *   gemm.csv       GEMM efficiency against the dense bf16 peak: f(log10
 *                  FLOPs) x g(log10 min(m, n, k)), Steffen splines fitted by
 *                  backfitting (the default), and f alone over log10(FLOPs)
 *                  (PAR_GEMM_FIT_FLOPS), kept for comparison
 *   attention.csv  forward and backward efficiency of the default SDPA
 *                  backend over log10(FLOPs), causal and full attention
 *                  apart; an op gets the efficiency of a forward+backward pair
 *   membound.csv   achieved fraction of the datasheet HBM bandwidth per
 *                  measured op kind, found by the prefix of the op's name
 *   ceilings.csv   the fraction of HBM bandwidth a large copy reaches: the
 *                  memory efficiency of GEMMs and attention
 *
 * The target GPU's own datasheet peaks multiply these fractions, so a table
 * measured on one GPU serves any other, scaled by datasheet peaks (there are
 * no measurements of that GPU); likewise fp8 and fp32 ops use the bf16
 * curves against the fp8 or fp32 peak. Outside the measured range a spline
 * is clamped to its end value.
 *
 * The launch cost is the scenario's (compute.launch_overhead); the table's
 * own figures, about 10.6 us per eagerly launched kernel and 1.1 us per
 * kernel in a CUDA graph (ceilings.csv), are documented, not imposed here.
 *
 * A model is read-only after par_compute_model_new: evaluation passes no
 * gsl_interp_accel (GSL then bisects), so threads may share one. Nothing here
 * calls GSL in a way that can fail after loading, so GSL's error handler (a
 * process-wide setting) is left alone.
 */
#include "parallel/compute.h"

#include <gsl/gsl_interp.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/sheet.h"
#include "sim/util.h"

/* The calibration attention table counts backward as 2.5x forward FLOPs. */
#define ATTN_BWD_RATIO 2.5
/* Backfitting passes of the two-factor GEMM fit (1 to 10 passes move the
 * median residual of gemm.csv by less than 0.1 point: docs/calibration.md). */
#define GEMM_MINDIM_PASSES 3

/*
 * Which GPU each shipped table was measured on (its datasheet peaks turn the
 * measured rates into efficiencies). A table of your own is found here, or
 * its folder is named after a GPU preset ("A100-SXM-80GB"). Adding one: a
 * line here and the folder scenarios/calibration/NAME/ (docs/calibration.md).
 */
static const struct calib_gpu {
	const char *table;
	const char *gpu;
} calib_gpus[] = {
	{ .table = "h200", .gpu = "H200-SXM-141GB" },
};

/*
 * SDPA backends in order of preference. PyTorch 2.11 runs attention on
 * cuDNN by default on the measured H200 (env.json sdpa_default lists the
 * cudnn_generated_..._sdpa_sm90_flash_fprop/bprop kernels with every backend
 * enabled), so cuDNN rows are used; a table without them (a GPU older than
 * sm90, where PyTorch picks FlashAttention-2) falls back to flash rows.
 */
static const char *const attn_backends[] = { "cudnn", "flash" };

/*
 * Memory-bound ops: the prefix of a struct par_op name -> the op of
 * membound.csv whose measured bandwidth fraction it gets. The longest
 * matching prefix wins; an op of the table also matches its own name. Names
 * that match nothing (a bare "norm" could be either norm, "swiglu",
 * "dropout", "softmax", "embed", ...) get the median fraction of the
 * table's forward rows. The loss keeps fp32 logits (SPEC C14), so it maps to
 * the measured fp32-upcast cross-entropy, whose bytes count bf16 logits read
 * once forward, twice plus dlogits written once over forward+backward.
 */
static const struct membound_name {
	const char *prefix;       /* of par_op.name                           */
	const char *measured;     /* value of membound.csv's column 'op'      */
} membound_names[] = {
	{ .prefix = "layernorm",     .measured = "layernorm" },
	{ .prefix = "ln",            .measured = "layernorm" },
	{ .prefix = "rmsnorm",       .measured = "rmsnorm" },
	{ .prefix = "gelu",          .measured = "gelu_none" },   /* F.gelu's default */
	{ .prefix = "gelu_tanh",     .measured = "gelu_tanh" },
	{ .prefix = "residual",      .measured = "residual_add" },
	{ .prefix = "add",           .measured = "residual_add" },
	{ .prefix = "cross_entropy", .measured = "cross_entropy_fp32_upcast" },
	{ .prefix = "loss",          .measured = "cross_entropy_fp32_upcast" },
};

/* A measured memory-bound op kind: its name and bandwidth fraction. */
struct membound_kind {
	char *name;
	double frac;
};

/* y(x) through measured points; clamped to the end values outside them. */
struct curve {
	gsl_interp *interp;       /* NULL for a single point (a constant)     */
	double *x, *y;
	size_t n;
};

/* The compute kernels of interference.csv: GEMMs between the two matmuls
 * (by log FLOPs), attention, memory-bound ops. */
enum interf_kernel { IK_GEMM4K, IK_GEMM8K, IK_ATTN, IK_ADD, IK_N };
static const char *const interf_names[IK_N] = {
	[IK_GEMM4K] = "gemm4k", [IK_GEMM8K] = "gemm8k", [IK_ATTN] = "attn", [IK_ADD] = "add",
};
/* The FLOPs of the two measured matmuls (bf16 4096^3 and 8192^3). */
#define INTERF_GEMM4K_FLOPS (2.0 * 4096 * 4096 * 4096)
#define INTERF_GEMM8K_FLOPS (2.0 * 8192 * 8192 * 8192)
/* The most blocks a row may give (NCCL's channels are at most 64). */
#define INTERF_MAX_BLOCKS 1024.0

struct par_compute_model {
	const struct topo_gpu *gpu;
	double peak;              /* FLOP/s for the precision                 */
	double launch_s;
	double flat;              /* > 0: flat efficiency, no tables          */
	double copy_eff;          /* large copy / datasheet HBM bandwidth     */
	struct curve gemm;        /* PAR_GEMM_FIT_FLOPS                       */
	struct curve gemm_f, gemm_g; /* PAR_GEMM_FIT_FLOPS_MINDIM: f(F) x g(d) */
	struct curve attn_fwd[2], attn_bwd[2]; /* [causal]                  */
	struct membound_kind *kinds;
	size_t nkinds;
	double membound_default;  /* median fraction of the forward rows      */
	/* Per kernel and pass (model.h): its memory-bound fraction, from its
	 * name once when the tables load (membound_eff). */
	double kernel_eff[PAR_K_N][PAR_PART_N];
	/* interference.csv, when the table has one: the slowdown against the
	 * communication kernel's blocks k, per measured compute kernel, of
	 * that kernel and of the communication kernel beside it. */
	int has_interference;
	struct curve interf_compute[IK_N], interf_comm[IK_N];
	/* host.csv, when the table has one: the host's seconds per call. */
	int has_host;
	double host_s[PAR_HOST_N];
};

/*
 * A measured efficiency must be at most 1 (a rate above the datasheet
 * figure?) and at least PAR_MIN_EFFICIENCY: a time so long that the rate
 * rounds to nothing (a GEMM of 1e308 ms gave 0, whose ratios in the fits are
 * NaN) is not a measurement.
 */
#define PAR_MIN_EFFICIENCY 1e-9
static int check_eff(const struct sheet *sh, size_t row, double eff, const char *what,
		     const struct topo_gpu *gpu, char *err, size_t errlen)
{
	if (!(eff >= PAR_MIN_EFFICIENCY))
		return sim_errf(err, errlen, "%s:%zu: %.3g of the %s's datasheet %s: expected a "
			    "measured time that gives at least %g of it", sh->path, sh->line[row],
			    eff, gpu->name, what, PAR_MIN_EFFICIENCY);
	if (eff <= 1)
		return 0;
	return sim_errf(err, errlen, "%s:%zu: %.4g times the %s's datasheet %s: the table "
		    "does not belong to this GPU", sh->path, sh->line[row], eff, gpu->name, what);
}

/* ---- curves --------------------------------------------------------------- */

struct point {
	double x, y;
};

static int point_cmp(const void *a, const void *b)
{
	const struct point *p = a, *q = b;

	if (p->x != q->x)
		return p->x < q->x ? -1 : 1;
	return (p->y > q->y) - (p->y < q->y);
}

/*
 * Fit c through n >= 1 points: sort by x, average the y of equal x, and
 * interpolate with Steffen's method (monotone between points, no overshoot,
 * so no efficiency beyond the measured ones); two distinct x: linear; one:
 * a constant. The points are consumed (sorted in place).
 */
static void curve_fit(struct curve *c, struct point *p, size_t n)
{
	size_t m = 0;

	BUG_ON(n == 0);
	qsort(p, n, sizeof *p, point_cmp);
	c->x = xmalloc(n * sizeof *c->x);
	c->y = xmalloc(n * sizeof *c->y);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		double sum = 0;

		for (; j < n && p[j].x == p[i].x; j++)
			sum += p[j].y;
		c->x[m] = p[i].x;
		c->y[m++] = sum / (double)(j - i);
		i = j;
	}
	c->n = m;
	c->interp = NULL;
	if (m >= 2) {
		c->interp = gsl_interp_alloc(m == 2 ? gsl_interp_linear : gsl_interp_steffen, m);
		gsl_interp_init(c->interp, c->x, c->y, m);
	}
}

static double curve_eval(const struct curve *c, double x)
{
	BUG_ON(isnan(x));
	if (c->n == 1 || x <= c->x[0])
		return c->y[0];
	if (x >= c->x[c->n - 1])
		return c->y[c->n - 1];
	return gsl_interp_eval(c->interp, c->x, c->y, x, NULL);
}

static void curve_free(struct curve *c)
{
	if (c->interp)
		gsl_interp_free(c->interp);
	free(c->x);
	free(c->y);
	memset(c, 0, sizeof *c);
}

/* log10 of a size; the low clamp for sizes of 0. */
static double lg(double v)
{
	return v > 0 ? log10(v) : -HUGE_VAL;
}

/* ---- gemm.csv --------------------------------------------------------------- */

/* A measured GEMM: its two variables and its efficiency. */
struct gemm_row {
	double lf, ld, eff;       /* log10 FLOPs, log10 min(M, N, K)          */
};

/*
 * The two-factor fit eff = f(log10 F) * g(log10 d) by backfitting: start
 * from the one-factor f, fit g to eff / f, refit f to eff / g, a fixed
 * number of times. Both curves are Steffen splines like the rest.
 */
static void fit_gemm_mindim(struct par_compute_model *cm, const struct gemm_row *rows,
			    size_t n, struct point *p)
{
	struct curve f = { 0 };

	for (size_t i = 0; i < n; i++)
		p[i] = (struct point){ rows[i].lf, rows[i].eff };
	curve_fit(&f, p, n);
	for (int pass = 0; pass < GEMM_MINDIM_PASSES; pass++) {
		curve_free(&cm->gemm_g);
		for (size_t i = 0; i < n; i++)
			p[i] = (struct point){ rows[i].ld,
					       rows[i].eff / curve_eval(&f, rows[i].lf) };
		curve_fit(&cm->gemm_g, p, n);
		curve_free(&f);
		for (size_t i = 0; i < n; i++)
			p[i] = (struct point){ rows[i].lf,
					       rows[i].eff / curve_eval(&cm->gemm_g, rows[i].ld) };
		curve_fit(&f, p, n);
	}
	cm->gemm_f = f;
}

enum { GE_M, GE_N, GE_K, GE_FLOPS, GE_MS, GE_NCOLS };

/* Efficiency of each row = FLOPs / (ms * table GPU's bf16 peak); fit both. */
static int load_gemm(struct par_compute_model *cm, const struct sheet *sh,
		     const struct topo_gpu *tgpu, char *err, size_t errlen)
{
	static const char *const names[GE_NCOLS] = {
		[GE_M] = "M", [GE_N] = "N", [GE_K] = "K", [GE_FLOPS] = "flops", [GE_MS] = "ms",
	};
	int col[GE_NCOLS];
	struct gemm_row *rows;
	struct point *p;
	int rc = -1;

	if (sheet_cols(sh, names, col, GE_NCOLS, err, errlen))
		return -1;
	rows = xcalloc(sh->nrows, sizeof *rows);
	p = xcalloc(sh->nrows, sizeof *p);
	for (size_t i = 0; i < sh->nrows; i++) {
		double v[GE_NCOLS];

		for (size_t j = 0; j < GE_NCOLS; j++)
			if (sheet_pos(sh, i, col[j], &v[j], err, errlen))
				goto out;
		rows[i].lf = log10(v[GE_FLOPS]);
		rows[i].ld = log10(fmin(v[GE_M], fmin(v[GE_N], v[GE_K])));
		rows[i].eff = v[GE_FLOPS] / (v[GE_MS] * 1e-3 * tgpu->bf16);
		if (check_eff(sh, i, rows[i].eff, "bf16 peak", tgpu, err, errlen))
			goto out;
		p[i] = (struct point){ rows[i].lf, rows[i].eff };
	}
	curve_fit(&cm->gemm, p, sh->nrows);
	fit_gemm_mindim(cm, rows, sh->nrows, p);
	rc = 0;
out:
	free(rows);
	free(p);
	return rc;
}

/* The points a curve passes through, x back from log10. */
static struct par_gemm_knot *curve_knots(const struct curve *c, size_t *n)
{
	struct par_gemm_knot *k = xcalloc(c->n ? c->n : 1, sizeof(*k));
	for (size_t i = 0; i < c->n; i++)
		k[i] = (struct par_gemm_knot){ pow(10, c->x[i]), c->y[i] };
	*n = c->n;
	return k;
}

int par_gemm_table_fit(const char *path, const struct topo_gpu *gpu, struct par_gemm_table *out,
		       char *err, size_t errlen)
{
	static const char *const names[GE_NCOLS] = {
		[GE_M] = "M", [GE_N] = "N", [GE_K] = "K", [GE_FLOPS] = "flops", [GE_MS] = "ms",
	};
	struct par_compute_model cm = { .gpu = gpu };
	struct sheet sh;
	int col[GE_NCOLS];

	memset(out, 0, sizeof(*out));
	if (!(gpu->bf16 > 0))
		return sim_errf(err, errlen, "GPU %s has no bf16 peak to measure against", gpu->name);
	if (sheet_read(&sh, NULL, path, err, errlen))
		return -1;
	if (sheet_cols(&sh, names, col, GE_NCOLS, err, errlen) ||
	    load_gemm(&cm, &sh, gpu, err, errlen)) {
		sheet_free(&sh);
		return -1;
	}
	out->rows = xcalloc(sh.nrows, sizeof(*out->rows));
	out->nrows = sh.nrows;
	for (size_t i = 0; i < sh.nrows; i++) {
		struct par_gemm_row *r = &out->rows[i];
		/* load_gemm has checked every cell. */
		sheet_pos(&sh, i, col[GE_M], &r->m, err, errlen);
		sheet_pos(&sh, i, col[GE_N], &r->n, err, errlen);
		sheet_pos(&sh, i, col[GE_K], &r->k, err, errlen);
		sheet_pos(&sh, i, col[GE_FLOPS], &r->flops, err, errlen);
		sheet_pos(&sh, i, col[GE_MS], &r->ms, err, errlen);
		r->line = sh.line[i];
		r->eff = r->flops / (r->ms * 1e-3 * gpu->bf16);
		double lf = log10(r->flops), ld = log10(fmin(r->m, fmin(r->n, r->k)));
		r->fit[PAR_GEMM_FIT_FLOPS] = curve_eval(&cm.gemm, lf);
		r->fit[PAR_GEMM_FIT_FLOPS_MINDIM] = curve_eval(&cm.gemm_f, lf) *
						    curve_eval(&cm.gemm_g, ld);
	}
	out->flops = curve_knots(&cm.gemm, &out->nflops);
	out->f = curve_knots(&cm.gemm_f, &out->nf);
	out->g = curve_knots(&cm.gemm_g, &out->ng);
	curve_free(&cm.gemm);
	curve_free(&cm.gemm_f);
	curve_free(&cm.gemm_g);
	sheet_free(&sh);
	return 0;
}

void par_gemm_table_free(struct par_gemm_table *t)
{
	free(t->rows);
	free(t->flops);
	free(t->f);
	free(t->g);
	memset(t, 0, sizeof(*t));
}

/* ---- attention.csv ------------------------------------------------------------ */

enum { AT_BACKEND, AT_CAUSAL, AT_FLOPS, AT_FWD_MS, AT_BWD_MS, AT_NCOLS };

/*
 * Forward and backward points of the backend's rows with the given causal
 * flag (-1: all of them) into pf[] and pb[]; their count in *n.
 */
static int attention_points(const struct sheet *sh, const int *col, const char *backend,
			    int causal, const struct topo_gpu *tgpu, struct point *pf,
			    struct point *pb, size_t *n, char *err, size_t errlen)
{
	*n = 0;
	for (size_t i = 0; i < sh->nrows; i++) {
		double f, tf, tb;

		if (strcmp(sheet_cell(sh, i, col[AT_BACKEND]), backend) != 0 ||
		    (causal >= 0 && (sheet_cell(sh, i, col[AT_CAUSAL])[0] == '1') != causal))
			continue;
		if (sheet_pos(sh, i, col[AT_FLOPS], &f, err, errlen) ||
		    sheet_pos(sh, i, col[AT_FWD_MS], &tf, err, errlen) ||
		    sheet_pos(sh, i, col[AT_BWD_MS], &tb, err, errlen))
			return -1;
		pf[*n] = (struct point){ log10(f), f / (tf * 1e-3 * tgpu->bf16) };
		pb[*n] = (struct point){ log10(ATTN_BWD_RATIO * f),
					 ATTN_BWD_RATIO * f / (tb * 1e-3 * tgpu->bf16) };
		if (check_eff(sh, i, pf[*n].y, "bf16 peak", tgpu, err, errlen) ||
		    check_eff(sh, i, pb[*n].y, "bf16 peak", tgpu, err, errlen))
			return -1;
		++*n;
	}
	return 0;
}

/*
 * Forward and backward curves of the preferred backend's rows, one pair for
 * causal and one for full attention (causal kernels reach 10-20 % less at
 * equal FLOPs). A table without rows of one kind uses all rows for it.
 */
static int load_attention(struct par_compute_model *cm, const struct sheet *sh,
			  const struct topo_gpu *tgpu, char *err, size_t errlen)
{
	static const char *const names[AT_NCOLS] = {
		[AT_BACKEND] = "backend", [AT_CAUSAL] = "causal", [AT_FLOPS] = "flops_fwd",
		[AT_FWD_MS] = "fwd_ms", [AT_BWD_MS] = "bwd_ms",
	};
	int col[AT_NCOLS];
	const char *backend = NULL;
	struct point *pf, *pb;
	int rc = -1;

	if (sheet_cols(sh, names, col, AT_NCOLS, err, errlen))
		return -1;
	for (size_t i = 0; i < sh->nrows; i++) {
		const char *c = sheet_cell(sh, i, col[AT_CAUSAL]);

		if (strcmp(c, "0") != 0 && strcmp(c, "1") != 0)
			return sim_errf(err, errlen, "%s:%zu: column 'causal': expected 0 or 1, got "
				    "'%s'", sh->path, sh->line[i], c);
	}
	for (size_t b = 0; b < ARRAY_SIZE(attn_backends) && !backend; b++)
		for (size_t i = 0; i < sh->nrows && !backend; i++)
			if (strcmp(sheet_cell(sh, i, col[AT_BACKEND]), attn_backends[b]) == 0)
				backend = attn_backends[b];
	if (!backend)
		return sim_errf(err, errlen, "%s: no rows of backend cudnn or flash", sh->path);
	pf = xcalloc(sh->nrows, sizeof *pf);
	pb = xcalloc(sh->nrows, sizeof *pb);
	for (int causal = 0; causal < 2; causal++) {
		size_t n;

		if (attention_points(sh, col, backend, causal, tgpu, pf, pb, &n, err, errlen) ||
		    (n == 0 && attention_points(sh, col, backend, -1, tgpu, pf, pb, &n, err,
						errlen)))
			goto out;
		curve_fit(&cm->attn_fwd[causal], pf, n);
		curve_fit(&cm->attn_bwd[causal], pb, n);
	}
	rc = 0;
out:
	free(pf);
	free(pb);
	return rc;
}

/*
 * Efficiency of an attention op of F FLOPs. struct par_op does not say
 * whether it is a forward or a backward kernel, so every attention op gets
 * the efficiency of a measured forward+backward pair whose forward has F
 * FLOPs: 3.5 / (1/e_fwd(F) + 2.5/e_bwd(2.5 F)), from the curves of its kind
 * (causal or not). A forward op then runs a little slow and a backward op a
 * little fast, but a pair takes about what the measured pair took
 * (docs/calibration.md).
 */
static double attention_eff(const struct par_compute_model *cm, const struct par_op *op)
{
	int c = op->causal != 0;
	double ef = curve_eval(&cm->attn_fwd[c], lg(op->flops));
	double eb = curve_eval(&cm->attn_bwd[c], lg(ATTN_BWD_RATIO * op->flops));

	return (1 + ATTN_BWD_RATIO) / (1 / ef + ATTN_BWD_RATIO / eb);
}

/* ---- membound.csv -------------------------------------------------------------- */

/* Sums of one op kind's bytes and seconds, by pass. */
struct membound_sum {
	double bytes[3], s[3];    /* fwd, bwd, fwd+bwd                        */
};

static int pass_index(const char *pass)
{
	static const char *const passes[] = { "fwd", "bwd", "fwd+bwd" };

	for (int i = 0; i < 3; i++)
		if (strcmp(pass, passes[i]) == 0)
			return i;
	return -1;
}

/* Kind of the given name, added if new. O(kinds) per row: tables are small. */
static size_t membound_kind_of(struct par_compute_model *cm, struct membound_sum **sums,
			       const char *name)
{
	for (size_t k = 0; k < cm->nkinds; k++)
		if (strcmp(cm->kinds[k].name, name) == 0)
			return k;
	cm->kinds = xreallocarray(cm->kinds, cm->nkinds + 1, sizeof *cm->kinds);
	*sums = xreallocarray(*sums, cm->nkinds + 1, sizeof **sums);
	cm->kinds[cm->nkinds] = (struct membound_kind){ .name = xstrdup(name) };
	memset(&(*sums)[cm->nkinds], 0, sizeof **sums);
	return cm->nkinds++;
}

/*
 * A kind's fraction is its bytes over its time against the datasheet HBM
 * bandwidth, summed over its sizes: from the fwd+bwd rows where there are
 * any (ops carry no phase, so a forward op and its backward together take
 * what the measured pair took), else from its fwd and bwd rows. Unknown
 * names get the median of the fractions of all fwd rows.
 */
static int load_membound(struct par_compute_model *cm, const struct sheet *sh,
			 const struct topo_gpu *tgpu, char *err, size_t errlen)
{
	static const char *const names[] = { "op", "pass", "bytes_model", "ms" };
	int col[ARRAY_SIZE(names)];
	struct membound_sum *sums = NULL;
	double *fwd = xcalloc(sh->nrows, sizeof *fwd);
	size_t nfwd = 0;
	int rc = -1;

	if (sheet_cols(sh, names, col, ARRAY_SIZE(names), err, errlen))
		goto out;
	for (size_t i = 0; i < sh->nrows; i++) {
		int pass = pass_index(sheet_cell(sh, i, col[1]));
		double bytes, ms;
		size_t k;

		if (pass < 0) {
			sim_errf(err, errlen, "%s:%zu: column 'pass': expected fwd, bwd or fwd+bwd, "
			     "got '%s'", sh->path, sh->line[i], sheet_cell(sh, i, col[1]));
			goto out;
		}
		if (sheet_pos(sh, i, col[2], &bytes, err, errlen) ||
		    sheet_pos(sh, i, col[3], &ms, err, errlen))
			goto out;
		if (check_eff(sh, i, bytes / (ms * 1e-3 * tgpu->hbm_Bps), "HBM bandwidth",
			      tgpu, err, errlen))
			goto out;
		k = membound_kind_of(cm, &sums, sheet_cell(sh, i, col[0]));
		sums[k].bytes[pass] += bytes;
		sums[k].s[pass] += ms * 1e-3;
		if (pass == 0)
			fwd[nfwd++] = bytes / (ms * 1e-3 * tgpu->hbm_Bps);
	}
	if (nfwd == 0) {
		sim_errf(err, errlen, "%s: no fwd rows (the default for unlisted ops is their "
		     "median)", sh->path);
		goto out;
	}
	for (size_t k = 0; k < cm->nkinds; k++) {
		const struct membound_sum *s = &sums[k];

		cm->kinds[k].frac = s->s[2] > 0 ? s->bytes[2] / s->s[2]
						: (s->bytes[0] + s->bytes[1]) / (s->s[0] + s->s[1]);
		cm->kinds[k].frac /= tgpu->hbm_Bps;
	}
	gsl_sort(fwd, 1, nfwd);
	cm->membound_default = gsl_stats_median_from_sorted_data(fwd, 1, nfwd);
	rc = 0;
out:
	free(sums);
	free(fwd);
	return rc;
}

static const struct membound_kind *membound_find(const struct par_compute_model *cm,
						 const char *name)
{
	for (size_t k = 0; k < cm->nkinds; k++)
		if (strcmp(cm->kinds[k].name, name) == 0)
			return &cm->kinds[k];
	return NULL;
}

/*
 * Fraction for an op name: the longest prefix among the measured kinds' own
 * names and membound_names[] that leads to a measured kind; else the
 * default. O(kinds + aliases) string compares per call: the model's kernels
 * are looked up once each, when the tables load (kernel_eff).
 */
static double membound_eff(const struct par_compute_model *cm, const char *name)
{
	const struct membound_kind *best = NULL;
	size_t best_len = 0;

	if (!name)
		return cm->membound_default;
	for (size_t k = 0; k < cm->nkinds; k++) {
		size_t len = strlen(cm->kinds[k].name);

		if (len > best_len && strncmp(name, cm->kinds[k].name, len) == 0) {
			best = &cm->kinds[k];
			best_len = len;
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(membound_names); i++) {
		size_t len = strlen(membound_names[i].prefix);
		const struct membound_kind *k;

		if (len > best_len && strncmp(name, membound_names[i].prefix, len) == 0 &&
		    (k = membound_find(cm, membound_names[i].measured))) {
			best = k;
			best_len = len;
		}
	}
	return best ? best->frac : cm->membound_default;
}

/* ---- ceilings.csv ------------------------------------------------------------- */

/* copy_eff: bytes / time of the largest bandwidth,d2d_copy row over HBM. */
static int load_ceilings(struct par_compute_model *cm, const struct sheet *sh,
			 const struct topo_gpu *tgpu, char *err, size_t errlen)
{
	static const char *const names[] = { "section", "name", "bytes", "ms" };
	int col[ARRAY_SIZE(names)];
	double best_bytes = 0;

	if (sheet_cols(sh, names, col, ARRAY_SIZE(names), err, errlen))
		return -1;
	for (size_t i = 0; i < sh->nrows; i++) {
		double bytes, ms;

		if (strcmp(sheet_cell(sh, i, col[0]), "bandwidth") != 0 ||
		    strcmp(sheet_cell(sh, i, col[1]), "d2d_copy") != 0)
			continue;
		if (sheet_pos(sh, i, col[2], &bytes, err, errlen) ||
		    sheet_pos(sh, i, col[3], &ms, err, errlen))
			return -1;
		if (bytes <= best_bytes)
			continue;
		best_bytes = bytes;
		cm->copy_eff = bytes / (ms * 1e-3 * tgpu->hbm_Bps);
		if (check_eff(sh, i, cm->copy_eff, "HBM bandwidth", tgpu, err, errlen))
			return -1;
	}
	if (best_bytes == 0)
		return sim_errf(err, errlen, "%s: no row with section 'bandwidth' and name "
			    "'d2d_copy' (the copy bandwidth)", sh->path);
	return 0;
}

/* ---- the model ------------------------------------------------------------------- */

/*
 * The GPU a table was measured on: the preset named in the folder's
 * gpu.txt (written by `clustersim calibrate gemm`), else calib_gpus[], else
 * a preset of the folder's name.
 */
static const struct topo_gpu *table_gpu(const char *table, const char *dir,
					char *err, size_t errlen)
{
	const struct topo_gpu *g = NULL;
	char *path = xasprintf("%s/gpu.txt", dir), name[64] = "";
	FILE *f = fopen(path, "r");
	if (f) {
		if (fgets(name, sizeof(name), f))
			name[strcspn(name, "\r\n")] = 0;
		fclose(f);
		if (!(g = topo_gpu_find(name))) {
			sim_errf(err, errlen, "%s: unknown GPU preset '%s' (see clustersim presets)",
				 path, name);
			free(path);
			return NULL;
		}
	}
	free(path);
	if (!g)
		g = topo_gpu_find(table);
	for (size_t i = 0; i < ARRAY_SIZE(calib_gpus) && !g; i++)
		if (strcmp(calib_gpus[i].table, table) == 0)
			g = topo_gpu_find(calib_gpus[i].gpu);
	if (!g) {
		sim_errf(err, errlen, "calibration table '%s' (%s): unknown measured GPU: write its "
		     "preset name in gpu.txt there, name the folder after a GPU preset, or list it "
		     "in parallel/compute.c", table, dir);
		return NULL;
	}
	if (g->bf16 <= 0 || g->hbm_Bps <= 0) {
		sim_errf(err, errlen, "calibration table '%s': GPU %s has no bf16 peak or HBM "
		     "bandwidth to measure against", table, g->name);
		return NULL;
	}
	return g;
}

/* ---- interference.csv ------------------------------------------------------- */

/*
 * The slowdowns of compute and communication kernels running together
 * (tools/measure_interference.py): per compute kernel, a curve of each
 * against the communication kernel's blocks, through (0, 1) (no
 * communication, no slowdown) and every measured k. A measured factor
 * below 1 is noise of the alone/together pair (0.989 at worst on the H200)
 * and counts as 1. Rows of other kernels are ignored.
 */
static int load_interference(struct par_compute_model *cm, const struct sheet *sh, char *err,
			     size_t errlen)
{
	static const char *const names[] = { "kernel", "blocks", "compute_slowdown",
					     "comm_slowdown" };
	int col[ARRAY_SIZE(names)];
	struct point *pc = NULL, *pm = NULL;
	int rc = -1;

	if (sheet_cols(sh, names, col, ARRAY_SIZE(names), err, errlen))
		return -1;
	for (size_t i = 0; i < sh->nrows; i++) {  /* every row, in order */
		double blocks, c, m;

		if (sheet_pos(sh, i, col[1], &blocks, err, errlen) ||
		    sheet_pos(sh, i, col[2], &c, err, errlen) ||
		    sheet_pos(sh, i, col[3], &m, err, errlen))
			return -1;
		if (blocks != floor(blocks) || blocks > INTERF_MAX_BLOCKS)
			return sim_errf(err, errlen, "%s:%zu: column 'blocks': expected a whole number "
					"from 1 to %.0f, got '%s'", sh->path, sh->line[i],
					INTERF_MAX_BLOCKS, sheet_cell(sh, i, col[1]));
		if (c > 100 || m > 100)
			return sim_errf(err, errlen, "%s:%zu: a slowdown of %.3g: expected at most 100 "
					"(a factor of time, not a percentage)", sh->path,
					sh->line[i], c > 100 ? c : m);
	}
	pc = xcalloc(sh->nrows + 1, sizeof *pc);
	pm = xcalloc(sh->nrows + 1, sizeof *pm);
	for (int k = 0; k < IK_N; k++) {
		size_t n = 0;

		pc[n] = pm[n] = (struct point){ 0, 1 };
		n++;
		for (size_t i = 0; i < sh->nrows; i++) {
			double blocks, c, m;

			if (strcmp(sheet_cell(sh, i, col[0]), interf_names[k]) != 0)
				continue;
			sheet_pos(sh, i, col[1], &blocks, err, errlen);  /* checked above */
			sheet_pos(sh, i, col[2], &c, err, errlen);
			sheet_pos(sh, i, col[3], &m, err, errlen);
			pc[n] = (struct point){ blocks, fmax(1, c) };
			pm[n++] = (struct point){ blocks, fmax(1, m) };
		}
		if (n == 1) {
			sim_errf(err, errlen, "%s: no rows of kernel %s (expected gemm4k, gemm8k, "
				 "attn and add)", sh->path, interf_names[k]);
			goto out;
		}
		curve_fit(&cm->interf_compute[k], pc, n);
		curve_fit(&cm->interf_comm[k], pm, n);
	}
	cm->has_interference = 1;
	rc = 0;
out:
	free(pc);
	free(pm);
	return rc;
}

/*
 * A factor of curves c (one per measured kernel) for op beside `blocks`: a
 * GEMM between the 4096^3 and 8192^3 matmuls by log FLOPs (clamped to
 * them), attention, anything else (memory-bound).
 */
static double interf_eval(const struct curve *c, const struct par_op *op, double blocks)
{
	double k = blocks > 0 ? blocks : 0;

	if (op->cls == PAR_OP_ATTENTION)
		return curve_eval(&c[IK_ATTN], k);
	if (op->cls != PAR_OP_GEMM)
		return curve_eval(&c[IK_ADD], k);
	double t = (lg(op->flops) - log10(INTERF_GEMM4K_FLOPS)) /
		   (log10(INTERF_GEMM8K_FLOPS) - log10(INTERF_GEMM4K_FLOPS));
	t = !(t > 0) ? 0 : t > 1 ? 1 : t;
	return (1 - t) * curve_eval(&c[IK_GEMM4K], k) + t * curve_eval(&c[IK_GEMM8K], k);
}

/* ---- host.csv ----------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/*
 * The host's cost of a call (tools/measure_host.py): per call, the median
 * of its rows' host_us_per_call over the sizes measured. A kernel is a
 * PyTorch op through the dispatcher (torch_matmul_64); each collective its
 * torch.distributed call on a one-rank NCCL communicator. An all-to-all
 * without a row costs an all-gather's, a broadcast without one an
 * all-reduce's. Rows of other calls are ignored.
 */
static int load_host(struct par_compute_model *cm, const struct sheet *sh, char *err,
		     size_t errlen)
{
	static const char *const names[] = { "op", "host_us_per_call" };
	static const char *const calls[PAR_HOST_N] = {
		[PAR_HOST_KERNEL] = "torch_matmul_64",
		[PAR_HOST_ALLREDUCE] = "nccl_all_reduce",
		[PAR_HOST_ALLGATHER] = "nccl_all_gather_into_tensor",
		[PAR_HOST_REDUCESCATTER] = "nccl_reduce_scatter_tensor",
		[PAR_HOST_ALLTOALL] = "nccl_all_to_all_single",
		[PAR_HOST_BROADCAST] = "nccl_broadcast",
	};
	int col[ARRAY_SIZE(names)];
	if (sheet_cols(sh, names, col, ARRAY_SIZE(names), err, errlen))
		return -1;
	double *v = xcalloc(sh->nrows + 1, sizeof(double));
	int rc = 0;
	for (int k = 0; k < PAR_HOST_N && rc == 0; k++) {
		size_t n = 0;
		for (size_t i = 0; i < sh->nrows; i++) {
			if (strcmp(sheet_cell(sh, i, col[0]), calls[k]) != 0)
				continue;
			if (sheet_pos(sh, i, col[1], &v[n], err, errlen)) {
				rc = -1;
				break;
			}
			if (v[n] > 1e6) {
				rc = sim_errf(err, errlen, "%s:%zu: column 'host_us_per_call': %g us "
					      "a call: expected at most 1e6 (microseconds)", sh->path,
					      sh->line[i], v[n]);
				break;
			}
			n++;
		}
		if (rc)
			break;
		if (!n && (k == PAR_HOST_ALLTOALL || k == PAR_HOST_BROADCAST)) {
			cm->host_s[k] = -1;  /* a stand-in, below */
			continue;
		}
		if (!n) {
			rc = sim_errf(err, errlen, "%s: no rows of op %s (expected torch_matmul_64, "
				      "nccl_all_reduce, nccl_all_gather_into_tensor and "
				      "nccl_reduce_scatter_tensor)", sh->path, calls[k]);
			break;
		}
		qsort(v, n, sizeof(double), cmp_double);
		double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
		cm->host_s[k] = med * 1e-6;
	}
	free(v);
	if (rc)
		return -1;
	if (cm->host_s[PAR_HOST_ALLTOALL] < 0)
		cm->host_s[PAR_HOST_ALLTOALL] = cm->host_s[PAR_HOST_ALLGATHER];
	if (cm->host_s[PAR_HOST_BROADCAST] < 0)
		cm->host_s[PAR_HOST_BROADCAST] = cm->host_s[PAR_HOST_ALLREDUCE];
	cm->has_host = 1;
	return 0;
}

int par_compute_has_host(const struct par_compute_model *cm)
{
	return cm->has_host;
}

double par_compute_host_s(const struct par_compute_model *cm, enum par_host_call call)
{
	return cm->has_host && call >= 0 && call < PAR_HOST_N ? cm->host_s[call] : 0;
}

int par_compute_has_interference(const struct par_compute_model *cm)
{
	return cm->has_interference;
}

double par_compute_interference(const struct par_compute_model *cm, const struct par_op *op,
				double blocks)
{
	return cm->has_interference && blocks > 0
		       ? interf_eval(cm->interf_compute, op, blocks) : 1;
}

double par_comm_interference(const struct par_compute_model *cm, const struct par_op *beside,
			     double blocks)
{
	return cm->has_interference && blocks > 0
		       ? interf_eval(cm->interf_comm, beside, blocks) : 1;
}

/* Read the four tables, then fit them against the measured GPU. */
static int load_tables(struct par_compute_model *cm, const char *table, const char *datadir,
		       char *err, size_t errlen)
{
	static const char *const files[] = { "gemm.csv", "attention.csv", "membound.csv",
					     "ceilings.csv" };
	struct sheet sh[ARRAY_SIZE(files)] = { 0 };
	const struct topo_gpu *tgpu;
	char *dir;
	int rc = -1;

	if (!*table || strchr(table, '/'))
		return sim_errf(err, errlen, "calibration table '%s': expected a folder name",
			    table);
	dir = xasprintf("%s/calibration/%s", datadir, table);
	for (size_t i = 0; i < ARRAY_SIZE(files); i++)
		if (sheet_read(&sh[i], dir, files[i], err, errlen))
			goto out;
	if (!(tgpu = table_gpu(table, dir, err, errlen)))
		goto out;
	if (load_gemm(cm, &sh[0], tgpu, err, errlen) ||
	    load_attention(cm, &sh[1], tgpu, err, errlen) ||
	    load_membound(cm, &sh[2], tgpu, err, errlen) ||
	    load_ceilings(cm, &sh[3], tgpu, err, errlen))
		goto out;
	/* interference.csv and host.csv are optional: a table without one has
	 * no interference, or no host costs. */
	static const char *const optional[] = { "interference.csv", "host.csv" };
	for (size_t i = 0; i < ARRAY_SIZE(optional); i++) {
		char *ipath = xasprintf("%s/%s", dir, optional[i]);
		int have = access(ipath, F_OK) == 0;
		free(ipath);
		if (!have)
			continue;
		struct sheet si = { 0 };
		int bad = sheet_read(&si, dir, optional[i], err, errlen) ||
			  (i == 0 ? load_interference(cm, &si, err, errlen)
				  : load_host(cm, &si, err, errlen));
		sheet_free(&si);
		if (bad)
			goto out;
	}
	rc = 0;
out:
	for (size_t i = 0; i < ARRAY_SIZE(files); i++)
		sheet_free(&sh[i]);
	free(dir);
	return rc;
}

/* Dense peak of the precision; 0 with err if the GPU has none. */
static double precision_peak(const struct topo_gpu *gpu, enum par_precision prec,
			     char *err, size_t errlen)
{
	static const char *const names[] = {
		[PAR_BF16] = "bf16", [PAR_FP16] = "fp16", [PAR_FP8] = "fp8", [PAR_FP32] = "fp32",
	};
	double p = 0;

	switch (prec) {
	case PAR_BF16:
	case PAR_FP16:
		p = gpu->bf16;
		break;
	case PAR_FP8:
		p = gpu->fp8;
		break;
	case PAR_FP32:
		p = gpu->fp32;        /* TF32 would be gpu->tf32: a later option */
		break;
	}
	if (p <= 0)
		sim_errf(err, errlen, "GPU %s has no %s peak", gpu->name,
		     (unsigned)prec < ARRAY_SIZE(names) ? names[prec] : "?");
	return p;
}

struct par_compute_model *par_compute_model_new(const struct par_compute *cfg,
						const struct topo_gpu *gpu,
						enum par_precision prec,
						const char *datadir, char *err, size_t errlen)
{
	struct par_compute_model *cm;
	double peak;

	if (!(cfg->efficiency >= 0 && cfg->efficiency <= 1)) {
		sim_errf(err, errlen, "compute.efficiency %g: expected a value in (0, 1] or a "
		     "calibration table", cfg->efficiency);
		return NULL;
	}
	if (!(cfg->launch_s >= 0 && isfinite(cfg->launch_s))) {
		sim_errf(err, errlen, "compute.launch_overhead %g s: expected a time >= 0",
		     cfg->launch_s);
		return NULL;
	}
	if ((peak = precision_peak(gpu, prec, err, errlen)) <= 0)
		return NULL;
	if (gpu->hbm_Bps <= 0) {
		sim_errf(err, errlen, "GPU %s has no HBM bandwidth", gpu->name);
		return NULL;
	}
	cm = xcalloc(1, sizeof *cm);
	cm->gpu = gpu;
	cm->peak = peak;
	cm->launch_s = cfg->launch_s;
	cm->flat = cfg->efficiency;
	if (cm->flat == 0 && load_tables(cm, cfg->table, datadir ? datadir : ".", err, errlen)) {
		par_compute_model_free(cm);
		return NULL;
	}
	for (int k = 0; cm->flat == 0 && k < PAR_K_N; k++)
		for (int p = 0; p < PAR_PART_N; p++)
			cm->kernel_eff[k][p] = membound_eff(cm, par_kernel_name(k, p));
	return cm;
}

void par_compute_model_free(struct par_compute_model *cm)
{
	if (!cm)
		return;
	curve_free(&cm->gemm);
	curve_free(&cm->gemm_f);
	curve_free(&cm->gemm_g);
	for (int c = 0; c < 2; c++) {
		curve_free(&cm->attn_fwd[c]);
		curve_free(&cm->attn_bwd[c]);
	}
	for (size_t k = 0; k < cm->nkinds; k++)
		free(cm->kinds[k].name);
	free(cm->kinds);
	for (int k = 0; k < IK_N; k++) {
		curve_free(&cm->interf_compute[k]);
		curve_free(&cm->interf_comm[k]);
	}
	free(cm);
}

double par_compute_peak(const struct par_compute_model *cm)
{
	return cm->peak;
}

double par_compute_gemm_efficiency(const struct par_compute_model *cm, enum par_gemm_fit fit,
				   const struct par_op *op)
{
	double d = fmin(op->m, fmin(op->n, op->k));

	if (cm->flat > 0)
		return cm->flat;
	if (fit == PAR_GEMM_FIT_FLOPS || !(d > 0))  /* no shape: FLOPs alone */
		return curve_eval(&cm->gemm, lg(op->flops));
	return fmin(1, curve_eval(&cm->gemm_f, lg(op->flops)) * curve_eval(&cm->gemm_g, lg(d)));
}

/* Compute and memory efficiency of an op (the same number when flat). */
static void op_effs(const struct par_compute_model *cm, const struct par_op *op,
		    double *compute, double *memory)
{
	if (cm->flat > 0) {
		*compute = *memory = cm->flat;
		return;
	}
	switch (op->cls) {
	case PAR_OP_GEMM:
		*compute = par_compute_gemm_efficiency(cm, PAR_GEMM_FIT_DEFAULT, op);
		*memory = cm->copy_eff;
		return;
	case PAR_OP_ATTENTION:
		*compute = attention_eff(cm, op);
		*memory = cm->copy_eff;
		return;
	case PAR_OP_MEMBOUND:   /* its few FLOPs are never the bound */
		/* A kernel of the model by its identity; an op made elsewhere
		 * (PAR_K_NONE: a test's) by its name. */
		*compute = *memory = op->kernel != PAR_K_NONE && (unsigned)op->kernel < PAR_K_N &&
						     (unsigned)op->part < PAR_PART_N
					     ? cm->kernel_eff[op->kernel][op->part]
					     : membound_eff(cm, op->name);
		return;
	}
	BUG("op %s: unknown class %d", op->name ? op->name : "?", (int)op->cls);
}

double par_compute_efficiency(const struct par_compute_model *cm, const struct par_op *op)
{
	double compute, memory;

	op_effs(cm, op, &compute, &memory);
	return op->cls == PAR_OP_MEMBOUND ? memory : compute;
}

double par_compute_time_s(const struct par_compute_model *cm, const struct par_op *op)
{
	double compute, memory, t = 0;

	op_effs(cm, op, &compute, &memory);
	if (op->flops > 0)
		t = op->flops / (cm->peak * compute);
	if (op->bytes > 0)
		t = fmax(t, op->bytes / (cm->gpu->hbm_Bps * memory));
	return t + cm->launch_s;
}
