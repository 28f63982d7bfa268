/*
 * moe.c - expert loads and the kernels of an MoE MLP; see moe.h.
 */
#include "parallel/moe.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>

#include "parallel/oplist-int.h"
#include "sim/util.h"

void par_moe_load(const struct par_model *m, uint32_t ep, uint64_t seed, unsigned layer,
		  struct par_moe_load *out)
{
	uint32_t E = m->moe.experts, per = E / ep;
	double *p = xmalloc(E * sizeof(double)), sum = 0;
	size_t *order = xmalloc(E * sizeof(size_t));
	for (uint32_t e = 0; e < E; e++) {
		p[e] = m->moe.skew > 0 ? pow(e + 1.0, -m->moe.skew) : 1.0;
		sum += p[e];
		order[e] = e;
	}
	/* Which expert is the i-th most popular: a permutation from the seed. */
	gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(rng, (unsigned long)(seed * 1000003u + layer));
	gsl_ran_shuffle(rng, order, E, sizeof(size_t));
	gsl_rng_free(rng);
	/* Loads in units of the even share (1 per expert). */
	double cap = m->moe.capacity_factor > 0 ? m->moe.capacity_factor : INFINITY;
	double busiest = 0, dropped = 0;
	for (uint32_t j = 0; j < ep; j++) {
		double load = 0;
		for (uint32_t e = j * per; e < (j + 1) * per; e++) {
			double want = p[order[e]] / sum * E;
			load += fmin(want, cap);
			dropped += fmax(0, want - cap);
		}
		busiest = fmax(busiest, load / per);
	}
	out->factor = busiest;
	out->dropped = dropped / E;
	free(p);
	free(order);
}

/* Pass `part` of kernel k (its name too). */
static struct par_op pass(struct par_op o, enum par_kernel k, enum par_part part)
{
	o.kernel = k, o.part = part;
	o.name = par_kernel_name(k, part);
	return o;
}

static struct par_op gemm(enum par_kernel kernel, enum par_part part, double m, double n,
			  double k, double e)
{
	return pass((struct par_op){
		.cls = PAR_OP_GEMM, .m = m, .n = n, .k = k,
		.flops = 2 * m * n * k, .bytes = e * (m * k + k * n + m * n),
	}, kernel, part);
}

static struct par_op membound(enum par_kernel kernel, double flops, double bytes)
{
	return pass((struct par_op){ .cls = PAR_OP_MEMBOUND, .flops = flops, .bytes = bytes },
		    kernel, PAR_PART_FWD);
}

/* Forward kernels, or their gradients: dX and dW per GEMM, 2x elsewhere. */
static void emit(struct oplist *l, const struct par_op *f, size_t n, enum par_phase ph,
		 double wscale, int expert, double e)
{
	if (ph == PAR_FWD) {
		for (size_t i = 0; i < n; i++)
			oplist_push(l, f[i]);
		return;
	}
	for (size_t i = n; i-- > 0;) {
		if (f[i].cls != PAR_OP_GEMM) {
			struct par_op o = pass(f[i], f[i].kernel, PAR_PART_DX);
			o.flops *= 2;
			o.bytes *= 2;
			oplist_push(l, o);
			continue;
		}
		/* dX = dY W^T is m x n . n x k; dW = X^T dY is k x m . m x n */
		struct par_op x = gemm(f[i].kernel, PAR_PART_DX, f[i].m, f[i].k, f[i].n, e);
		struct par_op w = gemm(f[i].kernel, PAR_PART_DW, f[i].k, f[i].n, f[i].m, e);
		w.params = f[i].k * f[i].n * wscale;
		w.expert = expert;
		oplist_push(l, x);
		oplist_push(l, w);
	}
}

size_t par_moe_ops(const struct par_model *m, const struct par_training *tr, unsigned tp,
		   uint32_t ep, double factor, int part, enum par_phase ph,
		   struct par_op *out, size_t max)
{
	struct oplist l = { .out = out, .max = max };
	double T = (double)tr->seq * tr->micro_batch, h = m->hidden, t = tp ? tp : 1;
	double e = par_precision_bytes(tr->precision), f = m->moe.expert_ffn ? m->moe.expert_ffn : m->ffn;
	int swiglu = m->activation == PAR_SWIGLU;
	double up = (swiglu ? 2 : 1) * f / t;
	if (part == 0) {   /* router: scores of every expert, top-k */
		struct par_op ops[2] = {
			gemm(PAR_K_ROUTER, PAR_PART_FWD, T, m->moe.experts, h, e),
			membound(PAR_K_ROUTER_TOPK, 5 * T * m->moe.experts, 4 * T * m->moe.experts),
		};
		emit(&l, ops, 2, ph, 1, 0, e);
		return l.n;
	}
	double Tr = part == 1 ? T * m->moe.top_k * factor : T;
	double local = part == 1 ? (double)m->moe.experts / ep : m->moe.shared_experts;
	if (part == 2 && local == 0)
		return 0;
	if (part == 2)
		up *= local, f *= local;
	int routed = part == 1;
	struct par_op ops[3] = {
		gemm(routed ? PAR_K_EXPERT_UP : PAR_K_SHARED_UP, PAR_PART_FWD, Tr, up, h, e),
		membound(routed ? PAR_K_EXPERT_ACT : PAR_K_SHARED_ACT, 8 * Tr * f / t,
			 3 * 2 * Tr * f / t),
		gemm(routed ? PAR_K_EXPERT_DOWN : PAR_K_SHARED_DOWN, PAR_PART_FWD, Tr, h, f / t, e),
	};
	/* A batched GEMM of the rank's experts: its weights are `local` matrices. */
	emit(&l, ops, 3, ph, routed ? local : 1, routed, e);
	return l.n;
}

double par_moe_layer_activation_bytes(const struct par_model *m, const struct par_training *tr,
				      unsigned tp, int sp, double factor)
{
	struct par_model w = *m;
	double f = m->moe.expert_ffn ? m->moe.expert_ffn : m->ffn;
	w.ffn = (uint32_t)(f * (m->moe.top_k * factor + m->moe.shared_experts));
	return par_layer_activation_bytes(&w, tr, tp, sp);
}
