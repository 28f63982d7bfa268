/*
 * test_validation.c - scenarios/validation.c: the papers' FLOP formulas on
 * a model small enough to count by hand, the errors and their statistics,
 * reading the tables (the shipped ones, and rows that must be refused with
 * file and line) and one predicted collective.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/model.h"
#include "scenarios/validation.h"
#include "tests/checkmain.h"
#include "tests/tmpdir.h"

#define SHIPPED CLUSTERSIM_SRCDIR "/scenarios/validation"

/* l = 1 layer, h = 6, s = 6, B = 1, V = 16, one head of 6, FFN 4h, GeLU. */
static void tiny(struct par_model *m, struct par_training *t)
{
	*m = (struct par_model){ .layers = 1, .hidden = 6, .heads = 1, .ffn = 24, .vocab = 16,
				 .activation = PAR_GELU };
	*t = (struct par_training){ .seq = 6, .global_batch = 1, .micro_batch = 1 };
}

START_TEST(flops_by_hand)
{
	struct par_model m;
	struct par_training t;
	double f;
	tiny(&m, &t);
	/* 96 * 1 * 6 * 1 * 36 * (1 + 6/36 + 16/96) = 20736 * 4/3 */
	ck_assert_int_eq(val_formula_flops("megatron_sc21", &m, &t, &f), 0);
	ck_assert_double_eq_tol(f, 27648, 1e-9);
	/* 12 * 216 * [(1 + 1 + 1) * 1 + 4 + 16/12] = 2592 * 25/3 */
	ck_assert_int_eq(val_formula_flops("megatron_core", &m, &t, &f), 0);
	ck_assert_double_eq_tol(f, 21600, 1e-9);
	ck_assert_int_eq(val_formula_flops("palm", &m, &t, &f), -1);
}
END_TEST

/* Without recomputation, GQA or gating the two formulas count the same
 * logits (6 B s h V), and SC'21's layers are 4/3 of Core's (recomputed
 * forward). SwiGLU counts its FFN 1.5 times, GQA shrinks K and V. */
START_TEST(flops_relations)
{
	struct par_model m = { .layers = 96, .hidden = 12288, .heads = 96, .ffn = 4 * 12288,
			       .vocab = 51200, .activation = PAR_GELU };
	struct par_training t = { .seq = 2048, .global_batch = 1536, .micro_batch = 1 };
	double sc, core;
	val_formula_flops("megatron_sc21", &m, &t, &sc);
	val_formula_flops("megatron_core", &m, &t, &core);
	double logits = 6.0 * 1536 * 2048 * 12288 * 51200;
	ck_assert_double_eq_tol((core - logits) / (sc - logits), 0.75, 1e-12);
	struct par_model g = m;
	g.activation = PAR_SWIGLU;
	double swiglu;
	val_formula_flops("megatron_core", &g, &t, &swiglu);
	double B = 1536, s = 2048, l = 96, h = 12288;
	ck_assert_double_eq_tol(swiglu - core, 12 * B * s * l * h * h * 4 * 0.5, 1e3);
	g = m, g.kv_heads = 8;
	double gqa;
	val_formula_flops("megatron_core", &g, &t, &gqa);
	ck_assert_double_eq_tol(core - gqa, 12 * B * s * l * h * h * (1 - 8.0 / 96), 1e3);
}
END_TEST

START_TEST(errors_and_stats)
{
	struct val_case c[4] = {
		{ .group = "a", .metric = VAL_ITERATION, .measured = 2, .predicted = 2.5 },
		{ .group = "a", .metric = VAL_TFLOPS, .measured = 100, .predicted = 90 },
		{ .group = "b", .metric = VAL_TFLOPS, .measured = 100, .predicted = -1 },
		{ .group = "b", .metric = VAL_MODEL_STATES, .measured = 10, .predicted = 13 },
	};
	ck_assert_double_eq_tol(val_case_err(&c[0]), 0.25, 1e-12);
	ck_assert_double_eq_tol(val_throughput_err(&c[0]), -0.2, 1e-12);
	ck_assert_double_eq_tol(val_throughput_err(&c[1]), -0.1, 1e-12);
	struct validation v = { .cases = c, .ncases = 4 };
	struct val_stats all = val_case_stats(&v, NULL, 1);  /* training cases only */
	ck_assert_uint_eq(all.n, 2);
	ck_assert_uint_eq(all.missing, 1);
	ck_assert_double_eq_tol(all.median, 0.15, 1e-12);
	ck_assert_double_eq_tol(all.worst, 0.2, 1e-12);
	struct val_stats a = val_case_stats(&v, "a", 0);     /* as published */
	ck_assert_double_eq_tol(a.worst, 0.25, 1e-12);
	struct val_stats b = val_case_stats(&v, "b", 0);
	ck_assert_uint_eq(b.n, 1);
	ck_assert_double_eq_tol(b.median, 0.3, 1e-12);
	struct val_point p[3] = { { 1e6, 10, 12 }, { 1e8, 10, 9 }, { 2e8, 10, 10.5 } };
	struct val_coll k = { .pts = p, .npts = 3 };
	struct val_stats big = val_coll_stats(&k, VAL_COLL_TARGET_BYTES);
	ck_assert_uint_eq(big.n, 2);
	ck_assert_double_eq_tol(big.worst, 0.1, 1e-12);
	ck_assert_double_eq_tol(val_coll_stats(&k, 0).median, 0.1, 1e-12);
}
END_TEST

START_TEST(reads_the_shipped_tables)
{
	struct validation v;
	char err[2048];
	ck_assert_msg(val_read(&v, SHIPPED, 1, err, sizeof err) == VAL_OK, "%s", err);
	ck_assert_uint_ge(v.ncases, 30);
	ck_assert_uint_ge(v.ncolls, 3);
	size_t one = v.ncolls;
	for (size_t i = 0; i < v.ncolls; i++) {
		ck_assert_uint_gt(v.colls[i].npts, 0);
		if (!*v.colls[i].log && one == v.ncolls)
			one = i;
		for (size_t k = 0; k < v.colls[i].npts; k++)
			ck_assert(v.colls[i].pts[k].measured_Bps > 0);
	}
	/* A single figure, predicted in analytic fidelity: near its measurement. */
	ck_assert_uint_lt(one, v.ncolls);
	ck_assert_msg(val_run_coll(&v, one, err, sizeof err) == VAL_OK, "%s", err);
	const struct val_point *p = &v.colls[one].pts[0];
	ck_assert_msg(p->predicted_Bps > 0.5 * p->measured_Bps &&
		      p->predicted_Bps < 2 * p->measured_Bps, "%g against %g", p->predicted_Bps,
		      p->measured_Bps);
	val_free(&v);
}
END_TEST

static int read_bad(const char *cases, char *err, size_t errlen)
{
	struct tmp t;
	tmp_init(&t, "test_validation");
	char *p = tmp_path(&t, "cases.csv");
	FILE *f = fopen(p, "w");
	fputs(cases, f);
	fclose(f);
	free(p);
	p = tmp_path(&t, "collectives.csv");
	f = fopen(p, "w");
	fputs("id,log,cluster,nodes,algo,bytes,measured_GBps,per,source,note\n"
	      "x,,dgx-h100,2,ring,1073741824,100,gpu,s,n\n", f);
	fclose(f);
	free(p);
	struct validation v;
	int rc = val_read(&v, t.dir, 1, err, errlen);
	val_free(&v);
	tmp_clear(&t);
	return rc;
}

START_TEST(refuses_bad_rows)
{
	char err[2048];
	const char *head = "id,file,group,metric,value,unit,formula,source\n";
	char buf[512];
	snprintf(buf, sizeof buf, "%sa,a.yaml,g,speed,1,x,megatron_sc21,s\n", head);
	ck_assert_int_eq(read_bad(buf, err, sizeof err), VAL_BADINPUT);
	ck_assert_msg(strstr(err, "cases.csv:2: column 'metric'") && strstr(err, "'speed'"), "%s",
		      err);
	snprintf(buf, sizeof buf, "%sa,a.yaml,g,achieved_tflops_per_gpu,1,x,palm,s\n", head);
	ck_assert_int_eq(read_bad(buf, err, sizeof err), VAL_BADINPUT);
	ck_assert_msg(strstr(err, "column 'formula'") && strstr(err, "'palm'"), "%s", err);
	snprintf(buf, sizeof buf, "%sa,,g,iteration_time,1,s,,s\n", head);
	ck_assert_int_eq(read_bad(buf, err, sizeof err), VAL_BADINPUT);
	ck_assert_msg(strstr(err, "must not be empty"), "%s", err);
	snprintf(buf, sizeof buf, "%sa,a.yaml,g,iteration_time,1,s,,s\n", head);
	ck_assert_msg(read_bad(buf, err, sizeof err) == VAL_OK, "%s", err);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("validation");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, flops_by_hand);
	tcase_add_test(tc, flops_relations);
	tcase_add_test(tc, errors_and_stats);
	tcase_add_test(tc, reads_the_shipped_tables);
	tcase_add_test(tc, refuses_bad_rows);
	suite_add_tcase(s, tc);
	return check_run(s);
}
