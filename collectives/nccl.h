/*
 * nccl.h - nccl-tests logs and the α-β fit of their times.
 *
 * A log is what all_reduce_perf, all_gather_perf, reduce_scatter_perf or
 * alltoall_perf print: a header naming the GPUs ("#  Rank  0 Group 0 Pid ...
 * on HOST device 0 ..."), then a table whose column line starts with
 * "#  size  count  type" and whose rows give, for each size, the
 * out-of-place and in-place time, algorithm bandwidth and bus bandwidth.
 * The reader finds the columns by name (older versions without the redop
 * and root columns, or with "error" for "#wrong", read the same), skips
 * NCCL's INFO and WARN lines, and reads "N/A" as a missing figure.
 *
 * The fit: a collective of S bytes over n ranks on the ring takes
 *
 *     t(S) = steps(op, n) · α + S · f(op, n) / B
 *
 * (SPEC C1-C3: steps = 2(n-1) for all-reduce, n-1 for the others; f is
 * nccl-tests' bus-bandwidth factor, 2(n-1)/n or (n-1)/n), so that the bus
 * bandwidth S·f/t tends to B. α (one ring step's latency) and 1/B are fitted
 * by weighted linear least squares (GSL's gsl_multifit_wlinear) with
 * weights 1/t²: relative residuals count the same at every size. Several
 * logs of one scope fit jointly.
 */
#ifndef COLL_NCCL_H
#define COLL_NCCL_H

#include <stddef.h>
#include <stdint.h>

#include "sim/sim.h"

enum nccl_op {
	NCCL_OP_NONE,
	NCCL_OP_ALLREDUCE,
	NCCL_OP_ALLGATHER,
	NCCL_OP_REDUCESCATTER,
	NCCL_OP_ALLTOALL,
};

/* "all_reduce_perf" and so on; "allreduce", "all_reduce" also name one. */
enum nccl_op nccl_op_from_name(const char *name);
const char *nccl_op_test(enum nccl_op op);      /* "all_reduce_perf"  */
const char *nccl_op_coll(enum nccl_op op);      /* "allreduce"        */
/* The engine's collective the test measures (op not NCCL_OP_NONE). */
enum sim_coll_op nccl_op_sim(enum nccl_op op);

/* One size of a log; a time of 0 is a figure the log did not give. */
struct nccl_row {
	double bytes;
	double time_s[2];           /* out-of-place, in-place            */
	double busbw_Bps[2];        /* as printed (GB/s of 10^9 bytes)   */
	int line;
};

struct nccl_log {
	char *name;                 /* file name, for messages            */
	enum nccl_op op;            /* NCCL_OP_NONE: not said by the log  */
	uint32_t ranks;             /* rank lines of the header; 0: none  */
	uint32_t hosts;             /* distinct hosts among them          */
	struct nccl_row *rows;
	size_t nrows;
};

/*
 * Read a log from memory (len bytes, need not end in NUL). The op comes
 * from a "Collective test starting: NAME" line, else from the test name
 * in `name` (a file called all_gather_perf.txt is one), else stays NONE.
 * -1 with err naming the file and line when there is no table or a row
 * is malformed (columns unlike the header's, a size or time that is not a
 * positive number, sizes not increasing).
 */
int nccl_log_parse(struct nccl_log *log, const char *name, const char *buf, size_t len,
		   char *err, size_t errlen);
/* Read a log file; the same errors, and unreadable or empty files. */
int nccl_log_read(struct nccl_log *log, const char *path, char *err, size_t errlen);
void nccl_log_free(struct nccl_log *log);

/* nccl-tests' bus-bandwidth factor (the engine's, sim_coll_busbw_factor) and
 * the ring's step count. */
double nccl_busbw_factor(enum nccl_op op, uint32_t n);
uint32_t nccl_ring_steps(enum nccl_op op, uint32_t n);

/* The ring's closed form: steps · α + S · f / B. */
double nccl_ring_time_s(enum nccl_op op, uint32_t n, double bytes, double alpha_s, double bw_Bps);

/* A point of a fit. */
struct nccl_point {
	enum nccl_op op;
	uint32_t n;                 /* ranks                              */
	double bytes, time_s;
};

struct nccl_fit {
	double alpha_s;             /* per ring step                      */
	double bw_Bps;              /* bus bandwidth the ring tends to    */
	double alpha_sd_s, bw_sd_Bps;   /* standard errors (GSL covariance, scaled by
					 * the residual variance)          */
	size_t used;                /* points in the size range           */
	double median_err, worst_err;   /* |t_fit / t - 1| over those     */
	int alpha_fixed;            /* α came out negative: refit with α = 0 */
};

/*
 * Fit α and B to the points whose size lies in [lo, hi]. -1 with err when
 * fewer than two sizes are in range, or they cannot give a positive
 * bandwidth. A negative α (sizes too large to resolve it) is set to zero
 * and B refitted alone; alpha_fixed says so.
 */
int nccl_fit(const struct nccl_point *p, size_t n, double lo, double hi, struct nccl_fit *fit,
	     char *err, size_t errlen);

/*
 * The default size range of a fit: from the smallest size at and above
 * which every point's bus bandwidth is at least half the largest measured,
 * to the largest size: the range where bandwidth, not latency or protocol,
 * sets the time, and where training's gradient and activation messages
 * lie. Points of several ops are judged by their own bus bandwidth.
 */
void nccl_fit_range(const struct nccl_point *p, size_t n, double *lo, double *hi);

#endif
