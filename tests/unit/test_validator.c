/*
 * test_validator.c - the planner and the simulator cannot disagree on which
 * layouts are valid: every layout the planner enumerates (par_plan_each)
 * for a small model goes through the planner's estimate and through the
 * simulator's own path (the scenario's checks, scn_validate, then
 * par_step_resolve and par_train_plan); a layout is invalid for one exactly when it is for the
 * other. The models: GPT-3 1.3B on 16 H200 (dense), the same with a
 * sequence of 3,000 tokens (a context-parallel size that divides it but
 * not twice over: ring attention runs it, zig-zag would not), DDP's lesson
 * on 4 GPUs of the ideal cluster, and Mixtral 8x7B on 8 GPUs (experts, ep).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/coll.h"
#include "parallel/compute.h"
#include "parallel/plan.h"
#include "parallel/step.h"
#include "parallel/train.h"
#include "scenarios/scenario.h"
#include "scenarios/train_of.h"
#include "tests/checkmain.h"
#include "topology/topo.h"

struct verdicts {
	struct par_planner *pl;
	const struct scn *s;
	const struct par_compute_model *cm;
	unsigned total, invalid, disagree;
	char first[2048];                /* the first disagreement            */
};

static void judge(void *ctx, struct par_candidate *c)
{
	struct verdicts *v = ctx;
	struct par_candidate k = *c;
	int plan_invalid = par_plan_estimate(v->pl, &k) == 1 + PAR_DROP_INVALID;
	struct scn t = *v->s;
	t.parallel = c->layout;
	t.training.micro_batch = c->micro_batch;
	t.training.recompute = c->recompute;
	char err[SCN_ERRLEN] = "";
	int sim_invalid = scn_validate(&t, err, sizeof(err)) < 0;
	if (!sim_invalid) {
		struct par_train tr;
		struct par_report r;
		struct par_step st;
		scn_train_of(&tr, &t, v->cm);
		sim_invalid = par_step_resolve(&st, &tr, err, sizeof(err)) < 0 ||
			      par_train_plan(&st, &r, err, sizeof(err)) < 0;
		par_step_free(&st);
	}
	v->total++;
	v->invalid += (unsigned)sim_invalid;
	if (plan_invalid != sim_invalid && v->disagree++ == 0)
		snprintf(v->first, sizeof(v->first), "tp%u cp%u pp%u vpp%u dp%u ep%u zero%u mb%u "
			 "sp%d: planner %s, simulator %s (%s)", c->layout.tp, c->layout.cp,
			 c->layout.pp, c->layout.vpp, c->layout.dp, c->layout.ep, c->layout.zero,
			 c->micro_batch, c->layout.sp, plan_invalid ? "invalid" : "valid",
			 sim_invalid ? "invalid" : "valid", err);
}

/* Every enumerated layout of the scenario on `gpus` GPUs; the counts. */
static struct verdicts judge_all(const char *name, uint32_t gpus, const char *set)
{
	const char *sets[] = { set };
	struct scn s;
	char err[SCN_ERRLEN];
	ck_assert_msg(scn_load_unchecked(&s, name, sets, set ? 1 : 0, err, sizeof(err)) == 0,
		      "%s", err);
	uint32_t gpn = s.cluster.kind == TOPO_IDEAL ? 1 : s.cluster.gpus_per_node;
	s.cluster.nodes = gpus / gpn;  /* as clustersim plan --gpus does */
	struct par_compute_model *cm = par_compute_model_new(
		&s.compute, topo_gpu_find(s.cluster.gpu), s.training.precision, s.datadir, err,
		sizeof(err));
	ck_assert_msg(cm != NULL, "%s", err);
	struct verdicts v = { .s = &s, .cm = cm };
	v.pl = par_planner_new(&s.model, &s.training, &s.parallel, &s.cluster, gpus, cm,
			       s.sim.seed, NULL, 0);
	par_plan_each(v.pl, judge, &v);
	par_planner_free(v.pl);
	par_compute_model_free(cm);
	return v;
}

#define CHECK_AGREE(name, gpus, set)                                                      \
	do {                                                                               \
		struct verdicts v = judge_all(CLUSTERSIM_SRCDIR "/scenarios/" name, gpus, set); \
		ck_assert_msg(v.total > 100, "%s: only %u layouts", name, v.total);        \
		ck_assert_msg(v.invalid > 0 && v.invalid < v.total,                         \
			      "%s: %u of %u invalid, expected some of each", name,         \
			      v.invalid, v.total);                                          \
		ck_assert_msg(v.disagree == 0, "%s: %u of %u layouts disagree; first: %s", \
			      name, v.disagree, v.total, v.first);                          \
	} while (0)

START_TEST(dense)
{
	CHECK_AGREE("gpt3-1.3b-h200.yaml", 16, NULL);
}
END_TEST

START_TEST(odd_sequence)
{
	CHECK_AGREE("gpt3-1.3b-h200.yaml", 16, "training.seq=3000");
}
END_TEST

START_TEST(ideal_cluster)
{
	CHECK_AGREE("ddp-lesson.yaml", 4, NULL);
}
END_TEST

START_TEST(experts)
{
	CHECK_AGREE("mixtral-8x7b.yaml", 8, NULL);
}
END_TEST

/* One case a test, so each has its own timeout and CK_RUN_CASE picks it. */
static void add(Suite *s, const char *name, const TTest *test)
{
	TCase *tc = tcase_create(name);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test);
	suite_add_tcase(s, tc);
}

int main(void)
{
	Suite *s = suite_create("validator");
	add(s, "dense", dense);
	add(s, "odd_sequence", odd_sequence);
	add(s, "ideal_cluster", ideal_cluster);
	add(s, "experts", experts);
	return check_run(s);
}
