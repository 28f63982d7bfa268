/*
 * train.c - one training step with data parallelism (PyTorch DDP): every
 * rank runs the same program, shared, on the compute stream (0) and one
 * communication stream (1).
 *
 * Per micro-batch: embedding, L layers and the LM head forward; then the
 * head, L layers in reverse and the embedding backward. Gradient
 * accumulation: only the last micro-batch's backward reduces gradients. As
 * each weight-gradient op finishes, its parameters join the current bucket
 * in backward order; once the bucket holds at least parallel.ddp.bucket bytes
 * it is all-reduced at once on the communication stream, overlapping the rest
 * of the backward (SPEC C16; PyTorch's rule: whole tensors, a bucket closes
 * when full). With ddp.overlap off every bucket waits for the end of the
 * backward. The optimizer step waits for the last bucket.
 *
 * Memory: weights, gradients and optimizer states from the start (SPEC C11,
 * C12); activations allocated by each layer's forward and freed by its
 * backward (SPEC C13), fp32 logits from the head's forward to its backward
 * (C14); with full recomputation a layer's whole set returns during its
 * backward. Buffers: two gradient buckets (the one being reduced and the one
 * filling).
 */
#include "parallel/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/model.h"

static const char *const mem_names[PAR_MEM_NCATS] = {
	[PAR_MEM_WEIGHTS] = "weights", [PAR_MEM_GRADS] = "grads",
	[PAR_MEM_OPTIMIZER] = "optimizer", [PAR_MEM_ACTIVATIONS] = "activations",
	[PAR_MEM_LOGITS] = "logits", [PAR_MEM_BUFFERS] = "buffers",
};

const char *par_mem_name(enum par_mem c)
{
	return (unsigned)c < PAR_MEM_NCATS ? mem_names[c] : "?";
}

enum { STREAM_COMPUTE = SIM_STREAM_COMPUTE, STREAM_DP = 1 };
enum { SLOT_DP = 0 };

/* What building a program needs and keeps track of. */
struct builder {
	const struct par_train *t;
	struct sim_program *prog;
	struct par_op *ops;          /* scratch list from model.c          */
	size_t cap;
	double bucket;               /* gradient bytes in the open bucket  */
	double *held;                /* full buckets waiting (overlap off) */
	unsigned nheld;
	unsigned nbuckets;
	uint32_t last_comm;          /* index of the last bucket op        */
	int have_comm;
	double grad_elem;            /* bytes per gradient element         */
};

static uint32_t dp_of(const struct par_train *t)
{
	const struct par_layout *l = t->layout;
	uint32_t gpus = t->cluster->kind == TOPO_IDEAL ? t->cluster->nodes
						       : t->cluster->nodes * t->cluster->gpus_per_node;
	return l->dp ? l->dp : gpus / (l->tp * l->cp * l->pp);
}

static uint32_t micro_batches(const struct par_train *t)
{
	return t->training->global_batch / dp_of(t) / t->training->micro_batch;
}

/* All-reduce one bucket of bytes on the DP stream once op `after` is done. */
static void bucket_reduce(struct builder *b, double bytes, uint32_t after)
{
	char name[64];
	snprintf(name, sizeof(name), "ddp.bucket%u.allreduce", b->nbuckets++);
	b->last_comm = sim_program_coll(b->prog, STREAM_DP, name, SIM_COLL_ALLREDUCE,
					b->t->layout->algo[SIM_COLL_ALLREDUCE], SLOT_DP,
					bytes, 0, 0);
	sim_program_dep(b->prog, after);
	b->have_comm = 1;
}

/*
 * Close the open bucket after op `after`: reduce it now (overlap), or hold
 * it until the backward ends (last = 1 releases every held bucket).
 */
static void bucket_close(struct builder *b, uint32_t after, int last)
{
	if (b->bucket > 0) {
		b->held = xreallocarray(b->held, b->nheld + 1, sizeof(double));
		b->held[b->nheld++] = b->bucket;
		b->bucket = 0;
	}
	if (!b->t->layout->ddp.overlap && !last)
		return;
	for (unsigned i = 0; i < b->nheld; i++)
		bucket_reduce(b, b->held[i], after);
	b->nheld = 0;
}

/* Append a list of model ops to the compute stream; returns the last index. */
static uint32_t emit(struct builder *b, const char *where, unsigned mb, enum par_phase ph,
		     size_t n, int reduce)
{
	const struct par_train *t = b->t;
	uint32_t last = 0;
	for (size_t i = 0; i < n; i++) {
		const struct par_op *o = &b->ops[i];
		char name[96];
		snprintf(name, sizeof(name), "%s.mb%u.%s.%s%s", where, mb,
			 ph == PAR_FWD ? "fwd" : "bwd", o->recompute ? "re." : "", o->name);
		sim_ps d = sim_ps_from_s(par_compute_time_s(t->compute, o));
		last = sim_program_compute(b->prog, STREAM_COMPUTE, name, d, o->flops, o->bytes);
		if (!reduce || o->params <= 0)
			continue;
		b->bucket += o->params * b->grad_elem;
		if (b->bucket >= t->layout->ddp.bucket_bytes)
			bucket_close(b, last, 0);
	}
	return last;
}

/* Fill the scratch list from one of model.c's op writers. */
typedef size_t (*ops_fn)(const struct par_model *, const struct par_training *, unsigned,
			 enum par_phase, struct par_op *, size_t);

static size_t fetch(struct builder *b, ops_fn fn, enum par_phase ph)
{
	size_t n = fn(b->t->model, b->t->training, 1, ph, NULL, 0);
	if (n > b->cap) {
		b->cap = n;
		b->ops = xreallocarray(b->ops, n, sizeof(*b->ops));
	}
	return fn(b->t->model, b->t->training, 1, ph, b->ops, n);
}

/* The index of the first recomputed op's successor in a backward list. */
static size_t recompute_count(const struct builder *b, size_t n)
{
	size_t k = 0;
	while (k < n && b->ops[k].recompute)
		k++;
	return k;
}

static void layer_backward(struct builder *b, unsigned l, unsigned mb, int reduce)
{
	const struct par_train *t = b->t;
	double kept = par_layer_activation_bytes(t->model, t->training, 1, false);
	double peak = par_layer_activation_peak_bytes(t->model, t->training, 1, false);
	size_t n = fetch(b, par_layer_ops, PAR_BWD), re = recompute_count(b, n);
	char where[32];
	snprintf(where, sizeof(where), "L%u", l);
	if (re) {
		/* The recomputed forward rebuilds the layer's full set. */
		struct par_op *all = b->ops;
		emit(b, where, mb, PAR_BWD, re, 0);
		sim_program_mem(b->prog, PAR_MEM_ACTIVATIONS, peak - kept);
		b->ops = all + re;
		emit(b, where, mb, PAR_BWD, n - re, reduce);
		b->ops = all;
		sim_program_mem(b->prog, PAR_MEM_ACTIVATIONS, -peak);
		return;
	}
	emit(b, where, mb, PAR_BWD, n, reduce);
	sim_program_mem(b->prog, PAR_MEM_ACTIVATIONS, -kept);
}

static void micro_batch(struct builder *b, unsigned mb, int reduce)
{
	const struct par_train *t = b->t;
	double kept = par_layer_activation_bytes(t->model, t->training, 1, false);
	double logits = par_logits_bytes(t->model, t->training, 1);
	emit(b, "embed", mb, PAR_FWD, fetch(b, par_embed_ops, PAR_FWD), 0);
	for (unsigned l = 0; l < t->model->layers; l++) {
		char where[32];
		snprintf(where, sizeof(where), "L%u", l);
		emit(b, where, mb, PAR_FWD, fetch(b, par_layer_ops, PAR_FWD), 0);
		sim_program_mem(b->prog, PAR_MEM_ACTIVATIONS, kept);
	}
	emit(b, "head", mb, PAR_FWD, fetch(b, par_head_ops, PAR_FWD), 0);
	sim_program_mem(b->prog, PAR_MEM_LOGITS, logits);
	emit(b, "head", mb, PAR_BWD, fetch(b, par_head_ops, PAR_BWD), reduce);
	sim_program_mem(b->prog, PAR_MEM_LOGITS, -logits);
	for (unsigned l = t->model->layers; l-- > 0;)
		layer_backward(b, l, mb, reduce);
	uint32_t last = emit(b, "embed", mb, PAR_BWD, fetch(b, par_embed_ops, PAR_BWD), reduce);
	if (reduce)
		bucket_close(b, last, 1);
}

/* The optimizer update: memory-bound over this rank's parameters. */
static void optimizer_step(struct builder *b)
{
	const struct par_train *t = b->t;
	double params = par_model_params(t->model);
	/* Adam, mixed precision: read fp32 master, m, v and the gradient, write
	 * the three back and the bf16 weights: 28 bytes per parameter. SGD with
	 * momentum: master, momentum, gradient in; master, momentum, weights out. */
	double per = t->training->optimizer == PAR_ADAM ? 28 : 20;
	struct par_op op = {
		.name = t->training->optimizer == PAR_ADAM ? "adam" : "sgd",
		.cls = PAR_OP_MEMBOUND, .flops = 10 * params, .bytes = per * params,
	};
	sim_ps d = sim_ps_from_s(par_compute_time_s(t->compute, &op));
	sim_program_compute(b->prog, STREAM_COMPUTE, "optimizer.step", d, op.flops, op.bytes);
	if (b->have_comm)
		sim_program_dep(b->prog, b->last_comm);
}

static struct sim_program *build_program(const struct par_train *t)
{
	struct builder b = { .t = t, .prog = sim_program_new() };
	b.grad_elem = t->training->precision == PAR_FP32 ? 4 : 2;
	uint32_t m = micro_batches(t), dp = dp_of(t);
	for (uint32_t mb = 0; mb < m; mb++)
		micro_batch(&b, mb, dp > 1 && mb + 1 == m);
	optimizer_step(&b);
	free(b.ops);
	free(b.held);
	return b.prog;
}

/* ---- checks and memory ----------------------------------------------------- */

static int supported(const struct par_train *t, char *err, size_t errlen)
{
	const struct par_layout *l = t->layout;
	const char *what = l->tp > 1 ? "parallel.tp > 1" : l->pp > 1 ? "parallel.pp > 1"
			 : l->cp > 1 ? "parallel.cp > 1" : l->ep > 1 ? "parallel.ep > 1"
			 : l->zero ? "parallel.zero > 0" : l->fsdp.enabled ? "parallel.fsdp"
			 : t->model->moe.experts ? "model.moe" : NULL;
	if (!what)
		return 0;
	snprintf(err, errlen, "%s: this version simulates data parallelism (DDP) only; "
		 "tensor, pipeline, context and expert parallelism, ZeRO and FSDP are not "
		 "implemented yet", what);
	return -1;
}

/* Memory a rank holds from the start. */
static void static_memory(const struct par_train *t, double bytes[PAR_MEM_NCATS])
{
	struct par_states st;
	par_model_states(par_model_params(t->model), t->training->precision,
			 t->training->optimizer, 0, dp_of(t), &st);
	memset(bytes, 0, PAR_MEM_NCATS * sizeof(double));
	bytes[PAR_MEM_WEIGHTS] = st.weights;
	bytes[PAR_MEM_GRADS] = st.grads;
	bytes[PAR_MEM_OPTIMIZER] = st.optimizer;
	bytes[PAR_MEM_BUFFERS] = dp_of(t) > 1 ? 2 * t->layout->ddp.bucket_bytes : 0;
}

/* Walk the compute stream's memory changes: the peak and its breakdown. */
static void memory_peak(const struct par_train *t, const struct sim_program *prog,
			struct par_memory *out)
{
	double now[PAR_MEM_NCATS], total = 0;
	static_memory(t, now);
	for (int c = 0; c < PAR_MEM_NCATS; c++)
		total += now[c];
	memcpy(out->bytes, now, sizeof(now));
	out->peak = total;
	for (uint32_t i = 0; i < prog->stream_n[STREAM_COMPUTE]; i++) {
		const struct sim_op *op = &prog->ops[prog->stream_ops[STREAM_COMPUTE][i]];
		if (op->mem_bytes == 0)
			continue;
		now[op->mem_cat] += op->mem_bytes;
		total += op->mem_bytes;
		if (total > out->peak) {
			out->peak = total;
			memcpy(out->bytes, now, sizeof(now));
		}
	}
	out->capacity = topo_gpu_find(t->cluster->gpu)->mem_bytes;
	out->fits = out->peak <= out->capacity;
}

static void report_static(const struct par_train *t, struct par_report *r)
{
	memset(r, 0, sizeof(*r));
	r->dp = dp_of(t);
	r->gpus = r->dp * t->layout->tp * t->layout->pp * t->layout->cp;
	r->micro_batches = micro_batches(t);
	r->params = par_model_params(t->model);
	r->flops_per_token = par_flops_per_token(t->model, t->training->seq);
}

int par_train_plan(const struct par_train *t, struct par_report *out, char *err, size_t errlen)
{
	if (supported(t, err, errlen) < 0)
		return -1;
	report_static(t, out);
	struct sim_program *prog = build_program(t);
	memory_peak(t, prog, &out->memory);
	sim_program_free(prog);
	return 0;
}

/* ---- running ------------------------------------------------------------------------ */

/* Model FLOPs a step's hardware runs per token, recomputation included. */
static double hardware_flops_per_token(const struct par_train *t, double model)
{
	const struct par_model *m = t->model;
	double attn = 4.0 * m->layers * (double)m->heads * m->head_dim * t->training->seq;
	switch (t->training->recompute) {
	case PAR_RECOMPUTE_FULL:      /* the whole forward again: 2Ψ + 4 L h s */
		return model + model / 3;
	case PAR_RECOMPUTE_SELECTIVE: /* the attention core again, unless fused */
		return model + (t->training->flash_attention ? 0 : attn);
	default:
		return model;
	}
}

static void report_run(const struct par_train *t, struct sim *sim, sim_ps total,
		       struct par_report *r)
{
	uint32_t n = sim_nranks(sim), crit = 0;
	for (uint32_t i = 1; i < n; i++)
		if (sim_rank_end(sim, i) > sim_rank_end(sim, crit))
			crit = i;
	const struct sim_rank_stats *st = sim_rank_stats(sim, crit);
	double steps = t->steps ? t->steps : 1;
	double tokens = (double)t->training->global_batch * t->training->seq;
	double peak = par_compute_peak(t->compute);
	r->critical_rank = crit;
	r->sim_end_ps = sim_now(sim);
	r->events = sim_events(sim);
	r->step_time_s = sim_ps_to_s(total) / steps;
	r->tokens_per_s = tokens / r->step_time_s;
	r->mfu = r->tokens_per_s * r->flops_per_token / (r->gpus * peak);
	r->hfu = r->tokens_per_s * hardware_flops_per_token(t, r->flops_per_token) /
		 (r->gpus * peak);
	r->breakdown.compute_s = sim_ps_to_s(st->compute_ps) / steps;
	r->breakdown.exposed_comm_s = sim_ps_to_s(st->exposed_comm_ps) / steps;
	r->breakdown.bubble_s = 0;
	r->breakdown.idle_s = fmax(0, r->step_time_s - r->breakdown.compute_s -
				      r->breakdown.exposed_comm_s);
	for (int c = 0; c < PAR_MEM_NCATS; c++)
		r->memory.bytes[c] = st->mem_at_peak[c];
	r->memory.peak = st->mem_peak;
	r->memory.fits = r->memory.peak <= r->memory.capacity;
}

int par_train_run(const struct par_train *t, struct par_report *out, char *err, size_t errlen)
{
	if (par_train_plan(t, out, err, errlen) < 0)
		return -1;
	uint32_t n = out->gpus;
	struct topo *topo = topo_new(t->cluster, n, err, errlen);
	if (!topo)
		return -1;
	struct sim *sim = sim_new(&t->sim, n, topo_sim_ops(), topo);
	topo_attach(topo, sim);
	if (t->rec)
		sim_set_recorder(sim, t->rec, t->rec_ctx);
	uint32_t *ranks = xmalloc(n * sizeof(uint32_t));
	for (uint32_t r = 0; r < n; r++)
		ranks[r] = r;
	uint32_t dp_group = sim_group_add(sim, ranks, n);
	free(ranks);
	double stat[PAR_MEM_NCATS];
	static_memory(t, stat);
	for (uint32_t r = 0; r < n; r++)
		for (int c = 0; c < PAR_MEM_NCATS; c++)
			if (stat[c] > 0)
				sim_rank_mem_add(sim, r, (unsigned)c, stat[c]);
	struct sim_program *prog = build_program(t);
	int rc = 0;
	sim_ps t0 = sim_now(sim), end = t0;
	for (uint32_t s = 0; s < (t->steps ? t->steps : 1) && rc == 0; s++) {
		for (uint32_t r = 0; r < n; r++)
			sim_rank_start(sim, r, prog, &dp_group, 1);
		rc = sim_run(sim);
		for (uint32_t r = 0; r < n; r++)
			if (sim_rank_end(sim, r) > end)
				end = sim_rank_end(sim, r);
	}
	if (rc < 0)
		snprintf(err, errlen, "%s", sim_error(sim));
	else
		report_run(t, sim, end - t0, out);
	if (rc == 0 && t->finish)
		rc = t->finish(t->rec_ctx, sim, topo, err, errlen);
	sim_program_free(prog);
	sim_free(sim);
	topo_free(topo);
	return rc;
}
