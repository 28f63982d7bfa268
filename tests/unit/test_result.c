/*
 * test_result.c - unit tests for parallel/result.c, the description of a
 * run's result: names are unique (metrics rows, JSON keys within their
 * object, sweep columns); every field goes report -> metrics rows -> report
 * unchanged; the metrics rows are the ones `run --db` has always written;
 * the JSON of a known report, fitting and not, is byte for byte the object
 * `run --json` prints; a job's prefixed rows; the sweep figures, their
 * columns and the NAN of a layout that does not fit.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/result.h"
#include "sim/util.h"
#include "tests/checkmain.h"

/* Metrics rows in memory. */
struct rows {
	char name[64][160];
	double v[64];
	int n;
};

static int put(void *ctx, const char *name, double v)
{
	struct rows *r = ctx;
	ck_assert_int_lt(r->n, 64);
	snprintf(r->name[r->n], sizeof(r->name[0]), "%s", name);
	r->v[r->n++] = v;
	return 0;
}

static double get(void *ctx, const char *name)
{
	const struct rows *r = ctx;
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->name[i], name))
			return r->v[i];
	return 0;
}

static int has(const struct rows *r, const char *name)
{
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->name[i], name))
			return 1;
	return 0;
}

static int scalar(const struct par_result_field *f)
{
	return f->type != PAR_RESULT_STRING && f->type != PAR_RESULT_RANKS &&
	       f->type != PAR_RESULT_SERIES;
}

/* A report whose every scalar holds its own value (field i: i + 1, plus a
 * half for doubles), with three stragglers and three steps' times. */
static void distinct_report(struct par_report *r, double *steps)
{
	*r = (struct par_report){ 0 };
	for (size_t i = 0; i < par_result_nfields; i++) {
		const struct par_result_field *f = &par_result_fields[i];
		if (scalar(f))
			par_result_set(r, f, f->type == PAR_RESULT_BOOL ? 1
				       : (double)(i + 1) + (f->type == PAR_RESULT_DOUBLE ? 0.5 : 0));
	}
	r->nstragglers = 3;
	r->stragglers[0] = 11, r->stragglers[1] = 22, r->stragglers[2] = 33;
	r->steps = 3;
	steps[0] = 0.25, steps[1] = 0.5, steps[2] = 0.75;
	r->step_times = steps;
	r->strategy = "zero2";
}

START_TEST(test_names_unique)
{
	unsigned figures = 0;
	for (size_t i = 0; i < par_result_nfields; i++) {
		const struct par_result_field *a = &par_result_fields[i];
		ck_assert_ptr_nonnull(a->name);
		ck_assert_ptr_nonnull(a->unit);
		ck_assert_ptr_nonnull(a->help);
		ck_assert_msg(par_result_find(a->name) == a, "%s: found another", a->name);
		figures += a->figure != NULL;
		/* A double is printed with its format; integers and flags exactly. */
		if (a->type == PAR_RESULT_DOUBLE && !(a->flags & PAR_RESULT_NO_JSON))
			ck_assert_msg(a->fmt != NULL, "%s: no format", a->name);
		for (size_t k = i + 1; k < par_result_nfields; k++) {
			const struct par_result_field *b = &par_result_fields[k];
			ck_assert_str_ne(a->name, b->name);
			const char *ka = a->key ? a->key : a->name, *kb = b->key ? b->key : b->name;
			int same_obj = a->object == b->object ||
				       (a->object && b->object && !strcmp(a->object, b->object));
			if (same_obj && !(a->flags & PAR_RESULT_NO_JSON) &&
			    !(b->flags & PAR_RESULT_NO_JSON))
				ck_assert_msg(strcmp(ka, kb), "JSON key %s twice", ka);
			if (a->figure && b->figure)
				ck_assert_str_ne(a->figure, b->figure);
			/* The fields of one JSON object are consecutive. */
			if (a->object && b->object && !strcmp(a->object, b->object))
				for (size_t m = i + 1; m < k; m++)
					ck_assert_msg(par_result_fields[m].object &&
						      !strcmp(par_result_fields[m].object, a->object),
						      "object %s is split", a->object);
		}
	}
	ck_assert_uint_eq(figures, PAR_RESULT_FIGURES);
	ck_assert_ptr_null(par_result_find("no.such.figure"));
}
END_TEST

/* The memory categories are par_mem_name's, in its order. */
START_TEST(test_memory_names)
{
	for (int c = 0; c < PAR_MEM_NCATS; c++) {
		char name[48];
		snprintf(name, sizeof(name), "memory.%s", par_mem_name(c));
		const struct par_result_field *f = par_result_find(name);
		ck_assert_msg(f != NULL, "%s is not in the table", name);
		ck_assert_uint_eq(f->offset, offsetof(struct par_report, memory.bytes) +
				  (size_t)c * sizeof(double));
	}
}
END_TEST

START_TEST(test_round_trip)
{
	struct par_report r, back = { 0 };
	double steps[3];
	distinct_report(&r, steps);
	struct rows rows = { .n = 0 };
	ck_assert_int_eq(par_result_metrics(&r, "", PAR_RESULT_G_ALL, put, &rows), 0);
	par_result_from_metrics(&back, "", PAR_RESULT_G_ALL, 1, get, &rows);
	for (size_t i = 0; i < par_result_nfields; i++) {
		const struct par_result_field *f = &par_result_fields[i];
		if (!scalar(f))
			continue;
		double want = f->flags & PAR_RESULT_NO_METRIC ? 0 : par_result_get(&r, f);
		ck_assert_msg(par_result_get(&back, f) == want, "%s: %.17g, expected %.17g",
			      f->name, par_result_get(&back, f), want);
		ck_assert_msg((!(f->flags & PAR_RESULT_NO_METRIC)) == has(&rows, f->name),
			      "%s: metrics row %s", f->name,
			      f->flags & PAR_RESULT_NO_METRIC ? "written" : "missing");
	}
	ck_assert_uint_eq(back.nstragglers, 3);
	ck_assert_uint_eq(back.stragglers[2], 33);
	ck_assert_ptr_nonnull(back.step_times);
	for (int k = 0; k < 3; k++)
		ck_assert_double_eq(back.step_times[k], steps[k]);
	ck_assert_ptr_null(back.strategy);  /* from runs.config, not a metric */
	free(back.step_times);

	/* More stragglers stored than the report holds: the first ones. */
	struct rows many = rows;
	for (int i = 0; i < many.n; i++)
		if (!strcmp(many.name[i], "stragglers.n"))
			many.v[i] = 12;
	par_result_from_metrics(&back, "", PAR_RESULT_G_STRAGGLERS, 0, get, &many);
	ck_assert_uint_eq(back.nstragglers, ARRAY_SIZE(back.stragglers));
}
END_TEST

/* The rows `run --db` wrote before the table existed, no more, no fewer,
 * and those added since (interference_s). */
START_TEST(test_metrics_rows)
{
	static const char *const want[] = {
		"step_time_s", "tokens_per_s", "mfu", "hfu", "gpus", "dp", "micro_batches",
		"params", "flops_per_token", "compute_s", "exposed_comm_s", "bubble_s", "idle_s",
		"interference_s", "critical_rank", "memory.peak", "pipeline_s", "busiest_stage", "memory.capacity",
		"memory.reserve", "memory.fits", "memory.model_states", "offload.saved_bytes", "moe.imbalance",
		"moe.dropped", "moe.imbalance_s", "offload.host_s", "steps", "step_time_p50_s",
		"step_time_p90_s", "step_time_p99_s", "step_time_min_s", "step_time_max_s",
		"stragglers.n", "failures.job_mtbf_s", "failures.checkpoint_bytes",
		"failures.checkpoint_s", "failures.young_s", "failures.interval_s",
		"failures.goodput", "failures.interruptions", "failures.useful_s",
		"memory.weights", "memory.grads", "memory.optimizer", "memory.activations",
		"memory.logits", "memory.buffers", "straggler.0", "straggler.1", "straggler.2",
		"step.0", "step.1", "step.2",
	};
	struct par_report r;
	double steps[3];
	distinct_report(&r, steps);
	struct rows rows = { .n = 0 };
	par_result_metrics(&r, "", PAR_RESULT_G_ALL, put, &rows);
	ck_assert_int_eq(rows.n, (int)ARRAY_SIZE(want));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		ck_assert_msg(has(&rows, want[i]), "no row %s", want[i]);
	ck_assert_double_eq(get(&rows, "step.1"), 0.5);
	ck_assert_double_eq(get(&rows, "straggler.1"), 22);
	ck_assert_double_eq(get(&rows, "memory.fits"), 1);

	/* Without step times, no step rows. */
	r.step_times = NULL;
	rows.n = 0;
	par_result_metrics(&r, "", PAR_RESULT_G_ALL, put, &rows);
	ck_assert_int_eq(rows.n, (int)ARRAY_SIZE(want) - 3);
}
END_TEST

/* A job's rows: its name before each, only the groups asked for. */
START_TEST(test_prefix_groups)
{
	struct par_report r, back = { 0 };
	double steps[3];
	distinct_report(&r, steps);
	struct rows rows = { .n = 0 };
	par_result_metrics(&r, "job.a.", PAR_RESULT_G_FAILURES, put, &rows);
	ck_assert_int_eq(rows.n, 8);
	ck_assert(has(&rows, "job.a.failures.checkpoint_bytes"));
	ck_assert(has(&rows, "job.a.failures.interruptions"));
	par_result_from_metrics(&back, "job.a.", PAR_RESULT_G_FAILURES, 0, get, &rows);
	ck_assert(memcmp(&back.goodput, &r.goodput, sizeof(r.goodput)) == 0);
	ck_assert_double_eq(back.step_time_s, 0);  /* not asked for */
	rows.n = 0;
	par_result_metrics(&r, "job.a.alone.", PAR_RESULT_G_STEP_TIMES, put, &rows);
	ck_assert_int_eq(rows.n, 3);
	ck_assert(has(&rows, "job.a.alone.step.2"));
}
END_TEST

/* A put that fails stops the walk, and its code is returned. */
static int fail_put(void *ctx, const char *name, double v)
{
	(void)name, (void)v;
	return ++*(int *)ctx == 2 ? -7 : 0;
}

START_TEST(test_put_fails)
{
	struct par_report r;
	double steps[3];
	distinct_report(&r, steps);
	int calls = 0;
	ck_assert_int_eq(par_result_metrics(&r, "", PAR_RESULT_G_ALL, fail_put, &calls), -7);
	ck_assert_int_eq(calls, 2);
}
END_TEST

/* The JSON of r as a string (malloc'd). */
static char *json_of(const struct par_report *r, double wall_s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	par_result_json(f, r, wall_s);
	fclose(f);
	return buf;
}

static void known_report(struct par_report *r)
{
	*r = (struct par_report){
		.strategy = "zero1", .gpus = 16, .dp = 8, .micro_batches = 4,
		.step_time_s = 1.5, .tokens_per_s = 1234.56789012, .flops_per_token = 7.8e9,
		.mfu = 0.5, .hfu = 0.123456789, .params = 1.3e9 + 0.5,
		.memory = { .bytes = { 1e9 }, .model_states = 2e9, .peak = 3e9, .capacity = 8e10,
			    .fits = true },
		.breakdown = { 1, 0.25, 0.125, 0.125 },
		.critical_rank = 5, .busiest_stage = 1, .pipeline_s = 1.25,
		.events = 123456789012ull, .steps = 2, .step_min_s = 1, .step_p50_s = 1.25,
		.step_p90_s = 1.5, .step_p99_s = 1.75, .step_max_s = 2,
		.goodput = { .job_mtbf_s = 3600, .checkpoint_bytes = 1e9 + 1 },
		.stragglers = { 3, 7 }, .nstragglers = 2,
	};
}

START_TEST(test_json_known)
{
	struct par_report r;
	known_report(&r);
	char *j = json_of(&r, 0.5);
	ck_assert_str_eq(j,
		"{\"step_time_s\":1.5,\"tokens_per_s\":1234.56789,\"mfu\":0.5,\"hfu\":0.123457,\"steps\":2,"
		"\"step_time_p50_s\":1.25,\"step_time_p90_s\":1.5,\"step_time_p99_s\":1.75,"
		"\"step_time_min_s\":1,\"step_time_max_s\":2,\"failures\":{\"job_mtbf_s\":3600,"
		"\"checkpoint_bytes\":1000000001,\"checkpoint_s\":0,\"young_s\":0,\"interval_s\":0,"
		"\"goodput\":0,\"interruptions\":0,\"useful_s\":0},\"stragglers\":[3,7],"
		"\"memory\":{\"weights\":1000000000,\"grads\":0,\"optimizer\":0,\"activations\":0,"
		"\"logits\":0,\"buffers\":0,\"model_states\":2000000000,\"peak\":3000000000,"
		"\"capacity\":80000000000,\"reserve\":0,\"fits\":true},\"strategy\":\"zero1\","
		"\"offload\":{\"saved_bytes\":0,\"host_s\":0},\"moe\":{\"imbalance\":0,"
		"\"dropped\":0,\"imbalance_s\":0},\"breakdown\":{\"compute_s\":1,"
		"\"exposed_comm_s\":0.25,\"bubble_s\":0.125,\"idle_s\":0.125,\"interference_s\":0},"
		"\"pipeline_s\":1.25,"
		"\"critical_rank\":5,\"events\":123456789012,\"gpus\":16,\"dp\":8,"
		"\"micro_batches\":4,\"params\":1300000000.5,\"flops_per_token\":7800000000,"
		"\"wall_s\":0.500000}\n");
	free(j);
}
END_TEST

/* A layout that does not fit: throughput null, the steps and the
 * breakdown left out. */
START_TEST(test_json_unfit)
{
	struct par_report r;
	known_report(&r);
	r.memory.fits = false;
	r.nstragglers = 0;
	char *j = json_of(&r, 0.25);
	ck_assert_str_eq(j,
		"{\"step_time_s\":null,\"tokens_per_s\":null,\"mfu\":null,\"hfu\":null,"
		"\"failures\":{\"job_mtbf_s\":3600,\"checkpoint_bytes\":1000000001,"
		"\"checkpoint_s\":0,\"young_s\":0,\"interval_s\":0,\"goodput\":0,"
		"\"interruptions\":0,\"useful_s\":0},\"stragglers\":[],"
		"\"memory\":{\"weights\":1000000000,\"grads\":0,\"optimizer\":0,\"activations\":0,"
		"\"logits\":0,\"buffers\":0,\"model_states\":2000000000,\"peak\":3000000000,"
		"\"capacity\":80000000000,\"reserve\":0,\"fits\":false},\"strategy\":\"zero1\","
		"\"offload\":{\"saved_bytes\":0,\"host_s\":0},\"moe\":{\"imbalance\":0,"
		"\"dropped\":0,\"imbalance_s\":0},\"gpus\":16,\"dp\":8,\"micro_batches\":4,"
		"\"params\":1300000000.5,\"flops_per_token\":7800000000,\"wall_s\":0.250000}\n");
	free(j);
}
END_TEST

/* A job's "failures" object: every figure at %.17g. */
START_TEST(test_json_fields)
{
	struct par_report r;
	known_report(&r);
	r.goodput.goodput = 0.1;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	par_result_json_fields(f, &r, PAR_RESULT_G_FAILURES, "%.17g");
	fclose(f);
	ck_assert_str_eq(buf, "\"job_mtbf_s\":3600,\"checkpoint_bytes\":1000000001,"
			 "\"checkpoint_s\":0,\"young_s\":0,\"interval_s\":0,"
			 "\"goodput\":0.10000000000000001,\"interruptions\":0,\"useful_s\":0");
	free(buf);
}
END_TEST

/* The sweep figures: sweep_points' columns in order, NAN without a fit,
 * and back. */
START_TEST(test_figures)
{
	static const char *const columns[PAR_RESULT_FIGURES] = {
		"step_time_s", "tokens_per_s", "mfu", "hfu", "peak_bytes", "capacity_bytes",
		"fits", "compute_s", "exposed_comm_s", "bubble_s", "idle_s", "gpus", "dp",
		"micro_batches",
	};
	for (unsigned i = 0; i < PAR_RESULT_FIGURES; i++)
		ck_assert_str_eq(par_result_figure_name(i), columns[i]);
	struct par_report r, back;
	known_report(&r);
	double fig[PAR_RESULT_FIGURES];
	par_result_figures(&r, fig);
	ck_assert_double_eq(fig[2], 0.5);
	ck_assert_double_eq(fig[4], 3e9);
	ck_assert_double_eq(fig[6], 1);
	ck_assert_double_eq(fig[13], 4);
	par_result_from_figures(&back, fig);
	ck_assert_double_eq(back.mfu, 0.5);
	ck_assert_double_eq(back.memory.peak, 3e9);
	ck_assert(back.memory.fits);
	ck_assert_uint_eq(back.micro_batches, 4);

	r.memory.fits = false;  /* no_fit: only memory and layout are known */
	par_result_figures(&r, fig);
	for (unsigned i = 0; i < PAR_RESULT_FIGURES; i++) {
		int known = i >= 4 && i <= 6 ? 1 : i >= 11;
		ck_assert_msg(isnan(fig[i]) == !known, "%s", columns[i]);
	}
	for (unsigned i = 0; i < PAR_RESULT_FIGURES; i++)
		fig[i] = NAN;  /* invalid: nothing */
	par_result_from_figures(&back, fig);
	ck_assert(isnan(back.memory.peak));
	ck_assert_uint_eq(back.gpus, 0);
}
END_TEST

static Suite *result_suite(void)
{
	Suite *s = suite_create("result");
	TCase *tc = tcase_create("table");
	tcase_add_test(tc, test_names_unique);
	tcase_add_test(tc, test_memory_names);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_metrics_rows);
	tcase_add_test(tc, test_prefix_groups);
	tcase_add_test(tc, test_put_fails);
	tcase_add_test(tc, test_json_known);
	tcase_add_test(tc, test_json_unfit);
	tcase_add_test(tc, test_json_fields);
	tcase_add_test(tc, test_figures);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(result_suite());
}
