/*
 * test_zero_spec.c - SPEC C12, C18 and C19 pinned by number: model states
 * per GPU under ZeRO, the bytes each GPU sends per step under DDP and ZeRO,
 * and FSDP's prefetch, resharding and HSDP.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/coll.h"
#include "parallel/compute.h"
#include "parallel/model.h"
#include "parallel/step.h"
#include "parallel/train.h"
#include "scenarios/scenario.h"
#include "tests/checkmain.h"

#define LESSON CLUSTERSIM_SRCDIR "/scenarios/ddp-lesson.yaml"
#define COMPARE CLUSTERSIM_SRCDIR "/scenarios/zero-fsdp-compare.yaml"
#define MAX_SETS 16
#define MAX_SEEN 8192

/* What one run left behind besides its report. */
struct seen {
	double sent_bytes;           /* all link bytes / ranks: bytes a GPU sent */
	unsigned bwd_gathers;        /* backward all-gathers of rank 0          */
	unsigned replica_reduces;    /* HSDP all-reduces across nodes, rank 0   */
	double weights_max;          /* rank 0's weights category at its highest */
	/* Rank 0's forward tensor-parallel collectives and compute ops. */
	struct { sim_ps start, end; } fwd_tp[MAX_SEEN];
	sim_ps fwd_compute[MAX_SEEN];
	unsigned ntp, ncompute;
};

static void see_op(void *ctx, uint32_t rank, const struct sim_op *op, sim_ps s, sim_ps e)
{
	struct seen *w = ctx;
	if (rank == 0 && op->kind == SIM_OP_COMPUTE && strstr(op->name, ".fwd.") &&
	    w->ncompute < MAX_SEEN)
		w->fwd_compute[w->ncompute++] = s;
	if (rank != 0 || op->kind != SIM_OP_COLL)
		return;
	if (!strncmp(op->name, "tp.", 3) && strstr(op->name, ".fwd.") && w->ntp < MAX_SEEN) {
		w->fwd_tp[w->ntp].start = s;
		w->fwd_tp[w->ntp++].end = e;
	}
	w->bwd_gathers += strstr(op->name, ".bwd.allgather") != NULL;
	w->replica_reduces += strstr(op->name, "replicas.allreduce") != NULL;
}

static void see_mem(void *ctx, uint32_t rank, sim_ps t, unsigned cat, double bytes)
{
	struct seen *w = ctx;
	(void)t;
	if (rank == 0 && cat == PAR_MEM_WEIGHTS && bytes > w->weights_max)
		w->weights_max = bytes;
}

static const struct sim_recorder_ops see_ops = { .op_done = see_op, .mem = see_mem };

static int see_links(void *ctx, struct sim *sim, struct topo *topo, char *err, size_t errlen)
{
	struct seen *w = ctx;
	double total = 0;
	(void)topo, (void)err, (void)errlen;
	for (uint32_t i = 0; i < sim_nlinks(sim); i++) {
		struct sim_link_stats ls;
		sim_link_stats(sim, i, &ls);
		total += ls.bytes;
	}
	w->sent_bytes = total / sim_nranks(sim);
	return 0;
}

/* Load a scenario with sets; plan only (run = 0) or run it too. */
static void step(const char *path, const char *const *sets, size_t n, int run,
		 struct par_report *r, struct seen *w)
{
	struct scn s;
	char err[SCN_ERRLEN];
	ck_assert_msg(scn_load(&s, path, sets, n, err, sizeof(err)) == 0, "%s", err);
	struct par_compute_model *cm = par_compute_model_new(
		&s.compute, topo_gpu_find(s.cluster.gpu), s.training.precision, s.datadir, err,
		sizeof(err));
	ck_assert_msg(cm != NULL, "%s", err);
	memset(w, 0, sizeof(*w));
	struct par_train t = {
		.model = &s.model, .training = &s.training, .layout = &s.parallel, .compute = cm,
		.cluster = &s.cluster, .steps = 1, .rec = &see_ops, .rec_ctx = w,
		.finish = see_links,
	};
	sim_config_init(&t.sim);
	t.sim.algos = coll_algos;
	t.sim.fidelity = s.sim.fidelity;
	struct par_step st;
	int rc = run ? par_train_run(&t, r, err, sizeof(err))
		     : par_step_resolve(&st, &t, err, sizeof(err));
	if (!run && rc == 0)
		rc = par_train_plan(&st, r, err, sizeof(err));
	if (!run)
		par_step_free(&st);
	ck_assert_msg(rc == 0, "%s", err);
	par_compute_model_free(cm);
}

/* A GPT-style model of exactly psi parameters on 64 ideal ranks at zero z:
 * psi = L (12 h^2 + 13 h) + V h + 2 h with the dimensions below. */
static double model_states(const char *dims[5], const char *zero)
{
	const char *sets[MAX_SETS] = {
		"cluster.preset=ideal", "cluster.nodes=64", "model.preset=gpt3-1.3b",
		dims[0], dims[1], dims[2], dims[3], dims[4], "training.seq=2048",
		"training.global_batch=64", zero, "parallel.dp=auto", "training.micro_batch=1",
	};
	struct par_report r;
	struct seen w;
	step(LESSON, sets, 13, 0, &r, &w);
	return r.memory.model_states;
}

/* C12: ZeRO over N_d = 64; K = 12. */
START_TEST(c12_model_states)
{
	/* 91 layers of h = 8000 + 12,815 x 8000 tied embedding + final norm = 70e9 */
	const char *p70[5] = { "model.layers=91", "model.hidden=8000", "model.heads=64",
			       "model.ffn=32000", "model.vocab=12815" };
	/* 39 layers of h = 4000 + 2,491 x 4000 + final norm = 7.5e9 */
	const char *p75[5] = { "model.layers=39", "model.hidden=4000", "model.heads=32",
			       "model.ffn=16000", "model.vocab=2491" };
	double z3 = model_states(p70, "parallel.zero=3");
	ck_assert_msg(fabs(z3 - 17.5e9) < 1, "70e9 over 64, stage 3: %.6g B", z3);
	double s1 = model_states(p75, "parallel.zero=1");
	double s2 = model_states(p75, "parallel.zero=2");
	double s3 = model_states(p75, "parallel.zero=3");
	ck_assert_msg(fabs(s1 - 31.40625e9) < 1 && fabs(s2 - 16.640625e9) < 1 &&
		      fabs(s3 - 1.875e9) < 1, "7.5e9 over 64: %.6g, %.6g, %.6g B", s1, s2, s3);
	/* The llama3-70b preset (70.55e9 parameters): 17.64 GB. */
	const char *llama[] = { "cluster.preset=ideal", "cluster.nodes=64",
				"model.preset=llama3-70b", "parallel.zero=3",
				"training.seq=2048", "training.global_batch=64",
				"parallel.dp=auto", "training.micro_batch=1" };
	struct par_report r;
	struct seen w;
	step(COMPARE, llama, 8, 0, &r, &w);
	ck_assert_msg(fabs(r.memory.model_states / 1e9 - 17.64) < 0.005, "llama3-70b: %.4f GB",
		      r.memory.model_states / 1e9);
}
END_TEST

/* The bytes a GPU sends in one step of the lesson (4 layers) at a stage. */
static double sent(const char *zero, struct par_report *r)
{
	const char *sets[] = { zero, "model.layers=4" };
	struct seen w;
	step(LESSON, sets, 2, 1, r, &w);
	return w.sent_bytes;
}

/* C18: ZeRO-1 and -2 move 2Ψ per GPU per step, as DDP's all-reduce;
 * ZeRO-3 moves 3Ψ (all-gathers in forward and backward, reduce-scatter). */
START_TEST(c18_communication_volume)
{
	struct par_report r;
	double ddp = sent("parallel.zero=0", &r);
	double p = r.gpus, psi = 2 * r.params;  /* bf16: bytes of Ψ elements */
	ck_assert_msg(fabs(ddp - 2 * (p - 1) / p * psi) / ddp < 1e-9,
		      "DDP sends %.6g B, 2(p-1)/p x 2Ψ = %.6g B", ddp, 2 * (p - 1) / p * psi);
	double z1 = sent("parallel.zero=1", &r), z2 = sent("parallel.zero=2", &r);
	ck_assert_msg(fabs(z1 - ddp) / ddp < 1e-9 && fabs(z2 - ddp) / ddp < 1e-9,
		      "ZeRO-1 %.6g B, ZeRO-2 %.6g B, DDP %.6g B", z1, z2, ddp);
	double z3 = sent("parallel.zero=3", &r);
	/* The root unit (embedding, head: 0.5 % here) is gathered once only. */
	ck_assert_msg(fabs(z3 / ddp - 1.5) < 0.01, "ZeRO-3 / DDP = %.5f", z3 / ddp);
}
END_TEST

static void fsdp(const char *const *extra, size_t n, struct par_report *r, struct seen *w)
{
	const char *sets[MAX_SETS] = { "parallel.fsdp.enabled=true" };
	for (size_t i = 0; i < n; i++)
		sets[1 + i] = extra[i];
	step(COMPARE, sets, 1 + n, 1, r, w);
}

/* C19: prefetch overlaps the next all-gather; without it compute waits. */
START_TEST(c19_prefetch)
{
	struct par_report on, off;
	struct seen w;
	const char *no[] = { "parallel.fsdp.prefetch=false" };
	fsdp(NULL, 0, &on, &w);
	fsdp(no, 1, &off, &w);
	ck_assert_msg(off.step_time_s > on.step_time_s * 1.05 &&
		      off.breakdown.exposed_comm_s > 5 * on.breakdown.exposed_comm_s,
		      "prefetch off %.6g s (exposed %.6g), on %.6g s (exposed %.6g)",
		      off.step_time_s, off.breakdown.exposed_comm_s, on.step_time_s,
		      on.breakdown.exposed_comm_s);
}
END_TEST

/* C19: without resharding the backward all-gathers disappear and every unit
 * stays gathered after the forward. */
START_TEST(c19_reshard)
{
	struct par_report on, off;
	struct seen won, woff;
	const char *no[] = { "parallel.fsdp.reshard=false" };
	fsdp(NULL, 0, &on, &won);
	fsdp(no, 1, &off, &woff);
	ck_assert_msg(won.bwd_gathers > 0 && woff.bwd_gathers == 0,
		      "backward all-gathers: %u with resharding, %u without", won.bwd_gathers,
		      woff.bwd_gathers);
	ck_assert_msg(off.memory.peak > on.memory.peak, "peak %.6g B without, %.6g B with",
		      off.memory.peak, on.memory.peak);
	/* Every unit gathered at once: the weights reach the full 2Ψ. */
	double full = 2 * off.params;
	ck_assert_msg(fabs(woff.weights_max - full) / full < 1e-9 && won.weights_max < full / 4,
		      "weights at most %.6g B without resharding (2Ψ = %.6g), %.6g B with",
		      woff.weights_max, full, won.weights_max);
}
END_TEST

/* C19: HSDP shards inside a node and replicates across nodes. */
START_TEST(c19_hsdp)
{
	struct par_report full, hsdp;
	struct seen wf, wh;
	const char *h[] = { "parallel.fsdp.hsdp=true" };
	fsdp(NULL, 0, &full, &wf);
	fsdp(h, 1, &hsdp, &wh);
	/* States over 8 GPUs instead of 16: twice as many bytes per GPU. */
	ck_assert_msg(fabs(hsdp.memory.model_states / full.memory.model_states - 2) < 1e-9,
		      "HSDP %.6g B, full shard %.6g B", hsdp.memory.model_states,
		      full.memory.model_states);
	ck_assert_msg(wf.replica_reduces == 0 && wh.replica_reduces > 0,
		      "all-reduces across nodes: %u full shard, %u HSDP", wf.replica_reduces,
		      wh.replica_reduces);
}
END_TEST

/* C19 with tensor parallelism: a unit's first op waits for its parameter
 * gather and for the tensor-parallel all-reduce of the op before it (the
 * embedding's, at the first layer): the forward computes nothing while one
 * of its tensor-parallel collectives is in flight. On the lesson's slow
 * ideal network the all-reduce outlasts the gather. */
START_TEST(c19_tp_waits_kept)
{
	static struct seen w;  /* large */
	struct par_report r;
	const char *tp[] = { "parallel.tp=2", "parallel.dp=4", "parallel.zero=3" };
	step(LESSON, tp, 3, 1, &r, &w);
	ck_assert_msg(w.ntp > 10 && w.ncompute > 100 && w.ncompute < MAX_SEEN,
		      "%u forward tensor-parallel collectives, %u forward compute ops", w.ntp,
		      w.ncompute);
	unsigned inside = 0;
	for (unsigned i = 0; i < w.ncompute; i++)
		for (unsigned g = 0; g < w.ntp; g++)
			inside += w.fwd_compute[i] > w.fwd_tp[g].start &&
				  w.fwd_compute[i] < w.fwd_tp[g].end;
	ck_assert_msg(inside == 0, "%u forward compute ops start while a forward "
		      "tensor-parallel collective runs", inside);
}
END_TEST

static Suite *spec_suite(void)
{
	const struct spec_item items[] = {
		{ "C12", c12_model_states },
		{ "C18", c18_communication_volume },
		{ "C19", c19_prefetch },
		{ "C19", c19_reshard },
		{ "C19", c19_hsdp },
		{ "C19", c19_tp_waits_kept },
	};
	return spec_suite_of("SPEC C12, C18, C19 (ZeRO and FSDP)", items, ARRAY_SIZE(items), 300);
}

int main(void)
{
	return check_run(spec_suite());
}
