/*
 * test_model.c - unit tests for parallel/model.c: parameter counts term by
 * term, MoE layer patterns, FLOPs per token (model and hardware), the op
 * lists of a layer, the embedding and the head (names, order, shapes, FLOPs,
 * bytes, recomputation, TP and SP), activation bytes and model states.
 * The SPEC figures themselves are pinned in conformance/test_model_spec.c.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/goodput.h"
#include "parallel/layout.h"
#include "parallel/model.h"
#include "tests/checkmain.h"

#define MAX_OPS 64

/* Equal within rel relative (absolute when want is 0), printing both. */
#define CLOSE(got, want, rel) do {					\
	double g_ = (got), w_ = (want);					\
	double e_ = w_ == 0 ? fabs(g_) : fabs(g_ - w_) / fabs(w_);	\
	ck_assert_msg(e_ <= (rel), "%s = %.12g, expected %.12g (rel err %.3g)", \
		      #got, g_, w_, e_);				\
} while (0)
#define EXACT(got, want) CLOSE(got, want, 1e-12)

/* A GPT-style model (LayerNorm, GeLU, 4h MLP, multi-head, biases). */
static struct par_model gpt(unsigned layers, unsigned h, unsigned a)
{
	struct par_model m = {
		.layers = layers, .hidden = h, .heads = a, .kv_heads = a, .ffn = 4 * h,
		.vocab = 50304, .activation = PAR_GELU, .norm = PAR_LAYERNORM,
		.tied_embeddings = true,
	};
	return m;
}

/* Llama-3-8B: 32 layers, h 4096, 32 heads, 8 kv heads, f 14336. */
static struct par_model llama8b(void)
{
	struct par_model m = {
		.layers = 32, .hidden = 4096, .heads = 32, .kv_heads = 8, .ffn = 14336,
		.vocab = 128256, .activation = PAR_SWIGLU, .norm = PAR_RMSNORM,
	};
	return m;
}

/* Mixtral 8x7B: Llama-like attention, 8 SwiGLU experts of 14336, top 2. */
static struct par_model mixtral(void)
{
	struct par_model m = llama8b();
	m.vocab = 32000;
	m.moe = (struct par_moe){ .experts = 8, .top_k = 2, .every = 1, .expert_ffn = 14336 };
	return m;
}

static struct par_training train(unsigned s, unsigned b, enum par_recompute rc, bool flash)
{
	struct par_training tr = {
		.seq = s, .global_batch = 1, .micro_batch = b, .precision = PAR_BF16,
		.optimizer = PAR_ADAM, .recompute = rc, .flash_attention = flash,
	};
	return tr;
}

/* The ops of one layer; asserts the count fits. */
static size_t layer_ops(const struct par_model *m, const struct par_training *tr, unsigned tp,
			bool sp, enum par_phase ph, struct par_op *ops)
{
	size_t n = par_layer_ops_sp(m, tr, tp, sp, ph, ops, MAX_OPS);
	ck_assert_msg(n > 0 && n <= MAX_OPS, "%zu ops", n);
	return n;
}

static const struct par_op *find(const struct par_op *ops, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(ops[i].name, name) == 0)
			return &ops[i];
	ck_abort_msg("no op named %s among %zu", name, n);
	return NULL;
}

static void assert_names(const struct par_op *ops, size_t n, const char *const *want, size_t nw)
{
	ck_assert_msg(n == nw, "%zu ops, expected %zu (first %s)", n, nw, n ? ops[0].name : "-");
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(strcmp(ops[i].name, want[i]) == 0, "op %zu is %s, expected %s", i,
			      ops[i].name, want[i]);
}

static double sum_flops(const struct par_op *ops, size_t n, enum par_op_class cls)
{
	double f = 0;
	for (size_t i = 0; i < n; i++)
		f += ops[i].cls == cls ? ops[i].flops : 0;
	return f;
}

START_TEST(precision_bytes)
{
	EXACT(par_precision_bytes(PAR_BF16), 2);
	EXACT(par_precision_bytes(PAR_FP16), 2);
	EXACT(par_precision_bytes(PAR_FP8), 1);
	EXACT(par_precision_bytes(PAR_FP32), 4);
}
END_TEST

START_TEST(gpt_layer_params)
{
	static const unsigned hs[] = { 768, 2048, 12288 };
	for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++) {
		struct par_model m = gpt(24, hs[i], hs[i] / 64);
		double h = hs[i];
		EXACT(par_layer_params(&m), 12 * h * h + 13 * h);
	}
}
END_TEST

/* Llama form with an explicit head_dim that is not h/a: a d_h = 8192. */
START_TEST(llama_layer_params_term_by_term)
{
	struct par_model m = llama8b();
	double h = 4096, f = 14336;
	EXACT(par_layer_params(&m), 2 * h * h + 2 * h * 8 * 128 + 3 * h * f + 2 * h);
	m.head_dim = 256;
	double q = 32 * 256.0, kv = 8 * 256.0;
	EXACT(par_layer_params(&m), h * (q + 2 * kv) + q * h + 3 * h * f + 2 * h);
	m.head_dim = 0;
	m.kv_heads = 0;  /* read as multi-head */
	EXACT(par_layer_params(&m), 4 * h * h + 3 * h * f + 2 * h);
}
END_TEST

/* Mixed forms: LayerNorm brings biases, SwiGLU three matrices. */
START_TEST(mixed_layer_params)
{
	struct par_model m = gpt(1, 1024, 16);
	m.activation = PAR_SWIGLU;
	m.ffn = 2816;
	double h = 1024, f = 2816;
	EXACT(par_layer_params(&m), 4 * h * h + 4 * h + 3 * h * f + 2 * f + h + 4 * h);
	m = llama8b();
	m.activation = PAR_GELU;
	EXACT(par_layer_params(&m), 2 * 4096.0 * 4096 + 2 * 4096.0 * 1024 + 2 * 4096.0 * 14336
	      + 2 * 4096.0);
}
END_TEST

START_TEST(embedding_and_head)
{
	struct par_model m = llama8b();
	EXACT(par_embedding_params(&m), 128256.0 * 4096);
	EXACT(par_head_params(&m), 128256.0 * 4096 + 4096);
	m.tied_embeddings = true;
	EXACT(par_head_params(&m), 4096);
	struct par_model g = gpt(12, 768, 12);
	EXACT(par_head_params(&g), 2 * 768);  /* tied, final LayerNorm */
	double want = 50304.0 * 768 + 12 * (12 * 768.0 * 768 + 13 * 768) + 2 * 768;
	EXACT(par_model_params(&g), want);
	EXACT(par_model_active_params(&g), want);
}
END_TEST

START_TEST(moe_layer_pattern)
{
	struct par_model m = llama8b();
	for (unsigned i = 0; i < m.layers; i++)
		ck_assert_msg(!par_layer_is_moe(&m, i), "dense model: layer %u is MoE", i);
	m = mixtral();
	for (unsigned i = 0; i < m.layers; i++)
		ck_assert_msg(par_layer_is_moe(&m, i), "mixtral: layer %u dense", i);
	m.moe.dense_layers = 3;  /* DeepSeek-V3 style */
	for (unsigned i = 0; i < 8; i++)
		ck_assert_msg(par_layer_is_moe(&m, i) == (i >= 3), "dense 3: layer %u", i);
	m.moe.every = 2;         /* the second of each pair after the dense ones */
	for (unsigned i = 0; i < 9; i++)
		ck_assert_msg(par_layer_is_moe(&m, i) == (i >= 3 && (i - 3) % 2 == 1),
			      "every 2: layer %u is %d", i, par_layer_is_moe(&m, i));
	m.moe.every = 0;         /* read as 1 */
	ck_assert_msg(par_layer_is_moe(&m, 3) && par_layer_is_moe(&m, 4), "every 0");
}
END_TEST

/* Mixtral 8x7B: 46.7 B parameters, 12.9 B active (Jiang et al. 2024). */
START_TEST(moe_params_mixtral)
{
	struct par_model m = mixtral();
	double h = 4096, f = 14336;
	double attn = 2 * h * h + 2 * h * 1024, expert = 3 * h * f;
	EXACT(par_moe_layer_params(&m), attn + 2 * h + 8 * h + 8 * expert);
	CLOSE(par_model_params(&m), 46.70e9, 0.01e9 / 46.70e9);
	CLOSE(par_model_active_params(&m), 12.88e9, 0.01e9 / 12.88e9);
	m.moe.shared_experts = 1;
	EXACT(par_moe_layer_params(&m), attn + 2 * h + 8 * h + 9 * expert);
	m.moe.expert_ffn = 0;  /* falls back to ffn */
	EXACT(par_moe_layer_params(&m), attn + 2 * h + 8 * h + 9 * expert);
}
END_TEST

START_TEST(moe_every_two_counts_half)
{
	struct par_model m = mixtral();
	m.moe.every = 2;
	double want = par_embedding_params(&m) + par_head_params(&m)
		    + 16 * par_layer_params(&m) + 16 * par_moe_layer_params(&m);
	EXACT(par_model_params(&m), want);
}
END_TEST

START_TEST(flops_per_token)
{
	struct par_model m = llama8b();
	EXACT(par_flops_per_token(&m, 8192),
	      6 * par_model_params(&m) + 12.0 * 32 * 4096 * 8192);
	struct par_model x = mixtral();
	EXACT(par_flops_per_token(&x, 4096),
	      6 * par_model_active_params(&x) + 12.0 * 32 * 4096 * 4096);
	EXACT(par_model_flops_per_token(1e9, 10, 1000, 100), 6e9 + 12e6);
}
END_TEST

/* The causal convention by hand: Llama-3-8B (32 layers, 32 heads of 128)
 * at 131,072 tokens, where attention is most of the FLOPs. 6Ψ + 6 L h s,
 * and the MFU of 400,000 tokens/s on 64 GPUs of 989 TFLOP/s. */
START_TEST(flops_per_token_causal)
{
	struct par_model m = llama8b();
	double psi = par_model_params(&m);
	double want = 6 * psi + 6.0 * 32 * 4096 * 131072;
	EXACT(par_flops_per_token_causal(&m, 131072), want);
	/* 6 * 8.03e9 = 4.82e10; 6 * 32 * 4096 * 131072 = 1.031e11 */
	ck_assert(want > 1.50e11 && want < 1.52e11);
	double mfu = par_utilization(4e5, want, 64, 989e12);
	EXACT(mfu, 4e5 * want / (64 * 989e12));
	ck_assert(mfu > 0.94 && mfu < 0.96);
	/* The full count would say 2.54e11 FLOPs a token: 1.68 times as many. */
	ck_assert(par_flops_per_token(&m, 131072) / want > 1.67);
	struct par_training tr = train(131072, 1, PAR_RECOMPUTE_FULL, true);
	EXACT(par_hw_flops_per_token_causal(&m, &tr),
	      want + 2 * psi + 2.0 * 32 * 4096 * 131072);
	tr.recompute = PAR_RECOMPUTE_SELECTIVE, tr.flash_attention = false;
	EXACT(par_hw_flops_per_token_causal(&m, &tr), want + 2.0 * 32 * 4096 * 131072);
}
END_TEST

START_TEST(hw_flops_per_token)
{
	struct par_model m = llama8b();
	struct par_training tr = train(4096, 1, PAR_RECOMPUTE_NONE, false);
	double model = par_flops_per_token(&m, 4096), attn = 4.0 * 32 * 4096 * 4096;
	EXACT(par_hw_flops_per_token(&m, &tr), model);
	tr.recompute = PAR_RECOMPUTE_FULL;
	EXACT(par_hw_flops_per_token(&m, &tr), model * 4 / 3);
	tr.recompute = PAR_RECOMPUTE_SELECTIVE;
	EXACT(par_hw_flops_per_token(&m, &tr), model + attn);
	tr.flash_attention = true;
	EXACT(par_hw_flops_per_token(&m, &tr), model);
}
END_TEST

START_TEST(utilization)
{
	EXACT(par_utilization(1000, 1e12, 4, 1e15), 0.25);
	EXACT(par_utilization(0, 1e12, 1, 1e15), 0);
}
END_TEST

START_TEST(gpt_forward_names)
{
	static const char *const want[] = {
		"layernorm1", "qkv", "attn", "attn_out", "attn_dropout", "residual1", "layernorm2",
		"mlp_up", "gelu", "mlp_down", "mlp_dropout", "residual2",
	};
	struct par_model m = gpt(2, 1024, 16);
	struct par_training tr = train(1024, 2, PAR_RECOMPUTE_NONE, true);
	struct par_op ops[MAX_OPS];
	size_t n = layer_ops(&m, &tr, 1, false, PAR_FWD, ops);
	assert_names(ops, n, want, sizeof want / sizeof want[0]);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(ops[i].recompute == 0, "%s marked recompute", ops[i].name);
}
END_TEST

START_TEST(llama_forward_names)
{
	static const char *const want[] = {
		"rmsnorm1", "qkv", "attn", "attn_out", "residual1", "rmsnorm2",
		"mlp_gate_up", "swiglu", "mlp_down", "residual2",
	};
	struct par_model m = llama8b();
	struct par_training tr = train(8192, 1, PAR_RECOMPUTE_NONE, true);
	struct par_op ops[MAX_OPS];
	size_t n = layer_ops(&m, &tr, 1, false, PAR_FWD, ops);
	assert_names(ops, n, want, sizeof want / sizeof want[0]);
}
END_TEST

/* max 0 counts; a short buffer is filled up to max and never past it. */
START_TEST(count_and_truncate)
{
	struct par_model m = llama8b();
	struct par_training tr = train(8192, 1, PAR_RECOMPUTE_FULL, false);
	size_t total = par_layer_ops(&m, &tr, 1, PAR_BWD, NULL, 0);
	struct par_op ops[4];
	memset(ops, 0xab, sizeof ops);
	struct par_op sentinel = ops[3];
	size_t n = par_layer_ops(&m, &tr, 1, PAR_BWD, ops, 3);
	ck_assert_msg(n == total, "truncated call said %zu, count said %zu", n, total);
	ck_assert_msg(memcmp(&ops[3], &sentinel, sizeof sentinel) == 0, "wrote past max");
	ck_assert_msg(strcmp(ops[0].name, "rmsnorm1") == 0, "first op %s", ops[0].name);
	ck_assert_uint_eq(par_embed_ops(&m, &tr, 1, PAR_FWD, NULL, 0), 1);
	ck_assert_uint_eq(par_head_ops(&m, &tr, 1, PAR_FWD, NULL, 0), 3);
	ck_assert_uint_eq(par_head_ops(&m, &tr, 1, PAR_BWD, NULL, 0), 4);
}
END_TEST

/* Llama-3-8B on 8 ranks: 4 query heads and 1 kv head a rank. */
START_TEST(tp_shapes)
{
	struct par_model m = llama8b();
	struct par_training tr = train(4096, 2, PAR_RECOMPUTE_NONE, true);
	struct par_op ops[MAX_OPS];
	size_t n = layer_ops(&m, &tr, 8, false, PAR_FWD, ops);
	const struct par_op *qkv = find(ops, n, "qkv"), *out = find(ops, n, "attn_out");
	const struct par_op *up = find(ops, n, "mlp_gate_up"), *down = find(ops, n, "mlp_down");
	EXACT(qkv->m, 8192);
	EXACT(qkv->k, 4096);
	EXACT(qkv->n, (4 + 2) * 128);
	EXACT(out->k, 512);
	EXACT(out->n, 4096);
	EXACT(up->n, 2 * 14336 / 8);
	EXACT(down->k, 14336 / 8);
	ck_assert_uint_eq(find(ops, n, "attn")->heads, 4);
	n = layer_ops(&m, &tr, 16, false, PAR_FWD, ops);  /* 8 kv heads, 16 ranks */
	EXACT(find(ops, n, "qkv")->n, (2 + 2) * 128);
}
END_TEST

START_TEST(attention_forward)
{
	struct par_model m = gpt(1, 4096, 32);
	struct par_training tr = train(2048, 2, PAR_RECOMPUTE_NONE, true);
	struct par_op ops[MAX_OPS];
	size_t n = layer_ops(&m, &tr, 4, false, PAR_FWD, ops);
	const struct par_op *at = find(ops, n, "attn");
	double s = 2048, b = 2, q = 8, dh = 128, T = s * b;
	ck_assert_int_eq(at->cls, PAR_OP_ATTENTION);
	ck_assert_msg(at->causal && at->seq == 2048 && at->heads == 8, "causal %d seq %u heads %u",
		      at->causal, at->seq, at->heads);
	EXACT(at->flops, 4 * b * q * s * s * dh / 2);
	double qkvo = 2 * T * dh * 4 * q;
	EXACT(at->bytes, qkvo);
	tr.flash_attention = false;  /* + 4 passes of the scores, + dropout 2 passes and mask */
	n = layer_ops(&m, &tr, 4, false, PAR_FWD, ops);
	EXACT(find(ops, n, "attn")->bytes, qkvo + b * q * s * s * (4 * 2 + 2 * 2 + 1));
	m = llama8b();                 /* no dropout; GQA reads fewer K, V */
	n = layer_ops(&m, &tr, 1, false, PAR_FWD, ops);
	EXACT(find(ops, n, "attn")->bytes, 2 * T * 128 * (2 * 32 + 2 * 8) + b * 32 * s * s * 8);
}
END_TEST

START_TEST(membound_bytes)
{
	struct par_model m = gpt(1, 1024, 16);
	struct par_training tr = train(1024, 1, PAR_RECOMPUTE_NONE, true);
	struct par_op ops[MAX_OPS];
	double Th = 1024.0 * 1024, Tf = 4 * Th;
	size_t n = layer_ops(&m, &tr, 1, false, PAR_FWD, ops);
	EXACT(find(ops, n, "layernorm1")->bytes, 2 * 2 * Th);
	EXACT(find(ops, n, "residual1")->bytes, 3 * 2 * Th);
	EXACT(find(ops, n, "attn_dropout")->bytes, (2 * 2 + 1) * Th);
	EXACT(find(ops, n, "gelu")->bytes, 2 * 2 * Tf);
	m.activation = PAR_SWIGLU;
	n = layer_ops(&m, &tr, 2, false, PAR_FWD, ops);
	EXACT(find(ops, n, "swiglu")->bytes, 3 * 2 * Tf / 2);
}
END_TEST

/* SP: norms, dropouts, adds on T/t tokens; GEMMs and attention unchanged. */
START_TEST(sequence_parallel_ops)
{
	struct par_model m = gpt(1, 2048, 16);
	struct par_training tr = train(2048, 1, PAR_RECOMPUTE_NONE, false);
	struct par_op a[MAX_OPS], b[MAX_OPS];
	size_t n = layer_ops(&m, &tr, 4, false, PAR_FWD, a);
	size_t nb = layer_ops(&m, &tr, 4, true, PAR_FWD, b);
	ck_assert_uint_eq(n, nb);
	for (size_t i = 0; i < n; i++) {
		bool shard = a[i].cls == PAR_OP_MEMBOUND && strcmp(a[i].name, "gelu") != 0;
		CLOSE(b[i].bytes, shard ? a[i].bytes / 4 : a[i].bytes, 1e-12);
		CLOSE(b[i].flops, shard ? a[i].flops / 4 : a[i].flops, 1e-12);
	}
}
END_TEST

START_TEST(fp8_gemm_bytes)
{
	struct par_model m = llama8b();
	struct par_training tr = train(4096, 1, PAR_RECOMPUTE_NONE, true);
	tr.precision = PAR_FP8;
	struct par_op ops[MAX_OPS];
	size_t n = layer_ops(&m, &tr, 1, false, PAR_FWD, ops);
	const struct par_op *q = find(ops, n, "qkv");
	EXACT(q->bytes, 1 * (q->m * q->k + q->k * q->n) + 2 * q->m * q->n);
	EXACT(find(ops, n, "rmsnorm1")->bytes, 2 * 2 * 4096.0 * 4096);  /* bf16 activations */
}
END_TEST

/* Backward without recomputation: every forward op's gradients, reversed. */
START_TEST(backward_list)
{
	struct par_model m = gpt(1, 1024, 16);
	struct par_training tr = train(1024, 4, PAR_RECOMPUTE_NONE, false);
	struct par_op f[MAX_OPS], b[MAX_OPS];
	size_t nf = layer_ops(&m, &tr, 2, false, PAR_FWD, f);
	size_t nb = layer_ops(&m, &tr, 2, false, PAR_BWD, b);
	ck_assert_uint_eq(nb, nf + 4);  /* four GEMMs give two ops each */
	ck_assert_str_eq(b[0].name, "residual2_bwd");
	ck_assert_str_eq(b[nb - 1].name, "layernorm1_bwd");
	CLOSE(sum_flops(b, nb, PAR_OP_GEMM), 2 * sum_flops(f, nf, PAR_OP_GEMM), 1e-12);
	CLOSE(sum_flops(b, nb, PAR_OP_ATTENTION), 2.5 * sum_flops(f, nf, PAR_OP_ATTENTION), 1e-12);
	EXACT(find(b, nb, "attn_bwd")->bytes, 2 * find(f, nf, "attn")->bytes);
	EXACT(find(b, nb, "gelu_bwd")->bytes, 2 * find(f, nf, "gelu")->bytes);
	for (size_t i = 0; i < nb; i++)
		ck_assert_msg(b[i].recompute == 0, "%s marked recompute", b[i].name);
}
END_TEST

START_TEST(backward_gemm_shapes)
{
	struct par_model m = llama8b();
	struct par_training tr = train(4096, 1, PAR_RECOMPUTE_NONE, true);
	struct par_op f[MAX_OPS], b[MAX_OPS];
	size_t nf = layer_ops(&m, &tr, 1, false, PAR_FWD, f);
	size_t nb = layer_ops(&m, &tr, 1, false, PAR_BWD, b);
	const struct par_op *fw = find(f, nf, "mlp_down");
	const struct par_op *dx = find(b, nb, "mlp_down_dx"), *dw = find(b, nb, "mlp_down_dw");
	ck_assert_msg(dx->m == fw->m && dx->k == fw->n && dx->n == fw->k,
		      "dx %gx%gx%g from %gx%gx%g", dx->m, dx->k, dx->n, fw->m, fw->k, fw->n);
	ck_assert_msg(dw->m == fw->k && dw->k == fw->m && dw->n == fw->n,
		      "dw %gx%gx%g from %gx%gx%g", dw->m, dw->k, dw->n, fw->m, fw->k, fw->n);
	EXACT(dx->flops, fw->flops);
	EXACT(dw->flops, fw->flops);
}
END_TEST

START_TEST(full_recompute_first)
{
	struct par_model m = llama8b();
	struct par_training tr = train(4096, 1, PAR_RECOMPUTE_FULL, true);
	struct par_op f[MAX_OPS], b[MAX_OPS];
	size_t nf = layer_ops(&m, &tr, 1, false, PAR_FWD, f);
	size_t nb = layer_ops(&m, &tr, 1, false, PAR_BWD, b);
	ck_assert_uint_eq(nb, 2 * nf + 4);
	for (size_t i = 0; i < nf; i++) {
		ck_assert_msg(b[i].recompute == 1, "op %zu (%s) not marked", i, b[i].name);
		ck_assert_str_eq(b[i].name, f[i].name);
		EXACT(b[i].flops, f[i].flops);
	}
	for (size_t i = nf; i < nb; i++)
		ck_assert_msg(b[i].recompute == 0, "op %zu (%s) marked", i, b[i].name);
	/* GEMMs: forward once more and twice for dX, dW: hardware 4/3 of the model's */
	CLOSE(sum_flops(b, nb, PAR_OP_GEMM), 3 * sum_flops(f, nf, PAR_OP_GEMM), 1e-12);
}
END_TEST

START_TEST(selective_recompute)
{
	struct par_model m = gpt(1, 2048, 16);
	struct par_training tr = train(2048, 1, PAR_RECOMPUTE_SELECTIVE, false);
	struct par_op b[MAX_OPS];
	size_t nb = layer_ops(&m, &tr, 1, false, PAR_BWD, b);
	ck_assert_str_eq(b[0].name, "attn");
	ck_assert_msg(b[0].recompute == 1, "attn not marked");
	for (size_t i = 1; i < nb; i++)
		ck_assert_msg(b[i].recompute == 0, "%s marked", b[i].name);
	tr.flash_attention = true;  /* the kernel recomputes inside */
	nb = layer_ops(&m, &tr, 1, false, PAR_BWD, b);
	for (size_t i = 0; i < nb; i++)
		ck_assert_msg(b[i].recompute == 0, "flash: %s marked", b[i].name);
}
END_TEST

START_TEST(embed_ops)
{
	struct par_model m = llama8b();
	struct par_training tr = train(4096, 2, PAR_RECOMPUTE_NONE, true);
	struct par_op op;
	double Th = 8192.0 * 4096;
	ck_assert_uint_eq(par_embed_ops(&m, &tr, 4, PAR_FWD, &op, 1), 1);
	ck_assert_str_eq(op.name, "embed");
	ck_assert_int_eq(op.cls, PAR_OP_MEMBOUND);
	EXACT(op.bytes, 2 * Th + 2 * Th / 4 + 8 * 8192.0);
	ck_assert_uint_eq(par_embed_ops(&m, &tr, 4, PAR_BWD, &op, 1), 1);
	ck_assert_str_eq(op.name, "embed_bwd");
	EXACT(op.bytes, 2 * Th + 2 * 2 * Th / 4 + 8 * 8192.0);
	EXACT(op.flops, Th / 4);
}
END_TEST

START_TEST(head_ops)
{
	static const char *const fwd[] = { "rmsnorm_final", "lm_head", "cross_entropy" };
	static const char *const bwd[] = {
		"cross_entropy_bwd", "lm_head_dx", "lm_head_dw", "rmsnorm_final_bwd",
	};
	struct par_model m = llama8b();
	struct par_training tr = train(4096, 1, PAR_RECOMPUTE_FULL, true);
	struct par_op ops[8];
	size_t n = par_head_ops(&m, &tr, 2, PAR_FWD, ops, 8);
	assert_names(ops, n, fwd, 3);
	EXACT(ops[1].m, 4096);
	EXACT(ops[1].k, 4096);
	EXACT(ops[1].n, 128256 / 2);
	/* The loss reads the bf16 logits once (the calibration's convention). */
	EXACT(ops[2].bytes, 2 * 4096.0 * 128256 / 2);
	n = par_head_ops(&m, &tr, 2, PAR_BWD, ops, 8);  /* the head is never recomputed */
	assert_names(ops, n, bwd, 4);
	EXACT(ops[0].bytes, 2 * 2 * 4096.0 * 128256 / 2);
}
END_TEST

/* Korthikanti's GPT layer at several t, with and without SP and flash. */
START_TEST(gpt_activations)
{
	static const unsigned ts[] = { 1, 2, 4, 8 };
	struct par_model m = gpt(1, 4096, 32);
	double s = 2048, b = 2, h = 4096, a = 32, sbh = s * b * h;
	for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
		double t = ts[i], core = 5 * a * s / (h * t);
		struct par_training tr = train(2048, 2, PAR_RECOMPUTE_NONE, false);
		CLOSE(par_layer_activation_bytes(&m, &tr, ts[i], false),
		      sbh * (10 + 24 / t + core), 1e-12);
		CLOSE(par_layer_activation_bytes(&m, &tr, ts[i], true), sbh * (34 / t + core), 1e-12);
		tr.flash_attention = true;
		CLOSE(par_layer_activation_bytes(&m, &tr, ts[i], false), sbh * (10 + 24 / t), 1e-12);
		tr.flash_attention = false;
		tr.recompute = PAR_RECOMPUTE_SELECTIVE;
		CLOSE(par_layer_activation_bytes(&m, &tr, ts[i], false), sbh * (10 + 24 / t), 1e-12);
		tr.recompute = PAR_RECOMPUTE_FULL;
		CLOSE(par_layer_activation_bytes(&m, &tr, ts[i], false), 2 * sbh, 1e-12);
		CLOSE(par_layer_activation_bytes(&m, &tr, ts[i], true), 2 * sbh / t, 1e-12);
		CLOSE(par_layer_activation_peak_bytes(&m, &tr, ts[i], true),
		      sbh * (34 / t + core), 1e-12);
	}
}
END_TEST

/* Llama-style: sbh (8 + 2 + 4 n_kv/a + 2 + 6 f/h) + 2 a s^2 b, t = 1. */
START_TEST(llama_activations)
{
	struct par_model m = llama8b();
	struct par_training tr = train(8192, 1, PAR_RECOMPUTE_NONE, false);
	double s = 8192, h = 4096, sbh = s * h;
	double body = sbh * (8 + 2 + 4 * 8.0 / 32 + 2 + 6 * 14336 / h);
	CLOSE(par_layer_activation_bytes(&m, &tr, 1, false), body + 2 * 32 * s * s, 1e-12);
	tr.flash_attention = true;
	CLOSE(par_layer_activation_bytes(&m, &tr, 1, false), body, 1e-12);
	EXACT(body, 34 * sbh);  /* Llama-3-8B's f/h = 3.5 makes it 34 too */
	/* t = 8: 8 outside, Q 2/8, K and V one replicated head each, O 2/8, MLP 21/8 */
	double kv = 2 * 2 * s * 128.0;
	CLOSE(par_layer_activation_bytes(&m, &tr, 8, false), sbh * (8 + 25.0 / 8) + kv, 1e-12);
	CLOSE(par_layer_activation_bytes(&m, &tr, 8, true), sbh * (1 + 25.0 / 8) + kv, 1e-12);
}
END_TEST

/* fp32 doubles every tensor but the 1-byte dropout masks. */
START_TEST(fp32_activations)
{
	struct par_model m = gpt(1, 1024, 16);
	struct par_training tr = train(1024, 1, PAR_RECOMPUTE_NONE, false);
	tr.precision = PAR_FP32;
	double s = 1024, h = 1024, a = 16, sbh = s * h;
	CLOSE(par_layer_activation_bytes(&m, &tr, 1, false),
	      sbh * (16 + 2 + 48) + a * s * s * 9, 1e-12);
	tr.recompute = PAR_RECOMPUTE_FULL;
	CLOSE(par_layer_activation_bytes(&m, &tr, 1, false), 4 * sbh, 1e-12);
}
END_TEST

START_TEST(peak_without_full_recompute)
{
	struct par_model m = llama8b();
	struct par_training tr = train(4096, 1, PAR_RECOMPUTE_NONE, false);
	for (int rc = PAR_RECOMPUTE_NONE; rc <= PAR_RECOMPUTE_SELECTIVE; rc++) {
		tr.recompute = rc;
		EXACT(par_layer_activation_peak_bytes(&m, &tr, 2, true),
		      par_layer_activation_bytes(&m, &tr, 2, true));
	}
}
END_TEST

START_TEST(logits)
{
	struct par_model m = llama8b();
	struct par_training tr = train(2048, 3, PAR_RECOMPUTE_NONE, true);
	EXACT(par_logits_bytes(&m, &tr, 1), 4 * 2048.0 * 3 * 128256);
	EXACT(par_logits_bytes(&m, &tr, 4), 4 * 2048.0 * 3 * 128256 / 4);
}
END_TEST

static void assert_states(enum par_precision p, enum par_optimizer o, double w, double g,
			  double k)
{
	struct par_states st;
	par_model_states(1e9, p, o, 0, 8, false, &st);
	ck_assert_msg(st.weights == w * 1e9 && st.grads == g * 1e9 && st.optimizer == k * 1e9,
		      "precision %d optimizer %d: %g %g %g bytes/param, expected %g %g %g", p, o,
		      st.weights / 1e9, st.grads / 1e9, st.optimizer / 1e9, w, g, k);
}

START_TEST(model_states_per_param)
{
	assert_states(PAR_BF16, PAR_ADAM, 2, 2, 12);
	assert_states(PAR_FP16, PAR_ADAM, 2, 2, 12);
	assert_states(PAR_FP8, PAR_ADAM, 2, 2, 12);
	assert_states(PAR_FP32, PAR_ADAM, 4, 4, 8);
	assert_states(PAR_BF16, PAR_SGD, 2, 2, 8);
	assert_states(PAR_FP32, PAR_SGD, 4, 4, 4);
}
END_TEST

START_TEST(zero_stages)
{
	struct par_states st;
	double want[4][3] = { { 2, 2, 12 }, { 2, 2, 3 }, { 2, 0.5, 3 }, { 0.5, 0.5, 3 } };
	for (unsigned z = 0; z < 4; z++) {
		par_model_states(1, PAR_BF16, PAR_ADAM, z, 4, false, &st);
		ck_assert_msg(st.weights == want[z][0] && st.grads == want[z][1]
			      && st.optimizer == want[z][2], "zero %u: %g %g %g", z, st.weights,
			      st.grads, st.optimizer);
	}
	par_model_states(1, PAR_BF16, PAR_ADAM, 3, 0, false, &st);  /* dp 0 counts as 1 */
	ck_assert_msg(st.weights + st.grads + st.optimizer == 16, "dp 0: %g %g %g", st.weights,
		      st.grads, st.optimizer);
	/* fp32 gradients in bf16 training: 4 bytes each, sharded by ZeRO-2. */
	par_model_states(1, PAR_BF16, PAR_ADAM, 2, 4, true, &st);
	ck_assert_double_eq(st.weights, 2);
	ck_assert_double_eq(st.grads, 1);
	ck_assert_double_eq(par_grad_bytes(PAR_BF16, false), 2);
	ck_assert_double_eq(par_grad_bytes(PAR_BF16, true), 4);
	ck_assert_double_eq(par_grad_bytes(PAR_FP32, false), 4);
}
END_TEST

/* Pure functions: the same call twice gives the same bytes. */
START_TEST(deterministic)
{
	struct par_model m = mixtral();
	struct par_training tr = train(4096, 1, PAR_RECOMPUTE_FULL, false);
	struct par_op a[MAX_OPS], b[MAX_OPS];
	size_t na = layer_ops(&m, &tr, 2, true, PAR_BWD, a);
	size_t nb = layer_ops(&m, &tr, 2, true, PAR_BWD, b);
	ck_assert_uint_eq(na, nb);
	for (size_t i = 0; i < na; i++)
		ck_assert_msg(a[i].name == b[i].name && a[i].flops == b[i].flops
			      && a[i].bytes == b[i].bytes, "op %zu differs", i);
}
END_TEST

/* ---- layout: layers per pipeline stage (parallel/layout.c) ---------------------- */

/* Stage vs's first layer and count, or -1 with err. */
static int stage(uint32_t pp, uint32_t vpp, uint32_t a, uint32_t z, uint32_t layers, uint32_t vs,
		 uint32_t *first, uint32_t *count, char *err)
{
	struct par_layout l = { .tp = 1, .pp = pp, .vpp = vpp, .first_stage_layers = a,
				.last_stage_layers = z };
	return par_stage_layers(&l, layers, vs, first, count, err, 256);
}

START_TEST(stage_layers_even_and_uneven)
{
	uint32_t first, count;
	char err[256];
	/* 126 layers over 16 stages x 2 chunks, first and last one fewer
	 * (Llama 3): 30 middle chunks of 4. */
	ck_assert_int_eq(stage(16, 2, 3, 3, 126, 0, &first, &count, err), 0);
	ck_assert_uint_eq(first, 0);
	ck_assert_uint_eq(count, 3);
	ck_assert_int_eq(stage(16, 2, 3, 3, 126, 1, &first, &count, err), 0);
	ck_assert_uint_eq(first, 3);
	ck_assert_uint_eq(count, 4);
	ck_assert_int_eq(stage(16, 2, 3, 3, 126, 31, &first, &count, err), 0);
	ck_assert_uint_eq(first, 123);
	ck_assert_uint_eq(count, 3);
	/* Two stages, both given: they must add up (a fuzzed scenario once
	 * divided by zero here). */
	ck_assert_int_eq(stage(2, 1, 10, 14, 24, 1, &first, &count, err), 0);
	ck_assert_uint_eq(first, 10);
	ck_assert_uint_eq(count, 14);
	ck_assert_int_eq(stage(2, 1, 3, 3, 126, 0, &first, &count, err), -1);
	ck_assert_msg(strstr(err, "must add up to the model's 126 layers"), "%s", err);
	ck_assert_int_eq(stage(4, 1, 0, 0, 30, 0, &first, &count, err), -1);
	ck_assert_msg(strstr(err, "30 layers do not split over 4 pipeline stages"), "%s", err);
	ck_assert_int_eq(stage(1, 1, 5, 0, 30, 0, &first, &count, err), 0);
	ck_assert_uint_eq(count, 30);
}
END_TEST

/* ---- failures: Young/Daly checkpointing (parallel/goodput.c) --------------------- */

START_TEST(goodput_young_daly)
{
	/* 3,600 GPUs failing every 3,600 h each: one interruption an hour; a
	 * 60 s checkpoint; 10 minutes to restart. */
	struct par_failures f = { .gpu_mtbf_s = 3600.0 * 3600, .storage_Bps = 1e9,
				  .restart_s = 600, .run_s = 86400 };
	struct par_goodput g;
	par_goodput_of(&f, 3600, 60e9, &g);
	ck_assert_double_eq_tol(g.job_mtbf_s, 3600, 1e-9);
	ck_assert_double_eq_tol(g.checkpoint_s, 60, 1e-12);
	ck_assert_double_eq_tol(g.young_s, sqrt(2 * 60 * 3600.0), 1e-9);
	double x = 60 / 7200.0;
	ck_assert_double_eq_tol(g.interval_s, g.young_s * (1 + sqrt(x) / 3 + x / 9) - 60, 1e-9);
	ck_assert_double_eq_tol(g.interval_s, 617.88, 0.01);
	ck_assert_double_eq_tol(g.failures, 24, 1e-9);
	/* Daly's interval is the optimum: longer or shorter wastes more. */
	for (double k = 0.5; k <= 2; k += 0.25)
		ck_assert(par_goodput_at(&f, &g, g.interval_s * k) <= g.goodput + 1e-12);
	ck_assert(g.goodput > 0.7 && g.goodput < 0.9);
	ck_assert_double_eq_tol(g.useful_s, g.goodput * 86400, 1e-6);
	/* A checkpoint longer than twice the MTBF: checkpoint every MTBF. */
	par_goodput_of(&f, 3600, 8000e9, &g);
	ck_assert_double_eq_tol(g.interval_s, 3600, 1e-9);
	/* Without an MTBF nothing is reported. */
	f.gpu_mtbf_s = 0;
	par_goodput_of(&f, 3600, 60e9, &g);
	ck_assert_double_eq(g.goodput, 0);
	ck_assert_double_eq(g.job_mtbf_s, 0);
}
END_TEST

static Suite *model_suite(void)
{
	Suite *s = suite_create("model");
	TCase *p = tcase_create("params");
	tcase_add_test(p, precision_bytes);
	tcase_add_test(p, gpt_layer_params);
	tcase_add_test(p, llama_layer_params_term_by_term);
	tcase_add_test(p, mixed_layer_params);
	tcase_add_test(p, embedding_and_head);
	tcase_add_test(p, moe_layer_pattern);
	tcase_add_test(p, moe_params_mixtral);
	tcase_add_test(p, moe_every_two_counts_half);
	suite_add_tcase(s, p);
	TCase *f = tcase_create("flops");
	tcase_add_test(f, flops_per_token);
	tcase_add_test(f, flops_per_token_causal);
	tcase_add_test(f, hw_flops_per_token);
	tcase_add_test(f, utilization);
	suite_add_tcase(s, f);
	TCase *o = tcase_create("ops");
	tcase_add_test(o, gpt_forward_names);
	tcase_add_test(o, llama_forward_names);
	tcase_add_test(o, count_and_truncate);
	tcase_add_test(o, tp_shapes);
	tcase_add_test(o, attention_forward);
	tcase_add_test(o, membound_bytes);
	tcase_add_test(o, sequence_parallel_ops);
	tcase_add_test(o, fp8_gemm_bytes);
	tcase_add_test(o, backward_list);
	tcase_add_test(o, backward_gemm_shapes);
	tcase_add_test(o, full_recompute_first);
	tcase_add_test(o, selective_recompute);
	tcase_add_test(o, embed_ops);
	tcase_add_test(o, head_ops);
	tcase_add_test(o, deterministic);
	suite_add_tcase(s, o);
	TCase *mem = tcase_create("memory");
	tcase_add_test(mem, gpt_activations);
	tcase_add_test(mem, llama_activations);
	tcase_add_test(mem, fp32_activations);
	tcase_add_test(mem, peak_without_full_recompute);
	tcase_add_test(mem, logits);
	tcase_add_test(mem, model_states_per_param);
	tcase_add_test(mem, zero_stages);
	suite_add_tcase(s, mem);
	TCase *lay = tcase_create("layout");
	tcase_add_test(lay, stage_layers_even_and_uneven);
	tcase_add_test(lay, goodput_young_daly);
	suite_add_tcase(s, lay);
	return s;
}

int main(void)
{
	return check_run(model_suite());
}
