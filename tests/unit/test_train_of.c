/*
 * test_train_of.c - scenarios/train_of.c: the training step of a shipped
 * scenario points at the scenario's own parts and carries its sim keys,
 * with and without --set overrides.
 */
#include <check.h>
#include <stdlib.h>

#include "collectives/coll.h"
#include "parallel/compute.h"
#include "parallel/train.h"
#include "topology/topo.h"
#include "scenarios/scenario.h"
#include "scenarios/train_of.h"
#include "tests/checkmain.h"

#define SCENARIO CLUSTERSIM_SRCDIR "/scenarios/ddp-lesson.yaml"

static void load(struct scn *s, const char *const *sets, size_t n)
{
	char err[SCN_ERRLEN];
	ck_assert_msg(scn_load(s, SCENARIO, sets, n, err, sizeof err) == 0, "%s", err);
}

START_TEST(points_at_the_scenario)
{
	static struct scn s;
	load(&s, NULL, 0);
	struct par_train t;
	const struct par_compute_model *cm = (const void *)&s;  /* only stored */
	scn_train_of(&t, &s, cm);
	ck_assert_ptr_eq(t.model, &s.model);
	ck_assert_ptr_eq(t.training, &s.training);
	ck_assert_ptr_eq(t.layout, &s.parallel);
	ck_assert_ptr_eq(t.cluster, &s.cluster);
	ck_assert_ptr_eq(t.var, &s.variability);
	ck_assert_ptr_eq(t.failures, &s.failures);
	ck_assert_ptr_eq(t.compute, cm);
	ck_assert_ptr_eq(t.sim.algos, coll_algos);
	ck_assert_uint_eq(t.steps, s.sim.steps);
	ck_assert_uint_eq(t.seed, s.sim.seed);
	ck_assert_int_eq(t.sim.fidelity, s.sim.fidelity);
	ck_assert(t.sim.chunk_bytes == s.sim.chunk_bytes);
	ck_assert(!t.keep_steps && !t.rec && !t.finish);
}
END_TEST

START_TEST(carries_the_sim_keys)
{
	static struct scn s;
	const char *sets[] = { "sim.steps=7", "sim.seed=42", "sim.fidelity=analytic",
			       "sim.chunk=1MiB", "sim.symmetry=dp" };
	load(&s, sets, 5);
	struct par_train t;
	scn_train_of(&t, &s, NULL);
	ck_assert_uint_eq(t.steps, 7);
	ck_assert_uint_eq(t.seed, 42);
	ck_assert_int_eq(t.sim.fidelity, SIM_FIDELITY_ANALYTIC);
	ck_assert(t.sim.chunk_bytes == 1048576.0);
	ck_assert(t.symmetry_dp);
	load(&s, sets, 3);
	scn_train_of(&t, &s, NULL);
	ck_assert(!t.symmetry_dp);
	ck_assert(t.sim.chunk_bytes == SIM_DEFAULT_CHUNK_BYTES);
}
END_TEST

/* compute.interference auto: measured with a table that has the curves
 * (h200), none with a flat efficiency; measured and none as asked. */
START_TEST(interference_auto)
{
	static const struct {
		const char *eff, *interf;
		bool on, is_auto;
	} cases[] = {
		{ "compute.efficiency=h200", NULL, true, true },
		{ "compute.efficiency=0.5", NULL, false, false },
		{ "compute.efficiency=h200", "compute.interference=none", false, false },
		{ "compute.efficiency=h200", "compute.interference=measured", true, false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		static struct scn s;
		const char *sets[] = { cases[i].eff, cases[i].interf };
		load(&s, sets, cases[i].interf ? 2 : 1);
		char err[SCN_ERRLEN];
		struct par_compute_model *cm = par_compute_model_new(
			&s.compute, topo_gpu_find(s.cluster.gpu), s.training.precision, s.datadir,
			err, sizeof(err));
		ck_assert_msg(cm != NULL, "%s", err);
		struct par_train t;
		scn_train_of(&t, &s, cm);
		ck_assert_msg(t.interference == cases[i].on && t.interference_auto == cases[i].is_auto,
			      "case %zu: interference %d, auto %d", i, t.interference,
			      t.interference_auto);
		par_compute_model_free(cm);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("train_of");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, points_at_the_scenario);
	tcase_add_test(tc, carries_the_sim_keys);
	tcase_add_test(tc, interference_auto);
	suite_add_tcase(s, tc);
	return check_run(s);
}
