/*
 * model.c - the transformer as numbers (model.h): parameters, FLOPs, the
 * kernels of one layer with their FLOPs and bytes, activation and
 * model-state memory. Pure functions of the configuration, no state.
 *
 * Accounting conventions, with the source of every formula:
 *
 * Parameters (SPEC C10). Counted term by term: QKV h (a + 2 n_kv) d_h,
 * output projection a d_h h, MLP 2hf (GeLU) or 3hf (SwiGLU: gate, up,
 * down), two norms of 2h (LayerNorm: gain, bias) or h (RMSNorm). config.h
 * has no key for biases or dropout: a LayerNorm model is taken as GPT-style
 * (biases on every linear layer, dropout after attention and MLP: GPT-2/3,
 * OPT, BLOOM), an RMSNorm model as Llama-style (neither). GPT then gives
 * 12h^2 + 13h, Llama 2h^2 + 2h n_kv d_h + 3hf + 2h. The input embedding is
 * V h; the head V h unless tied, plus the final norm.
 *
 * MoE. Layer i is MoE when i >= dense_layers and (i - dense_layers) % every
 * == every - 1 (the last of each group of `every`, as GShard and fairseq;
 * every 0 counts as 1): every = 1 makes all layers after the dense ones MoE
 * (Mixtral: dense_layers 0; DeepSeek-V3: 3). An expert is an MLP of width
 * expert_ffn (ffn when 0); the router is h x experts. Memory counts all
 * experts, FLOPs the top_k routed plus the shared ones.
 *
 * Model FLOPs (SPEC C15; PaLM, Chowdhery et al. 2022, appendix B):
 * 6Ψ + 12 L (a d_h) s per token, Ψ all (active) parameters, the input
 * embedding included (the lesson's convention; Kaplan et al. drop it), the
 * attention counted without causal halving. Hardware FLOPs add the forward
 * that recomputation runs again: full 2Ψ + 4 L a d_h s, i.e. 4/3 of the
 * model FLOPs (SPEC C15's HFU 59.4 % comes out of this convention);
 * selective without flash 4 L a d_h s. Reports count the causal mask:
 * 6Ψ + 6 L a d_h s (par_flops_per_token_causal), as the kernels do.
 *
 * Kernels (SPEC C9 roofline). A GEMM of m x k by k x n does 2mnk FLOPs and
 * moves e_in (mk + kn) + e_out mn bytes: e_in = par_precision_bytes (fp8
 * matmul inputs are 1 byte), e_out the activation size (2, or 4 in fp32;
 * Transformer Engine writes fp8 GEMM outputs in bf16), so a bf16 GEMM moves
 * 2(mk + kn + mn). The attention core does 4 b a s^2 d_h FLOPs, halved by
 * the causal mask (the FlashAttention papers' count); FlashAttention (Dao
 * et al. 2022) moves Q, K, V and O once, standard attention also writes and
 * reads the s^2 scores and probabilities (lesson 4: 4N^2 + 4Nd per head),
 * plus a dropout pass and its byte mask in GPT-style models. Memory-bound
 * ops move the tensors they read and write; their FLOPs are rough counts
 * per element that never set their time.
 *
 * Backward. Each GEMM gives dX = dY W^T and dW = X^T dY, 2mnk each (twice
 * the forward, Narayanan et al. 2021). The attention core's backward is
 * 2.5x its forward FLOPs (FlashAttention-2: five matmuls against two, the
 * recomputation of P inside the kernel included: the calibration table's
 * convention) and 2x its bytes; memory-bound ops 2x forward. Recomputed
 * forward ops come first in the backward list, marked recompute = 1.
 *
 * Activations (SPEC C13; Korthikanti et al. 2022, "Reducing Activation
 * Recomputation in Large Transformer Models", section 4). Each op keeps
 * what its backward reads, e_a bytes an element, masks 1 byte:
 *   outside the TP region (replicated without SP, / t with SP):
 *     norm1 input, QKV input, norm2 input, MLP input: 4 e_a sbh;
 *     GPT-style: attention and MLP dropout masks: 2 sbh;
 *   inside it (/ t): Q, K, V (e_a sb d_h (a + 2 n_kv)), the output
 *     projection input (e_a sb a d_h), the MLP's up output and activation
 *     output (2 e_a sbf; SwiGLU: gate, up and product, 3 e_a sbf);
 *   the attention core (/ t, gone with flash or selective recompute):
 *     softmax output e_a a s^2 b; GPT-style also its dropout mask and
 *     output (a s^2 b + e_a a s^2 b).
 * GPT in bf16 gives Korthikanti's sbh (10 + 24/t + 5as/(ht)); Llama-style
 * sbh (8 + (4 + 4 n_kv/a + 6 f/h)/t) + 2as^2b/t. Flash's fp32 log-sum-exp
 * (4 a s b bytes, under 0.1 %) is left out, as in SPEC C13's 34 sbh. Full
 * recomputation keeps the layer input, e_a sbh (/ t with SP).
 *
 * Model states (SPEC C11, C12; Rajbhandari et al. 2020, ZeRO): weights and
 * gradients 2 bytes a parameter (4 in fp32), optimizer K: Adam 12 mixed
 * (master, m, v), 8 in fp32; SGD with momentum 8 mixed (master,
 * momentum), 4 in fp32. ZeRO stage 1 shards the optimizer over dp, 2 the
 * gradients too, 3 the weights too.
 */
#include "parallel/model.h"

#include <math.h>
#include <string.h>

#include "parallel/oplist-int.h"
#include "sim/util.h"

#define MASK_BYTES 1.0    /* a dropout mask element (Korthikanti)         */
#define INDEX_BYTES 8.0   /* a token id (int64)                           */
#define LOGIT_BYTES 4.0   /* logits and the loss run in fp32              */
#define ATTN_BWD_FLOPS 2.5
#define LAYER_MAX_OPS 16

/* Rough FLOPs per element of the memory-bound ops. */
#define FLOPS_NORM 5.0
#define FLOPS_ADD 1.0
#define FLOPS_DROPOUT 2.0
#define FLOPS_GELU 8.0
#define FLOPS_SWIGLU 6.0
#define FLOPS_XENT 5.0

double par_precision_bytes(enum par_precision p)
{
	switch (p) {
	case PAR_BF16:
	case PAR_FP16:
		return 2;
	case PAR_FP8:
		return 1;
	case PAR_FP32:
		return 4;
	}
	BUG("unknown precision %d", (int)p);
}

/* Activations, attention and GEMM outputs: 16 bits, fp8 included. */
static double act_elem_bytes(enum par_precision p)
{
	return p == PAR_FP32 ? 4 : 2;
}

static bool gpt_style(const struct par_model *m)
{
	return m->norm == PAR_LAYERNORM;
}

static double head_dim(const struct par_model *m)
{
	if (m->head_dim)
		return m->head_dim;
	BUG_ON(m->heads == 0);
	return (double)m->hidden / m->heads;
}

/* kv_heads 0 is read as multi-head (= heads). */
static double kv_heads(const struct par_model *m)
{
	return m->kv_heads ? m->kv_heads : m->heads;
}

/* ---- parameters --------------------------------------------------------- */

static double norm_params(const struct par_model *m)
{
	return m->norm == PAR_LAYERNORM ? 2.0 * m->hidden : m->hidden;
}

/* QKV and output projection, with their biases in GPT-style models. */
static double attn_params(const struct par_model *m)
{
	double h = m->hidden, q = m->heads * head_dim(m), kv = kv_heads(m) * head_dim(m);
	double w = h * (q + 2 * kv) + q * h;
	return w + (gpt_style(m) ? q + 2 * kv + h : 0);
}

/* One MLP of width f: GeLU up and down, or SwiGLU gate, up and down. */
static double mlp_params(const struct par_model *m, double f)
{
	double h = m->hidden;
	if (m->activation == PAR_SWIGLU)
		return 3 * h * f + (gpt_style(m) ? 2 * f + h : 0);
	return 2 * h * f + (gpt_style(m) ? f + h : 0);
}

double par_layer_params(const struct par_model *m)
{
	return attn_params(m) + mlp_params(m, m->ffn) + 2 * norm_params(m);
}

/* An MoE layer counting `routed` of its routed experts. */
static double moe_params(const struct par_model *m, double routed)
{
	double f = m->moe.expert_ffn ? m->moe.expert_ffn : m->ffn;
	double router = (double)m->hidden * m->moe.experts;
	double experts = (routed + m->moe.shared_experts) * mlp_params(m, f);
	return attn_params(m) + 2 * norm_params(m) + router + experts;
}

double par_moe_layer_params(const struct par_model *m)
{
	return moe_params(m, m->moe.experts);
}

double par_expert_params(const struct par_model *m)
{
	return mlp_params(m, m->moe.expert_ffn ? m->moe.expert_ffn : m->ffn);
}

/* Each kernel's passes' names, and what it is (PAR_KERNELS, model.h). */
static const struct kernel_info {
	const char *name[PAR_PART_N];
	uint8_t gemm, mlp;
} kernels[PAR_K_N] = {
#define KERNEL_INFO(id, nm, g, m) \
	[PAR_K_##id] = { { nm, (g) ? nm "_dx" : nm "_bwd", (g) ? nm "_dw" : NULL }, g, m },
	PAR_KERNELS(KERNEL_INFO)
#undef KERNEL_INFO
};

const char *par_kernel_name(enum par_kernel k, enum par_part part)
{
	return (unsigned)k < PAR_K_N && (unsigned)part < PAR_PART_N ? kernels[k].name[part]
								     : NULL;
}

int par_kernel_is_mlp(enum par_kernel k)
{
	return (unsigned)k < PAR_K_N && kernels[k].mlp;
}

int par_kernel_is_gemm(enum par_kernel k)
{
	return (unsigned)k < PAR_K_N && kernels[k].gemm;
}

/* op as pass `part` of kernel k, named after it. */
static struct par_op as_kernel(struct par_op op, enum par_kernel k, enum par_part part)
{
	op.kernel = k;
	op.part = part;
	op.name = par_kernel_name(k, part);
	return op;
}

int par_layer_is_moe(const struct par_model *m, unsigned i)
{
	unsigned every = m->moe.every ? m->moe.every : 1;
	if (m->moe.experts == 0 || i < m->moe.dense_layers)
		return 0;
	return (i - m->moe.dense_layers) % every == every - 1;
}

/* O(L), a few hundred layers at most: cheaper than caching anything. */
static unsigned moe_layers(const struct par_model *m)
{
	unsigned n = 0;
	for (unsigned i = 0; i < m->layers; i++)
		n += par_layer_is_moe(m, i) ? 1 : 0;
	return n;
}

double par_embedding_params(const struct par_model *m)
{
	return (double)m->vocab * m->hidden;
}

double par_head_params(const struct par_model *m)
{
	double out = m->tied_embeddings ? 0 : (double)m->vocab * m->hidden;
	return out + norm_params(m);
}

/* All layers with `routed` experts counted in each MoE layer. */
static double params_with(const struct par_model *m, double routed)
{
	double nmoe = moe_layers(m), ndense = m->layers - nmoe;
	double layers = ndense * par_layer_params(m) + nmoe * moe_params(m, routed);
	return par_embedding_params(m) + layers + par_head_params(m);
}

double par_model_params(const struct par_model *m)
{
	return params_with(m, m->moe.experts);
}

double par_model_active_params(const struct par_model *m)
{
	return params_with(m, m->moe.top_k);
}

/* ---- FLOPs per token ---------------------------------------------------- */

double par_model_flops_per_token(double params, unsigned layers, double attn_width,
				 unsigned seq)
{
	return 6 * params + 12.0 * layers * attn_width * seq;
}

double par_flops_per_token(const struct par_model *m, unsigned seq)
{
	double width = m->heads * head_dim(m);
	return par_model_flops_per_token(par_model_active_params(m), m->layers, width, seq);
}

double par_flops_per_token_causal(const struct par_model *m, unsigned seq)
{
	double width = m->heads * head_dim(m);
	return 6 * par_model_active_params(m) + 6.0 * m->layers * width * seq;
}

/* Hardware FLOPs: the model's, with the attention core's forward at
 * attn_fwd per token. */
static double hw_flops(const struct par_model *m, const struct par_training *tr, double model,
		       double attn_fwd)
{
	switch (tr->recompute) {
	case PAR_RECOMPUTE_FULL:     /* the whole forward again: 2Ψ + 4 L h s */
		return model + 2 * par_model_active_params(m) + attn_fwd;
	case PAR_RECOMPUTE_SELECTIVE:
		return tr->flash_attention ? model : model + attn_fwd;
	case PAR_RECOMPUTE_NONE:
		return model;
	}
	BUG("unknown recompute mode %d", (int)tr->recompute);
}

double par_hw_flops_per_token(const struct par_model *m, const struct par_training *tr)
{
	return hw_flops(m, tr, par_flops_per_token(m, tr->seq),
			4.0 * m->layers * m->heads * head_dim(m) * tr->seq);
}

double par_hw_flops_per_token_causal(const struct par_model *m, const struct par_training *tr)
{
	return hw_flops(m, tr, par_flops_per_token_causal(m, tr->seq),
			2.0 * m->layers * m->heads * head_dim(m) * tr->seq);
}

double par_utilization(double tokens_per_s, double flops_per_token, unsigned n_gpu,
		       double peak_flops)
{
	BUG_ON(n_gpu == 0 || peak_flops <= 0);
	return tokens_per_s * flops_per_token / (n_gpu * peak_flops);
}

/* ---- the ops of one layer ----------------------------------------------- */

/* One layer's sizes on one TP rank, everything the op builders need. */
struct geom {
	double T, Tn;        /* tokens of the GEMMs; of norms, dropouts, adds */
	double s, b, h, dh;
	double q, kv, f;     /* query heads, kv heads, MLP width on this rank */
	double t, V;         /* TP size; vocabulary                           */
	double eg, ea;       /* GEMM input element; activation element        */
	unsigned heads;      /* query heads on this rank                      */
	bool gpt, swiglu, flash;
};

static void geom_init(struct geom *g, const struct par_model *m,
		      const struct par_training *tr, unsigned tp, bool sp)
{
	g->t = tp ? tp : 1;
	g->s = tr->seq;
	g->b = tr->micro_batch;
	g->T = g->s * g->b;
	g->Tn = sp ? g->T / g->t : g->T;
	g->h = m->hidden;
	g->dh = head_dim(m);
	g->q = m->heads / g->t;
	/* Fewer kv heads than ranks: each rank keeps one copy (Megatron). */
	g->kv = kv_heads(m) >= g->t ? kv_heads(m) / g->t : 1;
	g->f = m->ffn / g->t;
	g->V = m->vocab;
	g->eg = par_precision_bytes(tr->precision);
	g->ea = act_elem_bytes(tr->precision);
	g->heads = (unsigned)ceil(g->q);
	g->gpt = gpt_style(m);
	g->swiglu = m->activation == PAR_SWIGLU;
	g->flash = tr->flash_attention;
}

/* The layer's forward ops and their kernels (a norm's: LayerNorm's, or
 * RMSNorm's in a Llama layer), with the backward's FLOPs and bytes as
 * multiples of the forward's (GEMMs: see push_gemm_grads). */
enum op_id {
	OP_NORM1, OP_QKV, OP_ATTN, OP_ATTN_OUT, OP_ATTN_DROPOUT, OP_RESIDUAL1,
	OP_NORM2, OP_MLP_UP, OP_MLP_GATE_UP, OP_GELU, OP_SWIGLU, OP_MLP_DOWN,
	OP_MLP_DROPOUT, OP_RESIDUAL2, OP_FINAL_NORM, OP_LM_HEAD, OP_XENT, OP_NIDS
};

struct op_info {
	enum par_kernel kernel, rms;
	double bwd_flops, bwd_bytes;
};

#define GEMM_INFO(k) { .kernel = PAR_K_##k }
#define BWD_INFO(k, fl, by) { .kernel = PAR_K_##k, .bwd_flops = fl, .bwd_bytes = by }
#define NORM_INFO(k, r) { .kernel = PAR_K_##k, .rms = PAR_K_##r, .bwd_flops = 2, .bwd_bytes = 2 }

static const struct op_info op_infos[OP_NIDS] = {
	[OP_NORM1] = NORM_INFO(LAYERNORM1, RMSNORM1),
	[OP_QKV] = GEMM_INFO(QKV),
	[OP_ATTN] = BWD_INFO(ATTN, ATTN_BWD_FLOPS, 2),
	[OP_ATTN_OUT] = GEMM_INFO(ATTN_OUT),
	[OP_ATTN_DROPOUT] = BWD_INFO(ATTN_DROPOUT, 2, 2),
	[OP_RESIDUAL1] = BWD_INFO(RESIDUAL1, 2, 2),
	[OP_NORM2] = NORM_INFO(LAYERNORM2, RMSNORM2),
	[OP_MLP_UP] = GEMM_INFO(MLP_UP),
	[OP_MLP_GATE_UP] = GEMM_INFO(MLP_GATE_UP),
	[OP_GELU] = BWD_INFO(GELU, 2, 2),
	[OP_SWIGLU] = BWD_INFO(SWIGLU, 2, 2),
	[OP_MLP_DOWN] = GEMM_INFO(MLP_DOWN),
	[OP_MLP_DROPOUT] = BWD_INFO(MLP_DROPOUT, 2, 2),
	[OP_RESIDUAL2] = BWD_INFO(RESIDUAL2, 2, 2),
	[OP_FINAL_NORM] = NORM_INFO(LAYERNORM_FINAL, RMSNORM_FINAL),
	[OP_LM_HEAD] = GEMM_INFO(LM_HEAD),
	/* reads the logits again and writes their gradient: 2x the forward's
	 * single read (the calibration table's byte convention) */
	[OP_XENT] = BWD_INFO(CROSS_ENTROPY, 1, 2),
};

/* A forward op and what it is, for deriving its backward. */
struct fop {
	enum op_id id;
	struct par_op op;
};

static struct fop gemm(const struct geom *g, enum op_id id, double m, double n, double k)
{
	struct par_op op = {
		.cls = PAR_OP_GEMM, .m = m, .n = n, .k = k,
		.flops = 2 * m * n * k, .bytes = g->eg * (m * k + k * n) + g->ea * m * n,
	};
	return (struct fop){ .id = id, .op = as_kernel(op, op_infos[id].kernel, PAR_PART_FWD) };
}

static struct fop membound(enum op_id id, double flops, double bytes)
{
	struct par_op op = { .cls = PAR_OP_MEMBOUND, .flops = flops, .bytes = bytes };
	return (struct fop){ .id = id, .op = as_kernel(op, op_infos[id].kernel, PAR_PART_FWD) };
}

/*
 * Norm: read x, write y, over Tn tokens. Its kernel is the kind of norm
 * (LayerNorm, or RMSNorm in a Llama layer), whose name selects its
 * measured rate in compute.c.
 */
static struct fop norm_op(const struct geom *g, enum op_id id)
{
	double n = g->Tn * g->h;
	struct fop f = membound(id, FLOPS_NORM * n, 2 * g->ea * n);
	if (!g->gpt)
		f.op = as_kernel(f.op, op_infos[id].rms, PAR_PART_FWD);
	return f;
}

/* Residual: two in, one out. */

static struct fop residual_op(const struct geom *g, enum op_id id)
{
	double n = g->Tn * g->h;
	return membound(id, FLOPS_ADD * n, 3 * g->ea * n);
}

/* Dropout reads x, writes y and its byte mask. */
static struct fop dropout_op(const struct geom *g, enum op_id id)
{
	double n = g->Tn * g->h;
	return membound(id, FLOPS_DROPOUT * n, (2 * g->ea + MASK_BYTES) * n);
}

/*
 * The attention core, causal: 4 b a s^2 d_h / 2 FLOPs. Flash moves Q, K,
 * V, O once; standard attention also writes S, reads it, writes P, reads
 * it (4 passes of a s^2 b), and with dropout reads P, writes P' and a mask.
 */
static struct fop attention_op(const struct geom *g)
{
	double scores = g->b * g->q * g->s * g->s;
	double bytes = g->ea * g->T * g->dh * (2 * g->q + 2 * g->kv);
	if (!g->flash)
		bytes += scores * (4 * g->ea + (g->gpt ? 2 * g->ea + MASK_BYTES : 0));
	struct par_op op = {
		.cls = PAR_OP_ATTENTION, .flops = 4 * scores * g->dh / 2, .bytes = bytes,
		.heads = g->heads, .seq = (unsigned)g->s, .causal = 1,
	};
	return (struct fop){ .id = OP_ATTN, .op = as_kernel(op, PAR_K_ATTN, PAR_PART_FWD) };
}

/* MLP: GeLU up, gelu, down; or SwiGLU gate and up as one GEMM, swiglu, down. */
static size_t mlp_forward(const struct geom *g, struct fop *ops, size_t n)
{
	double Tf = g->T * g->f;
	if (g->swiglu) {
		ops[n++] = gemm(g, OP_MLP_GATE_UP, g->T, 2 * g->f, g->h);
		ops[n++] = membound(OP_SWIGLU, FLOPS_SWIGLU * Tf, 3 * g->ea * Tf);
	} else {
		ops[n++] = gemm(g, OP_MLP_UP, g->T, g->f, g->h);
		ops[n++] = membound(OP_GELU, FLOPS_GELU * Tf, 2 * g->ea * Tf);
	}
	ops[n++] = gemm(g, OP_MLP_DOWN, g->T, g->h, g->f);
	return n;
}

/* The forward of one dense layer in execution order; at most LAYER_MAX_OPS. */
static size_t layer_forward(const struct geom *g, struct fop *ops)
{
	size_t n = 0;
	ops[n++] = norm_op(g, OP_NORM1);
	ops[n++] = gemm(g, OP_QKV, g->T, (g->q + 2 * g->kv) * g->dh, g->h);
	ops[n++] = attention_op(g);
	ops[n++] = gemm(g, OP_ATTN_OUT, g->T, g->h, g->q * g->dh);
	if (g->gpt)
		ops[n++] = dropout_op(g, OP_ATTN_DROPOUT);
	ops[n++] = residual_op(g, OP_RESIDUAL1);
	ops[n++] = norm_op(g, OP_NORM2);
	n = mlp_forward(g, ops, n);
	if (g->gpt)
		ops[n++] = dropout_op(g, OP_MLP_DROPOUT);
	ops[n++] = residual_op(g, OP_RESIDUAL2);
	BUG_ON(n > LAYER_MAX_OPS);
	return n;
}

/* GEMM m x k . k x n: dX = dY W^T is m x n . n x k; dW = X^T dY is k x m . m x n. */
static void push_gemm_grads(struct oplist *l, const struct geom *g, const struct fop *f)
{
	const struct par_op *o = &f->op;
	struct fop dx = gemm(g, f->id, o->m, o->k, o->n);
	struct fop dw = gemm(g, f->id, o->k, o->n, o->m);
	dx.op = as_kernel(dx.op, o->kernel, PAR_PART_DX);
	dw.op = as_kernel(dw.op, o->kernel, PAR_PART_DW);
	dw.op.params = o->k * o->n;  /* the weight's elements on this rank */
	oplist_push(l, dx.op);
	oplist_push(l, dw.op);
}

/* The backward kernels of one forward op. */
static void push_grads(struct oplist *l, const struct geom *g, const struct fop *f)
{
	const struct op_info *info = &op_infos[f->id];
	if (f->op.cls == PAR_OP_GEMM) {
		push_gemm_grads(l, g, f);
		return;
	}
	struct par_op op = as_kernel(f->op, f->op.kernel, PAR_PART_DX);
	op.flops *= info->bwd_flops;
	op.bytes *= info->bwd_bytes;
	oplist_push(l, op);
}

static void push_forward(struct oplist *l, const struct fop *ops, size_t n, int recompute)
{
	for (size_t i = 0; i < n; i++) {
		struct par_op op = ops[i].op;
		op.recompute = recompute;
		oplist_push(l, op);
	}
}

/* Recomputed forward ops first, then every op's gradients in reverse order. */
static void push_backward(struct oplist *l, const struct geom *g, const struct fop *ops,
			  size_t n, enum par_recompute rc)
{
	bool core_only = rc == PAR_RECOMPUTE_SELECTIVE && !g->flash;
	for (size_t i = 0; i < n; i++)
		if (rc == PAR_RECOMPUTE_FULL || (core_only && ops[i].id == OP_ATTN))
			push_forward(l, &ops[i], 1, 1);
	for (size_t i = n; i-- > 0;)
		push_grads(l, g, &ops[i]);
}

/*
 * The parameters a layer holds on one TP rank besides its GEMM weights:
 * norms (replicated on every rank) and biases; their gradients are complete
 * when the layer's last backward op (norm1's) ends.
 */
static double layer_extra_params(const struct par_model *m, const struct geom *g,
				 const struct fop *ops, size_t n)
{
	double norms = 2 * norm_params(m);
	double local = (par_layer_params(m) - norms) / g->t + norms, weights = 0;
	for (size_t i = 0; i < n; i++)
		if (ops[i].op.cls == PAR_OP_GEMM)
			weights += ops[i].op.k * ops[i].op.n;
	return local > weights ? local - weights : 0;
}

size_t par_layer_ops_sp(const struct par_model *m, const struct par_training *tr, unsigned tp,
			bool sp, enum par_phase phase, struct par_op *out, size_t max)
{
	struct geom g;
	struct fop ops[LAYER_MAX_OPS];
	struct oplist l = { .out = out, .max = max, .n = 0 };
	geom_init(&g, m, tr, tp, sp);
	size_t n = layer_forward(&g, ops);
	if (phase == PAR_FWD) {
		push_forward(&l, ops, n, 0);
		return l.n;
	}
	push_backward(&l, &g, ops, n, tr->recompute);
	if (l.n <= l.max && l.n > 0)
		l.out[l.n - 1].params += layer_extra_params(m, &g, ops, n);
	return l.n;
}

size_t par_layer_ops(const struct par_model *m, const struct par_training *tr, unsigned tp,
		     enum par_phase phase, struct par_op *out, size_t max)
{
	return par_layer_ops_sp(m, tr, tp, false, phase, out, max);
}

/*
 * Vocab-parallel embedding: each rank gathers the rows of its shard (T h / t
 * on average) and writes the full T x h output (zeros elsewhere, summed by
 * the caller's all-reduce), reading T token ids. The backward scatter-adds
 * the T x h gradient into its rows (read and write).
 */
size_t par_embed_ops(const struct par_model *m, const struct par_training *tr, unsigned tp,
		     enum par_phase phase, struct par_op *out, size_t max)
{
	struct geom g;
	struct oplist l = { .out = out, .max = max, .n = 0 };
	geom_init(&g, m, tr, tp, false);
	double n = g.T * g.h, ids = INDEX_BYTES * g.T;
	struct par_op op = as_kernel((struct par_op){ .cls = PAR_OP_MEMBOUND }, PAR_K_EMBED,
				     phase == PAR_FWD ? PAR_PART_FWD : PAR_PART_DX);
	if (phase == PAR_FWD) {
		op.bytes = g.ea * n + g.ea * n / g.t + ids;
	} else {
		op.flops = n / g.t;
		op.bytes = g.ea * n + 2 * g.ea * n / g.t + ids;
		op.params = par_embedding_params(m) / g.t;  /* tied: the head's part too */
	}
	oplist_push(&l, op);
	return l.n;
}

/*
 * Final norm, LM head GEMM (T x h . h x V/t) and the cross-entropy over
 * fp32 logits, which writes and reads 4 T V / t bytes. Backward: the
 * softmax gradient, the head's dX and dW, the norm's backward.
 */
size_t par_head_ops(const struct par_model *m, const struct par_training *tr, unsigned tp,
		    enum par_phase phase, struct par_op *out, size_t max)
{
	struct geom g;
	struct fop ops[3];
	struct oplist l = { .out = out, .max = max, .n = 0 };
	geom_init(&g, m, tr, tp, false);
	double logits = g.T * g.V / g.t;
	ops[0] = norm_op(&g, OP_FINAL_NORM);
	ops[1] = gemm(&g, OP_LM_HEAD, g.T, g.V / g.t, g.h);
	/* The loss reads the logits once (upcast to fp32 in registers): bytes
	 * as shared/calibration counts them, so its measured rate applies. */
	ops[2] = membound(OP_XENT, FLOPS_XENT * logits, g.ea * logits);
	if (phase == PAR_FWD) {
		push_forward(&l, ops, ARRAY_SIZE(ops), 0);
		return l.n;
	}
	push_backward(&l, &g, ops, ARRAY_SIZE(ops), PAR_RECOMPUTE_NONE);
	/* Tied: the output layer's gradient joins the embedding's, complete only
	 * after the embedding's backward; the final norm's is complete here. */
	for (size_t i = 0; i < l.n && i < l.max; i++)
		if (m->tied_embeddings && l.out[i].params > 0)
			l.out[i].params = 0;
	if (l.n <= l.max && l.n > 0)
		l.out[l.n - 1].params += norm_params(m);
	return l.n;
}

/* ---- memory --------------------------------------------------------------- */

/* What one layer keeps (model.c's header lists the tensors), in three parts. */
struct act_parts {
	double outside;   /* outside the TP region: full on every rank without SP */
	double inside;    /* inside it, already / t                               */
	double core;      /* the attention core's s^2 terms, / t                  */
};

static struct act_parts act_parts(const struct geom *g)
{
	double sb = g->s * g->b;
	struct act_parts p;
	p.outside = 4 * g->ea * sb * g->h + (g->gpt ? 2 * MASK_BYTES * sb * g->h : 0);
	p.inside = g->ea * sb * g->dh * (2 * g->q + 2 * g->kv)
		 + g->ea * sb * g->f * (g->swiglu ? 3 : 2);
	p.core = g->q * g->s * sb * (g->gpt ? 2 * g->ea + MASK_BYTES : g->ea);
	return p;
}

/* Everything the layer keeps without recomputation (with flash: no core). */
static double act_full_set(const struct geom *g, bool sp)
{
	struct act_parts p = act_parts(g);
	return (sp ? p.outside / g->t : p.outside) + p.inside + (g->flash ? 0 : p.core);
}

double par_layer_activation_bytes(const struct par_model *m, const struct par_training *tr,
				  unsigned tp, bool sp)
{
	struct geom g;
	geom_init(&g, m, tr, tp, sp);
	switch (tr->recompute) {
	case PAR_RECOMPUTE_FULL:          /* the layer input only */
		return g.ea * g.s * g.b * g.h / (sp ? g.t : 1);
	case PAR_RECOMPUTE_SELECTIVE:     /* the core is rebuilt: as with flash */
		g.flash = true;
		return act_full_set(&g, sp);
	case PAR_RECOMPUTE_NONE:
		return act_full_set(&g, sp);
	}
	BUG("unknown recompute mode %d", (int)tr->recompute);
}

double par_layer_activation_peak_bytes(const struct par_model *m, const struct par_training *tr,
				       unsigned tp, bool sp)
{
	struct geom g;
	if (tr->recompute != PAR_RECOMPUTE_FULL)
		return par_layer_activation_bytes(m, tr, tp, sp);
	geom_init(&g, m, tr, tp, sp);
	return act_full_set(&g, sp);
}

double par_logits_bytes(const struct par_model *m, const struct par_training *tr, unsigned tp)
{
	return LOGIT_BYTES * tr->seq * tr->micro_batch * (double)m->vocab / (tp ? tp : 1);
}

/* K: optimizer bytes per parameter (see the file header). */
static double optimizer_bytes(enum par_precision p, enum par_optimizer o)
{
	bool fp32 = p == PAR_FP32;
	switch (o) {
	case PAR_ADAM:
		return fp32 ? 8 : 12;
	case PAR_SGD:
		return fp32 ? 4 : 8;
	}
	BUG("unknown optimizer %d", (int)o);
}

double par_grad_bytes(enum par_precision p, bool fp32_grads)
{
	return p == PAR_FP32 || fp32_grads ? 4 : 2;
}

void par_model_states(double params, enum par_precision p, enum par_optimizer o,
		      unsigned zero, unsigned dp, bool fp32_grads, struct par_states *out)
{
	double n = dp ? dp : 1;
	double w = p == PAR_FP32 ? 4 : 2;
	out->weights = w * params / (zero >= 3 ? n : 1);
	out->grads = par_grad_bytes(p, fp32_grads) * params / (zero >= 2 ? n : 1);
	out->optimizer = optimizer_bytes(p, o) * params / (zero >= 1 ? n : 1);
}

void par_moe_model_states(double params, double experts, enum par_precision p,
			  enum par_optimizer o, unsigned zero, unsigned dp, unsigned edp,
			  bool fp32_grads, struct par_states *out)
{
	struct par_states x = { 0 };
	par_model_states(params - experts, p, o, zero, dp, fp32_grads, out);
	if (experts > 0)
		par_model_states(experts, p, o, zero, edp, fp32_grads, &x);
	out->weights += x.weights, out->grads += x.grads, out->optimizer += x.optimizer;
}
