/*
 * gemm_calib.h - a measured GEMM table as `clustersim calibrate gemm`
 * reports and writes it (parallel/gemm_calib.c): each fit's time error over
 * the rows, the report, and the files of a calibration folder. The fit
 * itself is par_gemm_table_fit (parallel/compute.h).
 */
#ifndef PARALLEL_GEMM_CALIB_H
#define PARALLEL_GEMM_CALIB_H

#include <stddef.h>
#include <stdio.h>

#include "parallel/compute.h"

struct topo_gpu;

/* |t_fit / t - 1| over the rows of t (at least one) under one fit: the
 * median, the worst and the worst row's line in the table. */
void par_gemm_errors(const struct par_gemm_table *t, enum par_gemm_fit fit, double *median,
		     double *worst, size_t *worst_line);

/* The report of table t (read from file, measured on gpu): each fit's
 * error and the curves, as text or as one JSON object. */
void par_gemm_write_report(FILE *f, const char *file, const struct topo_gpu *gpu,
			   const struct par_gemm_table *t, int json);

/* The files of a calibration folder: gemm.csv with the efficiency column;
 * efficiency.csv, the points the curves pass through; README.md, saying
 * what each file is (args: the command's arguments or NULL; from: where
 * the attention, memory-bound and copy tables were copied from). */
void par_gemm_write_table(FILE *f, const struct par_gemm_table *t);
void par_gemm_write_curves(FILE *f, const struct par_gemm_table *t);
void par_gemm_write_readme(FILE *f, const char *args, const char *file,
			   const struct topo_gpu *gpu, const struct par_gemm_table *t,
			   const char *from);

#endif
