/*
 * gemm_calib.c - a measured GEMM table's errors, report and calibration
 * files (gemm_calib.h).
 */
#include "parallel/gemm_calib.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>

#include "sim/util.h"
#include "topology/topo.h"

void par_gemm_errors(const struct par_gemm_table *t, enum par_gemm_fit fit, double *median,
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

void par_gemm_write_report(FILE *out, const char *file, const struct topo_gpu *gpu,
			   const struct par_gemm_table *t, int json)
{
	double med[2], worst[2];
	size_t line[2];
	for (int k = 0; k < 2; k++)
		par_gemm_errors(t, (enum par_gemm_fit)k, &med[k], &worst[k], &line[k]);
	if (json) {
		char name[512];
		sim_json_escape(file, name, sizeof(name));
		fprintf(out, "{\"file\": \"%s\", \"gpu\": \"%s\", \"rows\": %zu, \"fits\": {"
		       "\"flops\": {\"median_error\": %.4f, \"worst_error\": %.4f}, "
		       "\"flops_mindim\": {\"median_error\": %.4f, \"worst_error\": %.4f}}, "
		       "\"efficiency\": [", name, gpu->name, t->nrows, med[0], worst[0], med[1],
		       worst[1]);
		for (size_t i = 0; i < t->nflops; i++)
			fprintf(out, "%s{\"flops\": %.6g, \"flops_only\": %.4f, \"f\": %.4f}",
			       i ? ", " : "", t->flops[i].x, t->flops[i].y, t->f[i].y);
		fprintf(out, "], \"mindim_factor\": [");
		for (size_t i = 0; i < t->ng; i++)
			fprintf(out, "%s{\"mindim\": %.0f, \"g\": %.4f}", i ? ", " : "", t->g[i].x,
			       t->g[i].y);
		fprintf(out, "]}\n");
		return;
	}
	double lo = 1, hi = 0;
	for (size_t i = 0; i < t->nrows; i++)
		lo = fmin(lo, t->rows[i].eff), hi = fmax(hi, t->rows[i].eff);
	fprintf(out, "# %s: %zu GEMMs measured on %s (dense bf16 peak %.1f TFLOP/s)\n", file,
	       t->nrows, gpu->name, gpu->bf16 / 1e12);
	fprintf(out, "# measured efficiency %.3f to %.3f of the peak\n", lo, hi);
	fprintf(out, "# time error of each fit over the rows, |t_fit / t - 1|:\n");
	fprintf(out, "#   FLOPs only                  median %.2f %%, worst %.1f %% (line %zu)\n",
	       med[0] * 100, worst[0] * 100, line[0]);
	fprintf(out, "#   FLOPs x smallest dimension  median %.2f %%, worst %.1f %% (line %zu): the "
	       "compute model's\n", med[1] * 100, worst[1] * 100, line[1]);
	fprintf(out, "\n# efficiency by FLOP count\n# %14s %12s %10s\n", "FLOPs", "FLOPs only",
	       "f (x g)");
	for (size_t i = 0; i < t->nflops; i++)
		fprintf(out, "  %14.4g %12.4f %10.4f\n", t->flops[i].x, t->flops[i].y, t->f[i].y);
	fprintf(out, "\n# factor g by the smallest of M, N and K\n# %8s %8s\n", "dim", "g");
	for (size_t i = 0; i < t->ng; i++)
		fprintf(out, "  %8.0f %8.4f\n", t->g[i].x, t->g[i].y);
}

void par_gemm_write_table(FILE *f, const struct par_gemm_table *t)
{
	fprintf(f, "M,N,K,flops,ms,efficiency\n");
	for (size_t i = 0; i < t->nrows; i++) {
		const struct par_gemm_row *r = &t->rows[i];
		fprintf(f, "%.0f,%.0f,%.0f,%.9g,%.9g,%.6f\n", r->m, r->n, r->k, r->flops, r->ms,
			r->eff);
	}
}

void par_gemm_write_curves(FILE *e, const struct par_gemm_table *t)
{
	fprintf(e, "curve,x,efficiency\n");
	for (size_t i = 0; i < t->nflops; i++)
		fprintf(e, "flops,%.9g,%.6f\n", t->flops[i].x, t->flops[i].y);
	for (size_t i = 0; i < t->nf; i++)
		fprintf(e, "flops_mindim_f,%.9g,%.6f\n", t->f[i].x, t->f[i].y);
	for (size_t i = 0; i < t->ng; i++)
		fprintf(e, "flops_mindim_g,%.9g,%.6f\n", t->g[i].x, t->g[i].y);
}

void par_gemm_write_readme(FILE *r, const char *args, const char *file,
			   const struct topo_gpu *gpu, const struct par_gemm_table *t,
			   const char *from)
{
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
}
