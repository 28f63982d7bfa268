/*
 * test_pipeline_spec.c - SPEC C20-C24 and C29 pinned by number: Megatron
 * tensor parallelism's collectives and their cost against compute, the
 * pipeline bubble of GPipe, 1F1B and interleaved 1F1B, activations in
 * flight, the [TP, CP, PP, DP] layout, the bubbles of the schedules
 * that split the backward (ZB-H1), and tensor-parallel communication
 * pipelined with its GEMMs (parallel.tp_overlap).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectives/coll.h"
#include "parallel/compute.h"
#include "parallel/layout.h"
#include "parallel/model.h"
#include "parallel/schedule.h"
#include "parallel/step.h"
#include "parallel/train.h"
#include "scenarios/scenario.h"
#include "tests/checkmain.h"

#define MAX_SETS 24

/* Scenario text: the idealised setting of SPEC.md on the ideal cluster. */
static const char *ideal_yaml =
	"cluster:\n  preset: ideal\n  nodes: 8\n  network:\n    bandwidth: 1PB/s\n"
	"    latency: 0\n"
	"model:\n  layers: 16\n  hidden: 8192\n  heads: 64\n  vocab: 8\n"
	"training:\n  seq: 2048\n  global_batch: 32\n  micro_batch: 1\n"
	"compute:\n  efficiency: 1\n  launch_overhead: 0\n";

/* What rank `who` did, and every rank's largest activation footprint. */
struct seen {
	uint32_t who;
	unsigned ncoll;
	struct { char name[96]; double bytes, s; int coll; } coll[512];
	double gemm_fwd_s;            /* forward GEMMs of layer 0, rank `who` */
	double act_max[64];           /* activations at their highest, per rank */
	/* Per rank, micro-batch 0's kernels: forward, backward, and of the
	 * backward the weight gradients (dW GEMMs, the embedding's). */
	double mb0_fwd[64], mb0_bwd[64], mb0_wgt[64];
};

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);
	return n >= k && strcmp(s + n - k, tail) == 0;
}

static int is_gemm(const char *kernel)
{
	static const char *const g[] = { ".fwd.qkv", ".fwd.attn_out", ".fwd.mlp_up", ".fwd.mlp_down" };
	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
		const char *p = strstr(kernel, g[i]);
		if (p && p[strlen(g[i])] == 0)
			return 1;
	}
	return 0;
}

static void see_op(void *ctx, uint32_t rank, const struct sim_op *op, sim_ps s, sim_ps e)
{
	struct seen *w = ctx;
	if (rank != w->who)
		return;
	if (op->kind == SIM_OP_COLL && strncmp(op->name, "tp.L0.mb0.", 10) == 0 && w->ncoll < 512) {
		snprintf(w->coll[w->ncoll].name, sizeof(w->coll[0].name), "%s", op->name);
		w->coll[w->ncoll].bytes = op->bytes;
		w->coll[w->ncoll++].s = sim_ps_to_s(e - s);
	}
	if (op->kind == SIM_OP_COMPUTE && strncmp(op->name, "L0.mb0.", 7) == 0 && is_gemm(op->name))
		w->gemm_fwd_s += sim_ps_to_s(e - s);
}

/* Micro-batch 0's kernels on every rank (the names say layer or part, mb
 * and phase: "L3.mb0.bwd.qkv_dw", "embed.mb0.bwd.embedding"). */
static void see_passes(void *ctx, uint32_t rank, const struct sim_op *op, sim_ps s, sim_ps e)
{
	struct seen *w = ctx;
	if (op->kind != SIM_OP_COMPUTE || rank >= 64 || !strstr(op->name, ".mb0."))
		return;
	double t = sim_ps_to_s(e - s);
	if (strstr(op->name, ".fwd."))
		w->mb0_fwd[rank] += t;
	else if (strstr(op->name, ".bwd.")) {
		w->mb0_bwd[rank] += t;
		if (ends_with(op->name, "_dw") || strncmp(op->name, "embed.", 6) == 0)
			w->mb0_wgt[rank] += t;
	}
}

static void see_mem(void *ctx, uint32_t rank, sim_ps t, unsigned cat, double bytes)
{
	struct seen *w = ctx;
	(void)t;
	if (cat == PAR_MEM_ACTIVATIONS && rank < 64 && bytes > w->act_max[rank])
		w->act_max[rank] = bytes;
}

static const struct sim_recorder_ops see_ops = { .op_done = see_op, .mem = see_mem };
static const struct sim_recorder_ops pass_ops = { .op_done = see_passes, .mem = see_mem };
static const struct sim_recorder_ops *recorder = &see_ops;
static enum sim_fidelity fidelity = SIM_FIDELITY_FLOW;

static char scenario_path[256];

static void write_scenario(void)
{
	snprintf(scenario_path, sizeof(scenario_path), "/tmp/test_pipeline_%d.yaml", (int)getpid());
	FILE *f = fopen(scenario_path, "w");
	ck_assert(f != NULL);
	fputs(ideal_yaml, f);
	fclose(f);
}

/* Run the ideal scenario with sets; rank `who` is watched. */
static void run(const char *const *sets, size_t n, uint32_t who, struct par_report *r,
		struct seen *w, struct scn *out)
{
	struct scn s;
	char err[SCN_ERRLEN];
	write_scenario();
	ck_assert_msg(scn_load(&s, scenario_path, sets, n, err, sizeof(err)) == 0, "%s", err);
	unlink(scenario_path);
	struct par_compute_model *cm = par_compute_model_new(
		&s.compute, topo_gpu_find(s.cluster.gpu), s.training.precision, s.datadir, err,
		sizeof(err));
	ck_assert_msg(cm != NULL, "%s", err);
	memset(w, 0, sizeof(*w));
	w->who = who;
	struct par_train t = {
		.model = &s.model, .training = &s.training, .layout = &s.parallel, .compute = cm,
		.cluster = &s.cluster, .steps = 1, .rec = recorder, .rec_ctx = w,
	};
	sim_config_init(&t.sim);
	t.sim.algos = coll_algos;
	t.sim.fidelity = fidelity;
	ck_assert_msg(par_train_run(&t, r, err, sizeof(err)) == 0, "%s", err);
	par_compute_model_free(cm);
	if (out)
		*out = s;
}

static unsigned count(const struct seen *w, const char *phase, const char *op, double bytes)
{
	unsigned n = 0;
	for (unsigned i = 0; i < w->ncoll; i++)
		if (strstr(w->coll[i].name, phase) && strstr(w->coll[i].name, op) &&
		    fabs(w->coll[i].bytes - bytes) < 1)
			n++;
	return n;
}

/* C20: per layer 2 all-reduces forward and 2 backward of s b h (bf16);
 * with sequence parallelism each becomes a reduce-scatter and an all-gather. */
START_TEST(c20_tp_collectives)
{
	const char *tp[] = { "parallel.tp=8", "parallel.dp=1", "training.global_batch=1" };
	struct par_report r;
	static struct seen w;
	run(tp, 3, 0, &r, &w, NULL);
	double sbh = 2.0 * 2048 * 8192;
	ck_assert_msg(count(&w, ".fwd.", "allreduce", sbh) == 2 &&
		      count(&w, ".bwd.", "allreduce", sbh) == 2 && w.ncoll == 4,
		      "layer 0: %u collectives, %u forward and %u backward all-reduces of %.0f B",
		      w.ncoll, count(&w, ".fwd.", "allreduce", sbh),
		      count(&w, ".bwd.", "allreduce", sbh), sbh);
	const char *sp[] = { "parallel.tp=8", "parallel.sp=true", "parallel.dp=1",
			     "training.global_batch=1" };
	run(sp, 4, 0, &r, &w, NULL);
	ck_assert_msg(count(&w, ".fwd.", "reducescatter", sbh) == 2 &&
		      count(&w, ".fwd.", "allgather", sbh) == 2 &&
		      count(&w, ".bwd.", "reducescatter", sbh) == 2 &&
		      count(&w, ".bwd.", "allgather", sbh) == 2 &&
		      count(&w, "", "allreduce", sbh) == 0,
		      "with SP: %u collectives in layer 0", w.ncoll);
}
END_TEST

/* C21: TP communication over compute per layer (forward): (t-1) P / (3 h W). */
START_TEST(c21_tp_ratio)
{
	const char *bws[] = { "cluster.network.bandwidth=450GB/s", "cluster.network.bandwidth=50GB/s" };
	const double W[] = { 450e9, 50e9 }, want_spec[] = { 0.63, 5.63 };
	for (int i = 0; i < 2; i++) {
		const char *sets[] = { "parallel.tp=8", "parallel.dp=1", "training.global_batch=1",
				       bws[i] };
		struct par_report r;
		static struct seen w;
		run(sets, 4, 0, &r, &w, NULL);
		double comm = 0;
		for (unsigned k = 0; k < w.ncoll; k++)
			if (strstr(w.coll[k].name, ".fwd."))
				comm += w.coll[k].s;
		double P = topo_gpu_find("H100-SXM-80GB")->bf16;
		double want = 7 * P / (3 * 8192 * W[i]);
		double got = comm / w.gemm_fwd_s;
		ck_assert_msg(fabs(got - want) / want < 1e-3 && fabs(want - want_spec[i]) < 0.01,
			      "W = %.0f GB/s: forward TP %.6g s / GEMMs %.6g s = %.5f; "
			      "(t-1)P/(3hW) = %.5f", W[i] / 1e9, comm, w.gemm_fwd_s, got, want);
	}
}
END_TEST

/* C22: bubble (p-1)/(m+p-1) for GPipe and 1F1B, (p-1)/(vm+p-1) interleaved.
 * Long layers (64 of them, h = 16384) keep the embedding and head small. */
static double bubble(const char *schedule, const char *vpp)
{
	const char *sets[] = { "parallel.pp=8", "parallel.dp=1", "model.layers=64",
			       "model.hidden=16384", "model.heads=128", schedule, vpp };
	struct par_report r;
	static struct seen w;
	run(sets, 7, 0, &r, &w, NULL);
	ck_assert(r.pipeline_s > 0);
	return r.breakdown.bubble_s / r.pipeline_s;
}

START_TEST(c22_bubble)
{
	double f1b1 = bubble("parallel.schedule=1f1b", "parallel.vpp=1");
	double gpipe = bubble("parallel.schedule=gpipe", "parallel.vpp=1");
	double inter = bubble("parallel.schedule=interleaved", "parallel.vpp=2");
	ck_assert_msg(fabs(7.0 / 39 - 0.1795) < 5e-5 && fabs(7.0 / 71 - 0.0986) < 5e-5, "SPEC");
	ck_assert_msg(fabs(f1b1 - 7.0 / 39) < 5e-4, "1F1B bubble %.5f, (p-1)/(m+p-1) = %.5f",
		      f1b1, 7.0 / 39);
	ck_assert_msg(fabs(gpipe - 7.0 / 39) < 5e-4, "GPipe bubble %.5f", gpipe);
	ck_assert_msg(fabs(inter - 7.0 / 71) < 5e-4, "interleaved bubble %.5f, (p-1)/(vm+p-1) = "
		      "%.5f", inter, 7.0 / 71);
	/* The schedules' closed forms (what the planner uses) say the same. */
	const char *names[] = { "1f1b", "gpipe", "interleaved" };
	const uint32_t vs[] = { 1, 1, 2 };
	const double want[] = { 7.0 / 39, 7.0 / 39, 7.0 / 71 };
	struct par_stage_cost c = { .fwd_s = 1.25, .bwd_s = 2.5 };
	for (int i = 0; i < 3; i++) {
		const struct par_schedule_ops *o = par_schedule((unsigned)par_schedule_find(names[i]));
		double f = o->bubble_s(8, 32, vs[i], &c) / o->pipeline_s(8, 32, vs[i], &c);
		ck_assert_msg(fabs(f - want[i]) < 1e-12, "%s: closed-form bubble %.6f of the phase, "
			      "SPEC %.6f", names[i], f, want[i]);
	}
}
END_TEST

/* C23: GPipe holds m micro-batches' activations on every stage; 1F1B at most
 * p - i on stage i. */
START_TEST(c23_in_flight)
{
	const char *f1b1[] = { "parallel.pp=8", "parallel.dp=1", "parallel.schedule=1f1b" };
	const char *gp[] = { "parallel.pp=8", "parallel.dp=1", "parallel.schedule=gpipe" };
	struct par_report r;
	struct scn s;
	static struct seen w;
	run(f1b1, 3, 0, &r, &w, &s);
	double layer = par_layer_activation_bytes(&s.model, &s.training, 1, false);
	double per_mb = 2 * layer;  /* two layers per stage */
	for (uint32_t i = 0; i < 8; i++)
		ck_assert_msg(fabs(w.act_max[i] / per_mb - (8 - i)) < 1e-9,
			      "1F1B stage %u holds %.3f micro-batches, expected %u", i,
			      w.act_max[i] / per_mb, 8 - i);
	run(gp, 3, 0, &r, &w, &s);
	for (uint32_t i = 0; i < 8; i++)
		ck_assert_msg(fabs(w.act_max[i] / per_mb - 32) < 1e-9,
			      "GPipe stage %u holds %.3f micro-batches, expected 32", i,
			      w.act_max[i] / per_mb);
	/* The schedules' closed forms (what the planner uses) say the same. */
	const struct par_schedule_ops *o1 = par_schedule((unsigned)par_schedule_find("1f1b"));
	const struct par_schedule_ops *og = par_schedule((unsigned)par_schedule_find("gpipe"));
	for (uint32_t i = 0; i < 8; i++) {
		ck_assert_msg(o1->in_flight(8, i, 32, 1) == 8 - i, "1f1b in_flight, stage %u", i);
		ck_assert_msg(og->in_flight(8, i, 32, 1) == 32, "gpipe in_flight, stage %u", i);
	}
}
END_TEST

/* C24: ranks are numbered TP fastest, then CP, PP, DP; TP groups must fit
 * an NVLink domain unless allowed (then a warning); expert groups split the
 * CP x DP ranks of one stage into consecutive groups of EP. */
START_TEST(c24_layout)
{
	struct par_layout l = { .tp = 2, .cp = 2, .pp = 2, .dp = 4, .ep = 4, .vpp = 1 };
	struct par_dims d;
	par_dims_of(&l, 32, &d);
	for (uint32_t r = 0; r < 32; r++) {
		struct par_coords c;
		par_coords_of(&d, r, &c);
		ck_assert_uint_eq(c.tp, r % 2);
		ck_assert_uint_eq(c.cp, (r / 2) % 2);
		ck_assert_uint_eq(c.pp, (r / 4) % 2);
		ck_assert_uint_eq(c.dp, r / 8);
		ck_assert_uint_eq(c.ep, (c.dp * 2 + c.cp) % 4);
		ck_assert_uint_eq(par_rank_of(&d, &c), r);
	}
	struct scn s;
	char err[SCN_ERRLEN];
	const char *bad[] = { "cluster.preset=dgx-h100", "cluster.nodes=2", "model.preset=gpt3-1.3b",
			      "training.seq=2048", "training.global_batch=16", "parallel.tp=16" };
	ck_assert_int_eq(scn_load(&s, NULL, bad, 6, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "parallel.tp") && strstr(err, "NVLink"), "%s", err);
	const char *ok[] = { "cluster.preset=dgx-h100", "cluster.nodes=2", "model.preset=gpt3-1.3b",
			     "training.seq=2048", "training.global_batch=16", "parallel.tp=16",
			     "parallel.tp_across_nodes=true" };
	ck_assert_msg(scn_load(&s, NULL, ok, 7, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(strstr(s.warnings, "crosses the network"), "warning: '%s'", s.warnings);
}
END_TEST

/*
 * C29: the bubble of a schedule that splits the backward. By SPEC's numbers
 * (p 8, F 1 ms, B 2 ms, W 1 ms): 1F1B 21 ms, ZB-H1 7 ms, from the closed
 * forms and from the actions run. Simulated on the ideal cluster in both
 * fidelities (p 8, m 32, 64 layers of h 16384): each stage's bubble is
 * what the schedule's actions give on the simulated stage times (the
 * embedding on the first stage and the head on the last make them a
 * little unequal), the two fidelities agree, the closed form on a middle
 * stage's F, B, W is within the edges' share, and ZB-H1 holds p
 * micro-batches' activations on every stage.
 */
static void c29_run(const char *schedule, enum sim_fidelity f, struct par_report *r,
		    struct seen *w, double *per_mb)
{
	const char *sets[] = { "parallel.pp=8", "parallel.dp=1", "model.layers=64",
			       "model.hidden=16384", "model.heads=128", schedule };
	struct scn s;
	fidelity = f, recorder = &pass_ops;
	run(sets, 6, 0, r, w, &s);
	fidelity = SIM_FIDELITY_FLOW, recorder = &see_ops;
	*per_mb = 8 * par_layer_activation_bytes(&s.model, &s.training, 1, false);
}

START_TEST(c29_split_backward)
{
	const struct par_schedule_ops *f1b1 = par_schedule((unsigned)par_schedule_find("1f1b"));
	const struct par_schedule_ops *zb = par_schedule((unsigned)par_schedule_find("zb-h1"));
	const struct par_stage_cost spec = { .fwd_s = 1e-3, .bwd_s = 2e-3, .wgt_s = 1e-3 };
	ck_assert_double_eq_tol(f1b1->bubble_s(8, 32, 1, &spec), 21e-3, 1e-15);
	ck_assert_double_eq_tol(zb->bubble_s(8, 32, 1, &spec), 7e-3, 1e-15);
	double one[8], two[8];
	for (int i = 0; i < 8; i++)
		one[i] = 1e-3, two[i] = 2e-3;
	ck_assert_double_eq_tol(par_schedule_run_s(zb, 8, 32, 1, one, two, one, 0, NULL, NULL) -
					32 * 3e-3, 7e-3, 1e-12);
	ck_assert_double_eq_tol(par_schedule_run_s(f1b1, 8, 32, 1, one, two, one, 0, NULL, NULL) -
					32 * 3e-3, 21e-3, 1e-12);
	const char *names[] = { "parallel.schedule=1f1b", "parallel.schedule=zb-h1" };
	const struct par_schedule_ops *ops[] = { f1b1, zb };
	for (int k = 0; k < 2; k++) {
		double got[2];
		for (int fi = 0; fi < 2; fi++) {
			enum sim_fidelity f = fi ? SIM_FIDELITY_ANALYTIC : SIM_FIDELITY_FLOW;
			struct par_report r;
			static struct seen w;
			double per_mb;
			c29_run(names[k], f, &r, &w, &per_mb);
			ck_assert_uint_eq(r.critical_rank, 0);
			double fs[8], bs[8], ws[8];
			for (int i = 0; i < 8; i++)
				fs[i] = w.mb0_fwd[i], bs[i] = w.mb0_bwd[i], ws[i] = w.mb0_wgt[i];
			double phase = par_schedule_run_s(ops[k], 8, 32, 1, fs, bs, ws, 0, NULL, NULL);
			double want = phase - 32 * (fs[0] + bs[0]);
			got[fi] = r.breakdown.bubble_s;
			ck_assert_msg(fabs(got[fi] / want - 1) < 1e-5,
				      "%s %s: bubble %.9f s, the actions on the simulated stages "
				      "%.9f s", names[k], sim_fidelity_name(f), got[fi], want);
			struct par_stage_cost mid = { .fwd_s = fs[3], .bwd_s = bs[3], .wgt_s = ws[3] };
			double closed = ops[k]->bubble_s(8, 32, 1, &mid);
			ck_assert_msg(ws[3] > 0.2 * bs[3] && ws[3] < fs[3] &&
				      fabs(got[fi] / closed - 1) < 5e-3,
				      "%s: bubble %.6f s, closed form %.6f s (F %.6f B %.6f W %.6f)",
				      names[k], got[fi], closed, fs[3], bs[3], ws[3]);
			for (uint32_t i = 0; k == 1 && i < 8; i++)
				ck_assert_msg(fabs(w.act_max[i] / per_mb - 8) < 1e-9,
					      "ZB-H1 stage %u holds %.3f micro-batches, expected 8", i,
					      w.act_max[i] / per_mb);
		}
		ck_assert_msg(fabs(got[0] / got[1] - 1) < 1e-6, "%s: flow %.9f s, analytic %.9f s",
			      names[k], got[0], got[1]);
	}
}
END_TEST

/* ---- C30: tensor-parallel communication pipelined with its GEMM ------------ */

/* One kernel of layer 0, micro-batch 0 on rank 0 with its overlapped
 * collective: its pieces' summed time and the span of pieces and steps. */
struct tp_span {
	const char *kernel, *coll;     /* "fwd.qkv", "allgather"                 */
	double piece_s, first, last;   /* summed pieces; earliest start, last end */
	unsigned pieces, steps;
	double block_kernel_s, block_coll_s;  /* the blocking run's               */
};

static struct tp_span tp_spans[4];
static const size_t tp_nspans = 4;

static void see_tp(void *ctx, uint32_t rank, const struct sim_op *op, sim_ps s, sim_ps e)
{
	(void)ctx;
	if (rank != 0)
		return;
	char want[96];
	for (size_t i = 0; i < tp_nspans; i++) {
		struct tp_span *t = &tp_spans[i];
		double a = sim_ps_to_s(s), b = sim_ps_to_s(e);
		snprintf(want, sizeof(want), "L0.mb0.%s", t->kernel);
		int piece = strncmp(op->name, want, strlen(want)) == 0 &&
			    strncmp(op->name + strlen(want), ".piece", 6) == 0;
		if (op->kind == SIM_OP_COMPUTE && strcmp(op->name, want) == 0)
			t->block_kernel_s = b - a;
		snprintf(want, sizeof(want), "tp.L0.mb0.%s.%s", t->kernel, t->coll);
		if (op->kind == SIM_OP_COLL && strcmp(op->name, want) == 0)
			t->block_coll_s = b - a;
		int step = (op->kind == SIM_OP_SEND || op->kind == SIM_OP_RECV) &&
			   strncmp(op->name, want, strlen(want)) == 0;
		if (!piece && !step)
			continue;
		if (piece)
			t->piece_s += b - a, t->pieces++;
		else
			t->steps++;
		if (t->pieces + t->steps == 1 || a < t->first)
			t->first = a;
		if (b > t->last)
			t->last = b;
	}
}

static const struct sim_recorder_ops tp_ops = { .op_done = see_tp };

/*
 * C30: with parallel.tp_overlap the all-gather before a column-parallel GEMM
 * (and the reduce-scatter after a row-parallel one, forward and backward)
 * runs as t - 1 ring steps of alpha + S / (t W), pipelined with t pieces of
 * Tc / t: Tc / t + (t - 1) max(Tc / t, step), against Tc + (t - 1) step
 * blocking. On the ideal cluster at 100 GB/s a step (84 us) outlasts a
 * piece; at 2 TB/s it hides under every piece; both fidelities.
 */
START_TEST(c30_tp_overlap)
{
	ck_assert_double_eq_tol(par_tp_overlap_s(4, 4e-3, 1.5e-3), 5.5e-3, 1e-15);
	ck_assert_double_eq_tol(4e-3 + 3 * 1.5e-3, 8.5e-3, 1e-15);
	ck_assert_double_eq_tol(par_tp_overlap_s(4, 4e-3, 0.5e-3), 4e-3, 1e-15);
	const char *bws[] = { "cluster.network.bandwidth=100GB/s",
			      "cluster.network.bandwidth=2TB/s" };
	const double W[] = { 100e9, 2e12 }, alpha = 2e-6, S = 2.0 * 2048 * 8192, t = 4;
	const struct tp_span spans[] = {
		{ .kernel = "fwd.qkv", .coll = "allgather" },
		{ .kernel = "fwd.attn_out", .coll = "reducescatter" },
		{ .kernel = "bwd.mlp_down_dx", .coll = "allgather" },
		{ .kernel = "bwd.mlp_up_dx", .coll = "reducescatter" },
	};
	double step_s[2][2];
	for (int bw = 0; bw < 2; bw++) {
		double step = alpha + S / (t * W[bw]);
		for (int fi = 0; fi < 2; fi++) {
			double blocked[4];
			for (int ov = 0; ov < 2; ov++) {
				const char *sets[] = { "parallel.tp=4", "parallel.sp=true",
						       "parallel.dp=1", "training.global_batch=1",
						       "cluster.network.latency=2us", bws[bw], "cluster.nodes=4",
						       "parallel.algorithms.allgather=ring",
						       "parallel.algorithms.reducescatter=ring",
						       ov ? "parallel.tp_overlap=true"
							  : "parallel.tp_overlap=false" };
				memcpy(tp_spans, spans, sizeof(spans));
				struct par_report r;
				static struct seen w;
				fidelity = fi ? SIM_FIDELITY_ANALYTIC : SIM_FIDELITY_FLOW;
				recorder = &tp_ops;
				run(sets, 10, 0, &r, &w, NULL);
				fidelity = SIM_FIDELITY_FLOW, recorder = &see_ops;
				step_s[bw][ov] = r.step_time_s;
				for (size_t i = 0; i < 4; i++) {
					const struct tp_span *sp = &tp_spans[i];
					if (!ov) {
						ck_assert_msg(fabs(sp->block_coll_s / ((t - 1) * step) - 1)
							      < 1e-6, "%s %s blocking: %.9f s, "
							      "(t-1)(a+S/(tW)) %.9f s", sp->kernel,
							      sp->coll, sp->block_coll_s, (t - 1) * step);
						blocked[i] = sp->block_kernel_s + sp->block_coll_s;
						continue;
					}
					double want = par_tp_overlap_s(4, sp->piece_s, step);
					double got = sp->last - sp->first;
					ck_assert_msg(sp->pieces == 4 && sp->steps == 6 &&
						      fabs(got / want - 1) < 1e-6,
						      "%s %s %s at %.0f GB/s: %u pieces, %u steps, "
						      "%.9f s; Tc/t + (t-1) max(Tc/t, step) = %.9f s",
						      sim_fidelity_name(fidelity), sp->kernel, sp->coll,
						      W[bw] / 1e9, sp->pieces, sp->steps, got, want);
					ck_assert_msg(fabs(blocked[i] / (sp->piece_s + (t - 1) * step) - 1)
						      < 1e-6, "%s: blocking %.9f s, Tc + (t-1) step "
						      "%.9f s", sp->kernel, blocked[i],
						      sp->piece_s + (t - 1) * step);
					/* 100 GB/s: a step outlasts a piece; 2 TB/s: it hides */
					ck_assert(bw ? step < sp->piece_s / t : step > sp->piece_s / t);
				}
			}
			ck_assert_msg(step_s[bw][1] < step_s[bw][0], "overlap %.9f s, blocking %.9f s",
				      step_s[bw][1], step_s[bw][0]);
		}
	}
}
END_TEST

static Suite *spec_suite(void)
{
	const struct spec_item items[] = {
		{ "C20", c20_tp_collectives }, { "C21", c21_tp_ratio }, { "C22", c22_bubble },
		{ "C23", c23_in_flight }, { "C24", c24_layout }, { "C29", c29_split_backward },
		{ "C30", c30_tp_overlap },
	};
	return spec_suite_of("SPEC C20-C24, C29, C30 (tensor and pipeline parallelism)", items,
			     ARRAY_SIZE(items), 300);
}

int main(void)
{
	return check_run(spec_suite());
}
