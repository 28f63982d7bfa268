/*
 * test_dp_spec.c - each data-parallel strategy's closed forms (parallel/dp.h:
 * exposed_s, plan_memory) against flow fidelity on an idealised case, as
 * SPEC C1-C5 are for the collectives (the registry's own tests:
 * tests/unit/test_dp.c).
 *
 * The case: the lesson's fixture (scenarios/ddp-lesson.yaml: the ideal
 * cluster, A100 peak at efficiency 1, no launch overhead) made
 * communication-bound: 4 layers of h = 2048 (about 200 M parameters) on 8
 * ranks linked at 1 GB/s and 1 us, 128 tokens per GPU, one micro-batch,
 * 1 GB buckets (one bucket, one parameter gather) and ring collectives.
 * The all-reduce of the gradients then takes about 0.7 s and a
 * micro-batch's compute about 0.5 ms, so what a closed form says the step
 * waits for is what the engine finds exposed: exactly where nothing
 * overlaps (DDP without overlap, ZeRO-1, ZeRO-2 without overlap), within
 * 1 % where the overlap is the compute's (sub-millisecond) and the
 * per-unit latencies (ZeRO-3, FSDP) are left out of the closed form.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/coll.h"
#include "parallel/compute.h"
#include "parallel/dp.h"
#include "parallel/model.h"
#include "parallel/train.h"
#include "scenarios/scenario.h"
#include "tests/checkmain.h"

#define LESSON CLUSTERSIM_SRCDIR "/scenarios/ddp-lesson.yaml"

/* The communication-bound fixture, before each case's own keys. */
static const char *const fixture[] = {
	"cluster.network.bandwidth=1GB/s", "cluster.network.latency=1us", "model.layers=4",
	"training.seq=128", "training.global_batch=8", "training.micro_batch=1",
	"parallel.ddp.bucket=1GB", "parallel.algorithms.allreduce=ring",
	"parallel.algorithms.reducescatter=ring", "parallel.algorithms.allgather=ring",
};
#define NFIX (sizeof(fixture) / sizeof(fixture[0]))

/* Every op of every rank, in the order the engine finished them. */
struct trace {
	struct { uint32_t rank; int kind; double start, end, bytes; } *op;
	size_t n, cap;
};

static void trace_op(void *ctx, uint32_t rank, const struct sim_op *op, sim_ps s, sim_ps e)
{
	struct trace *t = ctx;
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 1024;
		t->op = realloc(t->op, t->cap * sizeof(*t->op));
		ck_assert_ptr_nonnull(t->op);
	}
	t->op[t->n].rank = rank, t->op[t->n].kind = op->kind;
	t->op[t->n].start = sim_ps_to_s(s), t->op[t->n].end = sim_ps_to_s(e);
	t->op[t->n++].bytes = op->bytes;
}

static const struct sim_recorder_ops trace_ops = { .op_done = trace_op };

/* Run the fixture with a case's keys in flow fidelity; trace if asked. */
static void run(const char *const *sets, size_t nsets, struct scn *s, struct par_report *r,
		struct trace *tr)
{
	const char *all[NFIX + 8];
	char err[SCN_ERRLEN];
	ck_assert_uint_le(nsets, 8);
	memcpy(all, fixture, sizeof(fixture));
	memcpy(all + NFIX, sets, nsets * sizeof(*sets));
	ck_assert_msg(scn_load(s, LESSON, all, NFIX + nsets, err, sizeof(err)) == 0, "%s", err);
	const struct topo_gpu *gpu = topo_gpu_find(s->cluster.gpu);
	struct par_compute_model *cm = par_compute_model_new(&s->compute, gpu,
							     s->training.precision, s->datadir,
							     err, sizeof(err));
	ck_assert_msg(cm != NULL, "%s", err);
	struct par_train t = {
		.model = &s->model, .training = &s->training, .layout = &s->parallel,
		.compute = cm, .cluster = &s->cluster, .steps = 1,
		.rec = tr ? &trace_ops : NULL, .rec_ctx = tr,
	};
	sim_config_init(&t.sim);
	t.sim.algos = coll_algos;
	ck_assert_msg(par_train_run(&t, r, err, sizeof(err)) == 0, "%s", err);
	par_compute_model_free(cm);
}

/* SPEC C1-C3 (the ring's closed forms) of a collective of n bytes over
 * the fixture's p ranks, on the ideal cluster's links. */
static double ring_s(const struct scn *s, enum sim_coll_op op, double n, uint32_t p)
{
	struct sim_coll_plan plan = { .op = op, .p = p, .bytes = n, .channels = 1 };
	char err[128];
	ck_assert_int_eq(coll_ring.plan(&plan, err, sizeof(err)), 0);
	struct sim_coll_linkset ls = { 0 };
	ls.all.alpha_intra_s = s->cluster.net_lat_s;
	ls.all.bw_intra_Bps = s->cluster.net_bw_Bps;
	return coll_ring.time_s(&plan, &ls);
}

static double allreduce_s(const struct scn *s, double n, uint32_t p)
{
	return ring_s(s, SIM_COLL_ALLREDUCE, n, p);
}

/* The closed forms' collectives over the fixture's data-parallel group. */
struct ring_ctx {
	const struct scn *s;
	uint32_t p;
};

static double ring_coll_s(void *ctx, enum sim_coll_op op, double bytes)
{
	const struct ring_ctx *c = ctx;
	return ring_s(c->s, op, bytes, c->p);
}

/* The stage costs of the run: the rank's parameters and gradients'
 * all-reduce; its compute as the stage's (forward 1/3, backward 2/3); one
 * chunk whose gradients fill one bucket (1 GB buckets), and the embedding
 * and head. */
static struct ring_ctx ring_ctx;
static struct par_dp_chunk one_chunk;

static struct par_dp_costs costs_of(const struct scn *s, const struct par_report *r)
{
	struct par_dp_costs c = {
		.layout = &s->parallel, .params = r->params, .dp = r->dp * s->parallel.cp,
		.precision = s->training.precision, .optimizer = s->training.optimizer,
		.micro_batches = r->micro_batches,
		.stage_s = r->breakdown.compute_s / r->micro_batches,
	};
	c.backward_s = c.stage_s * 2 / 3;
	double grads = par_grad_bytes(c.precision, s->parallel.ddp.fp32_grads) * c.params;
	ck_assert(grads < s->parallel.ddp.bucket_bytes);
	c.allreduce_s = allreduce_s(s, grads, c.dp);
	ring_ctx = (struct ring_ctx){ .s = s, .p = c.dp };
	one_chunk = (struct par_dp_chunk){ .bucket = { { .bytes = grads, .n = 1 } }, .nbucket = 1,
					   .bytes = grads, .last = grads };
	c.chunk = &one_chunk, c.nchunks = 1;
	c.coll_s = ring_coll_s, c.coll_ctx = &ring_ctx;
	c.edge_params = (par_embedding_params(&s->model) + par_head_params(&s->model)) /
			s->parallel.tp;
	return c;
}

struct dp_case {
	const char *strategy;       /* what the report must name              */
	const char *sets[4];
	double tol;                 /* relative                               */
};

static const struct dp_case cases[] = {
	/* Nothing overlaps: the closed form is the collectives' whole. */
	{ "ddp", { "parallel.ddp.overlap=false" }, 1e-6 },
	{ "zero1", { "parallel.zero=1" }, 1e-6 },
	{ "zero2", { "parallel.zero=2", "parallel.ddp.overlap=false" }, 1e-6 },
	{ "ddp-after", { "parallel.strategy=ddp-after" }, 1e-6 },
	/* The backward hides what it can (here, little). */
	{ "ddp", { "parallel.strategy=ddp" }, 1e-2 },
	{ "zero2", { "parallel.strategy=zero2" }, 1e-2 },
	/* Parameters gathered per unit, prefetched or not, resharded or not. */
	{ "zero3", { "parallel.zero=3" }, 1e-2 },
	{ "fsdp", { "parallel.fsdp.enabled=true", "parallel.fsdp.unit_layers=2" }, 1e-2 },
	{ "fsdp", { "parallel.strategy=fsdp", "parallel.fsdp.prefetch=false" }, 1e-2 },
	{ "fsdp", { "parallel.strategy=fsdp", "parallel.fsdp.reshard=false" }, 1e-2 },
	/* Two micro-batches: ZeRO-2 reduce-scatters, ZeRO-3 and FSDP gather and
	 * reduce-scatter, for each one (the first's beside the second's
	 * compute, so within 1e-3). */
	{ "zero2", { "parallel.zero=2", "parallel.ddp.overlap=false", "training.global_batch=16" },
	  1e-3 },
	{ "zero3", { "parallel.zero=3", "training.global_batch=16" }, 1e-2 },
	{ "fsdp", { "parallel.strategy=fsdp", "training.global_batch=16" }, 1e-2 },
};

static size_t nsets(const struct dp_case *k)
{
	size_t n = 0;
	while (n < 4 && k->sets[n])
		n++;
	return n;
}

/* The closed form of the exposed communication against the engine's. */
START_TEST(exposed_closed_form_matches_flow)
{
	const struct dp_case *k = &cases[_i];
	static struct scn s;
	struct par_report r;
	run(k->sets, nsets(k), &s, &r, NULL);
	const struct par_dp_strategy *dp = par_dp_strategy_of(&s.parallel);
	ck_assert_str_eq(r.strategy, k->strategy);
	ck_assert_str_eq(dp->name, k->strategy);
	struct par_dp_costs c = costs_of(&s, &r);
	double want = dp->exposed_s(&c), got = r.breakdown.exposed_comm_s;
	ck_assert_msg(got > 0.5, "%s %s: only %.9g s exposed: not communication-bound",
		      k->strategy, k->sets[0], got);
	ck_assert_msg(fabs(got - want) <= k->tol * want,
		      "%s (%s%s%s): the engine exposes %.9g s, the closed form %.9g s "
		      "(all-reduce %.9g s, stage %.9g s)", k->strategy, k->sets[0],
		      k->sets[1] ? ", " : "", k->sets[1] ? k->sets[1] : "", got, want,
		      c.allreduce_s, c.stage_s);
}
END_TEST

/* The closed form of the model states is what the simulator holds from
 * the start (SPEC C12), and the buffers its two buckets (bucketed ones). */
START_TEST(memory_closed_form_matches_flow)
{
	const struct dp_case *k = &cases[_i];
	static struct scn s;
	struct par_report r;
	run(k->sets, nsets(k), &s, &r, NULL);
	const struct par_dp_strategy *dp = par_dp_strategy_of(&s.parallel);
	struct par_dp_costs c = costs_of(&s, &r);
	struct par_dp_mem m;
	dp->plan_memory(&c, &m);
	ck_assert_msg(fabs(m.states - r.memory.model_states) <= 1e-9 * m.states,
		      "%s: model states %.17g B, the closed form %.17g B", k->strategy,
		      r.memory.model_states, m.states);
	if (!(dp->flags & PAR_DP_SHARDS_PARAMS))  /* the peak is the backward's */
		ck_assert_msg(fabs(m.buffers - r.memory.bytes[PAR_MEM_BUFFERS]) < 1,
			      "%s: buffers %.17g B, the closed form %.17g B", k->strategy,
			      r.memory.bytes[PAR_MEM_BUFFERS], m.buffers);
}
END_TEST

/* The reference strategy: one all-reduce after the backward is DDP without
 * overlap with a bucket larger than the model, op for op on every rank. */
START_TEST(ddp_after_is_ddp_without_overlap)
{
	static struct scn s;
	struct par_report a, b;
	struct trace ta = { 0 }, tb = { 0 };
	const char *ddp[] = { "parallel.ddp.overlap=false" };
	const char *after[] = { "parallel.strategy=ddp-after" };
	run(ddp, 1, &s, &a, &ta);
	run(after, 1, &s, &b, &tb);
	ck_assert_str_eq(b.strategy, "ddp-after");
	ck_assert_msg(a.step_time_s == b.step_time_s, "step %.17g s (ddp), %.17g s (ddp-after)",
		      a.step_time_s, b.step_time_s);
	ck_assert(a.breakdown.exposed_comm_s == b.breakdown.exposed_comm_s);
	ck_assert_uint_gt(ta.n, 8);
	ck_assert_uint_eq(ta.n, tb.n);
	for (size_t i = 0; i < ta.n; i++)
		ck_assert_msg(ta.op[i].rank == tb.op[i].rank && ta.op[i].kind == tb.op[i].kind &&
			      ta.op[i].start == tb.op[i].start && ta.op[i].end == tb.op[i].end &&
			      ta.op[i].bytes == tb.op[i].bytes, "op %zu differs", i);
	free(ta.op);
	free(tb.op);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("dp_spec");
	TCase *tc = tcase_create("closed_forms");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, exposed_closed_form_matches_flow, 0, ARRAY_SIZE(cases));
	tcase_add_loop_test(tc, memory_closed_form_matches_flow, 0, ARRAY_SIZE(cases));
	tcase_add_test(tc, ddp_after_is_ddp_without_overlap);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(suite());
}
