/*
 * test_model_spec.c - SPEC.md C9-C15 pinned by number: GEMM FLOPs and bytes
 * as the layer's op lists produce them, parameter counts of GPT and the
 * Llama 3 family, model states with Adam and ZeRO, activation bytes of
 * Korthikanti's GPT layer, fp32 logits, and FLOPs per token with the MFU
 * and HFU of the SPEC's example. Each test is named after its item; each
 * item is one TCase.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/model.h"
#include "tests/checkmain.h"

#define MAX_OPS 64

/* |got - want| <= tol, printing both. */
#define WITHIN(got, want, tol) do {					\
	double g_ = (got), w_ = (want);					\
	ck_assert_msg(fabs(g_ - w_) <= (tol), "%s = %.9g, expected %.9g +- %.3g", \
		      #got, g_, w_, (double)(tol));			\
} while (0)
#define REL(got, want) WITHIN(got, want, 1e-12 * fabs((double)(want)))

/* A Llama-3 shape: RMSNorm, SwiGLU, GQA with 8 kv heads, V 128256, untied. */
static struct par_model llama3(unsigned layers, unsigned h, unsigned a, unsigned f)
{
	struct par_model m = {
		.layers = layers, .hidden = h, .heads = a, .kv_heads = 8, .ffn = f,
		.vocab = 128256, .activation = PAR_SWIGLU, .norm = PAR_RMSNORM,
	};
	return m;
}

/* Korthikanti's GPT layer: LayerNorm, GeLU, 4h MLP, multi-head, dropout. */
static struct par_model gpt(unsigned h, unsigned a)
{
	struct par_model m = {
		.layers = 1, .hidden = h, .heads = a, .kv_heads = a, .ffn = 4 * h,
		.vocab = 51200, .activation = PAR_GELU, .norm = PAR_LAYERNORM,
	};
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

/* Every GEMM of ops: 2mnk FLOPs, 2(mk + kn + mn) bytes in bf16. Returns the count. */
static int check_gemms(const struct par_op *ops, size_t n)
{
	int gemms = 0;
	for (size_t i = 0; i < n; i++) {
		const struct par_op *o = &ops[i];
		if (o->cls != PAR_OP_GEMM)
			continue;
		double flops = 2 * o->m * o->n * o->k;
		double bytes = 2 * (o->m * o->k + o->k * o->n + o->m * o->n);
		ck_assert_msg(o->flops == flops && o->bytes == bytes,
			      "%s (%gx%gx%g): %.6g FLOPs, %.6g bytes; expected %.6g, %.6g",
			      o->name, o->m, o->k, o->n, o->flops, o->bytes, flops, bytes);
		gemms++;
	}
	return gemms;
}

/* C9: a (T x D)(D x F') bf16 matmul does 2TDF' FLOPs and moves 2(TD + DF' + TF'). */
START_TEST(c09_layer_gemms)
{
	struct par_model models[] = { llama3(32, 4096, 32, 14336), gpt(12288, 96) };
	static const unsigned tps[] = { 1, 8 };
	struct par_op ops[MAX_OPS];
	for (size_t i = 0; i < 2; i++) {
		for (size_t j = 0; j < 2; j++) {
			struct par_training tr = train(2048, 2, PAR_RECOMPUTE_FULL, false);
			size_t n = par_layer_ops(&models[i], &tr, tps[j], PAR_FWD, ops, MAX_OPS);
			ck_assert_int_eq(check_gemms(ops, n), 4);
			n = par_layer_ops(&models[i], &tr, tps[j], PAR_BWD, ops, MAX_OPS);
			ck_assert_int_eq(check_gemms(ops, n), 4 + 8);  /* recomputed + dX, dW */
		}
	}
}
END_TEST

START_TEST(c09_head_gemms)
{
	struct par_model m = llama3(32, 4096, 32, 14336);
	struct par_training tr = train(4096, 1, PAR_RECOMPUTE_NONE, true);
	struct par_op ops[8];
	size_t n = par_head_ops(&m, &tr, 1, PAR_FWD, ops, 8);
	ck_assert_int_eq(check_gemms(ops, n), 1);
	n = par_head_ops(&m, &tr, 1, PAR_BWD, ops, 8);
	ck_assert_int_eq(check_gemms(ops, n), 2);
}
END_TEST

/* C9 on one shape: Llama-3-8B's QKV, T = 4096, D = 4096, F' = 6144. */
START_TEST(c09_qkv_shape)
{
	struct par_model m = llama3(32, 4096, 32, 14336);
	struct par_training tr = train(4096, 1, PAR_RECOMPUTE_NONE, true);
	struct par_op ops[MAX_OPS];
	size_t n = par_layer_ops(&m, &tr, 1, PAR_FWD, ops, MAX_OPS);
	ck_assert_msg(n > 1 && strcmp(ops[1].name, "qkv") == 0, "op 1 is %s", ops[1].name);
	double T = 4096, D = 4096, F = 6144;
	REL(ops[1].flops, 2 * T * D * F);
	REL(ops[1].bytes, 2 * (T * D + D * F + T * F));
}
END_TEST

/* C10: GPT-style layer 12h^2 + 13h. */
START_TEST(c10_gpt_layer)
{
	for (unsigned h = 1024; h <= 16384; h *= 2) {
		struct par_model m = gpt(h, h / 128);
		REL(par_layer_params(&m), 12.0 * h * h + 13.0 * h);
	}
}
END_TEST

/* C10: Llama layer 2h^2 + 2h n_kv d_h + 3hf + 2h. */
START_TEST(c10_llama_layer)
{
	struct par_model m = llama3(80, 8192, 64, 28672);
	double h = 8192, f = 28672;
	REL(par_layer_params(&m), 2 * h * h + 2 * h * 8 * 128 + 3 * h * f + 2 * h);
}
END_TEST

START_TEST(c10_llama3_8b)
{
	struct par_model m = llama3(32, 4096, 32, 14336);
	WITHIN(par_model_params(&m), 8.03e9, 0.01e9);
}
END_TEST

START_TEST(c10_llama3_70b)
{
	struct par_model m = llama3(80, 8192, 64, 28672);
	WITHIN(par_model_params(&m), 70.55e9, 0.01e9);
}
END_TEST

START_TEST(c10_llama3_405b)
{
	struct par_model m = llama3(126, 16384, 128, 53248);
	WITHIN(par_model_params(&m), 405.85e9, 0.01e9);
}
END_TEST

static double states_total(double params, unsigned zero, unsigned dp)
{
	struct par_states st;
	par_model_states(params, PAR_BF16, PAR_ADAM, zero, dp, false, &st);
	return st.weights + st.grads + st.optimizer;
}

/* C11: 16 bytes a parameter: 2 + 2 + 4 + 4 + 4. */
START_TEST(c11_adam_mixed_precision)
{
	struct par_states st;
	par_model_states(7e9, PAR_BF16, PAR_ADAM, 0, 1, false, &st);
	REL(st.weights, 14e9);
	REL(st.grads, 14e9);
	REL(st.optimizer, 84e9);
	REL(states_total(7e9, 0, 1), 112e9);
	REL(states_total(70e9, 0, 1), 1120e9);
	REL(states_total(70e9, 3, 1), 1120e9);  /* ZeRO over one rank shards nothing */
}
END_TEST

/* C12: ZeRO over N_d = 64 ranks with K = 12. */
START_TEST(c12_zero_70b_stage3)
{
	WITHIN(states_total(70e9, 3, 64), 17.5e9, 1);
}
END_TEST

START_TEST(c12_zero_stages)
{
	double psi = 7.5e9, n = 64;
	REL(states_total(psi, 1, 64), 4 * psi + 12 * psi / n);
	REL(states_total(psi, 2, 64), 2 * psi + 14 * psi / n);
	REL(states_total(psi, 3, 64), 16 * psi / n);
	WITHIN(states_total(psi, 1, 64), 31.41e9, 0.01e9);
	WITHIN(states_total(psi, 2, 64), 16.64e9, 0.01e9);
	WITHIN(states_total(psi, 3, 64), 1.875e9, 0.01e9);
}
END_TEST

/* C13's example: s = 2048, b = 1, h = 12288, a = 96. */
#define C13_S 2048.0
#define C13_H 12288.0
#define C13_A 96.0
#define C13_SBH (C13_S * C13_H)

static double c13_bytes(enum par_recompute rc, bool flash, unsigned tp, bool sp)
{
	struct par_model m = gpt(12288, 96);
	struct par_training tr = train(2048, 1, rc, flash);
	return par_layer_activation_bytes(&m, &tr, tp, sp);
}

START_TEST(c13_no_flash)
{
	double got = c13_bytes(PAR_RECOMPUTE_NONE, false, 1, false);
	REL(got, C13_SBH * (34 + 5 * C13_A * C13_S / C13_H));
	WITHIN(got, 2.869e9, 0.001e9);
}
END_TEST

START_TEST(c13_flash)
{
	double got = c13_bytes(PAR_RECOMPUTE_NONE, true, 1, false);
	REL(got, 34 * C13_SBH);
	WITHIN(got, 0.856e9, 0.001e9);
	REL(c13_bytes(PAR_RECOMPUTE_SELECTIVE, false, 1, false), got);
}
END_TEST

START_TEST(c13_full_checkpoint)
{
	double got = c13_bytes(PAR_RECOMPUTE_FULL, false, 1, false);
	REL(got, 2 * C13_SBH);
	WITHIN(got, 0.050e9, 0.001e9);
	/* plus one layer's full set during its backward */
	struct par_model m = gpt(12288, 96);
	struct par_training tr = train(2048, 1, PAR_RECOMPUTE_FULL, false);
	WITHIN(par_layer_activation_peak_bytes(&m, &tr, 1, false), 2.869e9, 0.001e9);
}
END_TEST

START_TEST(c13_tp_without_sp)
{
	double t = 8;
	REL(c13_bytes(PAR_RECOMPUTE_NONE, false, 8, false),
	    C13_SBH * (10 + 24 / t + 5 * C13_A * C13_S / (C13_H * t)));
}
END_TEST

START_TEST(c13_tp_with_sp)
{
	double t = 8;
	REL(c13_bytes(PAR_RECOMPUTE_NONE, false, 8, true),
	    C13_SBH * (34 + 5 * C13_A * C13_S / C13_H) / t);
	REL(c13_bytes(PAR_RECOMPUTE_FULL, false, 8, true), 2 * C13_SBH / t);
}
END_TEST

/* C14: 4 s b V bytes of fp32 logits. */
START_TEST(c14_logits)
{
	struct par_model m = llama3(32, 4096, 32, 14336);
	struct par_training tr = train(4096, 1, PAR_RECOMPUTE_NONE, true);
	REL(par_logits_bytes(&m, &tr, 1), 4 * 4096.0 * 128256);
	WITHIN(par_logits_bytes(&m, &tr, 1), 2.10e9, 0.005e9);
}
END_TEST

/* A Llama-2-7B-like model: L 32, h 4096, MHA, f 11008, V 32000 untied. */
static struct par_model llama2_7b(void)
{
	struct par_model m = llama3(32, 4096, 32, 11008);
	m.kv_heads = 32;
	m.vocab = 32000;
	return m;
}

/* C15: 6Ψ + 12 L h s, Ψ all parameters with the input embedding. */
START_TEST(c15_flops_formula)
{
	struct par_model m = llama2_7b();
	double psi = par_model_params(&m);
	WITHIN(psi, 6.74e9, 0.01e9);
	REL(par_flops_per_token(&m, 4096), 6 * psi + 12.0 * 32 * 4096 * 4096);
	REL(par_model_flops_per_token(7e9, 32, 4096, 4096), 42e9 + 12.0 * 32 * 4096 * 4096);
}
END_TEST

/*
 * C15 against the op lists: the GEMMs of all layers and the head, forward
 * and backward, do 6 FLOPs per token per matmul weight; the 6Ψ term adds the
 * input embedding and the norms, which do no matmul.
 */
START_TEST(c15_ops_six_per_weight)
{
	struct par_model m = llama2_7b();
	struct par_training tr = train(4096, 1, PAR_RECOMPUTE_NONE, true);
	struct par_op ops[MAX_OPS];
	double gemm = 0, T = 4096;
	for (int ph = PAR_FWD; ph <= PAR_BWD; ph++) {
		size_t n = par_layer_ops(&m, &tr, 1, ph, ops, MAX_OPS);
		for (size_t i = 0; i < n; i++)
			gemm += ops[i].cls == PAR_OP_GEMM ? 32 * ops[i].flops : 0;
		n = par_head_ops(&m, &tr, 1, ph, ops, MAX_OPS);
		for (size_t i = 0; i < n; i++)
			gemm += ops[i].cls == PAR_OP_GEMM ? ops[i].flops : 0;
	}
	double h = 4096, weights = par_model_params(&m) - par_embedding_params(&m)
				   - 32 * 2 * h - h;
	REL(gemm / T, 6 * weights);
}
END_TEST

/*
 * C15's example: 256 sequences of 4096 tokens per 3.60 s on 32 GPUs of
 * 989 TFLOP/s, Ψ taken as exactly 7e9 with L 32, h 4096: MFU 0.446. (With
 * the Llama-2-7B-like Ψ of 6.74e9 it would be 0.431.)
 */
START_TEST(c15_mfu_example)
{
	double tps = 256 * 4096 / 3.60;
	double mfu = par_utilization(tps, par_model_flops_per_token(7e9, 32, 4096, 4096), 32,
				     989e12);
	WITHIN(mfu, 0.4458, 0.00005);
	WITHIN(mfu, 0.446, 0.0005);
}
END_TEST

/*
 * HFU with full recomputation: the forward runs twice, 2Ψ + 4Lhs more, so
 * the hardware FLOPs are exactly 4/3 of the model FLOPs (8Ψ + 16Lhs over
 * 6Ψ + 12Lhs) for any model; 0.4458 x 4/3 = 0.594. (Counting attention with
 * the kernels' 2.5x backward instead, 8Ψ + 18Lhs, would give 0.604.)
 */
START_TEST(c15_hfu_full_recompute)
{
	struct par_model m = llama2_7b();
	struct par_training tr = train(4096, 1, PAR_RECOMPUTE_FULL, false);
	double ratio = par_hw_flops_per_token(&m, &tr) / par_flops_per_token(&m, 4096);
	WITHIN(ratio, 4.0 / 3.0, 1e-12);
	double tps = 256 * 4096 / 3.60;
	double hfu = par_utilization(tps, ratio * par_model_flops_per_token(7e9, 32, 4096, 4096),
				     32, 989e12);
	WITHIN(hfu, 0.594, 0.0005);
}
END_TEST

static Suite *spec_suite(void)
{
	const struct spec_item items[] = {
		{ "C9", c09_layer_gemms },
		{ "C9", c09_head_gemms },
		{ "C9", c09_qkv_shape },
		{ "C10", c10_gpt_layer },
		{ "C10", c10_llama_layer },
		{ "C10", c10_llama3_8b },
		{ "C10", c10_llama3_70b },
		{ "C10", c10_llama3_405b },
		{ "C11", c11_adam_mixed_precision },
		{ "C12", c12_zero_70b_stage3 },
		{ "C12", c12_zero_stages },
		{ "C13", c13_no_flash },
		{ "C13", c13_flash },
		{ "C13", c13_full_checkpoint },
		{ "C13", c13_tp_without_sp },
		{ "C13", c13_tp_with_sp },
		{ "C14", c14_logits },
		{ "C15", c15_flops_formula },
		{ "C15", c15_ops_six_per_weight },
		{ "C15", c15_mfu_example },
		{ "C15", c15_hfu_full_recompute },
	};
	return spec_suite_of("SPEC C9-C15 (model)", items, ARRAY_SIZE(items), 0);
}

int main(void)
{
	return check_run(spec_suite());
}
