/*
 * train.c - one training step: build the program of each pipeline stage
 * (shared by the stage's tensor-, context- and data-parallel ranks), run it,
 * report.
 *
 * The pipeline schedule (schedule.c) orders each stage's forward and backward
 * passes of micro-batches and model chunks. A forward pass of a chunk
 * receives the previous stage's activations, runs the embedding (first
 * virtual stage), its layers and the LM head (last), and sends its output
 * on; a backward pass mirrors it with gradients. Tensor parallelism (Megatron)
 * divides every kernel by t and adds its collectives around the row- and
 * column-parallel matmuls (SPEC C20): blocking, the next kernel waits. The data-parallel
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
#include "parallel/layout.h"
#include "parallel/moe.h"
#include "parallel/schedule.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <float.h>
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

static uint32_t dp_of(const struct par_train *t)
{
	const struct par_layout *l = t->layout;
	return l->dp ? l->dp : (uint32_t)topo_config_gpus(t->cluster) / (l->tp * l->cp * l->pp);
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
	return b->params;
}

double par_b_layer_params(const struct builder *b, int l)
{
	const struct par_model *m = b->t->model;
	if (l < 0)
		return (par_embedding_params(m) + par_head_params(m)) / b->tp;
	if (!par_layer_is_moe(m, (unsigned)l))
		return par_layer_params(m) / b->tp;
	/* An MoE layer: the rank holds experts / ep of the routed experts. */
	double ep = b->t->layout->ep ? b->t->layout->ep : 1, e = par_expert_params(m);
	return (par_moe_layer_params(m) - m->moe.experts * e * (1 - 1 / ep)) / b->tp;
}

/* The virtual stages of this program's stage: chunk c is vs = c p + s. */
static uint32_t vstage(const struct builder *b, unsigned chunk)
{
	return chunk * b->pp + b->stage;
}

static void stage_range(const struct builder *b, uint32_t vs, uint32_t *first, uint32_t *count)
{
	char err[256];
	if (par_stage_layers(b->t->layout, b->t->model->layers, vs, first, count, err,
			     sizeof(err)) < 0)
		BUG("%s", err);  /* scn_validate checked the split */
}

/*
 * This rank's parameters in forward order, piece by piece: per model chunk,
 * the embedding (-1) on the first virtual stage, the chunk's layers, the head
 * (-2) on the last (with tied embeddings and a pipeline, the last stage keeps
 * its own copy of the embedding, as Megatron does).
 */
void par_b_each_param(const struct builder *b, void (*fn)(void *ctx, int piece, double params),
		      void *ctx)
{
	const struct par_model *m = b->t->model;
	uint32_t V = b->pp * b->vpp;
	for (unsigned c = 0; c < b->vpp; c++) {
		uint32_t vs = vstage(b, c), first, count;
		stage_range(b, vs, &first, &count);
		if (vs == 0)
			fn(ctx, -1, par_embedding_params(m) / b->tp);
		for (uint32_t l = first; l < first + count; l++)
			fn(ctx, (int)l, par_b_layer_params(b, (int)l));
		if (vs == V - 1)
			fn(ctx, -2, (par_head_params(m) + (m->tied_embeddings && V > 1
							    ? par_embedding_params(m) : 0)) / b->tp);
	}
}

static void add_params(void *ctx, int piece, double params)
{
	(void)piece;
	*(double *)ctx += params;
}

/* Parameters this rank holds. */
static double stage_params(const struct builder *b)
{
	double p = 0;
	par_b_each_param(b, add_params, &p);
	return p;
}

void par_b_states(const struct builder *b, unsigned zero, double bytes[PAR_MEM_NCATS])
{
	struct par_states st;
	const struct par_training *tr = b->t->training;
	par_model_states(par_b_params(b), tr->precision, tr->optimizer, zero, b->shard,
			 b->t->layout->ddp.fp32_grads, &st);
	memset(bytes, 0, PAR_MEM_NCATS * sizeof(double));
	bytes[PAR_MEM_WEIGHTS] = st.weights;
	bytes[PAR_MEM_GRADS] = st.grads;
	/* ZeRO-Offload keeps the optimizer states (and fp32 master) on the host. */
	bytes[PAR_MEM_OPTIMIZER] = b->t->layout->offload.enabled ? 0 : st.optimizer;
}

/* ---- the compute stream -------------------------------------------------- */

/* "mb3" or "mb3.c1": which micro-batch (and chunk) an op belongs to. */
static void mb_label(const struct builder *b, char *buf, size_t len)
{
	if (b->vpp > 1)
		sim_fmt(buf, len, "mb%u.c%u", b->mb, b->chunk);
	else
		sim_fmt(buf, len, "mb%u", b->mb);
}

/*
 * Megatron's tensor-parallel collectives, by kernel: which collective goes
 * before or after it in the forward (or recomputed forward) and backward.
 * Without sequence parallelism: an all-reduce after each row-parallel matmul
 * (attention output, MLP down) in the forward and after each column-parallel
 * input gradient (QKV, MLP up) in the backward. With it: all-gather before the
 * column-parallel matmuls and reduce-scatter after the row-parallel ones,
 * mirrored in the backward. Vocabulary-parallel embedding and loss add theirs.
 */
struct tp_rule {
	const char *kernel;
	uint8_t backward, before, sp;   /* sp: 0 without SP, 1 with it */
	enum sim_coll_op op;
	uint8_t loss;                   /* bytes: 8 per token, not an activation */
};

static const struct tp_rule tp_rules[] = {
	{ "attn_out", 0, 0, 0, SIM_COLL_ALLREDUCE, 0 },
	{ "mlp_down", 0, 0, 0, SIM_COLL_ALLREDUCE, 0 },
	{ "qkv_dx", 1, 0, 0, SIM_COLL_ALLREDUCE, 0 },
	{ "mlp_up_dx", 1, 0, 0, SIM_COLL_ALLREDUCE, 0 },
	{ "mlp_gate_up_dx", 1, 0, 0, SIM_COLL_ALLREDUCE, 0 },
	{ "embed", 0, 0, 0, SIM_COLL_ALLREDUCE, 0 },
	{ "lm_head_dx", 1, 0, 0, SIM_COLL_ALLREDUCE, 0 },
	{ "qkv", 0, 1, 1, SIM_COLL_ALLGATHER, 0 },
	{ "mlp_up", 0, 1, 1, SIM_COLL_ALLGATHER, 0 },
	{ "mlp_gate_up", 0, 1, 1, SIM_COLL_ALLGATHER, 0 },
	{ "attn_out", 0, 0, 1, SIM_COLL_REDUCESCATTER, 0 },
	{ "mlp_down", 0, 0, 1, SIM_COLL_REDUCESCATTER, 0 },
	{ "attn_out_dx", 1, 1, 1, SIM_COLL_ALLGATHER, 0 },
	{ "mlp_down_dx", 1, 1, 1, SIM_COLL_ALLGATHER, 0 },
	{ "qkv_dx", 1, 0, 1, SIM_COLL_REDUCESCATTER, 0 },
	{ "mlp_up_dx", 1, 0, 1, SIM_COLL_REDUCESCATTER, 0 },
	{ "mlp_gate_up_dx", 1, 0, 1, SIM_COLL_REDUCESCATTER, 0 },
	{ "embed", 0, 0, 1, SIM_COLL_REDUCESCATTER, 0 },
	{ "lm_head", 0, 1, 1, SIM_COLL_ALLGATHER, 0 },
	{ "lm_head_dx", 1, 0, 1, SIM_COLL_REDUCESCATTER, 0 },
	{ "cross_entropy", 0, 0, 0, SIM_COLL_ALLREDUCE, 1 },
	{ "cross_entropy", 0, 0, 1, SIM_COLL_ALLREDUCE, 1 },
};

/* Issue the tensor-parallel collectives a kernel needs before or after it. */
static void tp_hook(struct builder *b, const struct par_op *o, enum par_phase ph, int before,
		    const char *where)
{
	if (b->tp < 2)
		return;
	int bwd = ph == PAR_BWD && !o->recompute;
	const struct par_training *tr = &b->local;
	double T = (double)tr->seq * tr->micro_batch;
	for (size_t i = 0; i < ARRAY_SIZE(tp_rules); i++) {
		const struct tp_rule *r = &tp_rules[i];
		if (r->backward != bwd || r->before != before || r->sp != b->sp ||
		    strcmp(r->kernel, o->name))
			continue;
		char name[96], mb[24];
		mb_label(b, mb, sizeof(mb));
		sim_fmt(name, sizeof(name), "tp.%s.%s.%s.%s.%s", where, mb, bwd ? "bwd" : "fwd",
			o->name, sim_coll_op_name(r->op));
		/* Activations of T tokens of h values (bf16); the loss: two floats a token. */
		double bytes = r->loss ? 8 * T : 2 * T * b->t->model->hidden;
		par_b_wait(b, par_b_coll(b, STREAM_TP, name, r->op, SLOT_TP, bytes, b->last_compute));
	}
}

void par_b_wait(struct builder *b, uint32_t op)
{
	if (op == NO_OP)
		return;
	for (unsigned i = 0; i < b->nwaits; i++)
		if (b->waits[i] == op)
			return;
	if (b->nwaits == b->waitcap) {
		b->waitcap = b->waitcap ? 2 * b->waitcap : 8;
		b->waits = xreallocarray(b->waits, b->waitcap, sizeof(*b->waits));
	}
	b->waits[b->nwaits++] = op;
}

/* The compute op just appended waits for what the builder holds for it. */
static void take_waits(struct builder *b)
{
	for (unsigned i = 0; i < b->nwaits; i++)
		sim_program_dep(b->prog, b->waits[i]);
	b->nwaits = 0;
}

/* ---- context parallelism ------------------------------------------------- */

/* One attention kernel of `flops` on the compute stream. */
static uint32_t attn_kernel(struct builder *b, const struct par_op *like, const char *name,
			    double flops, double bytes)
{
	struct par_op o = *like;
	o.flops = flops;
	o.bytes = bytes;
	sim_ps d = sim_ps_from_s(par_compute_time_s(b->t->compute, &o));
	b->last_compute = sim_program_compute(b->prog, STREAM_COMPUTE, name, d, flops, bytes);
	take_waits(b);
	return b->last_compute;
}

/*
 * How much of a full block (c queries x c keys) CP rank r computes in ring
 * round k under the causal mask (SPEC C26). Contiguous blocks: rank r holds
 * block r and sees block r - k; half the diagonal block in round 0, a whole
 * block while r >= k, nothing once the block index wraps (idle). Zig-zag:
 * rank r holds chunks r and 2N-1-r and computes half a block every round.
 */
static double ring_share(const struct builder *b, uint32_t k)
{
	if (b->t->layout->cp_algo == PAR_CP_ZIGZAG || k == 0)
		return 0.5;
	return b->cpi >= k ? 1.0 : 0.0;
}

/*
 * Ring attention (SPEC C25): each rank keeps its queries and passes K/V
 * blocks around the CP ring, N rounds; round k computes against the block
 * received in round k-1 while the next block travels. The backward passes
 * K/V and their gradients (twice the bytes) and computes 2.5x.
 */
static void ring_attention(struct builder *b, const struct par_op *o, int bwd, const char *where)
{
	const struct par_model *m = b->t->model;
	uint32_t N = b->cp, next = (b->cpi + 1) % N, prev = (b->cpi + N - 1) % N;
	double c = b->local.seq, bt = b->local.micro_batch;
	double heads = (double)m->heads / b->tp, kv = m->kv_heads >= b->tp ? (double)m->kv_heads / b->tp : 1;
	double full = 4.0 * bt * heads * c * c * m->head_dim * (bwd ? 2.5 : 1);
	double kv_bytes = 2.0 * 2 * bt * c * kv * m->head_dim * (bwd ? 2 : 1);
	double q_bytes = 2.0 * 2 * bt * c * heads * m->head_dim;
	char name[128], mb[24];
	mb_label(b, mb, sizeof(mb));
	uint32_t start = b->last_compute, recv = NO_OP;
	for (uint32_t k = 0; k < N; k++) {
		if (k + 1 < N) {  /* pass the block on; receive the next one */
			sim_fmt(name, sizeof(name), "cp.%s.%s.%s.ring%u.send", where, mb,
				bwd ? "bwd" : "fwd", k);
			sim_program_send(b->prog, STREAM_CP_SEND, name, SLOT_CP, next, kv_bytes);
			sim_program_tag(b->prog, bwd ? TAG_DKV : TAG_KV);
			uint32_t after = k ? recv : start;
			if (after != NO_OP)
				sim_program_dep(b->prog, after);
			sim_fmt(name, sizeof(name), "cp.%s.%s.%s.ring%u.recv", where, mb,
				bwd ? "bwd" : "fwd", k);
			uint32_t r = sim_program_recv(b->prog, STREAM_CP_RECV, name, SLOT_CP, prev,
						      kv_bytes);
			sim_program_tag(b->prog, bwd ? TAG_DKV : TAG_KV);
			if (k == 0 && start != NO_OP)
				sim_program_dep(b->prog, start);
			if (k)
				par_b_wait(b, recv);  /* round k computes what round k-1 got */
			double share = ring_share(b, k);
			sim_fmt(name, sizeof(name), "%s.%s.%s.%s.ring%u", where, mb, bwd ? "bwd" : "fwd",
				o->name, k);
			if (share > 0)
				attn_kernel(b, o, name, share * full, q_bytes + kv_bytes);
			recv = r;
			continue;
		}
		par_b_wait(b, recv);
		sim_fmt(name, sizeof(name), "%s.%s.%s.%s.ring%u", where, mb, bwd ? "bwd" : "fwd",
			o->name, k);
		double share = ring_share(b, k);
		if (share > 0 || N == 1)
			attn_kernel(b, o, name, share * full, q_bytes + kv_bytes);
		else
			par_b_mem(b, "cp.masked", PAR_MEM_ACTIVATIONS, 0);  /* takes the wait */
	}
}

/*
 * Ulysses (SPEC C27): an all-to-all turns sequence shards into head shards
 * (Q, K, V in), attention runs on the whole sequence for heads / N, and an
 * all-to-all turns the output back; the backward mirrors both.
 */
static void ulysses_attention(struct builder *b, const struct par_op *o, int bwd, const char *where)
{
	const struct par_model *m = b->t->model;
	double c = b->local.seq, bt = b->local.micro_batch, N = b->cp;
	double heads = (double)m->heads / b->tp, kv = (double)m->kv_heads / b->tp;
	double qkv = 2.0 * bt * c * (heads + 2 * kv) * m->head_dim, out = 2.0 * bt * c * heads * m->head_dim;
	char name[128], mb[24];
	mb_label(b, mb, sizeof(mb));
	sim_fmt(name, sizeof(name), "cp.%s.%s.%s.ulysses.in.alltoall", where, mb, bwd ? "bwd" : "fwd");
	par_b_wait(b, par_b_coll(b, STREAM_CP_SEND, name, SIM_COLL_ALLTOALL, SLOT_CP,
				  bwd ? out : qkv, b->last_compute));
	struct par_op full = *o;
	full.heads = (unsigned)(heads / N > 1 ? heads / N : 1);
	full.seq = (unsigned)(c * N);
	sim_fmt(name, sizeof(name), "%s.%s.%s.%s", where, mb, bwd ? "bwd" : "fwd", o->name);
	/* All N c tokens for heads / N: the same FLOPs as the local op times N. */
	attn_kernel(b, &full, name, o->flops * N, o->bytes);
	sim_fmt(name, sizeof(name), "cp.%s.%s.%s.ulysses.out.alltoall", where, mb, bwd ? "bwd" : "fwd");
	par_b_wait(b, par_b_coll(b, STREAM_CP_SEND, name, SIM_COLL_ALLTOALL, SLOT_CP,
				  bwd ? qkv : out, b->last_compute));
}

static void cp_attention(struct builder *b, const struct par_op *o, int bwd, const char *where)
{
	if (b->t->layout->cp_algo == PAR_CP_ULYSSES)
		ulysses_attention(b, o, bwd, where);
	else
		ring_attention(b, o, bwd, where);
}

static void moe_block(struct builder *b, const char *where, int bwd);

/* Append a list of model ops to the compute stream; returns the last index. */
static uint32_t emit_ops(struct builder *b, const char *where, enum par_phase ph,
			 const struct par_op *ops, size_t n)
{
	const struct par_train *t = b->t;
	char mb[24];
	int moe_done = 0;
	mb_label(b, mb, sizeof(mb));
	for (size_t i = 0; i < n; i++) {
		const struct par_op *o = &ops[i];
		char name[96];
		if (b->moe_layer >= 0 && par_mlp_kernel(o->name)) {
			/* An MoE layer: the experts replace the dense MLP, once per
			 * pass (the recomputed forward has its own). */
			int bwd = ph == PAR_BWD && !o->recompute;
			if (moe_done != 1 + bwd) {
				moe_block(b, where, bwd);
				moe_done = 1 + bwd;
			}
			continue;
		}
		if (b->cp > 1 && o->cls == PAR_OP_ATTENTION) {
			cp_attention(b, o, ph == PAR_BWD && !o->recompute, where);
			continue;
		}
		tp_hook(b, o, ph, 1, where);
		sim_fmt(name, sizeof(name), "%s.%s.%s.%s%s", where, mb,
			ph == PAR_FWD ? "fwd" : "bwd", o->recompute ? "re." : "", o->name);
		sim_ps d = sim_ps_from_s(par_compute_time_s(t->compute, o));
		b->last_compute = sim_program_compute(b->prog, STREAM_COMPUTE, name, d, o->flops,
						      o->bytes);
		take_waits(b);
		if (b->reduce && o->params > 0 && o->expert)
			b->expert_grads += o->params * b->grad_elem;
		else if (b->reduce && o->params > 0 && b->dp->grads)
			b->dp->grads(b, o->params, b->last_compute);
		tp_hook(b, o, ph, 0, where);
	}
	return b->last_compute;
}

static uint32_t emit(struct builder *b, const char *where, enum par_phase ph, size_t n)
{
	return emit_ops(b, where, ph, b->ops, n);
}

/* ---- mixture of experts ---------------------------------------------------- */

/* The routing load of the current MoE layer (moe.c), computed once per layer. */
static double moe_factor(struct builder *b)
{
	if (!b->moe_factor) {
		b->moe_factor = xcalloc(b->t->model->layers, sizeof(double));
		b->moe_dropped = xcalloc(b->t->model->layers, sizeof(double));
	}
	unsigned l = (unsigned)b->moe_layer;
	if (b->moe_factor[l] == 0) {
		struct par_moe_load load;
		par_moe_load(b->t->model, b->t->layout->ep, b->t->seed, l, &load);
		b->moe_factor[l] = load.factor;
		b->moe_dropped[l] = load.dropped;
	}
	return b->moe_factor[l];
}

static void moe_part(struct builder *b, const char *where, int part, enum par_phase ph)
{
	struct par_op ops[8];
	size_t n = par_moe_ops(b->t->model, &b->local, b->tp, b->t->layout->ep, moe_factor(b),
			       part, ph, ops, ARRAY_SIZE(ops));
	int layer = b->moe_layer;
	b->moe_layer = -1;  /* these are the experts, not a dense MLP */
	emit_ops(b, where, ph, ops, n);
	b->moe_layer = layer;
}

/* Dispatch or combine: every token's hidden state to (or from) its top-k
 * experts over the EP group: T k h bytes (bf16) each rank holds (SPEC C28). */
static void moe_alltoall(struct builder *b, const char *where, const char *what, int bwd)
{
	if (b->t->layout->ep < 2)
		return;
	const struct par_model *m = b->t->model;
	double T = (double)b->local.seq * b->local.micro_batch;
	char name[128], mb[24];
	mb_label(b, mb, sizeof(mb));
	sim_fmt(name, sizeof(name), "moe.%s.%s.%s.%s.alltoall", where, mb, bwd ? "bwd" : "fwd", what);
	par_b_wait(b, par_b_coll(b, STREAM_TP, name, SIM_COLL_ALLTOALL, SLOT_EP,
				  2.0 * T * m->moe.top_k * m->hidden, b->last_compute));
}

/* The MoE MLP: router, dispatch, the rank's experts, combine, shared experts;
 * the backward in reverse, then the expert gradients reduced over the ranks
 * that hold the same experts. */
static void moe_block(struct builder *b, const char *where, int bwd)
{
	if (!bwd) {
		moe_part(b, where, 0, PAR_FWD);
		moe_alltoall(b, where, "dispatch", 0);
		moe_part(b, where, 1, PAR_FWD);
		moe_alltoall(b, where, "combine", 0);
		moe_part(b, where, 2, PAR_FWD);
		return;
	}
	moe_part(b, where, 2, PAR_BWD);
	moe_alltoall(b, where, "combine", 1);
	moe_part(b, where, 1, PAR_BWD);
	moe_alltoall(b, where, "dispatch", 1);
	moe_part(b, where, 0, PAR_BWD);
	uint32_t edp = b->dpn / b->t->layout->ep;
	if (b->expert_grads > 0 && edp > 1) {
		char name[128], mb[24];
		mb_label(b, mb, sizeof(mb));
		sim_fmt(name, sizeof(name), "moe.%s.%s.experts.allreduce", where, mb);
		b->last_grad_comm = par_b_coll(b, STREAM_GRAD, name, SIM_COLL_ALLREDUCE, SLOT_EDP,
					       b->expert_grads, b->last_compute);
	}
	b->expert_grads = 0;
}

/* What an MoE layer keeps: a dense layer whose MLP is k (routed, scaled by
 * the load) plus the shared experts' width. */
static double moe_activation_bytes(struct builder *b)
{
	struct par_model m = *b->t->model;
	double f = m.moe.expert_ffn ? m.moe.expert_ffn : m.ffn;
	m.ffn = (uint32_t)(f * (m.moe.top_k * moe_factor(b) + m.moe.shared_experts));
	return par_layer_activation_bytes(&m, &b->local, b->tp, b->sp);
}

void par_b_mem(struct builder *b, const char *name, unsigned cat, double bytes)
{
	char n[96], mb[24];
	mb_label(b, mb, sizeof(mb));
	sim_fmt(n, sizeof(n), "%s.%s", name, mb);
	b->last_compute = sim_program_compute(b->prog, STREAM_COMPUTE, n, 0, 0, 0);
	sim_program_mem(b->prog, cat, bytes);
	take_waits(b);
}

/* Fill the scratch list from one of model.c's op writers. */
typedef size_t (*ops_fn)(const struct par_model *, const struct par_training *, unsigned,
			 enum par_phase, struct par_op *, size_t);

static size_t fetch(struct builder *b, ops_fn fn, enum par_phase ph)
{
	size_t n = fn(b->t->model, &b->local, b->tp, ph, NULL, 0);
	if (n > b->cap) {
		b->cap = n;
		b->ops = xreallocarray(b->ops, n, sizeof(*b->ops));
	}
	return fn(b->t->model, &b->local, b->tp, ph, b->ops, n);
}

/* The layer's kernels, with sequence parallelism when it is on. */
static size_t fetch_layer(struct builder *b, enum par_phase ph)
{
	const struct par_model *m = b->t->model;
	const struct par_training *tr = &b->local;
	size_t n = par_layer_ops_sp(m, tr, b->tp, b->sp, ph, NULL, 0);
	if (n > b->cap) {
		b->cap = n;
		b->ops = xreallocarray(b->ops, n, sizeof(*b->ops));
	}
	return par_layer_ops_sp(m, tr, b->tp, b->sp, ph, b->ops, n);
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
	sim_fmt(where, sizeof(where), "L%u", l);
	hook_begin(b, (int)l, PAR_FWD);
	b->moe_layer = par_layer_is_moe(t->model, l) ? (int)l : -1;
	emit(b, where, PAR_FWD, fetch_layer(b, PAR_FWD));
	sim_program_mem(b->prog, PAR_MEM_ACTIVATIONS, b->moe_layer >= 0 ? moe_activation_bytes(b)
			: par_layer_activation_bytes(t->model, &b->local, b->tp, b->sp));
	b->moe_layer = -1;
	hook_end(b, (int)l, PAR_FWD);
}

static void layer_backward(struct builder *b, unsigned l)
{
	const struct par_train *t = b->t;
	b->moe_layer = par_layer_is_moe(t->model, l) ? (int)l : -1;
	double kept = b->moe_layer >= 0 ? moe_activation_bytes(b)
					: par_layer_activation_bytes(t->model, &b->local, b->tp, b->sp);
	double peak = b->moe_layer >= 0 && t->training->recompute == PAR_RECOMPUTE_FULL
			      ? kept : par_layer_activation_peak_bytes(t->model, &b->local, b->tp, b->sp);
	if (b->moe_layer >= 0 && t->training->recompute == PAR_RECOMPUTE_FULL)
		kept = par_layer_activation_bytes(t->model, &b->local, b->tp, b->sp);
	size_t n = fetch_layer(b, PAR_BWD), re = 0;
	char where[32];
	sim_fmt(where, sizeof(where), "L%u", l);
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
	b->moe_layer = -1;
	hook_end(b, (int)l, PAR_BWD);
}

/* A pipeline message: activations forward, gradients backward. */
static uint32_t p2p(struct builder *b, int send, int act, uint32_t peer, uint32_t after)
{
	const struct par_training *tr = &b->local;
	double bytes = 2.0 * tr->seq * tr->micro_batch * b->t->model->hidden / (b->sp ? b->tp : 1);
	char name[96], mb[24];
	mb_label(b, mb, sizeof(mb));
	sim_fmt(name, sizeof(name), "pp.%s.%s.%s", mb, send ? "send" : "recv", act ? "act" : "grad");
	unsigned stream = send ? (act ? STREAM_SEND_NEXT : STREAM_SEND_PREV)
			       : (act ? STREAM_RECV_PREV : STREAM_RECV_NEXT);
	uint32_t i = send ? sim_program_send(b->prog, stream, name, SLOT_PP, peer, bytes)
			  : sim_program_recv(b->prog, stream, name, SLOT_PP, peer, bytes);
	sim_program_tag(b->prog, act ? TAG_ACT : TAG_GRAD);
	if (after != NO_OP)
		sim_program_dep(b->prog, after);
	return i;
}

static uint32_t prev_stage(const struct builder *b) { return (b->stage + b->pp - 1) % b->pp; }
static uint32_t next_stage(const struct builder *b) { return (b->stage + 1) % b->pp; }

/* The forward pass of micro-batch b->mb through chunk b->chunk. */
static void forward_pass(struct builder *b)
{
	const struct par_train *t = b->t;
	uint32_t vs = vstage(b, b->chunk), V = b->pp * b->vpp, first, count;
	stage_range(b, vs, &first, &count);
	if (vs > 0)
		par_b_wait(b, p2p(b, 0, 1, prev_stage(b), NO_OP));
	if (vs == 0) {
		hook_begin(b, -1, PAR_FWD);
		emit(b, "embed", PAR_FWD, fetch(b, par_embed_ops, PAR_FWD));
	}
	for (uint32_t l = first; l < first + count; l++)
		layer_forward(b, l);
	if (vs == V - 1) {
		emit(b, "head", PAR_FWD, fetch(b, par_head_ops, PAR_FWD));
		sim_program_mem(b->prog, PAR_MEM_LOGITS, par_logits_bytes(t->model, &b->local, b->tp));
		hook_end(b, -1, PAR_FWD);
	} else {
		p2p(b, 1, 1, next_stage(b), b->last_compute);
	}
}

/* The backward pass of micro-batch b->mb through chunk b->chunk. */
static void backward_pass(struct builder *b, int last_action)
{
	const struct par_train *t = b->t;
	uint32_t vs = vstage(b, b->chunk), V = b->pp * b->vpp, first, count;
	stage_range(b, vs, &first, &count);
	if (vs < V - 1)
		par_b_wait(b, p2p(b, 0, 0, next_stage(b), NO_OP));
	if (vs == V - 1) {
		hook_begin(b, -1, PAR_BWD);
		emit(b, "head", PAR_BWD, fetch(b, par_head_ops, PAR_BWD));
		sim_program_mem(b->prog, PAR_MEM_LOGITS, -par_logits_bytes(t->model, &b->local, b->tp));
	}
	for (uint32_t l = first + count; l-- > first;)
		layer_backward(b, l);
	if (vs == 0) {
		emit(b, "embed", PAR_BWD, fetch(b, par_embed_ops, PAR_BWD));
		hook_end(b, -1, PAR_BWD);
	} else {
		p2p(b, 1, 0, prev_stage(b), b->last_compute);
	}
	/* The pipeline phase of this stage ends with its last backward kernel. */
	if (last_action)
		sim_program_flags(b->prog, SIM_OP_MARK);
	if (b->reduce && b->dp->backward_end)
		b->dp->backward_end(b, b->last_compute);
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

/* after_step 0: leave out what follows the step (ZeRO-1/2's parameter
 * gathers), which changes no memory: the memory walk needs none of it. */
static struct sim_program *build_program(const struct par_train *t, struct builder *b,
					 uint32_t stage, uint32_t cpi, int after_step)
{
	const struct par_layout *l = t->layout;
	memset(b, 0, sizeof(*b));
	b->t = t;
	b->dp = dp_strategy(l);
	b->prog = sim_program_new();
	b->grad_elem = par_grad_bytes(t->training->precision, l->ddp.fp32_grads);
	b->dpn = dp_of(t) * l->cp;  /* gradients are reduced over DP x CP */
	b->tp = l->tp, b->pp = l->pp, b->vpp = l->vpp ? l->vpp : 1, b->stage = stage;
	b->sp = l->sp && l->tp > 1;
	b->nranks = b->dpn * l->tp * l->pp;
	b->shard = l->fsdp.enabled && l->fsdp.hsdp
			   ? topo_config_gpus_per_node(t->cluster)
			   : b->dpn;
	b->params = stage_params(b);
	b->cp = l->cp, b->cpi = cpi;
	b->local = *t->training;
	b->local.seq = t->training->seq / l->cp;  /* each CP rank's tokens */
	b->nmb = micro_batches(t);
	b->nwaits = 0;
	b->last_grad_comm = b->last_param_comm = NO_OP;
	b->last_compute = NO_OP;
	b->moe_layer = -1;
	size_t n = 2 * (size_t)b->nmb * b->vpp;
	struct par_action *acts = xmalloc(n * sizeof(*acts));
	par_schedule(l->schedule)->actions(b->pp, stage, b->nmb, b->vpp, acts);
	for (size_t i = 0; i < n; i++) {
		b->mb = acts[i].mb, b->chunk = acts[i].chunk;
		b->reduce = b->dpn > 1 && (b->dp->reduce_every_mb || b->mb + 1 == b->nmb);
		if (acts[i].backward)
			backward_pass(b, i + 1 == n);
		else
			forward_pass(b);
	}
	free(acts);
	double params = step_params(b);
	uint32_t step = t->layout->offload.enabled ? host_step(b, params) : gpu_step(b, params);
	if (b->dp->after_step && b->dpn > 1 && after_step)
		b->dp->after_step(b, step);
	free(b->ops);
	free(b->held);
	free(b->gather);
	free(b->moe_factor);
	free(b->moe_dropped);
	free(b->waits);
	b->ops = NULL, b->held = NULL, b->gather = NULL, b->moe_factor = b->moe_dropped = NULL;
	b->waits = NULL, b->nwaits = b->waitcap = 0;
	return b->prog;
}

/* ---- checks and memory ----------------------------------------------------- */

static int supported(const struct par_train *t, char *err, size_t errlen)
{
	const struct par_layout *l = t->layout;
	if (t->model->moe.experts && (l->zero >= 2 || l->fsdp.enabled))
		return sim_errf(err, errlen, "model.moe: mixture-of-experts layers are simulated "
				"with DDP or ZeRO-1 (Megatron's distributed optimizer), not with %s",
				l->fsdp.enabled ? "FSDP" : l->zero == 2 ? "ZeRO-2" : "ZeRO-3");
	if (t->symmetry_dp && t->model->moe.experts)
		return sim_errf(err, errlen, "sim.symmetry: dp needs data-parallel replicas that "
				"behave alike, and a mixture of experts routes each replica's tokens "
				"differently (expert groups span replicas); use sim.symmetry none");
	if (l->ep > 1 && !t->model->moe.experts)
		return sim_errf(err, errlen, "parallel.ep: expert parallelism needs an MoE model "
				"(model.moe.experts)");
	if (l->offload.enabled && (l->fsdp.enabled || l->zero < 1 || l->zero > 2))
		return sim_errf(err, errlen, "parallel.offload.enabled: optimizer offload works "
				"with parallel.zero 1 or 2 (ZeRO-Offload), not with %s",
				l->fsdp.enabled ? "FSDP" : l->zero ? "ZeRO-3" : "DDP");
	if (t->var && t->symmetry_dp && (t->var->jitter || t->var->gpu || t->var->stragglers))
		return sim_errf(err, errlen, "sim.symmetry: dp needs data-parallel replicas that "
				"behave alike, and variability draws every GPU's own times; use "
				"sim.symmetry none");
	if (t->var && t->var->stragglers > (uint32_t)topo_config_gpus(t->cluster))
		return sim_errf(err, errlen, "variability.stragglers: %u stragglers, but the "
				"cluster has %u GPUs", t->var->stragglers, (uint32_t)topo_config_gpus(t->cluster));
	if (l->ddp.overlap_param_gather && (l->fsdp.enabled || l->zero < 1 || l->zero > 2))
		return sim_errf(err, errlen, "parallel.ddp.overlap_param_gather: the parameters "
				"gathered after the step are ZeRO-1's and ZeRO-2's (parallel.zero 1 or "
				"2), not %s's", l->fsdp.enabled ? "FSDP" : l->zero ? "ZeRO-3" : "DDP");
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

/* Seconds of the rank's expert kernels (forward and backward) at a load. */
static double expert_time(const struct par_train *t, const struct par_training *local,
			  double factor)
{
	struct par_op ops[16];
	double s = 0;
	for (int ph = 0; ph < 2; ph++) {
		size_t n = par_moe_ops(t->model, local, t->layout->tp, t->layout->ep, factor, 1,
				       (enum par_phase)ph, ops, ARRAY_SIZE(ops));
		for (size_t i = 0; i < n; i++)
			s += par_compute_time_s(t->compute, &ops[i]);
	}
	return s;
}

/* Routing: the mean load of the busiest EP rank, tokens dropped, and what
 * the imbalance adds to a stage's step (the busiest GPU sets the time). */
static void moe_report(const struct par_train *t, struct par_report *r)
{
	const struct par_model *m = t->model;
	if (!m->moe.experts)
		return;
	struct par_training local = *t->training;
	local.seq /= t->layout->cp;
	double f = 0, d = 0, extra = 0, base = expert_time(t, &local, 1);
	unsigned n = 0;
	for (unsigned l = 0; l < m->layers; l++) {
		if (!par_layer_is_moe(m, l))
			continue;
		struct par_moe_load ld;
		par_moe_load(m, t->layout->ep, t->seed, l, &ld);
		f += ld.factor, d += ld.dropped, n++;
		extra += expert_time(t, &local, ld.factor) - base;
	}
	r->moe.imbalance = n ? f / n : 1;
	r->moe.dropped = n ? d / n : 0;
	r->moe.imbalance_s = extra * r->micro_batches / t->layout->pp;
}

int par_train_plan(const struct par_train *t, struct par_report *out, char *err, size_t errlen)
{
	if (supported(t, err, errlen) < 0)
		return -1;
	report_static(t, out);
	moe_report(t, out);
	memset(&out->goodput, 0, sizeof(out->goodput));
	if (t->failures && t->failures->gpu_mtbf_s > 0) {
		/* A checkpoint holds what a restart needs: the weights and the
		 * optimizer states (fp32 master copy included) of the whole model. */
		struct par_states st;
		par_model_states(out->params, t->training->precision, t->training->optimizer, 0, 1,
				 t->layout->ddp.fp32_grads, &st);
		par_goodput_of(t->failures, out->gpus, st.weights + st.optimizer, &out->goodput);
	}
	/* The busiest stage sets the memory: usually the first (1F1B keeps p
	 * micro-batches in flight there, SPEC C23). */
	double gathers = 0;  /* the most of a stage above the limit */
	for (uint32_t s = 0; s < t->layout->pp; s++) {
		struct builder b;
		struct par_memory m;
		struct sim_program *prog = build_program(t, &b, s, 0, 0);
		memory_peak(&b, prog, &m);
		par_b_check_gathers(&b, &gathers, err, errlen);  /* refused below if it fits */
		if (s == 0 || m.peak > out->memory.peak) {
			out->memory = m;
			out->busiest_stage = s;
		}
		if (s == 0 && t->layout->offload.enabled) {
			struct par_states st;
			par_model_states(par_b_params(&b), t->training->precision,
					 t->training->optimizer, t->layout->zero, b.shard,
					 t->layout->ddp.fp32_grads, &st);
			out->offload.saved_bytes = st.optimizer;
			for (uint32_t i = 0; i < prog->stream_n[STREAM_HOST]; i++)
				out->offload.host_s += sim_ps_to_s(
					prog->ops[prog->stream_ops[STREAM_HOST][i]].dur_ps);
		}
		sim_program_free(prog);
	}
	/* What only the simulation builds is checked where it would run. */
	if (!out->memory.fits)
		return 0;
	return gathers > 0 ? -1 : par_check_algorithms(t, err, errlen);
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

void par_report_rates(const struct par_train *t, struct par_report *r)
{
	double tokens = (double)t->training->global_batch * t->training->seq;
	double peak = par_compute_peak(t->compute);
	r->tokens_per_s = tokens / r->step_time_s;
	r->mfu = r->tokens_per_s * r->flops_per_token / (r->gpus * peak);
	r->hfu = r->tokens_per_s * hardware_flops_per_token(t, r->flops_per_token) /
		 (r->gpus * peak);
}

/* Totals of every rank when the last step started, for the bubble. */
struct step_marks {
	sim_ps t0;
	sim_ps *compute, *exposed;
};

static void report_run(const struct par_train *t, struct sim *sim, sim_ps total,
		       const struct step_marks *last, struct par_report *r)
{
	uint32_t n = sim_nranks(sim), crit = 0;
	for (uint32_t i = 1; i < n; i++)
		if (sim_rank_end(sim, i) > sim_rank_end(sim, crit))
			crit = i;
	const struct sim_rank_stats *st = sim_rank_stats(sim, crit);
	double steps = t->steps ? t->steps : 1;
	r->critical_rank = crit;
	r->sim_end_ps = sim_now(sim);
	r->events = sim_events(sim);
	r->step_time_s = sim_ps_to_s(total) / steps;
	par_report_rates(t, r);
	r->breakdown.compute_s = sim_ps_to_s(st->compute_ps) / steps;
	r->breakdown.exposed_comm_s = sim_ps_to_s(st->exposed_comm_ps) / steps;
	/* The bubble: the critical rank's idle time from the start of the (last)
	 * step to its last backward kernel, the pipeline phase (SPEC C22). */
	if (t->layout->pp > 1 && st->mark_ps > last->t0) {
		sim_ps phase = st->mark_ps - last->t0;
		sim_ps busy = (st->mark_compute_ps - last->compute[crit]) +
			      (st->mark_exposed_ps - last->exposed[crit]);
		r->pipeline_s = sim_ps_to_s(phase);
		r->breakdown.bubble_s = sim_ps_to_s(phase - busy);
	}
	/* What is left; under a picosecond (the engine's tick) is rounding. */
	double idle = r->step_time_s - r->breakdown.compute_s - r->breakdown.exposed_comm_s -
		      r->breakdown.bubble_s;
	r->breakdown.idle_s = idle < 1e-12 ? 0 : idle;
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

/* The coordinate of one kind of group (a slot) in c. */
static uint32_t *coord_of(struct par_coords *c, unsigned slot)
{
	return slot == SLOT_TP ? &c->tp : slot == SLOT_PP ? &c->pp : slot == SLOT_CP ? &c->cp
								: &c->dp;
}

static uint32_t size_of(const struct par_dims *d, unsigned slot)
{
	return slot == SLOT_TP ? d->tp : slot == SLOT_PP ? d->pp : slot == SLOT_CP ? d->cp
								: d->dp * d->cp;
}

/* Member i of the group of kind `slot` that rank coordinates c belong to.
 * The data-parallel group spans CP too: CP ranks hold the same parameters,
 * so gradients are reduced (and ZeRO shards) over DP x CP, as in Megatron. */
static void member_of(const struct par_dims *d, unsigned slot, uint32_t i, struct par_coords *c)
{
	if (slot == SLOT_DP) {
		c->cp = i % d->cp;
		c->dp = i / d->cp;
	} else {
		*coord_of(c, slot) = i;
	}
}

/* A group of the job's ranks (its rank r is the sim's first + r); ranks
 * is left as it was given. */
static uint32_t group_add(struct sim *sim, uint32_t first, uint32_t *ranks, uint32_t n)
{
	for (uint32_t i = 0; first && i < n; i++)
		ranks[i] += first;
	uint32_t id = sim_group_add(sim, ranks, n);
	for (uint32_t i = 0; first && i < n; i++)
		ranks[i] -= first;
	return id;
}

/*
 * Expert groups (SPEC C24): within one stage, the DP x CP ranks of equal TP
 * index (member j = cp + C dp) split into consecutive groups of EP; the
 * expert-data-parallel group of a rank holds the ranks with its experts
 * (equal j mod EP). Without experts both are the rank alone.
 */
static void add_expert_groups(struct sim *sim, uint32_t first, const struct par_dims *d,
			      uint32_t *slots, uint32_t *ranks)
{
	uint32_t ep = d->ep, n = d->dp * d->cp, edp = n / ep;
	for (uint32_t tp = 0; tp < d->tp; tp++)
		for (uint32_t pp = 0; pp < d->pp; pp++) {
			struct par_coords c = { .tp = tp, .pp = pp };
			for (uint32_t g = 0; g < edp; g++) {    /* EP: consecutive */
				for (uint32_t i = 0; i < ep; i++) {
					member_of(d, SLOT_DP, g * ep + i, &c);
					ranks[i] = par_rank_of(d, &c);
				}
				uint32_t id = group_add(sim, first, ranks, ep);
				for (uint32_t i = 0; i < ep; i++)
					slots[ranks[i] * NSLOTS + SLOT_EP] = id;
			}
			for (uint32_t e = 0; e < ep; e++) {     /* EDP: strided */
				for (uint32_t g = 0; g < edp; g++) {
					member_of(d, SLOT_DP, g * ep + e, &c);
					ranks[g] = par_rank_of(d, &c);
				}
				uint32_t id = group_add(sim, first, ranks, edp);
				for (uint32_t g = 0; g < edp; g++)
					slots[ranks[g] * NSLOTS + SLOT_EDP] = id;
			}
		}
}

/*
 * The groups of the step: for each kind (DP, TP, PP, CP), the ranks that
 * share every other coordinate, in the order of theirs; HSDP's shard groups
 * (the DP ranks of one node) and replica groups (one per local index).
 * Ranks and slots are the job's own; its rank r is the sim's first + r.
 */
static void add_groups(struct sim *sim, uint32_t first, const struct builder *b,
		       const struct par_dims *d, uint32_t *slots)
{
	static const unsigned kinds[] = { SLOT_DP, SLOT_TP, SLOT_PP, SLOT_CP };
	uint32_t n = b->nranks, *ranks = xmalloc(n * sizeof(uint32_t));
	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
		uint32_t size = size_of(d, kinds[k]);
		for (uint32_t r = 0; r < n; r++) {
			struct par_coords c;
			par_coords_of(d, r, &c);
			if (*coord_of(&c, kinds[k]) != 0 || (kinds[k] == SLOT_DP && c.cp != 0))
				continue;  /* not the group's first member */
			for (uint32_t i = 0; i < size; i++) {
				member_of(d, kinds[k], i, &c);
				ranks[i] = par_rank_of(d, &c);
			}
			uint32_t id = group_add(sim, first, ranks, size);
			for (uint32_t i = 0; i < size; i++)
				slots[ranks[i] * NSLOTS + kinds[k]] = id;
			if (kinds[k] != SLOT_DP || b->shard < b->dpn)
				continue;
			id = group_add(sim, first, ranks, size);   /* reduce-scatters */
			for (uint32_t i = 0; i < size; i++)
				slots[ranks[i] * NSLOTS + SLOT_SHARD_RS] = id;
		}
	}
	add_expert_groups(sim, first, d, slots, ranks);
	uint32_t g = b->shard, nodes = n / g;
	for (uint32_t r = 0; r < n; r++)  /* without HSDP: the DP group */
		slots[r * NSLOTS + SLOT_SHARD] = slots[r * NSLOTS + SLOT_REPLICA] =
			slots[r * NSLOTS + SLOT_DP];
	for (uint32_t x = 0; g < b->dpn && x < nodes; x++) {   /* HSDP (dp only) */
		for (uint32_t j = 0; j < g; j++)
			ranks[j] = x * g + j;
		uint32_t id = group_add(sim, first, ranks, g);
		for (uint32_t j = 0; j < g; j++)
			slots[(x * g + j) * NSLOTS + SLOT_SHARD] = id;
		id = group_add(sim, first, ranks, g);              /* reduce-scatters */
		for (uint32_t j = 0; j < g; j++)
			slots[(x * g + j) * NSLOTS + SLOT_SHARD_RS] = id;
	}
	for (uint32_t j = 0; g < b->dpn && j < g; j++) {
		for (uint32_t x = 0; x < nodes; x++)
			ranks[x] = x * g + j;
		uint32_t id = group_add(sim, first, ranks, nodes);
		for (uint32_t x = 0; x < nodes; x++)
			slots[(x * g + j) * NSLOTS + SLOT_REPLICA] = id;
	}
	free(ranks);
}

/*
 * Every stage's program (one per stage and CP rank: causal ring attention
 * gives CP ranks different work; otherwise they are identical), the groups,
 * and every rank's memory from the start.
 */
void par_place(struct par_placed *p, const struct par_train *t, struct sim *sim, uint32_t first)
{
	struct par_dims *d = &p->d;
	*p = (struct par_placed){ .t = t, .first = first, .n = (uint32_t)topo_config_gpus(t->cluster) };
	par_dims_of(t->layout, p->n, d);
	struct builder b;
	sim_program_free(build_program(t, &b, 0, 0, 0));  /* the builder's sizes */
	p->slots = xcalloc((size_t)p->n * NSLOTS, sizeof(uint32_t));
	add_groups(sim, first, &b, d, p->slots);
	p->progs = xcalloc((size_t)d->pp * d->cp, sizeof(*p->progs));
	for (uint32_t s = 0; s < d->pp; s++)
		for (uint32_t ci = 0; ci < d->cp; ci++) {
			double stat[PAR_MEM_NCATS];
			p->progs[s * d->cp + ci] = build_program(t, &b, s, ci, 1);
			static_memory(&b, stat);
			for (uint32_t r = 0; r < p->n; r++) {
				struct par_coords c;
				par_coords_of(d, r, &c);
				for (int k = 0; c.pp == s && c.cp == ci && k < PAR_MEM_NCATS; k++)
					if (stat[k] > 0)
						sim_rank_mem_add(sim, first + r, (unsigned)k, stat[k]);
			}
		}
}

void par_place_start(const struct par_placed *p, struct sim *sim, uint32_t r)
{
	struct par_coords c;
	par_coords_of(&p->d, r, &c);
	sim_rank_start(sim, p->first + r, p->progs[c.pp * p->d.cp + c.cp],
		       p->slots + (size_t)r * NSLOTS, NSLOTS);
}

void par_place_free(struct par_placed *p)
{
	for (uint32_t s = 0; p->progs && s < p->d.pp * p->d.cp; s++)
		sim_program_free(p->progs[s]);
	free(p->progs);
	free(p->slots);
	*p = (struct par_placed){ 0 };
}

/* ---- variability ---------------------------------------------------------------------- */

const char *par_dist_name(enum par_dist d)
{
	static const char *const names[] = { "none", "lognormal", "gamma" };
	return (unsigned)d < ARRAY_SIZE(names) ? names[d] : "?";
}

/* A draw of mean 1 and coefficient of variation cv (GSL). */
double par_draw_mean1(gsl_rng *rng, enum par_dist d, double cv)
{
	if (d == PAR_DIST_LOGNORMAL) {
		double s2 = log1p(cv * cv);  /* mean exp(mu + s2/2) = 1 */
		return gsl_ran_lognormal(rng, -s2 / 2, sqrt(s2));
	}
	if (d == PAR_DIST_GAMMA) {
		double k = 1 / (cv * cv);    /* shape k, scale 1/k: mean 1 */
		double x = gsl_ran_gamma(rng, k, 1 / k);
		/* Below shape 1, GSL draws Gamma(1 + k) U^(1/k), which underflows
		 * to 0 (or a subnormal) for a small U: at cv 10 (k = 0.01), one
		 * draw in 1,256. The true draw is then below DBL_MIN, and any
		 * factor under 1e-19 makes every kernel (at most 2^63 ps) round
		 * to 0 ps, so DBL_MIN stands for it exactly, and the draw stays
		 * positive as the engine's scale must be. */
		return x > DBL_MIN ? x : DBL_MIN;
	}
	return 1;
}

int par_var_active(const struct par_variability *v)
{
	return v && (v->jitter || v->gpu || v->stragglers);
}

/* The engine's compute scale: the kernel's jitter (the GPU's factor is the
 * rank's speed). */
static double var_scale(void *ctx, uint32_t rank, const struct sim_op *op)
{
	struct par_var_state *vr = ctx;
	(void)rank, (void)op;
	return par_draw_mean1(vr->rng, vr->v->jitter, vr->v->jitter_cv);
}

/*
 * Draw every GPU's factor, then the stragglers (from the same generator,
 * seeded by sim.seed, so a scenario and seed give the same GPUs), and hook
 * them into the engine as the ranks' speeds, the jitter as its compute
 * scale. The stragglers' ranks go to the report.
 */
void par_var_begin(struct par_var_state *vr, const struct par_variability *v, uint64_t seed,
		   struct sim *sim, struct par_report *r)
{
	uint32_t n = sim_nranks(sim);
	vr->v = v;
	vr->rng = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(vr->rng, (unsigned long)seed);
	vr->gpu = xmalloc(n * sizeof(double));
	for (uint32_t i = 0; i < n; i++)
		vr->gpu[i] = par_draw_mean1(vr->rng, v->gpu, v->gpu_cv);
	r->nstragglers = 0;
	if (v->stragglers) {
		uint32_t k = v->stragglers, *all = xmalloc(n * sizeof(uint32_t));
		uint32_t *pick = xmalloc(k * sizeof(uint32_t));
		for (uint32_t i = 0; i < n; i++)
			all[i] = i;
		gsl_ran_choose(vr->rng, pick, k, all, n, sizeof(uint32_t));  /* in rank order */
		for (uint32_t i = 0; i < k; i++) {
			vr->gpu[pick[i]] *= v->straggler_slowdown;
			if (i < ARRAY_SIZE(r->stragglers))
				r->stragglers[r->nstragglers++] = pick[i];
		}
		free(all);
		free(pick);
	}
	sim_set_rank_speed(sim, vr->gpu);
	if (v->jitter)
		sim_set_compute_scale(sim, var_scale, vr);
}

void par_var_end(struct par_var_state *vr, struct sim *sim)
{
	sim_set_rank_speed(sim, NULL);
	sim_set_compute_scale(sim, NULL, NULL);
	if (vr->rng)
		gsl_rng_free(vr->rng);
	free(vr->gpu);
}

/* Percentiles of the steps' times (each step from its start to its end). */
void par_report_steps(double *step_s, uint32_t n, struct par_report *r)
{
	gsl_sort(step_s, 1, n);
	r->steps = n;
	r->step_min_s = step_s[0];
	r->step_max_s = step_s[n - 1];
	r->step_p50_s = gsl_stats_quantile_from_sorted_data(step_s, 1, n, 0.50);
	r->step_p90_s = gsl_stats_quantile_from_sorted_data(step_s, 1, n, 0.90);
	r->step_p99_s = gsl_stats_quantile_from_sorted_data(step_s, 1, n, 0.99);
}

/* Run the steps one after another (each starts when the last ended); each
 * step's time into step_s. */
static int run_steps(const struct par_train *t, struct sim *sim, const struct par_placed *p,
		     sim_ps *end, struct step_marks *last, double *step_s)
{
	uint32_t n = p->n;
	int rc = 0;
	/* Replica 0 stands for the others: all are marked absent before any
	 * rank starts, since a rank may join a collective as it starts (a
	 * sharded strategy's first gather) and the group's present members
	 * decide whether it has all joined. */
	for (uint32_t r = 0; t->symmetry_dp && r < n; r++) {
		struct par_coords c;
		par_coords_of(&p->d, r, &c);
		if (c.dp != 0)
			sim_rank_absent(sim, r);
	}
	for (uint32_t s = 0; s < (t->steps ? t->steps : 1) && rc == 0; s++) {
		last->t0 = sim_now(sim);
		for (uint32_t r = 0; r < n; r++) {
			if (!sim_rank_present(sim, r))
				continue;
			last->compute[r] = sim_rank_stats(sim, r)->compute_ps;
			last->exposed[r] = sim_rank_stats(sim, r)->exposed_comm_ps;
			par_place_start(p, sim, r);
		}
		rc = sim_run(sim);
		for (uint32_t r = 0; r < n; r++)
			if (sim_rank_end(sim, r) > *end)
				*end = sim_rank_end(sim, r);
		step_s[s] = sim_ps_to_s(*end - last->t0);
	}
	return rc;
}

int par_train_run(const struct par_train *t, struct par_report *out, char *err, size_t errlen)
{
	if (par_train_plan(t, out, err, errlen) < 0)
		return -1;
	return par_train_simulate(t, out, err, errlen);
}

int par_train_simulate(const struct par_train *t, struct par_report *out, char *err,
		       size_t errlen)
{
	uint32_t n = out->gpus;
	struct topo *topo = topo_new(t->cluster, n, err, errlen);
	if (!topo)
		return -1;
	struct sim *sim = sim_new(&t->sim, n, topo_sim_ops(), topo);
	topo_attach(topo, sim);
	if (t->rec)
		sim_set_recorder(sim, t->rec, t->rec_ctx);
	struct par_placed p;
	par_place(&p, t, sim, 0);
	struct step_marks last = {
		.compute = xcalloc(n, sizeof(sim_ps)), .exposed = xcalloc(n, sizeof(sim_ps)),
	};
	struct par_var_state vr = { 0 };
	if (par_var_active(t->var))
		par_var_begin(&vr, t->var, t->seed, sim, out);
	uint32_t nsteps = t->steps ? t->steps : 1;
	double *step_s = xcalloc(nsteps, sizeof(double));
	sim_ps t0 = sim_now(sim), end = t0;
	int rc = run_steps(t, sim, &p, &end, &last, step_s);
	if (rc < 0) {
		snprintf(err, errlen, "%s", sim_error(sim));
		if (sim_failed_clock(sim))
			rc = PAR_RUN_CLOCK;
	} else {
		report_run(t, sim, end - t0, &last, out);
		out->step_times = NULL;
		if (t->keep_steps) {
			out->step_times = xmalloc(nsteps * sizeof(double));
			memcpy(out->step_times, step_s, nsteps * sizeof(double));
		}
		par_report_steps(step_s, nsteps, out);
	}
	free(step_s);
	par_var_end(&vr, sim);
	if (rc == 0 && t->finish)
		rc = t->finish(t->rec_ctx, sim, topo, err, errlen);
	par_place_free(&p);
	free(last.compute);
	free(last.exposed);
	sim_free(sim);
	topo_free(topo);
	return rc;
}
