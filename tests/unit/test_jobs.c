/*
 * test_jobs.c - unit tests for parallel/jobs.c, several jobs on one
 * cluster: two jobs slow each other only when their traffic shares links
 * (and those links are short of bandwidth), the links they share are the
 * ones named, jobs step on their own clocks, results repeat, a job's jitter
 * does not depend on a job it never meets, a job alone matches `run` of the
 * same job, and placement errors.
 *
 * The cluster: 6 DGX H100 nodes, two under each leaf switch of a rail, the
 * leaves' uplinks oversubscribed 2:1 (a leaf's uplink carries one node's
 * NIC bandwidth per rail). Each job: GPT-3 XL cut to 4 layers, DDP over 16
 * GPUs of 2 nodes, whose gradient all-reduce crosses the network.
 *
 * Needs CLUSTERSIM_SRCDIR for the presets.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectives/coll.h"
#include "parallel/jobs.h"
#include "scenarios/scenario.h"
#include "tests/checkmain.h"

#ifndef CLUSTERSIM_SRCDIR
#error "build with -DCLUSTERSIM_SRCDIR='\"/path/to/source\"'"
#endif

#define CLUSTER								\
	"cluster:\n  preset: dgx-h100\n  nodes: 6\n"			\
	"  network: {nodes_per_leaf: 2, oversubscription: %g}\n"	\
	"model: {preset: gpt3-1.3b, layers: 4}\n"			\
	"training: {seq: 2048, global_batch: 32, micro_batch: 2, flash_attention: true}\n" \
	"sim: {fidelity: flow, steps: %u}\n"				\
	"variability: {jitter: %s, jitter_cv: 0.05}\n"			\
	"jobs:\n"							\
	"  - {name: a, nodes: 2, first_node: %u}\n"			\
	"  - {name: b, nodes: 2, first_node: %u}\n"

/* A loaded scenario of two jobs and what par_jobs_run needs of it. */
struct two {
	struct scn_jobs js;
	struct par_compute_model *cm[2];
	struct par_job job[2];
	struct par_jobs run;
	struct par_jobs_result res;
};

static void two_load(struct two *t, double oversub, unsigned steps, const char *jitter,
		     unsigned a_node, unsigned b_node)
{
	char path[] = "/tmp/test_jobs.XXXXXX.yaml", err[SCN_ERRLEN] = "";
	*t = (struct two){ 0 };
	int fd = mkstemps(path, 5);
	ck_assert_int_ge(fd, 0);
	FILE *f = fdopen(fd, "w");
	fprintf(f, CLUSTER, oversub, steps, jitter, a_node, b_node);
	fclose(f);
	/* Presets come from the source tree: the file sits in /tmp. */
	int rc = scn_load_jobs(&t->js, path, NULL, 0, err, sizeof err);
	unlink(path);
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_uint_eq(t->js.n, 2);
	for (int i = 0; i < 2; i++) {
		const struct scn *s = &t->js.job[i].s;
		t->cm[i] = par_compute_model_new(&s->compute, topo_gpu_find(s->cluster.gpu),
						 s->training.precision, s->datadir, err, sizeof err);
		ck_assert_msg(t->cm[i] != NULL, "%s", err);
		struct par_train *tr = &t->job[i].train;
		*tr = (struct par_train){
			.model = &s->model, .training = &s->training, .layout = &s->parallel,
			.compute = t->cm[i], .cluster = &s->cluster, .steps = s->sim.steps,
			.seed = s->sim.seed,
		};
		sim_config_init(&tr->sim);
		tr->sim.fidelity = s->sim.fidelity;
		tr->sim.algos = coll_algos;
		t->job[i].name = t->js.job[i].name;
		t->job[i].first_rank = t->js.job[i].first_node * 8;
	}
	t->run = (struct par_jobs){
		.job = t->job, .n = 2, .cluster = &t->js.top.cluster, .sim = t->job[0].train.sim,
		.steps = t->js.top.sim.steps, .seed = t->js.top.sim.seed,
		.var = &t->js.top.variability,
	};
}

static void two_run(struct two *t)
{
	char err[1024] = "";
	int rc = par_jobs_run(&t->run, &t->res, err, sizeof err);
	ck_assert_msg(rc == 0, "par_jobs_run: %s", err);
}

static void two_free(struct two *t)
{
	par_jobs_result_free(&t->res);
	for (int i = 0; i < 2; i++)
		par_compute_model_free(t->cm[i]);
	scn_jobs_free(&t->js);
}

/* Jobs under different leaves (nodes 0-1 and 2-3) share no link: each
 * steps exactly as fast together as alone. */
START_TEST(apart_no_slowdown)
{
	struct two t;
	two_load(&t, 2, 1, "none", 0, 2);
	two_run(&t);
	ck_assert_uint_eq(t.res.nlinks, 0);
	for (int i = 0; i < 2; i++)
		ck_assert_msg(t.res.shared[i].step_time_s == t.res.alone[i].step_time_s,
			      "job %d: %.12g s shared, %.12g s alone", i,
			      t.res.shared[i].step_time_s, t.res.alone[i].step_time_s);
	two_free(&t);
}
END_TEST

/* Nodes 1-2 and 3-4 both cross leaf 1 (nodes 2 and 3) of every rail: its
 * uplink and downlink carry both all-reduces, and at 2:1 they slow both. */
START_TEST(sharing_slows_both)
{
	struct two t;
	two_load(&t, 2, 1, "none", 1, 3);
	two_run(&t);
	ck_assert_uint_eq(t.res.nlinks, 16);  /* 8 rails (NICs) x (up, down) */
	for (size_t l = 0; l < t.res.nlinks; l++) {
		const struct par_link_share *ls = &t.res.links[l];
		ck_assert_msg(strstr(ls->name, ".leaf1.") != NULL, "shared link %s", ls->name);
		ck_assert_msg(ls->bytes[0] > 0 && ls->bytes[1] > 0, "%s: %g and %g bytes",
			      ls->name, ls->bytes[0], ls->bytes[1]);
		ck_assert(l == 0 || ls->bytes[0] + ls->bytes[1] <=
			  t.res.links[l - 1].bytes[0] + t.res.links[l - 1].bytes[1]);
	}
	for (int i = 0; i < 2; i++) {
		double slow = t.res.shared[i].step_time_s / t.res.alone[i].step_time_s;
		ck_assert_msg(slow > 1.005, "job %d: shared / alone = %.6f", i, slow);
	}
	two_free(&t);
}
END_TEST

/* The same placement on a full-bisection fabric: the leaf's uplink has
 * room for both nodes' traffic, so sharing it costs next to nothing: the
 * chunks of the two flows still wait for each other now and then (a chunk
 * holds every link of its route at once), 0.02 % of job b's step here,
 * against over 0.5 % at 2:1. */
START_TEST(sharing_without_shortage)
{
	struct two t;
	two_load(&t, 1, 1, "none", 1, 3);
	two_run(&t);
	ck_assert_uint_eq(t.res.nlinks, 16);
	for (int i = 0; i < 2; i++) {
		double slow = t.res.shared[i].step_time_s / t.res.alone[i].step_time_s;
		ck_assert_msg(slow >= 1 && slow < 1.001, "job %d: shared / alone = %.12f", i, slow);
	}
	two_free(&t);
}
END_TEST

/* Three steps each: every job times three, in order, each shared step at
 * least as long as alone; a second run repeats every figure. */
START_TEST(steps_repeat)
{
	struct two t, u;
	two_load(&t, 2, 3, "none", 1, 3);
	two_load(&u, 2, 3, "none", 1, 3);
	two_run(&t);
	two_run(&u);
	for (int i = 0; i < 2; i++) {
		ck_assert_uint_eq(t.res.shared[i].steps, 3);
		for (int k = 0; k < 3; k++) {
			ck_assert(t.res.shared[i].step_times[k] == u.res.shared[i].step_times[k]);
			ck_assert(t.res.alone[i].step_times[k] == u.res.alone[i].step_times[k]);
			ck_assert_msg(t.res.shared[i].step_times[k] >=
				      t.res.alone[i].step_times[k] - 1e-12,
				      "job %d step %d: %.9g shared, %.9g alone", i, k,
				      t.res.shared[i].step_times[k], t.res.alone[i].step_times[k]);
		}
	}
	ck_assert(t.res.events == u.res.events && t.res.events > 0);
	two_free(&t);
	two_free(&u);
}
END_TEST

/* Jitter: each job draws from its own generator, so jobs that never meet
 * step the same together as alone, and the draws do vary the steps. */
START_TEST(jitter_own_generator)
{
	struct two t;
	two_load(&t, 2, 4, "lognormal", 0, 2);
	two_run(&t);
	for (int i = 0; i < 2; i++) {
		const struct par_report *al = &t.res.alone[i], *sh = &t.res.shared[i];
		for (int k = 0; k < 4; k++)
			ck_assert_msg(sh->step_times[k] == al->step_times[k],
				      "job %d step %d: %.12g shared, %.12g alone", i, k,
				      sh->step_times[k], al->step_times[k]);
		ck_assert_msg(al->step_max_s > al->step_min_s, "job %d: no spread", i);
	}
	ck_assert(t.res.alone[0].step_times[0] != t.res.alone[1].step_times[0]);
	two_free(&t);
}
END_TEST

/* A start offset moves where the jobs' phases meet: under one leaf each it
 * changes nothing; crossing leaf 1 it changes the shared steps, the same
 * way every time, and never a job's steps alone. */
START_TEST(start_offset)
{
	struct two t, u, v;
	two_load(&t, 2, 3, "none", 0, 2);
	t.job[1].start_ps = 50 * 1000000000LL;    /* 50 ms */
	two_run(&t);
	for (int i = 0; i < 2; i++)
		ck_assert(t.res.shared[i].step_time_s == t.res.alone[i].step_time_s);
	two_load(&u, 2, 3, "none", 1, 3);
	two_load(&v, 2, 3, "none", 1, 3);
	v.job[1].start_ps = 50 * 1000000000LL;
	two_run(&u);
	two_run(&v);
	ck_assert(u.res.alone[1].step_time_s == v.res.alone[1].step_time_s);
	ck_assert_msg(u.res.shared[0].step_time_s != v.res.shared[0].step_time_s,
		      "job a: %.12g s with b from 0, %.12g s with b from 50 ms",
		      u.res.shared[0].step_time_s, v.res.shared[0].step_time_s);
	two_free(&t);
	two_free(&u);
	two_free(&v);
}
END_TEST

/* A job alone is the job as `run` simulates it on a cluster of its nodes. */
START_TEST(alone_is_run)
{
	struct two t;
	two_load(&t, 2, 1, "none", 0, 2);
	two_run(&t);
	struct par_report r;
	char err[1024];
	ck_assert_msg(par_train_run(&t.job[0].train, &r, err, sizeof err) == 0, "%s", err);
	ck_assert_msg(r.step_time_s == t.res.alone[0].step_time_s, "run %.12g, alone %.12g",
		      r.step_time_s, t.res.alone[0].step_time_s);
	two_free(&t);
}
END_TEST

/* A job that starts so late that the other would run past
 * PAR_JOBS_MAX_STEPS steps together is refused before the run together:
 * the ready call (which opens the database) is never made. */
static int ready_calls;
static int count_ready(void *ctx, char *err, size_t errlen)
{
	(void)ctx, (void)err, (void)errlen;
	ready_calls++;
	return 0;
}

START_TEST(late_start_bounded)
{
	struct two t;
	char err[1024] = "";
	two_load(&t, 2, 1, "none", 0, 2);
	t.run.ready = count_ready;
	ready_calls = 0;
	t.job[1].start_ps = 86400 * SIM_PS_PER_S;  /* 1 day */
	ck_assert_int_eq(par_jobs_run(&t.run, &t.res, err, sizeof err), PAR_JOBS_TOO_LONG);
	ck_assert_msg(strstr(err, "job a (steps of") && strstr(err, "until job b (start 86400 s)") &&
		      strstr(err, "at most sim.steps + 10000"), "%s", err);
	ck_assert_int_eq(ready_calls, 0);
	par_jobs_result_free(&t.res);
	/* Within the bound, ready is called once, before the run together. */
	t.job[1].start_ps = 50 * 1000000000LL;    /* 50 ms */
	ck_assert_msg(par_jobs_run(&t.run, &t.res, err, sizeof err) == 0, "%s", err);
	ck_assert_int_eq(ready_calls, 1);
	two_free(&t);
}
END_TEST

/* Placement and fidelity are checked before anything runs. */
START_TEST(plan_errors)
{
	struct two t;
	char err[1024];
	two_load(&t, 2, 1, "none", 0, 2);
	t.job[1].first_rank = 8;
	ck_assert_int_eq(par_jobs_plan(&t.run, &t.res, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "job b: its GPUs (8 to 23) overlap job a's (0 to 15)"), "%s", err);
	par_jobs_result_free(&t.res);
	t.job[1].first_rank = 40;
	ck_assert_int_eq(par_jobs_plan(&t.run, &t.res, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "job b: GPUs 40 to 55, but the cluster has 48"), "%s", err);
	par_jobs_result_free(&t.res);
	t.job[1].first_rank = 16;
	t.run.sim.fidelity = SIM_FIDELITY_ANALYTIC;
	ck_assert_int_eq(par_jobs_plan(&t.run, &t.res, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "flow fidelity only"), "%s", err);
	two_free(&t);
}
END_TEST

static Suite *jobs_suite(void)
{
	Suite *s = suite_create("jobs");
	TCase *tc = tcase_create("jobs");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, apart_no_slowdown);
	tcase_add_test(tc, sharing_slows_both);
	tcase_add_test(tc, sharing_without_shortage);
	tcase_add_test(tc, steps_repeat);
	tcase_add_test(tc, jitter_own_generator);
	tcase_add_test(tc, start_offset);
	tcase_add_test(tc, alone_is_run);
	tcase_add_test(tc, plan_errors);
	tcase_add_test(tc, late_start_bounded);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(jobs_suite());
}
