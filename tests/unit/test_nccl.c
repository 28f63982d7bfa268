/*
 * test_nccl.c - unit tests for collectives/nccl.c: reading nccl-tests logs
 * (the current table layout, the older one without redop and root, NCCL's
 * INFO lines among the rows, N/A figures, ranks and hosts from the header)
 * and every malformed log the reader refuses; the α-β fit (exact recovery
 * from times made by the closed form, a joint fit of two collectives, a
 * negative latency set to zero, too few sizes) and its default range; and
 * the fit of the published A100 sweep that docs/calibration.md quotes
 * (scenarios/validation/nccl/, converted from shared/validation/published.csv).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "collectives/nccl.h"
#include "tests/checkmain.h"

#ifndef CLUSTERSIM_SRCDIR
#error "build with -DCLUSTERSIM_SRCDIR='\"/path/to/source\"'"
#endif

#define FIXTURES CLUSTERSIM_SRCDIR "/scenarios/validation/nccl/"

static int parse(struct nccl_log *log, const char *name, const char *text, char *err,
		 size_t errlen)
{
	return nccl_log_parse(log, name, text, strlen(text), err, errlen);
}

/* Parsing must fail with a message containing want. */
static void refused(const char *name, const char *text, const char *want)
{
	struct nccl_log log;
	char err[512] = "";
	ck_assert_int_eq(parse(&log, name, text, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, want), "error '%s' lacks '%s'", err, want);
	ck_assert_ptr_null(log.rows);
}

#define HEADER \
	"#       size         count      type   redop    root     time   algbw   busbw #wrong" \
	"     time   algbw   busbw #wrong\n"

/* ---- reading ---------------------------------------------------------------------- */

START_TEST(test_read_fixture)
{
	struct nccl_log log;
	char err[512];
	ck_assert_msg(nccl_log_read(&log, FIXTURES "a100-all_reduce_perf.txt", err,
				    sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(log.op, NCCL_OP_ALLREDUCE);
	ck_assert_uint_eq(log.ranks, 8);
	ck_assert_uint_eq(log.hosts, 1);
	ck_assert_uint_eq(log.nrows, 20);
	ck_assert_double_eq(log.rows[0].bytes, 32768);
	ck_assert_double_eq_tol(log.rows[0].time_s[0], 43.83e-6, 1e-12);
	ck_assert_double_eq(log.rows[0].time_s[1], 0);  /* N/A */
	ck_assert_double_eq_tol(log.rows[19].busbw_Bps[0], 234.89e9, 1e3);
	ck_assert_int_eq(log.rows[0].line, 22);
	nccl_log_free(&log);
}
END_TEST

START_TEST(test_read_current_layout)
{
	const char *text =
		"# nThread 1 nGpus 1 minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 5\n"
		"#  Rank  0 Group  0 Pid  100 on    alpha device  0 [0x07] NVIDIA H100\n"
		"#  Rank  1 Group  0 Pid  101 on    alpha device  1 [0x0a] NVIDIA H100\n"
		"#  Rank  2 Group  0 Pid  200 on     beta device  0 [0x07] NVIDIA H100\n"
		"#  Rank  3 Group  0 Pid  201 on     beta device  1 [0x0a] NVIDIA H100\n"
		"# Collective test starting: all_gather_perf\n"
		HEADER
		"#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
		"            (us)  (GB/s)  (GB/s)\n"
		"alpha:100:100 [0] NCCL INFO Channel 00/02 : 0 1 2 3\n"
		"           8             0     float    none      -1    20.50    0.00    0.00"
		"      0    19.75    0.00    0.00      0\n"
		"          16             1     float    none      -1    21.00    0.00    0.00"
		"      0      N/A     N/A     N/A    N/A\n"
		"          64             4     float    none      -1    22.00    0.00    0.00"
		"    N/A    21.00    0.00    0.00    N/A\n"
		"# Out of bounds values : 0 OK\n"
		"# Avg bus bandwidth    : 0.001\n";
	struct nccl_log log;
	char err[512];
	ck_assert_msg(parse(&log, "run.log", text, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(log.op, NCCL_OP_ALLGATHER);
	ck_assert_uint_eq(log.ranks, 4);
	ck_assert_uint_eq(log.hosts, 2);
	ck_assert_uint_eq(log.nrows, 3);
	ck_assert_double_eq_tol(log.rows[0].time_s[1], 19.75e-6, 1e-12);
	ck_assert_double_eq(log.rows[1].time_s[1], 0);
	ck_assert_double_eq_tol(log.rows[2].time_s[0], 22e-6, 1e-12);
	ck_assert_int_eq(log.rows[2].line, 12);
	nccl_log_free(&log);
}
END_TEST

/* Older nccl-tests: no redop or root columns, "error" instead of "#wrong",
 * no "Collective test starting" line: the op comes from the file name. */
START_TEST(test_read_old_layout)
{
	const char *text =
		"#\n"
		"#                                                     out-of-place"
		"                    in-place\n"
		"#       size         count    type   time   algbw   busbw  error"
		"     time   algbw   busbw  error\n"
		"#        (B)    (elements)           (us)  (GB/s)  (GB/s)"
		"            (us)  (GB/s)  (GB/s)\n"
		"     1048576        262144   float  100.0   10.49   18.35  0e+00"
		"    99.00   10.59   18.54  0e+00\n"
		"     2097152        524288   float  150.0   13.98   24.47  0e+00"
		"   148.00   14.17   24.80  0e+00\n";
	struct nccl_log log;
	char err[512];
	ck_assert_msg(parse(&log, "logs/node3-reduce_scatter_perf.out", text, err,
			    sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(log.op, NCCL_OP_REDUCESCATTER);
	ck_assert_uint_eq(log.ranks, 0);
	ck_assert_uint_eq(log.nrows, 2);
	ck_assert_double_eq_tol(log.rows[1].time_s[1], 148e-6, 1e-12);
	ck_assert_double_eq_tol(log.rows[1].busbw_Bps[0], 24.47e9, 1);
	nccl_log_free(&log);
	ck_assert_int_eq(parse(&log, "results.txt", text, err, sizeof(err)), 0);
	ck_assert_int_eq(log.op, NCCL_OP_NONE);  /* nothing says which test */
	nccl_log_free(&log);
}
END_TEST

START_TEST(test_read_refused)
{
	const char *row = "        1024           256     float     sum      -1    20.00    0.05"
			  "    0.09      0    20.00    0.05    0.09      0\n";
	char text[2048];

	refused("a.txt", "", "no nccl-tests table");
	refused("a.txt", "hello\nworld\n", "no nccl-tests table");
	refused("a.txt", HEADER, "no nccl-tests table");
	refused("a.txt", HEADER "        1024           256     float     sum      -1    20.00\n",
		"a.txt:2: 6 columns: expected 13");
	snprintf(text, sizeof(text), "%s%s%s", HEADER, row, row);
	refused("a.txt", text, "a.txt:3: size 1024 after 1024");
	snprintf(text, sizeof(text), "%s%s%s", HEADER, row, HEADER);
	refused("a.txt", text, "a.txt:3: a second table");
	refused("a.txt", HEADER "        1024           256     float     sum      -1    -2.00"
			 "    0.05    0.09      0    20.00    0.05    0.09      0\n",
		"a.txt:2: out-of-place time");
	refused("a.txt", HEADER "        1024           256     float     sum      -1     0.00"
			 "    0.05    0.09      0    20.00    0.05    0.09      0\n",
		"expected a positive number of microseconds");
	refused("a.txt", HEADER "        1024           256     float     sum      -1    20.00"
			 "    0.05     abc      0    20.00    0.05    0.09      0\n",
		"a.txt:2: busbw");

	/* A row is never dropped: one too long to split, or with hexadecimal
	 * where a number goes, is an error at its line. */
	char longrow[1400], word[1201];
	memset(word, 'x', sizeof(word) - 1);
	word[sizeof(word) - 1] = 0;
	snprintf(longrow, sizeof(longrow), "%s        2048 %s\n", HEADER, word);
	refused("a.txt", longrow, "a.txt:2: a row of more than");
	refused("a.txt", HEADER "        1024           256     float     sum      -1    0x14"
			 "    0.05    0.09      0    20.00    0.05    0.09      0\n",
		"a.txt:2: out-of-place time");
	refused("a.txt", HEADER "        1e3.5          256     float     sum      -1    20.00"
			 "    0.05    0.09      0    20.00    0.05    0.09      0\n",
		"a.txt:2: size: expected a whole number of bytes, got '1e3.5'");

	struct nccl_log log;
	char err[256];
	/* Sizes take the number grammar: 2e6 is a row, not a note to skip. */
	ck_assert_msg(parse(&log, "e.txt", HEADER "        1024           256     float     sum"
			    "      -1    20.00    0.05    0.09      0    20.00    0.05    0.09      0\n"
			    "         2e6        500000     float     sum      -1    90.00    0.05"
			    "    0.09      0    90.00    0.05    0.09      0\n", err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(log.nrows, 2);
	ck_assert_double_eq(log.rows[1].bytes, 2e6);
	nccl_log_free(&log);
	const char nul[] = "#  size count type time\n12\0 3 float 5\n";
	ck_assert_int_eq(nccl_log_parse(&log, "b.bin", nul, sizeof(nul) - 1, err, sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "b.bin:2: a NUL byte"), "%s", err);
	ck_assert_int_eq(nccl_log_read(&log, FIXTURES "no-such-file.txt", err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "no-such-file.txt: cannot read"), "%s", err);
}
END_TEST

START_TEST(test_op_names)
{
	ck_assert_int_eq(nccl_op_from_name("all_reduce_perf"), NCCL_OP_ALLREDUCE);
	ck_assert_int_eq(nccl_op_from_name("allgather"), NCCL_OP_ALLGATHER);
	ck_assert_int_eq(nccl_op_from_name("reduce_scatter"), NCCL_OP_REDUCESCATTER);
	ck_assert_int_eq(nccl_op_from_name("alltoall_perf"), NCCL_OP_ALLTOALL);
	ck_assert_int_eq(nccl_op_from_name("broadcast_perf"), NCCL_OP_NONE);
	ck_assert_str_eq(nccl_op_test(NCCL_OP_ALLTOALL), "alltoall_perf");
	/* nccl-tests' factors (PERFORMANCE.md) and the ring's steps. */
	ck_assert_double_eq_tol(nccl_busbw_factor(NCCL_OP_ALLREDUCE, 8), 1.75, 1e-15);
	ck_assert_double_eq_tol(nccl_busbw_factor(NCCL_OP_ALLGATHER, 8), 0.875, 1e-15);
	ck_assert_uint_eq(nccl_ring_steps(NCCL_OP_ALLREDUCE, 8), 14);
	ck_assert_uint_eq(nccl_ring_steps(NCCL_OP_REDUCESCATTER, 8), 7);
}
END_TEST

/* ---- fitting ------------------------------------------------------------------------ */

START_TEST(test_fit_exact)
{
	/* Times made by the closed form: the fit gives back α and B. */
	struct nccl_point p[40];
	size_t n = 0;
	const double alpha = 2.5e-6, bw = 180e9;
	for (double S = 1 << 20; S <= (double)(1ULL << 32); S *= 4) {
		p[n++] = (struct nccl_point){ NCCL_OP_ALLREDUCE, 8, S,
					      nccl_ring_time_s(NCCL_OP_ALLREDUCE, 8, S, alpha, bw) };
		p[n++] = (struct nccl_point){ NCCL_OP_ALLGATHER, 16, S,
					      nccl_ring_time_s(NCCL_OP_ALLGATHER, 16, S, alpha, bw) };
	}
	struct nccl_fit fit;
	char err[256];
	ck_assert_msg(nccl_fit(p, n, 0, 1e30, &fit, err, sizeof(err)) == 0, "%s", err);
	ck_assert_double_eq_tol(fit.alpha_s, alpha, alpha * 1e-9);
	ck_assert_double_eq_tol(fit.bw_Bps, bw, bw * 1e-9);
	ck_assert_uint_eq(fit.used, n);
	ck_assert(fit.worst_err < 1e-9);
	ck_assert(!fit.alpha_fixed);
	/* The range restricts the points. */
	ck_assert_int_eq(nccl_fit(p, n, 1 << 22, 1 << 26, &fit, err, sizeof(err)), 0);
	ck_assert_uint_eq(fit.used, 6);  /* 4, 16 and 64 MiB of each */
	ck_assert_double_eq_tol(fit.bw_Bps, bw, bw * 1e-9);
}
END_TEST

START_TEST(test_fit_negative_alpha)
{
	/* Bus bandwidth that falls as the size grows: a line through these
	 * has a negative intercept; α is set to 0 and B refitted alone. */
	struct nccl_point p[] = {
		{ NCCL_OP_ALLREDUCE, 8, 1e8, 1.75e8 / 200e9 },
		{ NCCL_OP_ALLREDUCE, 8, 1e9, 1.75e9 / 190e9 },
		{ NCCL_OP_ALLREDUCE, 8, 1e10, 1.75e10 / 150e9 },
	};
	struct nccl_fit fit;
	char err[256];
	ck_assert_int_eq(nccl_fit(p, 3, 0, 1e30, &fit, err, sizeof(err)), 0);
	ck_assert(fit.alpha_fixed);
	ck_assert_double_eq(fit.alpha_s, 0);
	ck_assert(fit.bw_Bps > 150e9 && fit.bw_Bps < 200e9);
}
END_TEST

START_TEST(test_fit_refused)
{
	struct nccl_point p[] = {
		{ NCCL_OP_ALLREDUCE, 8, 1e6, 1e-4 },
		{ NCCL_OP_ALLREDUCE, 8, 2e6, 0.5e-4 },  /* faster when larger */
	};
	struct nccl_fit fit;
	char err[256];
	ck_assert_int_eq(nccl_fit(p, 2, 1e6, 1e6, &fit, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "at least two sizes"), "%s", err);
	ck_assert_int_eq(nccl_fit(p, 2, 0, 1e30, &fit, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "no positive bandwidth"), "%s", err);
}
END_TEST

/* The published A100 sweep: the figures docs/calibration.md quotes. */
START_TEST(test_fit_a100_sweep)
{
	struct nccl_log log;
	char err[512];
	ck_assert_int_eq(nccl_log_read(&log, FIXTURES "a100-all_reduce_perf.txt", err,
				       sizeof(err)), 0);
	struct nccl_point p[32];
	for (size_t i = 0; i < log.nrows; i++)
		p[i] = (struct nccl_point){ log.op, log.ranks, log.rows[i].bytes,
					    log.rows[i].time_s[0] };
	double lo, hi;
	nccl_fit_range(p, log.nrows, &lo, &hi);
	/* 16 MiB runs at 106 GB/s, under half the 234.9 peak; 32 MiB at 138. */
	ck_assert_double_eq(lo, 33554432);
	ck_assert_double_eq(hi, 17179869184.0);
	struct nccl_fit fit;
	ck_assert_int_eq(nccl_fit(p, log.nrows, lo, hi, &fit, err, sizeof(err)), 0);
	ck_assert_uint_eq(fit.used, 10);
	ck_assert_msg(fabs(fit.bw_Bps / 1e9 - 230.2) < 0.05, "B %.3f GB/s", fit.bw_Bps / 1e9);
	ck_assert_msg(fabs(fit.alpha_s * 1e6 - 13.08) < 0.01, "alpha %.4f us",
		      fit.alpha_s * 1e6);
	ck_assert_msg(fit.median_err < 0.025 && fit.worst_err < 0.095, "errors %.4f %.4f",
		      fit.median_err, fit.worst_err);
	nccl_log_free(&log);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nccl");
	TCase *tc = tcase_create("read");
	tcase_add_test(tc, test_read_fixture);
	tcase_add_test(tc, test_read_current_layout);
	tcase_add_test(tc, test_read_old_layout);
	tcase_add_test(tc, test_read_refused);
	tcase_add_test(tc, test_op_names);
	suite_add_tcase(s, tc);
	tc = tcase_create("fit");
	tcase_add_test(tc, test_fit_exact);
	tcase_add_test(tc, test_fit_negative_alpha);
	tcase_add_test(tc, test_fit_refused);
	tcase_add_test(tc, test_fit_a100_sweep);
	suite_add_tcase(s, tc);
	return check_run(s);
}
