/*
 * test_step.c - the resolved step (parallel/step.c): what par_step_resolve
 * derives from a layout (dimensions, data-parallel and shard groups,
 * micro-batches, the layers of each virtual stage, each stage's
 * parameters, the chosen plug-ins), what it refuses and how, and that a
 * run builds each stage program once: the memory pass builds the first CP
 * rank's, placement the rest, and the engine runs those same programs.
 */
#include <check.h>
#include <math.h>
#include <string.h>

#include "collectives/coll.h"
#include "parallel/compute.h"
#include "parallel/dp.h"
#include "parallel/schedule.h"
#include "parallel/step.h"
#include "parallel/train.h"
#include "scenarios/scenario.h"
#include "scenarios/train_of.h"
#include "tests/checkmain.h"

#define GPT CLUSTERSIM_SRCDIR "/scenarios/gpt3-1.3b-h200.yaml"

/* GPT-3 1.3B (24 layers) on 2 nodes of 8 H200, tp 2, pp 2, cp 2 (dp 2),
 * 16 sequences of micro-batches of 1, with the extra settings. */
struct fixture {
	struct scn s;
	struct par_compute_model *cm;
	struct par_train t;
};

static void setup(struct fixture *f, const char *const *extra, size_t nextra)
{
	const char *sets[32] = {
		"cluster.nodes=2", "cluster.gpus_per_node=8", "cluster.network.nics_per_node=8",
		"parallel.tp=2", "parallel.pp=2", "parallel.cp=2", "training.global_batch=16",
		"training.micro_batch=1", "sim.fidelity=analytic",
	};
	size_t n = 9;
	for (size_t i = 0; i < nextra; i++)
		sets[n++] = extra[i];
	char err[SCN_ERRLEN];
	ck_assert_msg(scn_load(&f->s, GPT, sets, n, err, sizeof(err)) == 0, "%s", err);
	f->cm = par_compute_model_new(&f->s.compute, topo_gpu_find(f->s.cluster.gpu),
				      f->s.training.precision, f->s.datadir, err, sizeof(err));
	ck_assert_msg(f->cm != NULL, "%s", err);
	scn_train_of(&f->t, &f->s, f->cm);
}

static void add(void *ctx, int piece, double params)
{
	(void)piece;
	*(double *)ctx += params;
}

START_TEST(resolve_derives_the_layout)
{
	struct fixture f;
	setup(&f, NULL, 0);
	struct par_step s;
	char err[512];
	ck_assert_msg(par_step_resolve(&s, &f.t, err, sizeof(err)) == 0, "%s", err);
	ck_assert_ptr_eq(s.t, &f.t);
	ck_assert_uint_eq(s.d.tp, 2);
	ck_assert_uint_eq(s.d.pp, 2);
	ck_assert_uint_eq(s.d.cp, 2);
	ck_assert_uint_eq(s.d.dp, 2);
	ck_assert_uint_eq(s.d.vpp, 1);
	ck_assert_uint_eq(s.gpus, 16);
	ck_assert_uint_eq(s.dpn, 4);            /* gradients over dp x cp */
	ck_assert_uint_eq(s.shard, 4);          /* DDP: the whole group */
	ck_assert_uint_eq(s.micro_batches, 8);  /* 16 / dp 2 / 1 */
	ck_assert_ptr_eq(s.schedule, par_schedule(f.s.parallel.schedule));
	ck_assert_ptr_eq(s.strategy, par_dp_find("ddp"));
	/* The layers split over the stages, in order, every one once. */
	ck_assert_uint_eq(s.layer_first[0], 0);
	ck_assert_uint_eq(s.layer_count[0], 12);
	ck_assert_uint_eq(s.layer_first[1], 12);
	ck_assert_uint_eq(s.layer_count[1], 12);
	/* Each stage's parameters: its pieces, the embedding on the first and
	 * the head on the last; the whole model over tp (both stages hold a
	 * copy of the tied embedding, as Megatron does). */
	double sum = 0;
	for (uint32_t st = 0; st < 2; st++) {
		double p = 0;
		par_step_each_param(&s, st, add, &p);
		ck_assert_double_eq(p, s.stage_params[st]);
		sum += p;
	}
	double whole = par_model_params(&f.s.model) +
		       (f.s.model.tied_embeddings ? par_embedding_params(&f.s.model) : 0);
	ck_assert_double_eq_tol(sum, whole / 2, 1e-6 * whole);
	/* Nothing is built yet. */
	for (uint32_t i = 0; i < 4; i++)
		ck_assert_ptr_null(s.progs[i]);
	par_step_free(&s);
	par_step_free(&s);  /* freed twice: harmless */
	par_compute_model_free(f.cm);
}
END_TEST

START_TEST(resolve_shards_and_interleaves)
{
	/* HSDP: parameters sharded over a node's data-parallel ranks. */
	static const char *const hsdp[] = { "parallel.fsdp.enabled=true",
					    "parallel.fsdp.hsdp=true", "parallel.tp=1",
					    "parallel.pp=1", "parallel.cp=1" };
	struct fixture f;
	setup(&f, hsdp, 5);
	struct par_step s;
	char err[512];
	ck_assert_msg(par_step_resolve(&s, &f.t, err, sizeof(err)) == 0, "%s", err);
	ck_assert_ptr_eq(s.strategy, par_dp_find("fsdp"));
	ck_assert_uint_eq(s.dpn, 16);
	ck_assert_uint_eq(s.shard, 8);
	par_step_free(&s);
	par_compute_model_free(f.cm);
	/* Interleaved: 4 virtual stages of 6 layers; chunk c of stage st is
	 * virtual stage c pp + st. */
	static const char *const inter[] = { "parallel.schedule=interleaved", "parallel.vpp=2" };
	setup(&f, inter, 2);
	ck_assert_msg(par_step_resolve(&s, &f.t, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(s.d.vpp, 2);
	for (uint32_t vs = 0; vs < 4; vs++) {
		ck_assert_uint_eq(s.layer_first[vs], 6 * vs);
		ck_assert_uint_eq(s.layer_count[vs], 6);
	}
	par_step_free(&s);
	par_compute_model_free(f.cm);
}
END_TEST

/* A layout the step refuses: the layout check's text, or the training
 * check's, and an empty step. */
START_TEST(resolve_refuses)
{
	static const struct {
		const char *set, *text;
	} cases[] = {
		{ "parallel.ep=2", "parallel.ep: expert parallelism needs an MoE model" },
		{ "training.global_batch=7", "training.global_batch: 7 sequences do not split" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct fixture f;
		const char *extra[] = { cases[i].set };
		char err[512] = "";
		/* Loaded unchecked: the step checks it. */
		const char *sets[] = {
			"cluster.nodes=2", "cluster.gpus_per_node=8",
			"cluster.network.nics_per_node=8", "parallel.tp=2", "parallel.pp=2",
			"parallel.cp=2", "training.global_batch=16", "training.micro_batch=1",
			extra[0],
		};
		char serr[SCN_ERRLEN];
		ck_assert_msg(scn_load_unchecked(&f.s, GPT, sets, ARRAY_SIZE(sets), serr,
						 sizeof(serr)) == 0, "%s", serr);
		f.cm = par_compute_model_new(&f.s.compute, topo_gpu_find(f.s.cluster.gpu),
					     f.s.training.precision, f.s.datadir, serr,
					     sizeof(serr));
		ck_assert_msg(f.cm != NULL, "%s", serr);
		scn_train_of(&f.t, &f.s, f.cm);
		struct par_step s;
		ck_assert_int_eq(par_step_resolve(&s, &f.t, err, sizeof(err)), -1);
		ck_assert_msg(strstr(err, cases[i].text) != NULL, "%s: %s", cases[i].set, err);
		ck_assert_ptr_null(s.progs);
		ck_assert_ptr_null(s.t);
		par_step_free(&s);
		par_compute_model_free(f.cm);
	}
}
END_TEST

/* The memory pass builds the first CP rank's program of each stage; the
 * run places those and builds the others; nothing is built twice. */
START_TEST(programs_built_once)
{
	struct fixture f;
	setup(&f, NULL, 0);
	struct par_step s;
	struct par_report r;
	char err[512];
	ck_assert_msg(par_step_resolve(&s, &f.t, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(par_train_plan(&s, &r, err, sizeof(err)) == 0, "%s", err);
	ck_assert(r.memory.fits);
	const struct sim_program *planned[2];
	for (uint32_t st = 0; st < 2; st++) {
		planned[st] = s.progs[st * 2];
		ck_assert_ptr_nonnull(planned[st]);
		ck_assert_ptr_null(s.progs[st * 2 + 1]);
		ck_assert_ptr_eq(par_step_program(&s, st, 0, NULL), planned[st]);
	}
	ck_assert_msg(par_train_simulate(&s, &r, err, sizeof(err)) == 0, "%s", err);
	for (uint32_t st = 0; st < 2; st++) {
		ck_assert_ptr_eq(s.progs[st * 2], planned[st]);
		ck_assert_ptr_nonnull(s.progs[st * 2 + 1]);
	}
	/* The same step as par_train_run's, which resolves its own. */
	struct par_report again;
	ck_assert_msg(par_train_run(&f.t, &again, err, sizeof(err)) == 0, "%s", err);
	ck_assert_double_eq(again.step_time_s, r.step_time_s);
	ck_assert_double_eq(again.memory.peak, r.memory.peak);
	par_step_free(&s);
	par_compute_model_free(f.cm);
}
END_TEST

/* A program its strategy refuses (ZeRO-1 with a 1 kB bucket: billions of
 * parameter gathers after the step) is built without them, and the plan
 * refuses it with the strategy's text. */
START_TEST(refused_program_not_built)
{
	static const char *const z1[] = { "parallel.zero=1", "parallel.ddp.bucket=1kB",
					  "parallel.pp=1", "parallel.cp=1", "parallel.tp=1" };
	struct fixture f;
	setup(&f, z1, 5);
	struct par_step s;
	struct par_report r;
	char err[512];
	ck_assert_msg(par_step_resolve(&s, &f.t, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(par_train_plan(&s, &r, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "parallel.ddp.bucket") != NULL, "%s", err);
	ck_assert_double_gt(s.refused_most, 1e5);
	ck_assert_uint_lt(s.progs[0]->nops, 100000);
	par_step_free(&s);
	par_compute_model_free(f.cm);
}
END_TEST

/* ---- interference ----------------------------------------------------------- */

static int interf_seen(void *ctx, struct sim *sim, struct topo *topo, char *err, size_t errlen)
{
	(void)topo, (void)err, (void)errlen;
	*(sim_ps *)ctx = sim_rank_stats(sim, 0)->interference_ps;
	return 0;
}

/* compute.interference: measured slows the compute that DDP's bucket
 * all-reduces overlap (the time added is counted; the step grows by at
 * least half of it: the last bucket's all-reduce, itself slowed inside the
 * nodes, is exposed), none leaves the step as it was; with a flat
 * efficiency it is refused. */
START_TEST(interference_measured)
{
	static const char *const ddp[] = { "parallel.tp=1", "parallel.pp=1", "parallel.cp=1",
					   "training.global_batch=32", "training.micro_batch=2" };
	struct fixture f;
	setup(&f, ddp, ARRAY_SIZE(ddp));
	struct par_report none, measured;
	char err[512];
	sim_ps added = -1;
	f.t.finish = interf_seen, f.t.rec_ctx = &added;
	ck_assert(f.t.interference);  /* auto, the default: the h200 table has the curves */
	f.t.interference = false;
	ck_assert_msg(par_train_run(&f.t, &none, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(added, 0);
	f.t.interference = true;
	ck_assert_msg(par_train_run(&f.t, &measured, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(added > 0, "no time added by interference");
	ck_assert_msg(measured.step_time_s >= none.step_time_s + sim_ps_to_s(added) * 0.5,
		      "step %.9g s with, %.9g s without, %.9g s added", measured.step_time_s,
		      none.step_time_s, sim_ps_to_s(added));
	par_compute_model_free(f.cm);
	static const char *const flat[] = { "compute.efficiency=0.5", "compute.interference=measured" };
	setup(&f, flat, ARRAY_SIZE(flat));
	struct par_step s;
	ck_assert_int_eq(par_step_resolve(&s, &f.t, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "compute.interference: measured needs a calibration table"),
		      "%s", err);
	par_compute_model_free(f.cm);
}
END_TEST

/* ---- the host ------------------------------------------------------------------ */

/* compute.host: eager on a step of small kernels: the step is at least the
 * host's time to issue rank 0's ops (each kernel a PyTorch op's cost, each
 * collective its own, from the h200 table's host.csv), and longer than the
 * step without a host; with a flat efficiency it is refused. */
START_TEST(host_eager)
{
	static const char *const small[] = { "parallel.tp=1", "parallel.pp=1", "parallel.cp=1",
					     "training.global_batch=16", "training.seq=256",
					     "model.layers=2" };
	struct fixture f;
	setup(&f, small, ARRAY_SIZE(small));
	struct par_report none, eager;
	char err[512];
	ck_assert_msg(par_train_run(&f.t, &none, err, sizeof(err)) == 0, "%s", err);
	f.t.host = true;
	ck_assert_msg(par_train_run(&f.t, &eager, err, sizeof(err)) == 0, "%s", err);
	struct par_step st;
	struct par_report planned;
	ck_assert_msg(par_step_resolve(&st, &f.t, err, sizeof(err)) == 0 &&
		      par_train_plan(&st, &planned, err, sizeof(err)) == 0, "%s", err);
	static const enum par_host_call of_coll[SIM_COLL_NOPS] = {
		[SIM_COLL_ALLREDUCE] = PAR_HOST_ALLREDUCE,
		[SIM_COLL_REDUCESCATTER] = PAR_HOST_REDUCESCATTER,
		[SIM_COLL_ALLGATHER] = PAR_HOST_ALLGATHER,
		[SIM_COLL_ALLTOALL] = PAR_HOST_ALLTOALL,
		[SIM_COLL_BROADCAST] = PAR_HOST_BROADCAST,
	};
	double issue = 0;
	const struct sim_program *p = st.progs[0];
	for (uint32_t i = 0; i < p->nops; i++) {
		const struct sim_op *op = &p->ops[i];
		if (op->kind == SIM_OP_COMPUTE && op->dur_ps > 0)
			issue += par_compute_host_s(f.cm, PAR_HOST_KERNEL);
		else if (op->kind == SIM_OP_COLL)
			issue += par_compute_host_s(f.cm, of_coll[op->coll]);
		else if (op->kind == SIM_OP_SEND || op->kind == SIM_OP_RECV)
			issue += par_compute_host_s(f.cm, PAR_HOST_ALLREDUCE);
	}
	par_step_free(&st);
	ck_assert_double_gt(issue, 0);
	ck_assert_msg(eager.step_time_s >= issue && eager.step_time_s > none.step_time_s,
		      "step %.9g s eager, %.9g s without a host, %.9g s to issue", eager.step_time_s,
		      none.step_time_s, issue);
	par_compute_model_free(f.cm);
	static const char *const flat[] = { "compute.efficiency=0.5", "compute.host=eager" };
	setup(&f, flat, ARRAY_SIZE(flat));
	ck_assert_int_eq(par_step_resolve(&st, &f.t, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "compute.host: eager needs a calibration table"), "%s", err);
	par_compute_model_free(f.cm);
}
END_TEST

/* ---- ZeRO-3 granularity ----------------------------------------------------- */

/*
 * DeepSpeed's prefetch rule by hand, on modules of 3 and 1 elements and two
 * layers: fetches 3 1 3 1 (forward) then 1 3 1 3 (backward, each layer's
 * modules in reverse). Bucket 2, room for 100: e0 alone, then [1,3) (1 is
 * short of 2, 1 + 3 is not); at e1 [3,5), e2 [5,6), e3 [6,8): 5 calls.
 * With room for 4 gathered at once: e0 alone (3 live), [1,2) (cap 1),
 * [2,3), [3,4), [4,6), none at e4 (4 live), [6,7), [7,8): 7 calls. No
 * prefetch: 8, one per fetch; with full recomputation the backward fetches
 * each layer's modules forward again first: 12.
 */
START_TEST(zero3_calls_by_hand)
{
	const double mod[2] = { 3, 1 };
	ck_assert_uint_eq(par_dps_gather_calls(mod, 2, 2, 0, 2, 100), 5);
	ck_assert_uint_eq(par_dps_gather_calls(mod, 2, 2, 0, 2, 4), 7);
	ck_assert_uint_eq(par_dps_gather_calls(mod, 2, 2, 0, 0, 100), 8);
	ck_assert_uint_eq(par_dps_gather_calls(mod, 2, 2, 1, 0, 100), 12);
	/* GPT-3 1.3B's layer (h 2048, FFN 8192) at tp 1: qkv, attn_out, up, down. */
	struct fixture f;
	setup(&f, NULL, 0);
	double m[8];
	unsigned n = par_dps_layer_modules(f.t.model, f.t.training, 1, false, m, 8);
	ck_assert_uint_eq(n, 4);
	ck_assert(m[0] == 2048.0 * 6144 && m[1] == 2048.0 * 2048 && m[2] == 2048.0 * 8192 &&
		  m[3] == 8192.0 * 2048);
	par_compute_model_free(f.cm);
}
END_TEST

/* Ops of a program whose name ends so, and the sum of their bytes. */
static unsigned count_ops(const struct sim_program *p, const char *suffix, double *bytes)
{
	unsigned k = 0;
	size_t ls = strlen(suffix);
	*bytes = 0;
	for (uint32_t i = 0; i < p->nops; i++) {
		size_t ln = strlen(p->ops[i].name);
		if (ln >= ls && !strcmp(p->ops[i].name + ln - ls, suffix))
			k++, *bytes += p->ops[i].bytes;
	}
	return k;
}

/*
 * ZeRO-3 on GPT-3 1.3B over 8 GPUs (dp 8), 2 micro-batches: each micro-batch
 * gathers the root unit once and its 24 layers' modules by the rule above
 * (par_dps_gather_calls), moving the layers' GEMM weights twice (forward and
 * backward, 2 bytes each) and the root once; the gradients go out in buckets
 * of parallel.zero3.reduce_bucket elements: one reduce-scatter a micro-batch
 * with a bucket larger than the model, one per gradient (each weight
 * gradient, the norms and biases with the layer's last, the root's two)
 * with a bucket of one element. Every byte of gradient is reduced once.
 */
START_TEST(zero3_program_granularity)
{
	static const char *const z3[] = { "parallel.tp=1", "parallel.pp=1", "parallel.cp=1",
					  "cluster.nodes=1", "parallel.zero=3",
					  "training.global_batch=16", "training.micro_batch=1",
					  "parallel.zero3.reduce_bucket=4000000000" };
	static const char *const rs1[] = { "parallel.tp=1", "parallel.pp=1", "parallel.cp=1",
					   "cluster.nodes=1", "parallel.zero=3",
					   "training.global_batch=16", "training.micro_batch=1",
					   "parallel.zero3.reduce_bucket=1" };
	for (int one = 0; one < 2; one++) {
		struct fixture f;
		setup(&f, one ? rs1 : z3, ARRAY_SIZE(z3));
		struct par_step s;
		char err[512];
		ck_assert_msg(par_step_resolve(&s, &f.t, err, sizeof(err)) == 0, "%s", err);
		ck_assert_uint_eq(s.micro_batches, 2);
		const struct sim_program *p = par_step_program(&s, 0, 0, NULL);
		double m[8], ag, rs;
		unsigned n = par_dps_layer_modules(f.t.model, f.t.training, 1, false, m, 8);
		unsigned calls = par_dps_gather_calls(m, n, 24, 0, 5e7, 1e9);
		ck_assert_uint_eq(count_ops(p, ".allgather", &ag), 2 * (calls + 1));
		double layer = m[0] + m[1] + m[2] + m[3], root = s.stage_params[0] - 24 *
			       par_step_layer_params(&s, 0);
		ck_assert_msg(fabs(ag - 2 * 2 * (2 * 24 * layer + root)) < 1,
			      "all-gathers moved %.0f B", ag);
		unsigned nrs = count_ops(p, ".reducescatter", &rs);
		ck_assert_msg(fabs(rs - 2 * 2 * s.stage_params[0]) < 1, "reduce-scatters moved "
			      "%.0f B of %.0f", rs, 2 * 2 * s.stage_params[0]);
		/* 4 weight gradients and the extras a layer, the root's two. */
		ck_assert_uint_eq(nrs, one ? 2 * (24 * 5 + 2) : 2);
		par_step_free(&s);
		par_compute_model_free(f.cm);
	}
}
END_TEST

/*
 * ZeRO-1 with routed experts, on GPT-3 1.3B made MoE (4 experts, top 2)
 * over 16 GPUs, dp 16, ep 4: the dense parameters' optimizer states are
 * sharded over the 16 data-parallel ranks, each expert's over the 4 ranks
 * that hold it (the expert-data-parallel group); the expert gradients are
 * reduce-scattered over those 4 layer by layer, and after the step the
 * updated experts are all-gathered over them, the dense parameters over
 * all 16. Under DDP the expert gradients are all-reduced; with ep 16 no
 * other rank holds a rank's experts and nothing is reduced or gathered.
 */
START_TEST(zero1_shards_experts_over_edp)
{
	static const char *const z1[] = { "parallel.tp=1", "parallel.pp=1", "parallel.cp=1",
					  "model.moe.experts=4", "model.moe.top_k=2",
					  "parallel.ep=4", "parallel.zero=1" };
	struct fixture f;
	setup(&f, z1, ARRAY_SIZE(z1));
	struct par_step s;
	char err[512];
	ck_assert_msg(par_step_resolve(&s, &f.t, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(s.shard, 16);
	ck_assert_uint_eq(par_step_expert_shard(&s), 4);
	const struct par_model *m = f.t.model;
	double expert = par_expert_params(m), experts = 0;
	for (int l = 0; l < (int)m->layers; l++) {
		ck_assert_double_eq(par_step_layer_expert_params(&s, l), expert);  /* 4 / ep 4 */
		experts += expert;
	}
	ck_assert_double_eq(par_step_layer_expert_params(&s, -1), 0);
	ck_assert_double_eq_tol(s.stage_expert_params[0], experts, 1e-9 * experts);
	double dense = s.stage_params[0] - experts;
	struct par_states st, d, e, all;
	par_step_states(&s, 0, 1, &st);
	par_model_states(dense, f.t.training->precision, f.t.training->optimizer, 1, 16, false,
			 &d);
	par_model_states(experts, f.t.training->precision, f.t.training->optimizer, 1, 4, false,
			 &e);
	par_model_states(s.stage_params[0], f.t.training->precision, f.t.training->optimizer, 1,
			 16, false, &all);
	ck_assert_double_eq_tol(st.optimizer, d.optimizer + e.optimizer, 1);
	ck_assert_double_eq_tol(st.weights, all.weights, 1);
	ck_assert_double_gt(st.optimizer, 1.5 * all.optimizer);
	const struct sim_program *p = par_step_program(&s, 0, 0, NULL);
	double bytes;
	/* Every gradient byte (bf16) reduced once: the experts' GEMM weights
	 * over the 4, the rest (their biases too, 0.03 %) in the buckets. */
	double buckets = 0;
	ck_assert_uint_eq(count_ops(p, ".experts.reducescatter", &bytes), m->layers);
	for (uint32_t i = 0; i < p->nops; i++)
		if (!strncmp(p->ops[i].name, "zero1.bucket", 12))
			buckets += p->ops[i].bytes;
	ck_assert_double_eq_tol(bytes + buckets, 2 * s.stage_params[0], 1);
	ck_assert_double_eq_tol(bytes, 2 * experts, 1e-3 * experts);
	ck_assert_uint_eq(count_ops(p, ".experts.allreduce", &bytes), 0);
	count_ops(p, ".allgather", &bytes);
	ck_assert_double_eq_tol(bytes, 2 * s.stage_params[0], 1);
	double eg = 0;
	for (uint32_t i = 0; i < p->nops; i++)
		if (!strncmp(p->ops[i].name, "zero1.experts", 13))
			eg += p->ops[i].bytes;
	ck_assert_double_eq_tol(eg, 2 * experts, 1);
	par_step_free(&s);
	par_compute_model_free(f.cm);

	static const char *const ddp[] = { "parallel.tp=1", "parallel.pp=1", "parallel.cp=1",
					   "model.moe.experts=4", "model.moe.top_k=2",
					   "parallel.ep=4", "parallel.zero=0" };
	setup(&f, ddp, ARRAY_SIZE(ddp));
	ck_assert_msg(par_step_resolve(&s, &f.t, err, sizeof(err)) == 0, "%s", err);
	p = par_step_program(&s, 0, 0, NULL);
	ck_assert_uint_eq(count_ops(p, ".experts.allreduce", &bytes), m->layers);
	ck_assert_uint_eq(count_ops(p, ".experts.reducescatter", &bytes), 0);
	par_step_free(&s);
	par_compute_model_free(f.cm);

	static const char *const ep16[] = { "parallel.tp=1", "parallel.pp=1", "parallel.cp=1",
					    "model.moe.experts=16", "model.moe.top_k=2",
					    "parallel.ep=16", "parallel.zero=1" };
	setup(&f, ep16, ARRAY_SIZE(ep16));
	ck_assert_msg(par_step_resolve(&s, &f.t, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(par_step_expert_shard(&s), 1);
	par_step_states(&s, 0, 1, &st);
	experts = s.stage_expert_params[0], dense = s.stage_params[0] - experts;
	par_model_states(dense, f.t.training->precision, f.t.training->optimizer, 1, 16, false,
			 &d);
	par_model_states(experts, f.t.training->precision, f.t.training->optimizer, 1, 1, false,
			 &e);
	ck_assert_double_eq_tol(st.optimizer, d.optimizer + e.optimizer, 1);
	p = par_step_program(&s, 0, 0, NULL);
	ck_assert_uint_eq(count_ops(p, ".experts.reducescatter", &bytes), 0);
	ck_assert_uint_eq(count_ops(p, ".experts.allreduce", &bytes), 0);
	count_ops(p, ".allgather", &bytes);
	ck_assert_double_eq_tol(bytes, 2 * dense, 1);
	par_step_free(&s);
	par_compute_model_free(f.cm);
}
END_TEST

/* ---- labels -------------------------------------------------------------- */

/* The number after prefix p filling token t of length n ("mb12"), or -1. */
static int tok_num(const char *t, size_t n, const char *p)
{
	size_t lp = strlen(p);
	if (n <= lp || strncmp(t, p, lp))
		return -1;
	int v = 0;
	for (size_t i = lp; i < n; i++) {
		if (t[i] < '0' || t[i] > '9')
			return -1;
		v = v * 10 + (t[i] - '0');
	}
	return v;
}

/* What an op's name says (layer "L<n>", "mb<m>", a "c<c>" right after it,
 * "fwd", "bwd", "bwd.re"), to hold its label against. */
struct said {
	int layer, mb, chunk, fwd, bwd, re;
};

static struct said name_says(const char *name)
{
	struct said s = { -1, -1, -1, 0, 0, 0 };
	int after_mb = 0, after_bwd = 0;
	for (const char *t = name; *t;) {
		size_t n = strcspn(t, ".");
		int mb = tok_num(t, n, "mb"), layer = tok_num(t, n, "L");
		if (after_mb && s.chunk < 0)
			s.chunk = tok_num(t, n, "c");
		if (n == 3 && !strncmp(t, "fwd", 3))
			s.fwd = 1;
		if (n == 3 && !strncmp(t, "bwd", 3))
			s.bwd = 1;
		if (after_bwd && n == 2 && !strncmp(t, "re", 2))
			s.re = 1;
		after_bwd = n == 3 && !strncmp(t, "bwd", 3);
		after_mb = mb >= 0;
		if (mb >= 0 && s.mb < 0)
			s.mb = mb;
		if (layer >= 0 && s.layer < 0)
			s.layer = layer;
		t += n + (t[n] == '.');
	}
	return s;
}

/*
 * Every op of every program of a step: its label says what its name says
 * (names are derived from labels; a memory marker's short name leaves its
 * layer out). The phase of a kernel recomputed in
 * place of the model's (ring attention, an MoE layer's experts) is
 * recompute where its name says fwd; compute ops of a pass have a kernel.
 */
static void labels_agree(const char *const *extra, size_t n, unsigned *checked)
{
	struct fixture f;
	setup(&f, extra, n);
	struct par_step s;
	char err[512];
	ck_assert_msg(par_step_resolve(&s, &f.t, err, sizeof(err)) == 0, "%s", err);
	for (uint32_t st = 0; st < s.d.pp; st++)
		for (uint32_t ci = 0; ci < s.d.cp; ci++) {
			const struct sim_program *p = par_step_program(&s, st, ci, NULL);
			for (uint32_t i = 0; i < p->nops; i++) {
				const struct sim_op *o = &p->ops[i];
				struct said w = name_says(o->name);
				/* A memory marker (no time) inside a layer has its layer in
				 * the label, not in its short name. */
				int marker = o->kind == SIM_OP_COMPUTE && o->dur_ps == 0 &&
					     o->flops == 0;
				if (marker && w.layer < 0)
					w.layer = o->layer;
				ck_assert_msg(o->mb == w.mb && o->chunk == w.chunk && o->layer == w.layer,
					      "%s: label layer %d mb %d chunk %d", o->name, o->layer,
					      o->mb, o->chunk);
				if (o->kind != SIM_OP_COMPUTE || (!w.fwd && !w.bwd)) {
					(*checked)++;
					continue;
				}
				enum sim_phase want = w.re ? SIM_PHASE_RECOMPUTE
						    : w.bwd ? SIM_PHASE_BWD : SIM_PHASE_FWD;
				ck_assert_msg(o->phase == want || (want == SIM_PHASE_FWD &&
								   o->phase == SIM_PHASE_RECOMPUTE),
					      "%s: phase %s", o->name,
					      sim_phase_name((enum sim_phase)o->phase));
				ck_assert_msg(o->kernel && strstr(o->name, o->kernel), "%s: kernel %s",
					      o->name, o->kernel ? o->kernel : "none");
				(*checked)++;
			}
		}
	par_step_free(&s);
	par_compute_model_free(f.cm);
}

START_TEST(labels_agree_with_names)
{
	static const char *const inter[] = { "parallel.schedule=interleaved", "parallel.vpp=2",
					     "parallel.cp=1", "parallel.sp=true",
					     "training.recompute=full" };
	static const char *const ring[] = { "parallel.pp=1", "parallel.tp=1", "parallel.cp=8",
					    "training.recompute=full", "training.seq=8192" };
	static const char *const ulysses[] = { "parallel.pp=1", "parallel.cp=2",
					       "parallel.cp_algo=ulysses" };
	static const char *const zero3[] = { "parallel.pp=1", "parallel.cp=1", "parallel.tp=1",
					     "parallel.zero=3" };
	static const char *const moe[] = { "model.moe.experts=4", "model.moe.top_k=2",
					   "parallel.pp=1", "parallel.cp=1", "parallel.tp=2",
					   "parallel.ep=2", "training.recompute=full" };
	unsigned checked = 0;
	labels_agree(NULL, 0, &checked);
	labels_agree(moe, ARRAY_SIZE(moe), &checked);
	labels_agree(inter, ARRAY_SIZE(inter), &checked);
	labels_agree(ring, ARRAY_SIZE(ring), &checked);
	labels_agree(ulysses, ARRAY_SIZE(ulysses), &checked);
	labels_agree(zero3, ARRAY_SIZE(zero3), &checked);
	ck_assert_uint_gt(checked, 10000);
}
END_TEST

static Suite *step_suite(void)
{
	Suite *su = suite_create("step");
	TCase *t = tcase_create("resolve");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, resolve_derives_the_layout);
	tcase_add_test(t, resolve_shards_and_interleaves);
	tcase_add_test(t, resolve_refuses);
	tcase_add_test(t, programs_built_once);
	tcase_add_test(t, refused_program_not_built);
	tcase_add_test(t, labels_agree_with_names);
	tcase_add_test(t, interference_measured);
	tcase_add_test(t, host_eager);
	tcase_add_test(t, zero3_calls_by_hand);
	tcase_add_test(t, zero3_program_granularity);
	tcase_add_test(t, zero1_shards_experts_over_edp);
	suite_add_tcase(su, t);
	return su;
}

int main(void)
{
	return check_run(step_suite());
}
