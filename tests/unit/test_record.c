/*
 * test_record.c - the timelines a run stores (scenarios/record.c): auto's
 * rule, and `sample` storing one pipeline, one TP group and the rank that
 * finished last, caught in flow fidelity from the spill and in analytic
 * fidelity by a second pass, with every rank's ranks row either way.
 */
#include <check.h>
#include <string.h>

#include "parallel/compute.h"
#include "parallel/step.h"
#include "parallel/train.h"
#include "scenarios/record.h"
#include "scenarios/scenario.h"
#include "scenarios/train_of.h"
#include "sim/store.h"
#include "tests/checkmain.h"
#include "tests/tmpdir.h"

#define GPT CLUSTERSIM_SRCDIR "/scenarios/gpt3-1.3b-h200.yaml"

START_TEST(auto_mode)
{
	ck_assert_int_eq(scn_record_mode(SCN_RECORD_AUTO, 8), SCN_RECORD_ALL);
	ck_assert_int_eq(scn_record_mode(SCN_RECORD_AUTO, SCN_RECORD_ALL_MAX), SCN_RECORD_ALL);
	ck_assert_int_eq(scn_record_mode(SCN_RECORD_AUTO, SCN_RECORD_ALL_MAX + 1),
			 SCN_RECORD_SAMPLE);
	ck_assert_int_eq(scn_record_mode(SCN_RECORD_NONE, 8), SCN_RECORD_NONE);
	ck_assert_int_eq(scn_record_mode(SCN_RECORD_ALL, 1u << 20), SCN_RECORD_ALL);
}
END_TEST

/*
 * GPT-3 1.3B on 8 H200, tp 2, dp 4, one straggler 3x slower: it finishes
 * last. Its seed puts it outside the sample (ranks 0 and 1), so the sample
 * must add it: from the spill (flow) or a second pass (analytic).
 */
static void sample_run(const char *fidelity)
{
	struct tmp d;
	tmp_init(&d, "test_record");
	char fid[64];
	snprintf(fid, sizeof(fid), "sim.fidelity=%s", fidelity);
	const char *sets[] = {
		"cluster.gpus_per_node=8", "cluster.network.nics_per_node=8",
		"parallel.tp=2", "training.global_batch=8", "training.micro_batch=1",
		"variability.stragglers=1", "variability.straggler_slowdown=3", "sim.seed=1", fid,
	};
	struct scn s;
	char err[SCN_ERRLEN];
	ck_assert_msg(scn_load(&s, GPT, sets, ARRAY_SIZE(sets), err, sizeof(err)) == 0, "%s",
		      err);
	struct par_compute_model *cm = par_compute_model_new(
		&s.compute, topo_gpu_find(s.cluster.gpu), s.training.precision, s.datadir, err,
		sizeof(err));
	ck_assert_msg(cm != NULL, "%s", err);
	struct par_train t;
	scn_train_of(&t, &s, cm);
	struct par_step step;
	struct par_report r;
	ck_assert_msg(par_step_resolve(&step, &t, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(par_train_plan(&step, &r, err, sizeof(err)) == 0, "%s", err);
	char *path = tmp_path(&d, "run.db");
	struct sim_store *st = sim_store_open(path, err, sizeof(err));
	ck_assert_msg(st != NULL, "%s", err);
	ck_assert_int_gt(sim_store_run_begin(st, "test", "{}", fidelity, r.gpus), 0);
	struct scn_recording *rec = scn_record_begin(&step, &t, st, SCN_RECORD_SAMPLE);
	ck_assert_ptr_nonnull(rec);
	ck_assert_int_eq(scn_record_simulate(rec, &step, &r, err, sizeof(err)), 0);
	ck_assert_uint_eq(r.nstragglers, 1);
	uint32_t last = r.critical_rank;
	ck_assert_uint_eq(last, r.stragglers[0]);
	ck_assert_msg(last >= 2, "the straggler (rank %u) is in the sample: pick another seed",
		      last);
	ck_assert_int_eq(scn_record_ranks(rec), 0);
	for (uint32_t k = 0; k < r.gpus; k++) {
		uint32_t n = sim_store_ops_stored(st, k);
		if (k < 2 || k == last)
			ck_assert_msg(n > 0, "%s: rank %u has no timeline", fidelity, k);
		else
			ck_assert_msg(n == 0, "%s: rank %u outside the sample has %u ops",
				      fidelity, k, n);
	}
	/* The last rank's timeline is whole: every rank runs the one program. */
	ck_assert_uint_eq(sim_store_ops_stored(st, last), sim_store_ops_stored(st, 0));
	ck_assert_int_eq(sim_store_run_end(st, r.sim_end_ps, r.events, 0), 0);
	scn_record_end(rec);
	sim_store_close(st);
	free(r.step_times);
	par_step_free(&step);
	par_compute_model_free(cm);
	free(path);
	tmp_clear(&d);
}

START_TEST(sample_flow_from_the_spill)
{
	sample_run("flow");
}
END_TEST

START_TEST(sample_analytic_second_pass)
{
	sample_run("analytic");
}
END_TEST

static Suite *record_suite(void)
{
	Suite *su = suite_create("record");
	TCase *t = tcase_create("record");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, auto_mode);
	tcase_add_test(t, sample_flow_from_the_spill);
	tcase_add_test(t, sample_analytic_second_pass);
	suite_add_tcase(su, t);
	return su;
}

int main(void)
{
	return check_run(record_suite());
}
