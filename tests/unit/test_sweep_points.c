/*
 * test_sweep_points.c - scenarios/sweep.c, the points of a sweep: varied
 * keys and ranges parsed (and refused with the key or the item), the
 * points' values with the last key fastest, the text and signature of a
 * known sweep, and points of a shipped scenario simulated: ok with its
 * figures, an invalid layout refused with the scenario's reason.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scenarios/sweep.h"
#include "tests/checkmain.h"

#define SCENARIO CLUSTERSIM_SRCDIR "/scenarios/ddp-lesson.yaml"

START_TEST(test_vary)
{
	struct scn_sweep sw = { 0 };
	char err[256];
	ck_assert_int_eq(scn_sweep_vary(&sw, "parallel.tp=1,2", err, sizeof(err)), 0);
	ck_assert_int_eq(scn_sweep_vary(&sw, "training.micro_batch=2..8", err, sizeof(err)), 0);
	ck_assert_uint_eq(sw.nvary, 2);
	ck_assert_uint_eq(sw.npoints, 6);
	ck_assert_str_eq(sw.vary[1].key, "training.micro_batch");
	ck_assert_uint_eq(sw.vary[1].n, 3);
	ck_assert_str_eq(sw.vary[1].values[2], "8");
	const char *v[SCN_SWEEP_MAX_VARY];
	scn_sweep_point_values(&sw, 0, v);
	ck_assert_str_eq(v[0], "1");
	ck_assert_str_eq(v[1], "2");
	scn_sweep_point_values(&sw, 4, v);  /* the last key fastest */
	ck_assert_str_eq(v[0], "2");
	ck_assert_str_eq(v[1], "4");
	scn_sweep_free(&sw);
}
END_TEST

START_TEST(test_vary_refused)
{
	struct scn_sweep sw = { 0 };
	char err[256];
	ck_assert_int_eq(scn_sweep_vary(&sw, "novalues=", err, sizeof(err)), SCN_SWEEP_BAD);
	ck_assert_str_eq(err, "expected KEY=V1,V2,..., got 'novalues='");
	scn_sweep_free(&sw);
	sw = (struct scn_sweep){ 0 };
	ck_assert_int_eq(scn_sweep_vary(&sw, "a=3..8", err, sizeof(err)), SCN_SWEEP_BAD_KEY);
	ck_assert_str_eq(err, "'3..8': a range a..b takes powers of two, a <= b");
	ck_assert_str_eq(sw.vary[sw.nvary - 1].key, "a");
	scn_sweep_free(&sw);
	sw = (struct scn_sweep){ 0 };
	ck_assert_int_eq(scn_sweep_vary(&sw, "a=1..4611686018427387904,1,2", err, sizeof(err)),
			 SCN_SWEEP_BAD_KEY);
	ck_assert_str_eq(err, "at most 64 values");
	scn_sweep_free(&sw);
	sw = (struct scn_sweep){ 0 };
	for (int k = 0; k < SCN_SWEEP_MAX_VARY; k++)
		ck_assert_int_eq(scn_sweep_vary(&sw, "k=1,2,3,4", err, sizeof(err)), 0);
	ck_assert_int_eq(scn_sweep_vary(&sw, "k=1", err, sizeof(err)), SCN_SWEEP_BAD);
	ck_assert_str_eq(err, "at most 8 keys");
	scn_sweep_free(&sw);
	sw = (struct scn_sweep){ 0 };
	for (int k = 0; k < 2; k++)  /* 47 values each: 2209 points */
		ck_assert_int_eq(scn_sweep_vary(&sw, "k=1..70368744177664", err, sizeof(err)), 0);
	ck_assert_int_eq(scn_sweep_vary(&sw, "k=1..70368744177664", err, sizeof(err)),
			 SCN_SWEEP_BAD_KEY);
	ck_assert_str_eq(err, "expected 1 to 100000 points in all");
	scn_sweep_free(&sw);
}
END_TEST

START_TEST(test_text_signature)
{
	const char *base[] = { "sim.steps=2" };
	struct scn_sweep sw = { .base = base, .nbase = 1 };
	char err[256];
	ck_assert_int_eq(scn_sweep_vary(&sw, "parallel.tp=1,2", err, sizeof(err)), 0);
	char *t = scn_sweep_text("x.yaml", &sw);
	/* The first value as given (the later ones are stored as ",=V" in the
	 * sweeps table's vary column: left as it is, the stored text must not
	 * move). */
	ck_assert_str_eq(t, "x.yaml --set sim.steps=2 --vary parallel.tp=1,=2");
	free(t);
	char *g = scn_sweep_signature("sha256:ab", &sw);
	ck_assert_str_eq(g, "18:clustersim-sweep-2,9:sha256:ab,1:1,11:sim.steps=2,1:1,"
			 "11:parallel.tp,1:2,1:1,1:2,");
	free(g);
	scn_sweep_free(&sw);
}
END_TEST

START_TEST(test_run_point)
{
	const char *base[] = { "sim.fidelity=analytic" };
	struct scn_sweep sw = { .base = base, .nbase = 1 };
	char err[256];
	ck_assert_int_eq(scn_sweep_vary(&sw, "parallel.tp=1,3", err, sizeof(err)), 0);
	struct scn_sweep_result r;
	scn_sweep_run_point(SCENARIO, &sw, 0, &r);
	ck_assert_int_eq(r.status, SCN_SWEEP_OK);
	ck_assert_uint_eq(r.point, 0);
	for (int i = 0; i < PAR_RESULT_FIGURES; i++)
		ck_assert_msg(!isnan(r.fig[i]), "figure %d", i);
	ck_assert_double_gt(r.fig[0], 0);
	scn_sweep_run_point(SCENARIO, &sw, 1, &r);
	ck_assert_int_eq(r.status, SCN_SWEEP_INVALID);
	ck_assert_msg(strstr(r.reason, "parallel.tp") != NULL, "%s", r.reason);
	ck_assert(isnan(r.fig[0]));
	ck_assert_str_eq(scn_sweep_status_names[SCN_SWEEP_INVALID], "invalid");
	scn_sweep_free(&sw);
}
END_TEST

static Suite *sweep_points_suite(void)
{
	Suite *s = suite_create("sweep_points");
	TCase *tc = tcase_create("points");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_vary);
	tcase_add_test(tc, test_vary_refused);
	tcase_add_test(tc, test_text_signature);
	tcase_add_test(tc, test_run_point);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(sweep_points_suite());
}
