/*
 * test_train_of.c - scenarios/train_of.c: the training step of a shipped
 * scenario points at the scenario's own parts and carries its sim keys,
 * with and without --set overrides.
 */
#include <check.h>
#include <stdlib.h>

#include "collectives/coll.h"
#include "parallel/train.h"
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

int main(void)
{
	Suite *s = suite_create("train_of");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, points_at_the_scenario);
	tcase_add_test(tc, carries_the_sim_keys);
	suite_add_tcase(s, tc);
	return check_run(s);
}
