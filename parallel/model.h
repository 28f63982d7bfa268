/*
 * model.h - the transformer as numbers: parameter counts, training FLOPs,
 * the ops of one layer (FLOPs and bytes, forward and backward), activation
 * and model-state memory. Pure functions of the configuration; SPEC C9-C15.
 *
 * Conventions: h = hidden, a = heads, n_kv = kv_heads, d_h = head_dim (or
 * h/a), f = ffn, V = vocab, s = seq, b = micro_batch, t = tensor-parallel
 * size, T = b*s tokens of one micro-batch. Element size e = 2 bytes for
 * bf16/fp16, 1 for fp8 (matmul inputs), 4 for fp32.
 */
#ifndef PAR_MODEL_H
#define PAR_MODEL_H

#include <stddef.h>

#include "parallel/config.h"

/* ---- parameters (SPEC C10) ------------------------------------------------ */

/* Parameters of one dense layer: GPT (LayerNorm, GeLU, a = n_kv, biases):
 * 12h^2 + 13h; Llama (RMSNorm, SwiGLU, GQA, no biases):
 * 2h^2 + 2h n_kv d_h + 3hf + 2h. Mixed forms follow term by term. */
double par_layer_params(const struct par_model *m);
/* Parameters of one MoE layer: attention, norms, router (h x experts),
 * routed and shared experts. */
double par_moe_layer_params(const struct par_model *m);
/* Parameters of one expert's MLP (width moe.expert_ffn, or ffn). */
double par_expert_params(const struct par_model *m);
/* Is layer i (0-based) an MoE layer? */
int par_layer_is_moe(const struct par_model *m, unsigned i);
/* Input embedding V*h (+ learned positions for GPT: none here). */
double par_embedding_params(const struct par_model *m);
/* Output layer V*h if not tied, else 0; plus the final norm (h or 2h). */
double par_head_params(const struct par_model *m);
/* All parameters Ψ. Llama-3-8B: 8.03e9; 70B: 70.55e9; 405B: 405.85e9. */
double par_model_params(const struct par_model *m);
/* Parameters a token activates (MoE: top_k of the routed experts). */
double par_model_active_params(const struct par_model *m);

/* ---- FLOPs (SPEC C15) ------------------------------------------------------ */

/* Model FLOPs per token of a training step: 6Ψ + 12 L h_attn s, with
 * h_attn = a d_h and Ψ all (active, for MoE) parameters, the input embedding
 * included. */
double par_flops_per_token(const struct par_model *m, unsigned seq);
/* The same formula from the numbers themselves: 6 params + 12 layers
 * attn_width seq (for a nominal Ψ such as SPEC C15's "7B"). */
double par_model_flops_per_token(double params, unsigned layers, double attn_width,
				 unsigned seq);
/* Hardware FLOPs per token (HFU's numerator): the model FLOPs plus the
 * recomputed forward, 2Ψ + 4 L h_attn s with full recomputation (so 4/3 of
 * the model FLOPs, SPEC C15), 4 L h_attn s (the attention core) with
 * selective recomputation without flash, nothing else. */
double par_hw_flops_per_token(const struct par_model *m, const struct par_training *tr);
/*
 * The same with the causal mask counted, what a report's MFU and HFU use:
 * a token attends to the tokens before it only, so the attention core does
 * half of 4 s h_attn FLOPs a layer forward. Model FLOPs 6Ψ + 6 L h_attn s;
 * hardware FLOPs add 2Ψ + 2 L h_attn s with full recomputation (again 4/3),
 * 2 L h_attn s with selective recomputation without flash. At 4k tokens the
 * two conventions differ by a few percent; at 128k the attention term is
 * most of the FLOPs and the causal count is the physical one.
 */
double par_flops_per_token_causal(const struct par_model *m, unsigned seq);
double par_hw_flops_per_token_causal(const struct par_model *m, const struct par_training *tr);
/* MFU (model FLOPs) or HFU (hardware FLOPs): tokens_per_s x flops_per_token
 * / (n_gpu x peak_flops), a fraction (SPEC C15). */
double par_utilization(double tokens_per_s, double flops_per_token, unsigned n_gpu,
		       double peak_flops);

/* ---- ops of one layer ------------------------------------------------------- */

enum par_op_class {
	PAR_OP_GEMM,       /* a matmul: m x k times k x n                  */
	PAR_OP_ATTENTION,  /* the attention core (softmax(QK^T)V)           */
	PAR_OP_MEMBOUND,   /* norms, activations, residual adds, dropout    */
};

enum par_phase { PAR_FWD, PAR_BWD };

/*
 * The kernels of a step, by what they are: X(ID, name, gemm, mlp), with
 * gemm a matmul (its backward is a dX and a dW kernel; any other kernel's
 * is one) and mlp part of a dense MLP, which an MoE layer replaces with
 * its experts. The name is for display (and selects a measured rate of a
 * memory-bound kernel, compute.c, once per kernel).
 */
#define PAR_KERNELS(X)                                                  \
	X(LAYERNORM1, "layernorm1", 0, 0)                               \
	X(RMSNORM1, "rmsnorm1", 0, 0)                                   \
	X(QKV, "qkv", 1, 0)                                             \
	X(ATTN, "attn", 0, 0)                                           \
	X(ATTN_OUT, "attn_out", 1, 0)                                   \
	X(ATTN_DROPOUT, "attn_dropout", 0, 0)                           \
	X(RESIDUAL1, "residual1", 0, 0)                                 \
	X(LAYERNORM2, "layernorm2", 0, 0)                               \
	X(RMSNORM2, "rmsnorm2", 0, 0)                                   \
	X(MLP_UP, "mlp_up", 1, 1)                                       \
	X(MLP_GATE_UP, "mlp_gate_up", 1, 1)                             \
	X(GELU, "gelu", 0, 1)                                           \
	X(SWIGLU, "swiglu", 0, 1)                                       \
	X(MLP_DOWN, "mlp_down", 1, 1)                                   \
	X(MLP_DROPOUT, "mlp_dropout", 0, 0)                             \
	X(RESIDUAL2, "residual2", 0, 0)                                 \
	X(LAYERNORM_FINAL, "layernorm_final", 0, 0)                     \
	X(RMSNORM_FINAL, "rmsnorm_final", 0, 0)                         \
	X(LM_HEAD, "lm_head", 1, 0)                                     \
	X(CROSS_ENTROPY, "cross_entropy", 0, 0)                         \
	X(EMBED, "embed", 0, 0)                                         \
	X(ROUTER, "router", 1, 0)                                       \
	X(ROUTER_TOPK, "router_topk", 0, 0)                             \
	X(EXPERT_UP, "expert_up", 1, 0)                                 \
	X(EXPERT_ACT, "expert_act", 0, 0)                               \
	X(EXPERT_DOWN, "expert_down", 1, 0)                             \
	X(SHARED_UP, "shared_up", 1, 0)                                 \
	X(SHARED_ACT, "shared_act", 0, 0)                               \
	X(SHARED_DOWN, "shared_down", 1, 0)                             \
	X(ADAM, "adam", 0, 0)                                           \
	X(SGD, "sgd", 0, 0)

enum par_kernel {
	PAR_K_NONE,  /* an op made outside the model (a test's): its name says it */
#define PAR_K_ENUM(id, name, gemm, mlp) PAR_K_##id,
	PAR_KERNELS(PAR_K_ENUM)
#undef PAR_K_ENUM
	PAR_K_N
};

/* Which pass of a kernel an op is: its forward; the gradient of its input
 * (a GEMM's dX; any other kernel's whole backward); a GEMM's weight
 * gradient (dW). */
enum par_part { PAR_PART_FWD, PAR_PART_DX, PAR_PART_DW, PAR_PART_N };

/* The display name of a kernel's pass: "qkv", "qkv_dx", "qkv_dw",
 * "attn_bwd"; NULL for a pass the kernel has not (a non-GEMM's dW). */
const char *par_kernel_name(enum par_kernel k, enum par_part part);
/* Is kernel k part of a dense MLP (any pass)? */
int par_kernel_is_mlp(enum par_kernel k);
/* Is kernel k a matmul? */
int par_kernel_is_gemm(enum par_kernel k);

/* One kernel of a layer, already divided by tensor parallelism. */
struct par_op {
	const char *name;    /* par_kernel_name(kernel, part): for display   */
	enum par_kernel kernel;  /* what it is                               */
	enum par_part part;  /* which pass of it                             */
	enum par_op_class cls;
	double flops;        /* hardware FLOPs of this kernel               */
	double bytes;        /* HBM traffic: inputs read + outputs written  */
	double m, n, k;      /* GEMM shape (flops = 2mnk)                   */
	unsigned heads;      /* ATTENTION: heads on this rank               */
	unsigned seq;        /* ATTENTION: sequence length                  */
	int causal;          /* ATTENTION                                   */
	int recompute;       /* a forward op recomputed during backward     */
	int expert;          /* BWD: its gradients belong to the rank's experts
			      * (reduced over the expert-data-parallel group) */
	double params;       /* BWD: parameters (on this rank) whose gradient
			      * this op completes: a weight-gradient GEMM,
			      * or the norms/biases the layer's last op
			      * finishes; summed over a layer's backward it
			      * is the layer's parameters / tp             */
};

/*
 * The ops of one dense transformer layer for one micro-batch of T = b*s
 * tokens on one of t tensor-parallel ranks, in execution order. The backward
 * list (phase PAR_BWD) starts with the recomputed forward ops when
 * training.recompute is full (all of them) or selective (the attention core
 * only), each marked recompute = 1; then data and weight gradients, GEMMs
 * giving a dX and a dW op each (2x forward FLOPs in all), attention backward
 * 2.5x its forward (the flash kernel recomputes inside; no separate
 * recompute with flash). Writes at most max ops and returns how many there
 * are (call with max 0 to count). The caller adds communication.
 */
size_t par_layer_ops(const struct par_model *m, const struct par_training *tr, unsigned tp,
		     enum par_phase phase, struct par_op *out, size_t max);
/* As par_layer_ops, with sequence parallelism (sp) when true: the norms,
 * dropouts and residual adds then run on T/t tokens. par_layer_ops is this
 * with sp false. Both describe the dense layer: attention and the dense MLP;
 * an MoE layer's expert ops are not listed yet. */
size_t par_layer_ops_sp(const struct par_model *m, const struct par_training *tr, unsigned tp,
			bool sp, enum par_phase phase, struct par_op *out, size_t max);

/* Embedding lookup (forward) / gradient (backward) and the LM head with the
 * loss (fp32 logits, cross-entropy), on one of tp ranks (vocab parallel). */
size_t par_embed_ops(const struct par_model *m, const struct par_training *tr, unsigned tp,
		     enum par_phase phase, struct par_op *out, size_t max);
size_t par_head_ops(const struct par_model *m, const struct par_training *tr, unsigned tp,
		    enum par_phase phase, struct par_op *out, size_t max);

/* ---- memory (SPEC C11-C14) ------------------------------------------------ */

/*
 * Activation bytes one layer keeps for its backward, per micro-batch, on one
 * of t ranks (sp: sequence parallel), counted tensor by tensor from what each
 * op saves. For the GPT layer of Korthikanti et al. (LayerNorm, GeLU,
 * dropout, multi-head): s b h (34 + 5 a s / h) without flash, 34 s b h with
 * flash; TP without SP s b h (10 + 24/t + 5as/(ht)); with SP all of it / t.
 * Full recomputation keeps only the layer input: 2 s b h (/t with sp).
 * Selective recomputation drops the attention core's s^2 terms.
 */
double par_layer_activation_bytes(const struct par_model *m, const struct par_training *tr,
				  unsigned tp, bool sp);
/* During the backward of a fully recomputed layer: that layer's full set. */
double par_layer_activation_peak_bytes(const struct par_model *m, const struct par_training *tr,
				       unsigned tp, bool sp);
/* fp32 logits of one micro-batch: 4 s b V / tp (SPEC C14). */
double par_logits_bytes(const struct par_model *m, const struct par_training *tr, unsigned tp);

/* Model states per GPU (SPEC C11, C12): K = 12 for Adam in 16-bit mixed precision
 * (bf16, fp16, fp8), 8 for Adam in fp32 (m, v); SGD keeps momentum, so
 * K = 8 mixed (4 master + 4 momentum) and 4 in fp32. Weights and gradients
 * are 2 bytes each (fp8 training keeps bf16 weights), 4 in fp32. ZeRO
 * stage >= 1 divides the optimizer state by dp, >= 2 the gradients too,
 * 3 the weights too; dp 0 counts as 1. fp32_grads (parallel.ddp.fp32_grads)
 * keeps 16-bit training's gradients in fp32: par_grad_bytes. */
struct par_states {
	double weights, grads, optimizer;
};
void par_model_states(double params, enum par_precision p, enum par_optimizer o,
		      unsigned zero, unsigned dp, bool fp32_grads, struct par_states *out);
/* The same for `params` of which `experts` are routed experts: the dense
 * ones sharded over dp, the experts over edp (the ranks that hold the same
 * experts; 0 counts as 1), as ZeRO shards an MoE model. */
void par_moe_model_states(double params, double experts, enum par_precision p,
			  enum par_optimizer o, unsigned zero, unsigned dp, unsigned edp,
			  bool fp32_grads, struct par_states *out);
/* Bytes of one gradient: 4 in fp32 training or with fp32_grads, else 2. */
double par_grad_bytes(enum par_precision p, bool fp32_grads);

#endif
