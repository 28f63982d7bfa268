/*
 * test_ddp_spec.c - SPEC C16 and C17 pinned by number, on the lesson's
 * fixture (scenarios/ddp-lesson.yaml: 24 layers of h = 2048, 8 ranks of the
 * ideal cluster at 50 GB/s and 10 us, A100 peak at efficiency 1, 25 MB
 * buckets, 16,384 tokens per GPU), in flow fidelity.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/coll.h"
#include "parallel/compute.h"
#include "parallel/model.h"
#include "parallel/train.h"
#include "scenarios/scenario.h"
#include "tests/checkmain.h"

#define LESSON CLUSTERSIM_SRCDIR "/scenarios/ddp-lesson.yaml"
#define ALPHA 10e-6
#define BW 50e9

/* What rank 0 did: its buckets and the end of its backward pass. */
struct capture {
	double bucket_start[8192], bucket_end[8192], bucket_bytes[8192];
	unsigned nbuckets;
	double backward_end;
};

static void cap_op(void *ctx, uint32_t rank, const struct sim_op *op, sim_ps s, sim_ps e)
{
	struct capture *c = ctx;
	if (rank != 0)
		return;
	if (op->kind == SIM_OP_COLL && c->nbuckets < 8192) {
		c->bucket_start[c->nbuckets] = sim_ps_to_s(s);
		c->bucket_end[c->nbuckets] = sim_ps_to_s(e);
		c->bucket_bytes[c->nbuckets++] = op->bytes;
	} else if (op->kind == SIM_OP_COMPUTE && strstr(op->name, ".bwd.")) {
		c->backward_end = fmax(c->backward_end, sim_ps_to_s(e));
	}
}

static const struct sim_recorder_ops cap_ops = { .op_done = cap_op };

/* Run the lesson with extra --set overrides; fill the report and capture. */
static void lesson(const char *const *sets, size_t nsets, struct par_report *r,
		   struct capture *c, struct scn *out)
{
	struct scn s;
	char err[SCN_ERRLEN];
	ck_assert_msg(scn_load(&s, LESSON, sets, nsets, err, sizeof(err)) == 0, "%s", err);
	const struct topo_gpu *gpu = topo_gpu_find(s.cluster.gpu);
	struct par_compute_model *cm = par_compute_model_new(&s.compute, gpu, s.training.precision,
							     s.datadir, err, sizeof(err));
	ck_assert_msg(cm != NULL, "%s", err);
	memset(c, 0, sizeof(*c));
	struct par_train t = {
		.model = &s.model, .training = &s.training, .layout = &s.parallel, .compute = cm,
		.cluster = &s.cluster, .steps = 1, .rec = &cap_ops, .rec_ctx = c,
	};
	sim_config_init(&t.sim);
	t.sim.algos = coll_algos;
	ck_assert_msg(par_train_run(&t, r, err, sizeof(err)) == 0, "%s", err);
	par_compute_model_free(cm);
	if (out)
		*out = s;
}

/*
 * The exposed tail the lesson expects: the last full bucket's all-reduce
 * (and the small remainder bucket after it, if any). Returns its duration
 * and checks that every earlier bucket ended before the backward did.
 */
static double last_bucket_tail(const struct capture *c, double cap)
{
	unsigned f = c->nbuckets - 1;
	while (f > 0 && c->bucket_bytes[f] < cap)
		f--;
	ck_assert_msg(f == 0 || c->bucket_end[f - 1] <= c->backward_end,
		      "bucket %u of %u ends %.9g s after the backward (%.9g s)", f - 1,
		      c->nbuckets, c->bucket_end[f - 1] - c->backward_end, c->backward_end);
	double t = 0;
	for (unsigned i = f; i < c->nbuckets; i++)
		t += c->bucket_end[i] - c->bucket_start[i];
	return t;
}

/* SPEC C1 on the fixture's links: a ring all-reduce of n bytes over 8 ranks. */
static double ring_s(double n)
{
	return 14 * ALPHA + 14.0 / 8 * n / BW;
}

/* C16: with 25 MB buckets only the last bucket's all-reduce is exposed. */
START_TEST(c16_only_last_bucket_exposed)
{
	struct par_report r;
	static struct capture c;
	lesson(NULL, 0, &r, &c, NULL);
	ck_assert_uint_gt(c.nbuckets, 24);
	double tail = last_bucket_tail(&c, 25e6);
	double after = c.bucket_end[c.nbuckets - 1] - c.backward_end;
	ck_assert_msg(fabs(r.breakdown.exposed_comm_s - after) < 1e-9 && after <= tail + 1e-12,
		      "exposed %.9g s, after the backward %.9g s, last bucket %.9g s",
		      r.breakdown.exposed_comm_s, after, tail);
	unsigned k = c.nbuckets - 1;
	double d = c.bucket_end[k] - c.bucket_start[k];
	ck_assert_msg(fabs(d - ring_s(c.bucket_bytes[k])) / d < 1e-6,
		      "a bucket takes %.9g s, the C1 closed form %.9g s", d, ring_s(c.bucket_bytes[k]));
}
END_TEST

/* C16: tiny buckets pay α per bucket; the latencies add up. Buckets hold
 * whole tensors (PyTorch), so 1 MB buckets hold one weight each. */
START_TEST(c16_small_buckets_pay_latency)
{
	struct par_report base, small;
	static struct capture c;
	const char *sets[] = { "parallel.ddp.bucket=1MB" };
	lesson(NULL, 0, &base, &c, NULL);
	unsigned n25 = c.nbuckets;
	lesson(sets, 1, &small, &c, NULL);
	double busy = 0, bytes = 0;
	for (unsigned i = 0; i < c.nbuckets; i++) {
		busy += c.bucket_end[i] - c.bucket_start[i];
		bytes += c.bucket_bytes[i];
	}
	/* Communication time = n (2(p-1) α) + 2(p-1)/p (all bytes) β: every bucket
	 * pays the latency again. */
	double want = c.nbuckets * 14 * ALPHA + 14.0 / 8 * bytes / BW;
	ck_assert_msg(c.nbuckets > n25, "%u buckets of 1 MB, %u of 25 MB", c.nbuckets, n25);
	ck_assert_msg(fabs(busy - want) / want < 1e-6, "all-reduces take %.9g s, expected "
		      "%u x 14 x 10 us + 1.75 x %.0f B / 50 GB/s = %.9g s", busy, c.nbuckets,
		      bytes, want);
	ck_assert_msg(fabs(bytes - 2 * small.params) < 1, "buckets carry %.0f B of %.0f B",
		      bytes, 2 * small.params);
}
END_TEST

/* C16: one huge bucket overlaps nothing: exposed = C1 of all gradients. */
START_TEST(c16_one_bucket_overlaps_nothing)
{
	struct par_report r;
	static struct capture c;
	const char *sets[] = { "parallel.ddp.bucket=1TB" };
	lesson(sets, 1, &r, &c, NULL);
	ck_assert_uint_eq(c.nbuckets, 1);
	double grads = 2 * r.params;
	ck_assert_msg(fabs(c.bucket_bytes[0] - grads) < 1, "bucket %.0f B, gradients %.0f B",
		      c.bucket_bytes[0], grads);
	ck_assert_msg(fabs(c.bucket_start[0] - c.backward_end) < 1e-12, "starts %.9g s after",
		      c.bucket_start[0] - c.backward_end);
	ck_assert_msg(fabs(r.breakdown.exposed_comm_s - ring_s(grads)) / ring_s(grads) < 1e-6,
		      "exposed %.9g s, ring all-reduce of %.0f B %.9g s",
		      r.breakdown.exposed_comm_s, grads, ring_s(grads));
}
END_TEST

/* C17: the all-reduce hides when T >= P/W; the threshold. */
START_TEST(c17_threshold)
{
	double h100 = topo_gpu_find("H100-SXM-80GB")->bf16 / BW;
	double a100 = topo_gpu_find("A100-SXM-80GB")->bf16 / BW;
	ck_assert_msg(fabs(h100 - 19780) / 19780 < 1e-3, "H100 P/W = %.0f tokens", h100);
	ck_assert_msg(fabs(a100 - 6240) < 1e-9, "A100 P/W = %.0f tokens", a100);
	/* 16,384 tokens per GPU: hides (only the last bucket shows, C16). With
	 * 2,048 (one sequence per GPU, below P/W) the all-reduce outlasts the
	 * backward. */
	struct par_report above, below;
	static struct capture c;
	const char *few[] = { "training.global_batch=8", "training.micro_batch=1" };
	lesson(NULL, 0, &above, &c, NULL);
	double last = last_bucket_tail(&c, 25e6);
	ck_assert_msg(above.breakdown.exposed_comm_s <= last + 1e-12, "exposed %.6g s, last %.6g s",
		      above.breakdown.exposed_comm_s, last);
	lesson(few, 2, &below, &c, NULL);
	last = c.bucket_end[c.nbuckets - 1] - c.bucket_start[c.nbuckets - 1];
	ck_assert_msg(below.breakdown.exposed_comm_s > 3 * last,
		      "2,048 tokens per GPU: exposed %.6g s, last bucket %.6g s",
		      below.breakdown.exposed_comm_s, last);
}
END_TEST

/* C17: the threshold does not depend on model size: 12 or 48 layers at
 * 16,384 tokens per GPU both hide all but the last bucket. */
START_TEST(c17_independent_of_model_size)
{
	const char *const sizes[] = { "model.layers=12", "model.layers=48" };
	for (int i = 0; i < 2; i++) {
		struct par_report r;
		static struct capture c;
		lesson(&sizes[i], 1, &r, &c, NULL);
		double last = last_bucket_tail(&c, 25e6);
		ck_assert_msg(r.breakdown.exposed_comm_s <= last + 1e-12,
			      "%s: exposed %.6g s, last bucket %.6g s", sizes[i],
			      r.breakdown.exposed_comm_s, last);
	}
}
END_TEST

static Suite *spec_suite(void)
{
	const struct spec_item items[] = {
		{ "C16", c16_only_last_bucket_exposed },
		{ "C16", c16_small_buckets_pay_latency },
		{ "C16", c16_one_bucket_overlaps_nothing },
		{ "C17", c17_threshold },
		{ "C17", c17_independent_of_model_size },
	};
	return spec_suite_of("SPEC C16-C17 (data parallelism)", items, ARRAY_SIZE(items), 300);
}

int main(void)
{
	return check_run(spec_suite());
}
