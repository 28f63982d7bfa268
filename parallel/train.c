/*
 * train.c - one training step with data parallelism: build the program every
 * rank shares, run it, report.
 *
 * Per micro-batch: embedding, L layers and the LM head forward; then the
 * head, L layers in reverse and the embedding backward. The data-parallel
 * strategy (dp_bucket.c: DDP, ZeRO-1, ZeRO-2; dp_shard.c: ZeRO-3, FSDP)
 * adds its communication through hooks (train-int.h): DDP and ZeRO-1 reduce
 * gradients only in the last micro-batch (gradient accumulation), the sharded
 * strategies every micro-batch. Then the optimizer step over the rank's
 * share of the parameters (on the CPU with offload), and what follows it.
 *
 * Memory: model states from the start (SPEC C11, C12); activations
 * allocated by each layer's forward and freed by its backward (SPEC C13),
 * fp32 logits from the head's forward to its backward (C14); with full
 * recomputation a layer's whole set returns during its backward. Strategies
 * add gathered parameters, unsharded gradients and buffers.
 */
#include "parallel/train-int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const mem_names[PAR_MEM_NCATS] = {
	[PAR_MEM_WEIGHTS] = "weights", [PAR_MEM_GRADS] = "grads",
	[PAR_MEM_OPTIMIZER] = "optimizer", [PAR_MEM_ACTIVATIONS] = "activations",
	[PAR_MEM_LOGITS] = "logits", [PAR_MEM_BUFFERS] = "buffers",
};

const char *par_mem_name(enum par_mem c)
{
	return (unsigned)c < PAR_MEM_NCATS ? mem_names[c] : "?";
}

/*
 * The data-parallel strategies. To add one: write parallel/dp_NAME.c
 * exporting `const struct par_dp_strategy par_dp_NAME` (train-int.h),
 * declare it there, choose it in dp_strategy() below, add the file to
 * Makefile.am and a case to tests/conformance/test_zero_spec.c.
 */
static const struct par_dp_strategy *dp_strategy(const struct par_layout *l)
{
	static const struct par_dp_strategy *const by_zero[] = {
		&par_dp_ddp, &par_dp_zero1, &par_dp_zero2, &par_dp_zero3,
	};
	if (l->fsdp.enabled)
		return &par_dp_fsdp;
	BUG_ON(l->zero > 3);
	return by_zero[l->zero];
}

static uint32_t gpus_of(const struct topo_config *c)
{
	return c->kind == TOPO_IDEAL ? c->nodes : c->nodes * c->gpus_per_node;
}

static uint32_t dp_of(const struct par_train *t)
{
	const struct par_layout *l = t->layout;
	return l->dp ? l->dp : gpus_of(t->cluster) / (l->tp * l->cp * l->pp);
}

static uint32_t micro_batches(const struct par_train *t)
{
	return t->training->global_batch / dp_of(t) / t->training->micro_batch;
}

/* ---- helpers for the strategies ---------------------------------------- */

uint32_t par_b_coll(struct builder *b, unsigned stream, const char *name, enum sim_coll_op op,
		    unsigned slot, double bytes, uint32_t after)
{
	uint32_t i = sim_program_coll(b->prog, stream, name, op, b->t->layout->algo[op], slot,
				      bytes, 0, 0);
	if (after != NO_OP)
		sim_program_dep(b->prog, after);
	return i;
}

double par_b_params(const struct builder *b)
{
	return par_model_params(b->t->model);
}

double par_b_layer_params(const struct builder *b, int l)
{
	const struct par_model *m = b->t->model;
	if (l < 0)
		return par_embedding_params(m) + par_head_params(m);
	return par_layer_is_moe(m, (unsigned)l) ? par_moe_layer_params(m) : par_layer_params(m);
}

void par_b_states(const struct builder *b, unsigned zero, double bytes[PAR_MEM_NCATS])
{
	struct par_states st;
	const struct par_training *tr = b->t->training;
	par_model_states(par_b_params(b), tr->precision, tr->optimizer, zero, b->shard, &st);
	memset(bytes, 0, PAR_MEM_NCATS * sizeof(double));
	bytes[PAR_MEM_WEIGHTS] = st.weights;
	bytes[PAR_MEM_GRADS] = st.grads;
	/* ZeRO-Offload keeps the optimizer states (and fp32 master) on the host. */
	bytes[PAR_MEM_OPTIMIZER] = b->t->layout->offload.enabled ? 0 : st.optimizer;
}

/* ---- the compute stream -------------------------------------------------- */

/* Append a list of model ops to the compute stream; returns the last index. */
static uint32_t emit(struct builder *b, const char *where, enum par_phase ph, size_t n)
{
	const struct par_train *t = b->t;
	for (size_t i = 0; i < n; i++) {
		const struct par_op *o = &b->ops[i];
		char name[96];
		snprintf(name, sizeof(name), "%s.mb%u.%s.%s%s", where, b->mb,
			 ph == PAR_FWD ? "fwd" : "bwd", o->recompute ? "re." : "", o->name);
		sim_ps d = sim_ps_from_s(par_compute_time_s(t->compute, o));
		b->last_compute = sim_program_compute(b->prog, STREAM_COMPUTE, name, d, o->flops,
						      o->bytes);
		if (b->wait_for != NO_OP) {
			sim_program_dep(b->prog, b->wait_for);
			b->wait_for = NO_OP;
		}
		if (b->reduce && o->params > 0 && b->dp->grads)
			b->dp->grads(b, o->params, b->last_compute);
	}
	return b->last_compute;
}

void par_b_mem(struct builder *b, const char *name, unsigned cat, double bytes)
{
	char n[96];
	snprintf(n, sizeof(n), "%s.mb%u", name, b->mb);
	b->last_compute = sim_program_compute(b->prog, STREAM_COMPUTE, n, 0, 0, 0);
	sim_program_mem(b->prog, cat, bytes);
	if (b->wait_for != NO_OP) {
		sim_program_dep(b->prog, b->wait_for);
		b->wait_for = NO_OP;
	}
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

static void hook_begin(struct builder *b, int l, enum par_phase ph)
{
	if (b->dp->layer_begin)
		b->dp->layer_begin(b, l, ph);
}

static void hook_end(struct builder *b, int l, enum par_phase ph)
{
	if (b->dp->layer_end)
		b->dp->layer_end(b, l, ph);
}

static void layer_forward(struct builder *b, unsigned l)
{
	const struct par_train *t = b->t;
	char where[32];
	snprintf(where, sizeof(where), "L%u", l);
	hook_begin(b, (int)l, PAR_FWD);
	emit(b, where, PAR_FWD, fetch(b, par_layer_ops, PAR_FWD));
	sim_program_mem(b->prog, PAR_MEM_ACTIVATIONS,
			par_layer_activation_bytes(t->model, t->training, 1, false));
	hook_end(b, (int)l, PAR_FWD);
}

static void layer_backward(struct builder *b, unsigned l)
{
	const struct par_train *t = b->t;
	double kept = par_layer_activation_bytes(t->model, t->training, 1, false);
	double peak = par_layer_activation_peak_bytes(t->model, t->training, 1, false);
	size_t n = fetch(b, par_layer_ops, PAR_BWD), re = 0;
	char where[32];
	snprintf(where, sizeof(where), "L%u", l);
	while (re < n && b->ops[re].recompute)
		re++;
	hook_begin(b, (int)l, PAR_BWD);
	if (re) {
		/* The recomputed forward rebuilds the layer's full set. */
		struct par_op *all = b->ops;
		emit(b, where, PAR_BWD, re);
		sim_program_mem(b->prog, PAR_MEM_ACTIVATIONS, peak - kept);
		b->ops = all + re;
		emit(b, where, PAR_BWD, n - re);
		b->ops = all;
		sim_program_mem(b->prog, PAR_MEM_ACTIVATIONS, -peak);
	} else {
		emit(b, where, PAR_BWD, n);
		sim_program_mem(b->prog, PAR_MEM_ACTIVATIONS, -kept);
	}
	hook_end(b, (int)l, PAR_BWD);
}

static void micro_batch(struct builder *b)
{
	const struct par_train *t = b->t;
	double logits = par_logits_bytes(t->model, t->training, 1);
	hook_begin(b, -1, PAR_FWD);
	emit(b, "embed", PAR_FWD, fetch(b, par_embed_ops, PAR_FWD));
	for (unsigned l = 0; l < t->model->layers; l++)
		layer_forward(b, l);
	emit(b, "head", PAR_FWD, fetch(b, par_head_ops, PAR_FWD));
	sim_program_mem(b->prog, PAR_MEM_LOGITS, logits);
	hook_end(b, -1, PAR_FWD);
	hook_begin(b, -1, PAR_BWD);
	emit(b, "head", PAR_BWD, fetch(b, par_head_ops, PAR_BWD));
	sim_program_mem(b->prog, PAR_MEM_LOGITS, -logits);
	for (unsigned l = t->model->layers; l-- > 0;)
		layer_backward(b, l);
	uint32_t last = emit(b, "embed", PAR_BWD, fetch(b, par_embed_ops, PAR_BWD));
	hook_end(b, -1, PAR_BWD);
	if (b->reduce && b->dp->backward_end)
		b->dp->backward_end(b, last);
}

/* ---- the optimizer step --------------------------------------------------- */

/* Parameters this rank's optimizer updates. */
static double step_params(const struct builder *b)
{
	int sharded = b->t->layout->zero >= 1 || b->t->layout->fsdp.enabled;
	return par_b_params(b) / (sharded ? b->shard : 1);
}

/*
 * The update: memory-bound over the rank's parameters. Adam in mixed
 * precision reads the fp32 master, m, v and the gradient and writes the
 * three back and the bf16 weights: 28 bytes per parameter; SGD with
 * momentum 20. Waits for the gradient reduction.
 */
static uint32_t gpu_step(struct builder *b, double params)
{
	const struct par_train *t = b->t;
	double per = t->training->optimizer == PAR_ADAM ? 28 : 20;
	struct par_op op = {
		.name = t->training->optimizer == PAR_ADAM ? "adam" : "sgd",
		.cls = PAR_OP_MEMBOUND, .flops = 10 * params, .bytes = per * params,
	};
	sim_ps d = sim_ps_from_s(par_compute_time_s(t->compute, &op));
	uint32_t i = sim_program_compute(b->prog, STREAM_COMPUTE, "optimizer.step", d, op.flops,
					 op.bytes);
	if (b->last_grad_comm != NO_OP)
		sim_program_dep(b->prog, b->last_grad_comm);
	return i;
}

/*
 * ZeRO-Offload: the reduced gradient shard goes to the host over PCIe, the
 * CPU optimizer updates it, the new bf16 parameters come back. Host work
 * runs on its own stream; the GPU waits only where the next collective does.
 */
static uint32_t host_step(struct builder *b, double params)
{
	const struct par_train *t = b->t;
	double pcie = t->cluster->pcie_bw_Bps, bytes = b->grad_elem * params;
	uint32_t d2h = sim_program_compute(b->prog, STREAM_HOST, "offload.grads_to_host",
					   sim_ps_from_s(bytes / pcie), 0, bytes);
	if (b->last_grad_comm != NO_OP)
		sim_program_dep(b->prog, b->last_grad_comm);
	sim_program_compute(b->prog, STREAM_HOST, "offload.cpu_step",
			    sim_ps_from_s(params / t->layout->offload.cpu_adam), 10 * params, 0);
	(void)d2h;
	return sim_program_compute(b->prog, STREAM_HOST, "offload.params_to_gpu",
				   sim_ps_from_s(2 * params / pcie), 0, 2 * params);
}

static struct sim_program *build_program(const struct par_train *t, struct builder *b)
{
	memset(b, 0, sizeof(*b));
	b->t = t;
	b->dp = dp_strategy(t->layout);
	b->prog = sim_program_new();
	b->grad_elem = t->training->precision == PAR_FP32 ? 4 : 2;
	b->dpn = dp_of(t);
	b->nranks = b->dpn * t->layout->tp * t->layout->pp * t->layout->cp;
	b->shard = t->layout->fsdp.enabled && t->layout->fsdp.hsdp
			   ? (t->cluster->kind == TOPO_IDEAL ? 1 : t->cluster->gpus_per_node)
			   : b->dpn;
	b->nmb = micro_batches(t);
	b->wait_for = b->last_grad_comm = b->last_param_comm = b->last_compute = NO_OP;
	for (b->mb = 0; b->mb < b->nmb; b->mb++) {
		b->reduce = b->dpn > 1 && (b->dp->reduce_every_mb || b->mb + 1 == b->nmb);
		micro_batch(b);
	}
	double params = step_params(b);
	uint32_t step = t->layout->offload.enabled ? host_step(b, params) : gpu_step(b, params);
	if (b->dp->after_step && b->dpn > 1)
		b->dp->after_step(b, step);
	free(b->ops);
	free(b->held);
	free(b->gather);
	b->ops = NULL, b->held = NULL, b->gather = NULL;
	return b->prog;
}

/* ---- checks and memory ----------------------------------------------------- */

static int supported(const struct par_train *t, char *err, size_t errlen)
{
	const struct par_layout *l = t->layout;
	const char *what = l->tp > 1 ? "parallel.tp > 1" : l->pp > 1 ? "parallel.pp > 1"
			 : l->cp > 1 ? "parallel.cp > 1" : l->ep > 1 ? "parallel.ep > 1"
			 : t->model->moe.experts ? "model.moe" : NULL;
	if (what)
		return sim_errf(err, errlen, "%s: this version simulates data parallelism (DDP, "
				"ZeRO, FSDP) only; tensor, pipeline, context and expert "
				"parallelism are not implemented yet", what);
	if (l->offload.enabled && (l->fsdp.enabled || l->zero < 1 || l->zero > 2))
		return sim_errf(err, errlen, "parallel.offload.enabled: optimizer offload works "
				"with parallel.zero 1 or 2 (ZeRO-Offload), not with %s",
				l->fsdp.enabled ? "FSDP" : l->zero ? "ZeRO-3" : "DDP");
	if (l->fsdp.enabled && l->fsdp.hsdp && (t->cluster->kind == TOPO_IDEAL ||
						 dp_of(t) % t->cluster->gpus_per_node ||
						 t->cluster->gpus_per_node < 2))
		return sim_errf(err, errlen, "parallel.fsdp.hsdp: sharding inside a node needs "
				"nodes of several GPUs, all in the data-parallel group");
	return 0;
}

static void static_memory(const struct builder *b, double bytes[PAR_MEM_NCATS])
{
	b->dp->static_memory(b, bytes);
}

/* Walk every memory change in program order: the peak and its breakdown. */
static void memory_peak(const struct builder *b, const struct sim_program *prog,
			struct par_memory *out)
{
	double now[PAR_MEM_NCATS], total = 0;
	static_memory(b, now);
	for (int c = 0; c < PAR_MEM_NCATS; c++)
		total += now[c];
	memcpy(out->bytes, now, sizeof(now));
	out->model_states = now[PAR_MEM_WEIGHTS] + now[PAR_MEM_GRADS] + now[PAR_MEM_OPTIMIZER];
	out->peak = total;
	for (uint32_t i = 0; i < prog->nops; i++) {
		const struct sim_op *op = &prog->ops[i];
		if (op->mem_bytes == 0)
			continue;
		now[op->mem_cat] += op->mem_bytes;
		total += op->mem_bytes;
		if (total > out->peak) {
			out->peak = total;
			memcpy(out->bytes, now, sizeof(now));
		}
	}
	out->capacity = topo_gpu_find(b->t->cluster->gpu)->mem_bytes;
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
	r->strategy = dp_strategy(t->layout)->name;
}

int par_train_plan(const struct par_train *t, struct par_report *out, char *err, size_t errlen)
{
	if (supported(t, err, errlen) < 0)
		return -1;
	report_static(t, out);
	struct builder b;
	struct sim_program *prog = build_program(t, &b);
	memory_peak(&b, prog, &out->memory);
	if (t->layout->offload.enabled) {
		struct par_states st;
		par_model_states(par_b_params(&b), t->training->precision, t->training->optimizer,
				 t->layout->zero, b.shard, &st);
		out->offload.saved_bytes = st.optimizer;
		for (uint32_t i = 0; i < prog->stream_n[STREAM_HOST]; i++)
			out->offload.host_s += sim_ps_to_s(
				prog->ops[prog->stream_ops[STREAM_HOST][i]].dur_ps);
	}
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
	double peak_mem = 0;
	for (uint32_t i = 0; i < n; i++)
		if (sim_rank_stats(sim, i)->mem_peak > peak_mem) {
			peak_mem = sim_rank_stats(sim, i)->mem_peak;
			for (int c = 0; c < PAR_MEM_NCATS; c++)
				r->memory.bytes[c] = sim_rank_stats(sim, i)->mem_at_peak[c];
		}
	r->memory.peak = peak_mem;
	r->memory.fits = r->memory.peak <= r->memory.capacity;
}

/* The groups of the step: the DP group, and HSDP's shard and replica groups. */
static void add_groups(struct sim *sim, const struct builder *b, uint32_t *slots)
{
	uint32_t n = b->nranks, *ranks = xmalloc(n * sizeof(uint32_t));
	for (uint32_t r = 0; r < n; r++)
		ranks[r] = r;
	uint32_t world = sim_group_add(sim, ranks, n);
	for (uint32_t r = 0; r < n; r++)
		slots[r * 3 + SLOT_DP] = world;
	uint32_t g = b->shard, nodes = n / g;
	for (uint32_t x = 0; g < n && x < nodes; x++) {     /* shard: one node each */
		uint32_t id = sim_group_add(sim, ranks + x * g, g);
		for (uint32_t j = 0; j < g; j++)
			slots[(x * g + j) * 3 + SLOT_SHARD] = id;
	}
	for (uint32_t j = 0; g < n && j < g; j++) {         /* replicas: one rail each */
		for (uint32_t x = 0; x < nodes; x++)
			ranks[x] = x * g + j;
		uint32_t id = sim_group_add(sim, ranks, nodes);
		for (uint32_t x = 0; x < nodes; x++)
			slots[(x * g + j) * 3 + SLOT_REPLICA] = id;
	}
	if (g >= n)
		for (uint32_t r = 0; r < n; r++)
			slots[r * 3 + SLOT_SHARD] = slots[r * 3 + SLOT_REPLICA] = world;
	free(ranks);
}

int par_train_run(const struct par_train *t, struct par_report *out, char *err, size_t errlen)
{
	if (par_train_plan(t, out, err, errlen) < 0)
		return -1;
	struct builder b;
	struct sim_program *prog = build_program(t, &b);
	uint32_t n = b.nranks;
	struct topo *topo = topo_new(t->cluster, n, err, errlen);
	if (!topo) {
		sim_program_free(prog);
		return -1;
	}
	struct sim *sim = sim_new(&t->sim, n, topo_sim_ops(), topo);
	topo_attach(topo, sim);
	if (t->rec)
		sim_set_recorder(sim, t->rec, t->rec_ctx);
	uint32_t *slots = xcalloc((size_t)n * 3, sizeof(uint32_t));
	add_groups(sim, &b, slots);
	double stat[PAR_MEM_NCATS];
	static_memory(&b, stat);
	for (uint32_t r = 0; r < n; r++)
		for (int c = 0; c < PAR_MEM_NCATS; c++)
			if (stat[c] > 0)
				sim_rank_mem_add(sim, r, (unsigned)c, stat[c]);
	int rc = 0;
	sim_ps t0 = sim_now(sim), end = t0;
	for (uint32_t s = 0; s < (t->steps ? t->steps : 1) && rc == 0; s++) {
		for (uint32_t r = 0; r < n; r++)
			sim_rank_start(sim, r, prog, slots + r * 3, 3);
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
	free(slots);
	sim_program_free(prog);
	sim_free(sim);
	topo_free(topo);
	return rc;
}
