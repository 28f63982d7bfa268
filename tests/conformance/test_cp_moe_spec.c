/*
 * test_cp_moe_spec.c - SPEC C25-C28 pinned by number: ring attention's
 * overlap threshold, causal load balance (contiguous against zig-zag),
 * Ulysses' all-to-alls, and expert parallelism's dispatch and combine.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectives/coll.h"
#include "parallel/compute.h"
#include "parallel/moe.h"
#include "parallel/train.h"
#include "scenarios/scenario.h"
#include "tests/checkmain.h"

/* The idealised setting on the ideal cluster (the link is set per test). */
static const char *ideal_yaml =
	"cluster:\n  preset: ideal\n  nodes: 8\n  network:\n    latency: 0\n"
	"model:\n  layers: 1\n  hidden: 4096\n  heads: 32\n  vocab: 8\n"
	"training:\n  seq: 16384\n  global_batch: 1\n  micro_batch: 1\n  recompute: none\n"
	"compute:\n  efficiency: 1\n  launch_overhead: 0\n";

#define MAXR 8

/* Layer 0, forward, micro-batch 0: per rank. */
struct seen {
	double ring_busy[MAXR];   /* ring attention kernels, summed         */
	double ring_first[MAXR], ring_last[MAXR];
	unsigned a2a;             /* rank 0: all-to-alls of the forward      */
	double a2a_moved;         /* rank 0: their bytes x (p-1)/p           */
	double expert_up_s;       /* rank 0: the expert up-projection        */
	uint32_t p;               /* the group size of those all-to-alls     */
};

static void see_op(void *ctx, uint32_t rank, const struct sim_op *op, sim_ps s, sim_ps e)
{
	struct seen *w = ctx;
	double a = sim_ps_to_s(s), b = sim_ps_to_s(e);
	if (rank >= MAXR)
		return;
	if (op->kind == SIM_OP_COMPUTE && strstr(op->name, "L0.mb0.fwd.attn.ring")) {
		if (w->ring_busy[rank] == 0 || a < w->ring_first[rank])
			w->ring_first[rank] = a;
		w->ring_last[rank] = fmax(w->ring_last[rank], b);
		w->ring_busy[rank] += b - a;
	}
	if (rank == 0 && op->kind == SIM_OP_COLL && strstr(op->name, ".L0.mb0.fwd.") &&
	    strstr(op->name, "alltoall")) {
		w->a2a++;
		w->a2a_moved += op->bytes * (w->p - 1.0) / w->p;
	}
	if (rank == 0 && op->kind == SIM_OP_COMPUTE && strstr(op->name, "L0.mb0.fwd.expert_up"))
		w->expert_up_s = b - a;
}

static const struct sim_recorder_ops see_ops = { .op_done = see_op };

static void run(const char *const *sets, size_t n, struct seen *w, struct par_report *r)
{
	char path[64], err[SCN_ERRLEN];
	snprintf(path, sizeof(path), "/tmp/test_cp_moe_%d.yaml", (int)getpid());
	FILE *f = fopen(path, "w");
	ck_assert(f != NULL);
	fputs(ideal_yaml, f);
	fclose(f);
	struct scn s;
	int rc = scn_load(&s, path, sets, n, err, sizeof(err));
	unlink(path);
	ck_assert_msg(rc == 0, "%s", err);
	struct par_compute_model *cm = par_compute_model_new(
		&s.compute, topo_gpu_find(s.cluster.gpu), s.training.precision, s.datadir, err,
		sizeof(err));
	ck_assert_msg(cm != NULL, "%s", err);
	uint32_t p = w->p;
	memset(w, 0, sizeof(*w));
	w->p = p;
	struct par_train t = {
		.model = &s.model, .training = &s.training, .layout = &s.parallel, .compute = cm,
		.cluster = &s.cluster, .steps = 1, .seed = s.sim.seed, .rec = &see_ops, .rec_ctx = w,
	};
	sim_config_init(&t.sim);
	t.sim.algos = coll_algos;
	ck_assert_msg(par_train_run(&t, r, err, sizeof(err)) == 0, "%s", err);
	par_compute_model_free(cm);
}

/* Rank 0's ring: the time its attention kernels waited for K/V blocks. */
static double ring_exposed(const struct seen *w)
{
	return (w->ring_last[0] - w->ring_first[0]) - w->ring_busy[0];
}

/* C25: K/V transfers hide when the block c >= P/W; the causal mask with
 * balanced blocks (zig-zag) doubles that, GQA with group g divides it by g. */
START_TEST(c25_ring_threshold)
{
	double P = topo_gpu_find("H100-SXM-80GB")->bf16, W = 1e12;
	double bound = 2 * P / W;  /* zig-zag, causal, multi-head: ~1,979 tokens */
	const char *base[] = { "cluster.nodes=4", "cluster.network.bandwidth=1TB/s", "parallel.cp=4",
			       "parallel.cp_algo=zigzag", "training.seq=16384", NULL };
	struct seen w = { .p = 4 };
	struct par_report r;
	run(base, 5, &w, &r);                       /* c = 4,096 > bound: hidden */
	ck_assert_msg(4096 > bound && ring_exposed(&w) < 1e-3 * w.ring_busy[0],
		      "c = 4096 (bound %.0f): waited %.6g s of %.6g s", bound, ring_exposed(&w),
		      w.ring_busy[0]);
	base[4] = "training.seq=2048";               /* c = 512 < bound: exposed */
	run(base, 5, &w, &r);
	double mha = ring_exposed(&w);
	ck_assert_msg(mha > 0.5 * w.ring_busy[0], "c = 512 (bound %.0f): waited %.6g s of %.6g s",
		      bound, mha, w.ring_busy[0]);
	base[5] = "model.kv_heads=4";                /* GQA g = 8: bound / 8 = 247 */
	run(base, 6, &w, &r);
	ck_assert_msg(512 > bound / 8 && ring_exposed(&w) < 1e-3 * w.ring_busy[0],
		      "GQA, c = 512 (bound %.0f): waited %.6g s", bound / 8, ring_exposed(&w));
}
END_TEST

/* C26: contiguous blocks leave ranks idle under the causal mask; zig-zag
 * gives every rank the same work. */
START_TEST(c26_causal_balance)
{
	const char *zz[] = { "parallel.cp=8", "parallel.cp_algo=zigzag" };
	const char *ring[] = { "parallel.cp=8", "parallel.cp_algo=ring" };
	struct seen w = { .p = 8 };
	struct par_report r;
	run(zz, 2, &w, &r);
	for (int k = 1; k < 8; k++)
		ck_assert_msg(fabs(w.ring_busy[k] - w.ring_busy[0]) < 1e-9 * w.ring_busy[0],
			      "zig-zag: rank %d computes %.9g s, rank 0 %.9g s", k, w.ring_busy[k],
			      w.ring_busy[0]);
	run(ring, 2, &w, &r);
	/* Rank r computes half a block and then r whole blocks. */
	double max = 0, sum = 0;
	for (int k = 0; k < 8; k++) {
		ck_assert_msg(fabs(w.ring_busy[k] / w.ring_busy[0] - (0.5 + k) / 0.5) < 1e-6,
			      "contiguous: rank %d %.9g s, rank 0 %.9g s", k, w.ring_busy[k],
			      w.ring_busy[0]);
		max = fmax(max, w.ring_busy[k]);
		sum += w.ring_busy[k];
	}
	double efficiency = sum / 8 / max;  /* (N/2) / (N - 1/2) -> 1/2 */
	ck_assert_msg(fabs(efficiency - 4 / 7.5) < 1e-6, "efficiency %.5f", efficiency);
}
END_TEST

/* C27: Ulysses: two all-to-alls per attention (forward), 8 s h / N bytes per
 * GPU per layer; the degree is limited by the K/V heads. */
START_TEST(c27_ulysses)
{
	const char *u[] = { "parallel.cp=8", "parallel.cp_algo=ulysses" };
	struct seen w = { .p = 8 };
	struct par_report r;
	run(u, 2, &w, &r);
	double held = 8.0 * 16384 * 4096 / 8;  /* bytes the two all-to-alls hold */
	ck_assert_msg(w.a2a == 2 && fabs(w.a2a_moved - held * 7 / 8) < 1,
		      "%u all-to-alls moving %.0f B; 8sh/N x (N-1)/N = %.0f B", w.a2a, w.a2a_moved,
		      held * 7 / 8);
	struct scn s;
	char err[SCN_ERRLEN];
	const char *bad[] = { "cluster.preset=ideal", "cluster.nodes=16", "model.preset=llama3-8b",
			      "training.seq=8192", "training.global_batch=1", "parallel.cp=8",
			      "parallel.cp_algo=ulysses", "parallel.tp=2", "parallel.dp=1",
			      "parallel.tp_across_nodes=true" };
	ck_assert_int_eq(scn_load(&s, NULL, bad, 10, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "key/value heads"), "%s", err);
}
END_TEST

/* C28: dispatch + combine move 2 k T h e (N_e-1)/N_e bytes per GPU per MoE
 * layer in the forward (uniform routing); the busiest GPU sets the time; a
 * capacity factor drops the tokens above capacity. */
START_TEST(c28_experts)
{
	const char *moe[] = { "model.moe.experts=16", "model.moe.top_k=2", "parallel.ep=8",
			      "training.seq=4096", "training.global_batch=8", NULL, NULL };
	struct seen w = { .p = 8 };
	struct par_report r;
	run(moe, 5, &w, &r);
	double T = 4096, k = 2, h = 4096, e = 2;
	double want = 2 * k * T * h * e * 7 / 8;
	ck_assert_msg(w.a2a == 2 && fabs(w.a2a_moved - want) < 1, "%u all-to-alls moving %.0f B, "
		      "expected %.0f B", w.a2a, w.a2a_moved, want);
	double even = w.expert_up_s;
	ck_assert_msg(fabs(r.moe.imbalance - 1) < 1e-12 && r.moe.dropped == 0,
		      "uniform: load %.6f, dropped %.6f", r.moe.imbalance, r.moe.dropped);
	moe[5] = "model.moe.skew=1";
	run(moe, 6, &w, &r);
	ck_assert_msg(r.moe.imbalance > 1.2 && fabs(w.expert_up_s / even - r.moe.imbalance) < 0.02,
		      "skewed: the busiest GPU routes %.4fx; its expert GEMM takes %.4fx",
		      r.moe.imbalance, w.expert_up_s / even);
	moe[6] = "model.moe.capacity_factor=1";
	run(moe, 7, &w, &r);
	ck_assert_msg(r.moe.imbalance <= 1 + 1e-12 && r.moe.dropped > 0.05,
		      "capacity 1: load %.4f, dropped %.4f", r.moe.imbalance, r.moe.dropped);
	/* The load depends on the seed only through which experts are popular. */
	struct par_model m = { .moe = { .experts = 16, .top_k = 2, .skew = 1 } };
	struct par_moe_load a, b;
	par_moe_load(&m, 8, 1, 0, &a);
	par_moe_load(&m, 8, 1, 0, &b);
	ck_assert(a.factor == b.factor && a.dropped == b.dropped);
}
END_TEST

static Suite *spec_suite(void)
{
	const struct spec_item items[] = {
		{ "C25", c25_ring_threshold }, { "C26", c26_causal_balance },
		{ "C27", c27_ulysses }, { "C28", c28_experts },
	};
	return spec_suite_of("SPEC C25-C28 (context and expert parallelism)", items,
			     ARRAY_SIZE(items), 300);
}

int main(void)
{
	return check_run(spec_suite());
}
