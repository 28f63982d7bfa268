/*
 * test_schedule.c - the registry of pipeline schedules (parallel/schedule.h)
 * and every schedule plug-in: its actions are a valid order, its closed
 * forms (bubble, pipeline phase, micro-batches in flight) are what the flow
 * simulation gives on an idealised pipeline, as SPEC C22 and C23 are.
 */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/coll.h"
#include "parallel/compute.h"
#include "parallel/model.h"
#include "parallel/schedule.h"
#include "parallel/train-int.h"
#include "parallel/train.h"
#include "scenarios/scenario.h"
#include "tests/checkmain.h"

/* ---- the registry ---------------------------------------------------------- */

START_TEST(registry_lookup)
{
	unsigned n = par_schedule_count();
	const char *const *names = par_schedule_names();
	ck_assert_uint_ge(n, 3);
	for (unsigned i = 0; i < n; i++) {
		const struct par_schedule_ops *o = par_schedule(i);
		ck_assert_ptr_eq(o, par_schedules[i]);
		ck_assert_msg(o->name && *o->name && o->help && *o->help, "schedule %u", i);
		ck_assert_msg(o->check && o->nactions && o->actions && o->bubble_s &&
			      o->pipeline_s && o->in_flight, "%s: a field is NULL", o->name);
		/* The help is one cell of docs/scenario.md's key table. */
		ck_assert_msg(!strpbrk(o->help, "|\n"), "%s: help '%s'", o->name, o->help);
		ck_assert_str_eq(par_schedule_help(i), o->help);
		ck_assert_str_eq(names[i], o->name);
		ck_assert_int_eq(par_schedule_find(o->name), (int)i);
		for (unsigned j = 0; j < i; j++)
			ck_assert_msg(strcmp(names[j], names[i]), "two schedules called %s",
				      names[i]);
	}
	ck_assert_ptr_null(names[n]);
	ck_assert_ptr_null(par_schedules[n]);
	ck_assert_int_eq(par_schedule_find("no-such-schedule"), -1);
	/* The key's values: the shipped scenarios name these. */
	ck_assert_int_eq(par_schedule_find("1f1b"), 0);
	ck_assert_int_eq(par_schedule_find("gpipe"), 1);
	ck_assert_int_eq(par_schedule_find("interleaved"), 2);
}
END_TEST

/* The key takes the registry's names: each parses to its index, and an
 * unknown one is refused with the list. */
START_TEST(key_takes_registry)
{
	char err[SCN_ERRLEN], set[96];
	struct scn s;
	for (unsigned i = 0; i < par_schedule_count(); i++) {
		snprintf(set, sizeof(set), "parallel.schedule=%s", par_schedule(i)->name);
		const char *sets[] = { "cluster.preset=ideal", "model.preset=gpt3-1.3b",
				       "training.seq=2048", "training.global_batch=8", set };
		ck_assert_msg(scn_load_unchecked(&s, NULL, sets, 5, err, sizeof(err)) == 0, "%s",
			      err);
		ck_assert_uint_eq(s.parallel.schedule, i);
	}
	const char *bad[] = { "cluster.preset=ideal", "model.preset=gpt3-1.3b",
			      "training.seq=2048", "training.global_batch=8",
			      "parallel.schedule=zigzag" };
	ck_assert_int_eq(scn_load_unchecked(&s, NULL, bad, 5, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "parallel.schedule") && strstr(err, "1f1b") &&
		      strstr(err, "interleaved"), "%s", err);
}
END_TEST

/*
 * Every schedule, every p, m, v its check accepts (up to 8, 16, 4): each
 * stage runs nactions() actions, every (mb, chunk) forward exactly once and
 * backward exactly once (whole, or input then weight), the forward first;
 * and the activations held at the peak, walking the actions, are
 * in_flight() micro-batches.
 */
START_TEST(actions_valid)
{
	char err[256];
	for (unsigned i = 0; i < par_schedule_count(); i++) {
		const struct par_schedule_ops *o = par_schedule(i);
		unsigned accepted = 0;
		for (uint32_t p = 1; p <= 8; p++)
		for (uint32_t m = 1; m <= 16; m++)
		for (uint32_t v = 1; v <= 4; v++) {
			if (o->check(p, m, v, err, sizeof(err)) < 0) {
				ck_assert_msg(strstr(err, "parallel."), "%s: '%s'", o->name, err);
				continue;
			}
			accepted++;
			for (uint32_t s = 0; s < p; s++) {
				size_t n = o->nactions(p, s, m, v);
				struct par_action *a = calloc(n + 1, sizeof(*a));
				/* [mb][chunk][kind]: the action's position + 1 */
				size_t *at = calloc((size_t)m * v * PAR_ACT_NKINDS, sizeof(*at));
				o->actions(p, s, m, v, a);
				double held = 0, peak = 0;
				for (size_t k = 0; k < n; k++) {
					ck_assert_msg(a[k].mb < m && a[k].chunk < v &&
						      a[k].kind < PAR_ACT_NKINDS,
						      "%s p%u m%u v%u s%u: action %zu", o->name, p, m,
						      v, s, k);
					size_t *slot = &at[((size_t)a[k].mb * v + a[k].chunk) *
							   PAR_ACT_NKINDS + a[k].kind];
					ck_assert_msg(*slot == 0, "%s p%u m%u v%u s%u: mb %u chunk "
						      "%u kind %u twice", o->name, p, m, v, s,
						      a[k].mb, a[k].chunk, a[k].kind);
					*slot = k + 1;
					held += a[k].kind == PAR_ACT_FORWARD ? 1
						: a[k].kind == PAR_ACT_BACKWARD ||
						  a[k].kind == PAR_ACT_BACKWARD_WEIGHT ? -1 : 0;
					peak = fmax(peak, held);
				}
				for (size_t c = 0; c < (size_t)m * v; c++) {
					const size_t *k = &at[c * PAR_ACT_NKINDS];
					int whole = k[PAR_ACT_BACKWARD] && !k[PAR_ACT_BACKWARD_INPUT] &&
						    !k[PAR_ACT_BACKWARD_WEIGHT];
					int split = !k[PAR_ACT_BACKWARD] && k[PAR_ACT_BACKWARD_INPUT] &&
						    k[PAR_ACT_BACKWARD_WEIGHT] &&
						    k[PAR_ACT_BACKWARD_INPUT] < k[PAR_ACT_BACKWARD_WEIGHT];
					size_t first_bwd = whole ? k[PAR_ACT_BACKWARD]
								 : k[PAR_ACT_BACKWARD_INPUT];
					ck_assert_msg(k[PAR_ACT_FORWARD] && (whole || split) &&
						      k[PAR_ACT_FORWARD] < first_bwd,
						      "%s p%u m%u v%u s%u: mb %zu chunk %zu", o->name, p,
						      m, v, s, c / v, c % v);
				}
				ck_assert_msg(held == 0, "%s: activations left", o->name);
				double want = o->in_flight(p, s, m, v);
				ck_assert_msg(fabs(peak / v - want) < 1e-12,
					      "%s p%u m%u v%u s%u: %.4f micro-batches held, in_flight "
					      "%.4f", o->name, p, m, v, s, peak / v, want);
				free(a);
				free(at);
			}
		}
		ck_assert_msg(accepted > 0, "%s accepts nothing", o->name);
	}
}
END_TEST

/* ---- closed forms against the flow simulation ----------------------------- */

/*
 * The idealised pipeline: the ideal cluster at 1 PB/s without latency,
 * efficiency 1, no launch overhead, 4 stages of 4 equal layers, 8
 * micro-batches. Layers so wide (h = 2^23, 16 tokens) that the embedding,
 * the head and the messages are under 1e-7 of a stage: the stages are
 * equal to that, as the closed forms assume.
 */
#define P 4
#define M 8
#define LAYERS_PER_STAGE 4

struct seen {
	double fwd_s, bwd_s;          /* compute of stage 1 (layers only)      */
	double wgt_s;                 /* of bwd_s, the weight gradients (dW)    */
	double act_max[P];            /* activations at their highest, by rank */
	uint64_t hash;                /* of every op done: rank, name, times   */
	uint64_t nops;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 1099511628211ull;
	return h;
}

static void see_op(void *ctx, uint32_t rank, const struct sim_op *op, sim_ps s, sim_ps e)
{
	struct seen *w = ctx;
	w->hash = fnv(w->hash, &rank, sizeof(rank));
	w->hash = fnv(w->hash, op->name, strlen(op->name));
	w->hash = fnv(w->hash, &s, sizeof(s));
	w->hash = fnv(w->hash, &e, sizeof(e));
	w->nops++;
	if (rank != 1 || op->kind != SIM_OP_COMPUTE)
		return;
	if (strstr(op->name, ".fwd."))
		w->fwd_s += sim_ps_to_s(e - s);
	else if (strstr(op->name, ".bwd.")) {
		w->bwd_s += sim_ps_to_s(e - s);
		size_t n = strlen(op->name);
		if (n > 3 && strcmp(op->name + n - 3, "_dw") == 0)
			w->wgt_s += sim_ps_to_s(e - s);
	}
}

static void see_mem(void *ctx, uint32_t rank, sim_ps t, unsigned cat, double bytes)
{
	struct seen *w = ctx;
	(void)t;
	if (cat == PAR_MEM_ACTIVATIONS && rank < P && bytes > w->act_max[rank])
		w->act_max[rank] = bytes;
}

static const struct sim_recorder_ops see_ops = { .op_done = see_op, .mem = see_mem };

/* Run the idealised pipeline with schedule `name` and v chunks; *layer is
 * one layer's activations of one micro-batch. */
static void run(const char *name, uint32_t v, struct par_report *r, struct seen *w,
		double *layer)
{
	char sched[64], vpp[32], err[SCN_ERRLEN];
	snprintf(sched, sizeof(sched), "parallel.schedule=%s", name);
	snprintf(vpp, sizeof(vpp), "parallel.vpp=%u", v);
	const char *sets[] = {
		"cluster.preset=ideal", "cluster.nodes=4", "cluster.network.bandwidth=1PB/s",
		"cluster.network.latency=0", "model.layers=16", "model.hidden=8388608",
		"model.heads=65536", "model.vocab=8", "training.seq=16", "training.global_batch=8",
		"training.micro_batch=1", "compute.efficiency=1", "compute.launch_overhead=0",
		"parallel.pp=4", "parallel.dp=1", sched, vpp,
	};
	struct scn s;
	ck_assert_msg(scn_load(&s, NULL, sets, ARRAY_SIZE(sets), err, sizeof(err)) == 0, "%s",
		      err);
	struct par_compute_model *cm = par_compute_model_new(
		&s.compute, topo_gpu_find(s.cluster.gpu), s.training.precision, s.datadir, err,
		sizeof(err));
	ck_assert_msg(cm != NULL, "%s", err);
	memset(w, 0, sizeof(*w));
	w->hash = 14695981039346656037ull;
	struct par_train t = {
		.model = &s.model, .training = &s.training, .layout = &s.parallel, .compute = cm,
		.cluster = &s.cluster, .steps = 1, .rec = &see_ops, .rec_ctx = w,
	};
	sim_config_init(&t.sim);
	t.sim.algos = coll_algos;
	ck_assert_msg(par_train_run(&t, r, err, sizeof(err)) == 0, "%s", err);
	*layer = par_layer_activation_bytes(&s.model, &s.training, 1, false);
	par_compute_model_free(cm);
}

/* Each schedule with the most chunks (up to 2) its check takes for P, M. */
START_TEST(closed_forms_match_flow)
{
	char err[256];
	for (unsigned i = 0; i < par_schedule_count(); i++) {
		const struct par_schedule_ops *o = par_schedule(i);
		uint32_t v = o->check(P, M, 2, err, sizeof(err)) == 0 ? 2 : 1;
		ck_assert_msg(o->check(P, M, v, err, sizeof(err)) == 0, "%s: %s", o->name, err);
		struct par_report r;
		struct seen w;
		double layer;
		run(o->name, v, &r, &w, &layer);
		struct par_stage_cost c = { .fwd_s = w.fwd_s / M, .bwd_s = w.bwd_s / M,
					    .wgt_s = w.wgt_s / M };
		double bubble = o->bubble_s(P, M, v, &c), phase = o->pipeline_s(P, M, v, &c);
		ck_assert_uint_eq(r.critical_rank, 0);
		ck_assert_msg(fabs(r.breakdown.bubble_s / bubble - 1) < 1e-6,
			      "%s v%u: simulated bubble %.9g s, closed form %.9g s", o->name, v,
			      r.breakdown.bubble_s, bubble);
		ck_assert_msg(fabs(r.pipeline_s / phase - 1) < 1e-6,
			      "%s v%u: simulated pipeline phase %.9g s, closed form %.9g s",
			      o->name, v, r.pipeline_s, phase);
		for (uint32_t s = 0; s < P; s++) {
			double held = w.act_max[s] / (LAYERS_PER_STAGE * layer);
			double want = o->in_flight(P, s, M, v);
			ck_assert_msg(fabs(held - want) < 1e-9,
				      "%s v%u stage %u: %.6f micro-batches in flight simulated, "
				      "%.6f closed form", o->name, v, s, held, want);
		}
	}
}
END_TEST

/*
 * The schedules run action by action (par_schedule_run_s): without
 * messages, each one's pipeline phase is its closed form's, for every
 * p, m, v its check takes; messages only delay it. By hand, 1F1B on 2
 * stages, 2 micro-batches, f = 1, b = 2, messages of 0.5 s: stage 0 runs
 * F0 0-1, F1 1-2; stage 1 F0 1.5-2.5, B0 2.5-4.5, F1 4.5-5.5, B1 5.5-7.5;
 * stage 0 B0 5-7, B1 8-10: 10 s, one more than (m + p - 1)(f + b).
 * Stages of their own costs pace it as the slowest would.
 */
static double lost_window(void *ctx, enum par_action_kind kind, uint32_t vs, double window)
{
	(void)ctx, (void)kind, (void)vs;
	return window;
}

START_TEST(run_action_by_action)
{
	char err[256];
	const uint32_t ps[] = { 2, 3, 4, 8 }, ms[] = { 1, 2, 4, 8, 16 }, vs[] = { 1, 2, 3 };
	for (unsigned i = 0; i < par_schedule_count(); i++) {
		const struct par_schedule_ops *o = par_schedule(i);
		for (unsigned a = 0; a < ARRAY_SIZE(ps); a++)
		for (unsigned b = 0; b < ARRAY_SIZE(ms); b++)
		for (unsigned k = 0; k < ARRAY_SIZE(vs); k++) {
			uint32_t p = ps[a], m = ms[b], v = vs[k];
			if (o->check(p, m, v, err, sizeof(err)))
				continue;
			double f = 0.25, bw = 0.625, fs[24], bs[24];
			for (unsigned j = 0; j < p * v; j++)
				fs[j] = f, bs[j] = bw;
			/* a split backward's halves half each (w NULL) */
			struct par_stage_cost c = { .fwd_s = v * f, .bwd_s = v * bw,
						    .wgt_s = v * bw / 2 };
			double want = o->pipeline_s(p, m, v, &c);
			double got = par_schedule_run_s(o, p, m, v, fs, bs, NULL, 0, NULL, NULL);
			ck_assert_msg(fabs(got / want - 1) < 1e-12,
				      "%s p%u m%u v%u: %.12g s run, %.12g s closed form", o->name, p, m,
				      v, got, want);
			double late = par_schedule_run_s(o, p, m, v, fs, bs, NULL, 0.01, NULL, NULL);
			ck_assert_msg(late >= got && late <= got + 2.0 * m * v * p * 0.01,
				      "%s p%u m%u v%u: %.12g s with messages, %.12g s without",
				      o->name, p, m, v, late, got);
		}
	}
	const struct par_schedule_ops *f1b1 = par_schedule((unsigned)par_schedule_find("1f1b"));
	const double one[] = { 1, 1 }, two[] = { 2, 2 };
	double near = -1;
	ck_assert_double_eq_tol(par_schedule_run_s(f1b1, 2, 2, 1, one, two, NULL, 0.5, NULL, NULL), 10,
				1e-12);
	/* A pass loses what moves beside it (lost = window): stage 0's F1
	 * starts as its F0 message leaves, 1-2.5; stage 1 F0 1.5-2.5, B0
	 * 2.5-4.5 with F1's message arriving beside it (+0.5), F1 5-6, B1 6-8;
	 * stage 0 B0 5-7, B1 8.5-10.5. */
	const struct par_sched_slow sl = { .lost = lost_window };
	ck_assert_double_eq_tol(par_schedule_run_s(f1b1, 2, 2, 1, one, two, NULL, 0.5, &sl, &near),
				10.5, 1e-12);
	ck_assert_double_eq_tol(near, 1.0, 1e-12);
	ck_assert_double_eq_tol(par_schedule_run_s(f1b1, 2, 2, 1, one, two, NULL, 0, NULL, NULL), 9, 1e-12);
	/* One plan run again with other costs gives what fresh runs give. */
	struct par_sched_plan *pr = par_schedule_plan_new(f1b1, 2, 2, 1);
	ck_assert(par_schedule_plan_is(pr, f1b1, 2, 2, 1) && !par_schedule_plan_is(pr, f1b1, 2, 4, 1));
	ck_assert_double_eq_tol(par_schedule_plan_run_s(pr, one, two, NULL, 0.5, &sl, NULL), 10.5, 1e-12);
	ck_assert_double_eq_tol(par_schedule_plan_run_s(pr, one, two, NULL, 0, NULL, NULL), 9, 1e-12);
	ck_assert_double_eq_tol(par_schedule_plan_run_s(pr, one, two, NULL, 0.5, NULL, NULL), 10, 1e-12);
	par_schedule_plan_free(pr);
	/* A slower last stage (backward 3 s): stage 1 F0 1-2, B0 2-5, F1 5-6,
	 * B1 6-9; stage 0 B0 5-7, B1 9-11. */
	const double slow[] = { 2, 3 };
	ck_assert_double_eq_tol(par_schedule_run_s(f1b1, 2, 2, 1, one, slow, NULL, 0, NULL, NULL), 11, 1e-12);
	/* The data-parallel reductions beside the backward: one micro-batch,
	 * each stage's reduction 3 s from its last backward's start, passes
	 * beside it losing a quarter, messages meanwhile 1.5 s. Stage 0 F0
	 * 0-1; stage 1 F0 1.5-2.5, B0 2.5-5 (2 s beside: +0.5), its message
	 * sent inside the reduction arrives at 6.5; stage 0 B0 6.5-9 (+0.5). */
	const double three[] = { 3 };
	const struct par_sched_slow red = { .dp_s = three, .dp_rate = 0.25, .dp_hop = 1.5 };
	ck_assert_double_eq_tol(par_schedule_run_s(f1b1, 2, 1, 1, one, two, NULL, 0.5, NULL, NULL), 7, 1e-12);
	ck_assert_double_eq_tol(par_schedule_run_s(f1b1, 2, 1, 1, one, two, NULL, 0.5, &red, &near), 9, 1e-12);
	ck_assert_double_eq_tol(near, 1.0, 1e-12);
}
END_TEST

/* The reference schedule runs GPipe's order: the same ops at the same
 * times on every rank, the same step. */
START_TEST(fthenb_equals_gpipe)
{
	struct par_report rg, rf;
	struct seen wg, wf;
	double layer;
	run("gpipe", 1, &rg, &wg, &layer);
	run("fthenb", 1, &rf, &wf, &layer);
	ck_assert_uint_gt(wg.nops, 0);
	ck_assert_uint_eq(wf.nops, wg.nops);
	ck_assert_msg(wf.hash == wg.hash, "fthenb's timeline differs from GPipe's");
	ck_assert_msg(rf.step_time_s == rg.step_time_s && rf.pipeline_s == rg.pipeline_s &&
		      rf.breakdown.bubble_s == rg.breakdown.bubble_s &&
		      rf.memory.peak == rg.memory.peak,
		      "fthenb step %.9g s, GPipe %.9g s", rf.step_time_s, rg.step_time_s);
}
END_TEST

/* ---- a backward split into input and weight gradients ------------------- */

/*
 * No shipped schedule splits the backward yet; these two (built through
 * par_b_build_with) do: every forward, then per micro-batch the input
 * gradients and at once the weight gradients (split_now), or every input
 * gradient and only then every weight gradient (split_late).
 */
static size_t split_nactions(uint32_t p, uint32_t s, uint32_t m, uint32_t v)
{
	(void)p, (void)s, (void)v;
	return 3 * (size_t)m;
}

static void split_now_actions(uint32_t p, uint32_t s, uint32_t m, uint32_t v,
			      struct par_action *out)
{
	(void)p, (void)s, (void)v;
	for (uint32_t i = 0; i < m; i++) {
		out[i] = (struct par_action){ .kind = PAR_ACT_FORWARD, .mb = i };
		out[m + 2 * i] = (struct par_action){ .kind = PAR_ACT_BACKWARD_INPUT, .mb = i };
		out[m + 2 * i + 1] = (struct par_action){ .kind = PAR_ACT_BACKWARD_WEIGHT, .mb = i };
	}
}

static void split_late_actions(uint32_t p, uint32_t s, uint32_t m, uint32_t v,
			       struct par_action *out)
{
	(void)p, (void)s, (void)v;
	for (uint32_t i = 0; i < m; i++) {
		out[i] = (struct par_action){ .kind = PAR_ACT_FORWARD, .mb = i };
		out[m + i] = (struct par_action){ .kind = PAR_ACT_BACKWARD_INPUT, .mb = i };
		out[2 * m + i] = (struct par_action){ .kind = PAR_ACT_BACKWARD_WEIGHT, .mb = i };
	}
}

static const struct par_schedule_ops split_now = {
	.name = "split-now", .nactions = split_nactions, .actions = split_now_actions,
};
static const struct par_schedule_ops split_late = {
	.name = "split-late", .nactions = split_nactions, .actions = split_late_actions,
};

/* A small model on the ideal cluster, pp stages, the rest data parallel. */
static struct scn split_scn;
static struct par_compute_model *split_cm;

static struct par_train split_setup(uint32_t gpus, uint32_t pp, const char *extra)
{
	char nodes[32], pps[32], err[SCN_ERRLEN];
	snprintf(nodes, sizeof(nodes), "cluster.nodes=%u", gpus);
	snprintf(pps, sizeof(pps), "parallel.pp=%u", pp);
	const char *sets[] = {
		"cluster.preset=ideal", nodes, "model.layers=8", "model.hidden=1024",
		"model.heads=8", "model.vocab=4096", "training.seq=256", "training.global_batch=8",
		"training.micro_batch=1", "compute.efficiency=1", "compute.launch_overhead=0",
		pps, extra ? extra : "parallel.tp=1",
	};
	ck_assert_msg(scn_load(&split_scn, NULL, sets, ARRAY_SIZE(sets), err, sizeof(err)) == 0,
		      "%s", err);
	split_cm = par_compute_model_new(&split_scn.compute, topo_gpu_find(split_scn.cluster.gpu),
					 split_scn.training.precision, split_scn.datadir, err,
					 sizeof(err));
	ck_assert_msg(split_cm != NULL, "%s", err);
	struct par_train t = {
		.model = &split_scn.model, .training = &split_scn.training,
		.layout = &split_scn.parallel, .compute = split_cm, .cluster = &split_scn.cluster,
		.steps = 1,
	};
	sim_config_init(&t.sim);
	t.sim.algos = coll_algos;
	return t;
}

static int is_dw(const char *name)
{
	size_t n = strlen(name);
	return n > 3 && !strcmp(name + n - 3, "_dw");
}

/* "L3.mb2.bwd.qkv_dx": micro-batch 2 of a backward kernel; -1 otherwise. */
static int bwd_mb(const char *name)
{
	const char *p = strstr(name, ".mb");
	unsigned mb;
	if (!p || !strstr(name, ".bwd.") || sscanf(p, ".mb%u", &mb) != 1)
		return -1;
	return (int)mb;
}

static int by_name_dur(const void *a, const void *b)
{
	const struct sim_op *x = *(const struct sim_op *const *)a;
	const struct sim_op *y = *(const struct sim_op *const *)b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->dur_ps > y->dur_ps) - (x->dur_ps < y->dur_ps);
}

/* What a program does, to compare a split one with GPipe's. */
struct prog_sum {
	const struct sim_op **compute;   /* its compute ops, sorted           */
	uint32_t ncompute;
	uint32_t ngrad_colls;            /* gradient collectives, their bytes */
	double grad_bytes;
	double mem_end[PAR_MEM_NCATS], act_peak;
};

static void summarise(const struct sim_program *prog, struct prog_sum *out)
{
	memset(out, 0, sizeof(*out));
	out->compute = calloc(prog->nops, sizeof(*out->compute));
	double act = 0;
	for (uint32_t i = 0; i < prog->nops; i++) {
		const struct sim_op *o = &prog->ops[i];
		if (o->kind == SIM_OP_COMPUTE)
			out->compute[out->ncompute++] = o;
		if (o->kind == SIM_OP_COLL && o->stream == STREAM_GRAD)
			out->ngrad_colls++, out->grad_bytes += o->bytes;
		out->mem_end[o->mem_cat] += o->mem_bytes;
		if (o->mem_cat == PAR_MEM_ACTIVATIONS) {
			act += o->mem_bytes;
			out->act_peak = fmax(out->act_peak, act);
		}
	}
	qsort(out->compute, out->ncompute, sizeof(*out->compute), by_name_dur);
}

/*
 * The split builds the same kernels as the whole backward (and reduces the
 * same gradient bytes), every input-gradient kernel of a micro-batch
 * before its weight gradients, the gradient sent on before the weight
 * gradients, and frees every activation, later than a whole backward does.
 */
START_TEST(split_backward_builds_dx_then_dw)
{
	/* 4 stages over 8 GPUs: data parallel 2 (DDP buckets), tensor
	 * parallel 1; then the first stage of 1 with tensor parallelism 2. */
	const uint32_t gpus[] = { 8, 2 }, pps[] = { 4, 1 };
	const char *extra[] = { NULL, "parallel.tp=2" };
	for (int cfg = 0; cfg < 2; cfg++) {
		struct par_train t = split_setup(gpus[cfg], pps[cfg], extra[cfg]);
		int gi = par_schedule_find("gpipe");
		ck_assert_int_ge(gi, 0);
		struct par_step step;
		char err[512];
		ck_assert_msg(par_step_resolve(&step, &t, err, sizeof(err)) == 0, "%s", err);
		for (uint32_t stage = 0; stage < pps[cfg]; stage++) {
			struct builder b;
			struct sim_program *g = par_b_build_with(&step, &b, stage, 0, par_schedule(gi));
			struct sim_program *now = par_b_build_with(&step, &b, stage, 0, &split_now);
			struct sim_program *late = par_b_build_with(&step, &b, stage, 0, &split_late);
			struct prog_sum sg, sn, sl;
			summarise(g, &sg), summarise(now, &sn), summarise(late, &sl);
			ck_assert_uint_eq(sn.ncompute, sg.ncompute);
			for (uint32_t i = 0; i < sg.ncompute; i++)
				ck_assert_msg(!by_name_dur(&sn.compute[i], &sg.compute[i]),
					      "stage %u: %s against GPipe's %s", stage,
					      sn.compute[i]->name, sg.compute[i]->name);
			/* The same gradients reduced (the buckets may split them
			 * otherwise: the norms' gradients come with the dX pass). */
			ck_assert(cfg || (sn.ngrad_colls > 0 && sg.ngrad_colls > 0));
			ck_assert(fabs(sn.grad_bytes - sg.grad_bytes) <= 1e-9 * sg.grad_bytes);
			for (int c = 0; c < PAR_MEM_NCATS; c++)
				ck_assert_msg(fabs(sn.mem_end[c] - sg.mem_end[c]) < 1 &&
					      fabs(sl.mem_end[c] - sg.mem_end[c]) < 1,
					      "stage %u category %d: %.0f B left, GPipe %.0f", stage, c,
					      sn.mem_end[c], sg.mem_end[c]);
			ck_assert_msg(fabs(sg.mem_end[PAR_MEM_ACTIVATIONS]) < 1, "activations left");
			/* Holding the activations until the weight pass. */
			ck_assert(sl.act_peak >= sg.act_peak && sn.act_peak >= sg.act_peak);
			/* In order, per micro-batch: dX kernels, the send, dW kernels. */
			ck_assert_uint_eq(step.micro_batches, cfg ? 8 : 4);
			for (int mb = 0; mb < (int)step.micro_batches; mb++) {
				uint32_t last_dx = 0, first_dw = UINT32_MAX, send = UINT32_MAX;
				for (uint32_t i = 0; i < now->nops; i++) {
					const struct sim_op *o = &now->ops[i];
					char want[32];
					snprintf(want, sizeof(want), "pp.mb%d.send.grad", mb);
					if (o->kind == SIM_OP_SEND && !strcmp(o->name, want))
						send = i;
					if (o->kind != SIM_OP_COMPUTE || bwd_mb(o->name) != mb)
						continue;
					if (is_dw(o->name) || strstr(o->name, "embed_bwd"))
						first_dw = first_dw < i ? first_dw : i;
					else
						last_dx = i;
				}
				ck_assert_msg(first_dw != UINT32_MAX && last_dx < first_dw,
					      "stage %u mb %d: a dX kernel after a dW one", stage, mb);
				if (stage > 0)
					ck_assert_msg(send > last_dx && send < first_dw,
						      "stage %u mb %d: gradient sent at op %u, dX "
						      "kernels up to %u, dW from %u", stage, mb, send,
						      last_dx, first_dw);
			}
			free(sg.compute), free(sn.compute), free(sl.compute);
			sim_program_free(g), sim_program_free(now), sim_program_free(late);
		}
		par_step_free(&step);
		par_compute_model_free(split_cm);
	}
}
END_TEST

/* What the split does not model is refused (BUG, an abort): parameters
 * sharded by ZeRO-3. */
START_TEST(split_backward_refuses_sharded_params)
{
	struct par_train t = split_setup(2, 1, "parallel.zero=3");
	struct par_step step;
	char err[512];
	ck_assert_msg(par_step_resolve(&step, &t, err, sizeof(err)) == 0, "%s", err);
	struct builder b;
	par_b_build_with(&step, &b, 0, 0, &split_now);
}
END_TEST

static Suite *schedule_suite(void)
{
	Suite *su = suite_create("schedule");
	TCase *t = tcase_create("registry");
	tcase_add_test(t, registry_lookup);
	tcase_add_test(t, key_takes_registry);
	tcase_add_test(t, actions_valid);
	suite_add_tcase(su, t);
	t = tcase_create("closed forms");
	tcase_set_timeout(t, 120);
	tcase_add_test(t, closed_forms_match_flow);
	tcase_add_test(t, run_action_by_action);
	tcase_add_test(t, fthenb_equals_gpipe);
	suite_add_tcase(su, t);
	t = tcase_create("split backward");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, split_backward_builds_dx_then_dw);
	tcase_add_test_raise_signal(t, split_backward_refuses_sharded_params, SIGABRT);
	suite_add_tcase(su, t);
	return su;
}

int main(void)
{
	return check_run(schedule_suite());
}
