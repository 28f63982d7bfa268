/*
 * test_calib.c - collectives/nccl_calib.c and parallel/gemm_calib.c: a
 * log made from the ring's own closed form is fitted back to its alpha and
 * bus bandwidth, grouped by scope, put into a preset and written; logs
 * that cannot be fitted are refused with the log's name; a GEMM table's
 * fit errors, report and files.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/nccl_calib.h"
#include "parallel/gemm_calib.h"
#include "scenarios/scenario.h"
#include "tests/checkmain.h"
#include "tests/tmpdir.h"
#include "topology/topo.h"

#define ALPHA 5e-6
#define BW 200e9

/* An all_reduce_perf log of `ranks` ranks on `hosts` hosts, 1 MiB to
 * 4 GiB, times of the ring with ALPHA and BW; the path in the tmp dir. */
static char *make_log(struct tmp *t, const char *name, uint32_t ranks, uint32_t hosts)
{
	char *p = tmp_path(t, name);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "# Collective test starting: all_reduce_perf\n");
	for (uint32_t r = 0; r < ranks; r++)
		fprintf(f, "#  Rank %2u Group  0 Pid %5u on %8s%u device %2u [0x00] NVIDIA H100\n",
			r, r, "node", r / (ranks / hosts), r % (ranks / hosts));
	fprintf(f, "#       size         count      type   redop    root     time   algbw   busbw "
		"#wrong     time   algbw   busbw #wrong\n");
	for (double S = 1048576; S <= 4294967296.0; S *= 2) {
		double ts = nccl_ring_time_s(NCCL_OP_ALLREDUCE, ranks, S, ALPHA, BW);
		double algbw = S / ts / 1e9, bus = algbw * nccl_busbw_factor(NCCL_OP_ALLREDUCE, ranks);
		fprintf(f, "%12.0f %12.0f float sum -1 %.3f %.2f %.2f 0 %.3f %.2f %.2f 0\n", S,
			S / 4, ts * 1e6, algbw, bus, ts * 1e6, algbw, bus);
	}
	fclose(f);
	return p;
}

START_TEST(fits_its_own_closed_form)
{
	struct tmp t;
	tmp_init(&t, "test_calib");
	char *path = make_log(&t, "ar.txt", 8, 1);
	const char *paths[] = { path };
	struct nccl_calib c = { 0 };
	struct nccl_calib_opts o = { .op = NCCL_OP_NONE };
	char err[1024];
	ck_assert_msg(nccl_calib_read(&c, paths, 1, &o, err, sizeof err) == 0, "%s", err);
	ck_assert_int_eq(c.nlogs, 1);
	ck_assert_int_eq(c.log_scope[0], 0);
	ck_assert_uint_eq(c.scope[0].ranks, 8);
	ck_assert_uint_eq(c.scope[0].npts, 13);
	ck_assert_uint_eq(c.scope[1].npts, 0);
	ck_assert_msg(nccl_calib_fit(&c, 2e9, 1, 1e6, 1, err, sizeof err) < 0, "empty range");
	ck_assert_msg(strstr(err, "the fit's range is empty"), "%s", err);
	ck_assert_msg(nccl_calib_fit(&c, 0, 0, 0, 0, err, sizeof err) == 0, "%s", err);
	const struct nccl_scope *s = nccl_calib_scope_of(&c, 0);
	ck_assert_ptr_eq(s, &c.scope[0]);
	ck_assert(!c.scope[1].fitted);
	ck_assert_double_eq_tol(s->fit.bw_Bps / BW, 1, 1e-3);
	ck_assert_double_eq_tol(s->fit.alpha_s / ALPHA, 1, 0.05);

	/* Into dgx-h100: the NVLink figures are the fit's, the rest the base's. */
	struct topo_config base, tc;
	ck_assert_msg(scn_cluster_preset(&base, "dgx-h100", err, sizeof err) == 0, "%s", err);
	tc = base;
	ck_assert_msg(nccl_calib_apply(&c, &tc, "dgx-h100", err, sizeof err) == 0, "%s", err);
	ck_assert(tc.nvlink_bw_Bps == s->fit.bw_Bps && tc.nvlink_lat_s == s->fit.alpha_s);
	ck_assert(tc.net_bw_Bps == base.net_bw_Bps && tc.net_lat_s == base.net_lat_s);
	char buf[512];
	ck_assert_ptr_null(nccl_calib_caveat(&c, 8, buf, sizeof buf));
	ck_assert_ptr_nonnull(nccl_calib_caveat(&c, 16, buf, sizeof buf));
	ck_assert_msg(strstr(buf, "logs of 8 of the node's 16 GPUs"), "%s", buf);
	ck_assert_int_lt(nccl_calib_apply(&c, &(struct topo_config){ .gpus_per_node = 4 }, "small",
					  err, sizeof err), 0);
	ck_assert_msg(strstr(err, "has 8 ranks, but small has 4 GPUs per node"), "%s", err);

	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	nccl_calib_write_preset(m, &c, &tc, "dgx-h100", " calibrate nccl ar.txt", "");
	fclose(m);
	char want[128];
	snprintf(want, sizeof want, "  nvlink:\n    bandwidth: %.6gGB/s\n", s->fit.bw_Bps / 1e9);
	ck_assert_msg(strstr(text, want), "%s", text);
	ck_assert_msg(strstr(text, "# Written by: clustersim calibrate nccl ar.txt\n"), "%s", text);
	ck_assert_msg(strstr(text, "cluster:\n  topology: fattree\n"), "%s", text);
	free(text);
	m = open_memstream(&text, &len);
	nccl_calib_write_json(m, &c);
	fclose(m);
	ck_assert_msg(strstr(text, "\"scope\": \"nvlink\", \"ranks\": 8, \"nodes\": 1"), "%s", text);
	free(text);
	nccl_calib_free(&c);
	free(path);
	tmp_clear(&t);
}
END_TEST

START_TEST(groups_by_scope_and_refuses)
{
	struct tmp t;
	tmp_init(&t, "test_calib");
	char *in = make_log(&t, "in.txt", 8, 1), *across = make_log(&t, "across.txt", 16, 2);
	const char *paths[] = { in, across };
	struct nccl_calib c = { 0 };
	struct nccl_calib_opts o = { .op = NCCL_OP_NONE };
	char err[1024];
	ck_assert_msg(nccl_calib_read(&c, paths, 2, &o, err, sizeof err) == 0, "%s", err);
	ck_assert_int_eq(c.log_scope[0], 0);
	ck_assert_int_eq(c.log_scope[1], 1);
	ck_assert_uint_eq(c.scope[1].nodes, 2);
	ck_assert_msg(nccl_calib_fit(&c, 0, 0, 0, 0, err, sizeof err) == 0, "%s", err);
	ck_assert(c.scope[0].fitted && c.scope[1].fitted);
	ck_assert_double_eq_tol(c.scope[1].fit.bw_Bps / BW, 1, 1e-3);
	nccl_calib_free(&c);

	/* More nodes than ranks; one rank. */
	struct nccl_calib d = { 0 };
	o.nodes = 9;
	ck_assert_int_lt(nccl_calib_read(&d, paths, 1, &o, err, sizeof err), 0);
	ck_assert_msg(strstr(err, "in.txt: 9 nodes for 8 ranks"), "%s", err);
	nccl_calib_free(&d);
	struct nccl_calib e = { 0 };
	o = (struct nccl_calib_opts){ .op = NCCL_OP_NONE, .ranks = 1 };
	ck_assert_int_lt(nccl_calib_read(&e, paths, 1, &o, err, sizeof err), 0);
	ck_assert_msg(strstr(err, "in.txt: one rank: expected the ranks"), "%s", err);
	nccl_calib_free(&e);
	/* In-place times asked of a log without them are still read (both
	 * columns here); a scope without times is refused by the fit. */
	struct nccl_calib g = { 0 };
	ck_assert_msg(nccl_calib_read(&g, paths, 1, &(struct nccl_calib_opts){ .inplace = 1 }, err,
				      sizeof err) == 0, "%s", err);
	g.scope[0].npts = 0;
	ck_assert_int_lt(nccl_calib_fit(&g, 0, 0, 0, 0, err, sizeof err), 0);
	ck_assert_msg(strstr(err, "have no in-place times"), "%s", err);
	nccl_calib_free(&g);
	free(in);
	free(across);
	tmp_clear(&t);
}
END_TEST

START_TEST(gemm_errors_report_files)
{
	const struct topo_gpu *gpu = topo_gpu_find("H200-SXM-141GB");
	ck_assert_ptr_nonnull(gpu);
	struct par_gemm_table t;
	char err[1024];
	ck_assert_msg(par_gemm_table_fit(CLUSTERSIM_SRCDIR "/scenarios/calibration/h200/gemm.csv",
					 gpu, &t, err, sizeof err) == 0, "%s", err);
	double med[2], worst[2];
	size_t line[2];
	for (int k = 0; k < 2; k++) {
		par_gemm_errors(&t, (enum par_gemm_fit)k, &med[k], &worst[k], &line[k]);
		ck_assert(med[k] >= 0 && med[k] <= worst[k]);
		ck_assert_uint_ge(line[k], 2);  /* a row, not the header */
		/* The worst row is one of the table's and has that error. */
		int found = 0;
		for (size_t i = 0; i < t.nrows; i++)
			if (t.rows[i].line == line[k]) {
				found = 1;
				ck_assert_double_eq_tol(fabs(t.rows[i].eff / t.rows[i].fit[k] - 1),
							worst[k], 1e-12);
			}
		ck_assert(found);
	}
	/* The two-factor fit is the better one (docs/calibration.md). */
	ck_assert(med[PAR_GEMM_FIT_FLOPS_MINDIM] < med[PAR_GEMM_FIT_FLOPS]);

	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	par_gemm_write_table(m, &t);
	fclose(m);
	size_t lines = 0;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	ck_assert_uint_eq(lines, t.nrows + 1);
	ck_assert(!strncmp(text, "M,N,K,flops,ms,efficiency\n", 26));
	free(text);
	m = open_memstream(&text, &len);
	par_gemm_write_curves(m, &t);
	fclose(m);
	lines = 0;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	ck_assert_uint_eq(lines, 1 + t.nflops + t.nf + t.ng);
	free(text);
	m = open_memstream(&text, &len);
	par_gemm_write_report(m, "gemm.csv", gpu, &t, 1);
	fclose(m);
	char want[128];
	snprintf(want, sizeof want, "\"rows\": %zu, \"fits\": {\"flops\": {\"median_error\": %.4f",
		 t.nrows, med[0]);
	ck_assert_msg(strstr(text, want), "%s", text);
	free(text);
	par_gemm_table_free(&t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("calib");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, fits_its_own_closed_form);
	tcase_add_test(tc, groups_by_scope_and_refuses);
	tcase_add_test(tc, gemm_errors_report_files);
	suite_add_tcase(s, tc);
	return check_run(s);
}
