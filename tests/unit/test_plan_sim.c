/*
 * test_plan_sim.c - scenarios/plan_sim.c: the planner's best layouts of a
 * small model simulated on the pool and ranked; a worker that dies is a
 * failure named by fidelity and ranked last; the estimate's disagreement
 * with the ranking; the layout's name.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/compute.h"
#include "parallel/plan.h"
#include "scenarios/plan_sim.h"
#include "scenarios/scenario.h"
#include "parallel/schedule.h"
#include "tests/checkmain.h"
#include "topology/topo.h"

#define SCENARIO CLUSTERSIM_SRCDIR "/scenarios/gpt3-1.3b-h200.yaml"

struct seen {
	int n;
	char fidelity[8][16], why[8][256];
};

static void failed(void *ctx, const struct par_candidate *c, const char *fidelity,
		   const char *why)
{
	struct seen *s = ctx;
	(void)c;
	if (s->n < 8) {
		snprintf(s->fidelity[s->n], sizeof s->fidelity[0], "%s", fidelity);
		snprintf(s->why[s->n], sizeof s->why[0], "%s", why);
	}
	s->n++;
}

/* Simulate the best m of the planner's layouts on 8 GPUs, top in flow. */
static size_t plan(struct scn_plan_layout *v, size_t m, size_t top, struct seen *seen,
		   struct scn_plan_fails *f)
{
	static struct scn s;
	char err[SCN_ERRLEN];
	ck_assert_msg(scn_load_unchecked(&s, SCENARIO, NULL, 0, err, sizeof err) == 0, "%s", err);
	s.cluster.nodes = 8 / s.cluster.gpus_per_node;
	struct par_compute_model *cm = par_compute_model_new(
		&s.compute, topo_gpu_find(s.cluster.gpu), s.training.precision, s.datadir, err,
		sizeof err);
	ck_assert_msg(cm != NULL, "%s", err);
	struct par_planner *pl = par_planner_new(&s.model, &s.training, &s.parallel, &s.cluster,
						 8, cm, s.sim.seed, NULL, 0);
	struct par_candidate *cands;
	uint64_t dropped[PAR_DROP_NCAUSES], total;
	size_t n = par_plan(pl, &cands, dropped, &total);
	par_planner_free(pl);
	ck_assert_uint_ge(n, m);
	const struct scn_plan_hooks hooks = { .failed = failed, .ctx = seen };
	const struct scn_plan_run run = { .top = top, .jobs = 2, .more = cands, .nmore = n };
	struct scn_plan_layout *got;
	size_t nv;
	size_t nflow = scn_plan_simulate(&s, cm, cands, m, &run, &got, &nv, &hooks, f);
	ck_assert_uint_eq(nv, m);
	memcpy(v, got, m * sizeof(*v));
	free(got);
	free(cands);
	par_compute_model_free(cm);
	return nflow;
}

START_TEST(ranks_by_simulation)
{
	struct scn_plan_layout v[6];
	struct seen seen = { 0 };
	struct scn_plan_fails f;
	unsetenv("CLUSTERSIM_TEST_CRASH");
	size_t nflow = plan(v, 6, 2, &seen, &f);
	ck_assert_uint_eq(nflow, 2);
	ck_assert_int_eq(seen.n, 0);
	ck_assert_uint_eq(f.analytic + f.flow + f.failures, 0);
	unsigned ranks = 0;
	for (size_t i = 0; i < 6; i++) {
		ck_assert_uint_ge(v[i].est_rank, 1);
		ck_assert_uint_le(v[i].est_rank, 6);
		ranks |= 1u << v[i].est_rank;
		ck_assert(v[i].sim_s > 0 && v[i].r.mfu > 0 && v[i].r.peak_bytes > 0);
		ck_assert(i < nflow ? v[i].flow_s > 0 : isnan(v[i].flow_s));
		ck_assert(v[i].r.step_time_s == (i < nflow ? v[i].flow_s : v[i].sim_s));
	}
	ck_assert_uint_eq(ranks, 0x7e);  /* 1 to 6, each once */
	ck_assert(v[0].flow_s <= v[1].flow_s);
	for (size_t i = nflow + 1; i < 6; i++)
		ck_assert(v[i - 1].sim_s <= v[i].sim_s);
	/* The flow head was the analytic head. */
	for (size_t i = nflow; i < 6; i++)
		ck_assert(v[i].sim_s >= v[0].sim_s && v[i].sim_s >= v[1].sim_s);
	scn_plan_free(v, 6);
}
END_TEST

START_TEST(a_dead_worker_is_a_failure)
{
	struct scn_plan_layout v[4];
	struct seen seen = { 0 };
	struct scn_plan_fails f;
	setenv("CLUSTERSIM_TEST_CRASH", "2:KILL", 1);
	size_t nflow = plan(v, 4, 1, &seen, &f);
	unsetenv("CLUSTERSIM_TEST_CRASH");
	ck_assert_int_eq(seen.n, 1);
	ck_assert_str_eq(seen.fidelity[0], "analytic");
	ck_assert_msg(strstr(seen.why[0], "SIGKILL"), "%s", seen.why[0]);
	ck_assert_uint_eq(f.analytic, 1);
	ck_assert_uint_eq(f.failures, 1);
	ck_assert_uint_eq(nflow, 1);
	ck_assert_uint_eq(v[3].est_rank, 2);   /* ranked last, with why */
	ck_assert(isnan(v[3].sim_s));
	ck_assert_ptr_nonnull(v[3].why);
	scn_plan_free(v, 4);
}
END_TEST

START_TEST(order_and_name)
{
	struct scn_plan_layout v[3] = { { .est_rank = 3 }, { .est_rank = 1 }, { .est_rank = 2 } };
	struct scn_plan_order o;
	scn_plan_order(v, 3, &o);
	ck_assert_uint_eq(o.first, 3);
	ck_assert_uint_eq(o.pairs, 3);
	ck_assert_uint_eq(o.swaps, 2);
	ck_assert_uint_eq(o.worst, 2);
	struct par_candidate c = { .layout = { .tp = 8, .sp = 1, .pp = 4, .vpp = 2, .cp = 1,
					       .ep = 1, .dp = 2, .zero = 1 },
				   .micro_batch = 2, .recompute = PAR_RECOMPUTE_FULL };
	c.layout.schedule = (uint32_t)par_schedule_find("interleaved");
	char name[128];
	scn_plan_layout_name(&c, name, sizeof name);
	ck_assert_str_eq(name, "tp8+sp pp4 vpp2 cp1 ep1 dp2 mb2 zero1 rc=full");
	/* a schedule other than 1F1B (interleaved with chunks) is named */
	c.layout.vpp = 1, c.layout.schedule = (uint32_t)par_schedule_find("zb-h1");
	scn_plan_layout_name(&c, name, sizeof name);
	ck_assert_str_eq(name, "tp8+sp pp4 vpp1 cp1 ep1 dp2 mb2 zero1 rc=full zb-h1");
	c.layout.schedule = (uint32_t)par_schedule_find("1f1b");
	scn_plan_layout_name(&c, name, sizeof name);
	ck_assert_str_eq(name, "tp8+sp pp4 vpp1 cp1 ep1 dp2 mb2 zero1 rc=full");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("plan_sim");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, ranks_by_simulation);
	tcase_add_test(tc, a_dead_worker_is_a_failure);
	tcase_add_test(tc, order_and_name);
	suite_add_tcase(s, tc);
	return check_run(s);
}
