/*
 * compute.h - the compute model: how long one kernel takes on one GPU.
 *
 * time = max(FLOPs / (P x eff_compute), bytes / (HBM x eff_memory)) + launch
 * (SPEC C9). P is the GPU's dense peak for the precision, HBM its memory
 * bandwidth. The efficiencies come from measured calibration tables
 * (scenarios/calibration/NAME/, from shared/calibration), interpolated with
 * GSL: GEMMs by their FLOP count, attention by its FLOPs, memory-bound ops
 * as the measured fraction of the datasheet HBM bandwidth per op kind. A flat
 * efficiency (compute.efficiency > 0) replaces the tables: 1 gives the pure
 * roofline that SPEC checks use.
 *
 * A struct par_compute_model owns its loaded tables (GSL splines); it is
 * read-only after par_compute_model_new and may be shared.
 */
#ifndef PAR_COMPUTE_H
#define PAR_COMPUTE_H

#include <stddef.h>

#include "parallel/config.h"
#include "parallel/model.h"
#include "topology/topo.h"

struct par_compute_model;

/*
 * Load the model for one GPU and precision. With cfg->efficiency > 0 no
 * table is read. Otherwise cfg->table names a folder of calibration CSVs
 * (gemm.csv, attention.csv, membound.csv, ceilings.csv as in
 * shared/calibration/h200) found in datadir. NULL with err on failure
 * (missing or malformed table: file, line and column named).
 */
struct par_compute_model *par_compute_model_new(const struct par_compute *cfg,
						const struct topo_gpu *gpu,
						enum par_precision prec,
						const char *datadir, char *err, size_t errlen);
void par_compute_model_free(struct par_compute_model *cm);

/* Dense peak FLOP/s of the GPU for the precision (bf16/fp16 share one). */
double par_compute_peak(const struct par_compute_model *cm);

/* Efficiency of an op (0 < eff <= 1) for its class and shape: the compute
 * efficiency of GEMM and attention ops, the memory (bandwidth) efficiency of
 * memory-bound ops. */
double par_compute_efficiency(const struct par_compute_model *cm, const struct par_op *op);

/* Seconds one op takes on the GPU, launch overhead included. */
double par_compute_time_s(const struct par_compute_model *cm, const struct par_op *op);

/*
 * Interference (the table's interference.csv, tools/measure_interference.py;
 * docs/calibration.md): the factor by which op's time grows while
 * communication kernels hold `blocks` CUDA blocks (NCCL's channels) of the
 * GPU, and the factor by which a communication kernel's time grows beside
 * op. A GEMM is read between the measured 4096^3 and 8192^3 matmuls by its
 * log FLOPs, attention from the attention kernel, anything else from the
 * memory-bound add; above the measured blocks the last point holds. 1 for
 * no blocks, or a model without the table (flat efficiency, or a table
 * without interference.csv: par_compute_has_interference 0).
 */
int par_compute_has_interference(const struct par_compute_model *cm);

/*
 * The host's cost of a call (the table's host.csv, tools/measure_host.py;
 * docs/calibration.md): seconds of host time to issue a kernel (a PyTorch
 * op) or a collective of each kind from one thread, the median over the
 * sizes measured. 0 for a model without the table.
 */
enum par_host_call {
	PAR_HOST_KERNEL,
	PAR_HOST_ALLREDUCE,
	PAR_HOST_ALLGATHER,
	PAR_HOST_REDUCESCATTER,
	PAR_HOST_ALLTOALL,
	PAR_HOST_BROADCAST,
	PAR_HOST_N
};
int par_compute_has_host(const struct par_compute_model *cm);
double par_compute_host_s(const struct par_compute_model *cm, enum par_host_call call);
double par_compute_interference(const struct par_compute_model *cm, const struct par_op *op,
				double blocks);
double par_comm_interference(const struct par_compute_model *cm, const struct par_op *beside,
			     double blocks);

/*
 * GEMM efficiency fits (docs/calibration.md). Loading a table builds both;
 * par_compute_efficiency and par_compute_time_s use PAR_GEMM_FIT_DEFAULT.
 * Over the 192 rows of the H200's gemm.csv both have a median time error
 * of 3.55 %; held out (fit on half the sizes, test on the rest) the
 * two-factor fit is better in 3 of 4 splits, so it is the default.
 */
enum par_gemm_fit {
	PAR_GEMM_FIT_FLOPS,        /* eff(log10 FLOPs)                            */
	PAR_GEMM_FIT_FLOPS_MINDIM, /* f(log10 FLOPs) x g(log10 min(m, n, k))     */
};
#define PAR_GEMM_FIT_DEFAULT PAR_GEMM_FIT_FLOPS_MINDIM

/* Compute efficiency of a GEMM op under the given fit; the flat efficiency
 * when no table is loaded. An op without m, n, k uses the FLOPs curve. */
double par_compute_gemm_efficiency(const struct par_compute_model *cm, enum par_gemm_fit fit,
				   const struct par_op *op);

/*
 * A GEMM table fitted on its own, as par_compute_model_new fits it
 * (`clustersim calibrate gemm`): every row's measured efficiency against
 * the measured GPU's dense bf16 peak and what each fit gives for it, and
 * the points the fits' splines pass through.
 */
struct par_gemm_row {
	double m, n, k, flops, ms;
	double eff;                 /* measured: flops / (ms x peak)          */
	double fit[2];              /* by enum par_gemm_fit                   */
	size_t line;                /* in the file                            */
};

struct par_gemm_knot {
	double x, y;
};

struct par_gemm_table {
	struct par_gemm_row *rows;
	size_t nrows;
	struct par_gemm_knot *flops;   /* FLOPs -> efficiency (PAR_GEMM_FIT_FLOPS)  */
	struct par_gemm_knot *f;       /* FLOPs -> f of the two-factor fit          */
	struct par_gemm_knot *g;       /* smallest dimension -> factor g            */
	size_t nflops, nf, ng;
};

/* Read and fit a gemm.csv (columns M, N, K, flops, ms) measured on gpu.
 * 0, or -1 with err naming the file, line and column. */
int par_gemm_table_fit(const char *path, const struct topo_gpu *gpu, struct par_gemm_table *out,
		       char *err, size_t errlen);
void par_gemm_table_free(struct par_gemm_table *t);

#endif
