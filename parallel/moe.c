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

static struct par_op gemm(const char *name, double m, double n, double k, double e)
{
	return (struct par_op){
		.name = name, .cls = PAR_OP_GEMM, .m = m, .n = n, .k = k,
		.flops = 2 * m * n * k, .bytes = e * (m * k + k * n + m * n),
	};
}

/* Forward kernels, or their gradients: dX and dW per GEMM, 2x elsewhere. */
static void emit(struct oplist *l, const struct par_op *f, size_t n, enum par_phase ph,
		 const char *const *dx, const char *const *dw, double wscale, int expert, double e)
{
	if (ph == PAR_FWD) {
		for (size_t i = 0; i < n; i++)
			oplist_push(l, f[i]);
		return;
	}
	for (size_t i = n; i-- > 0;) {
		if (f[i].cls != PAR_OP_GEMM) {
			struct par_op o = f[i];
			o.name = dx[i];
			o.flops *= 2;
			o.bytes *= 2;
			oplist_push(l, o);
			continue;
		}
		/* dX = dY W^T is m x n . n x k; dW = X^T dY is k x m . m x n */
		struct par_op x = gemm(dx[i], f[i].m, f[i].k, f[i].n, e);
		struct par_op w = gemm(dw[i], f[i].k, f[i].n, f[i].m, e);
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
			gemm("router", T, m->moe.experts, h, e),
			{ .name = "router_topk", .cls = PAR_OP_MEMBOUND, .flops = 5 * T * m->moe.experts,
			  .bytes = 4 * T * m->moe.experts },
		};
		static const char *const dx[] = { "router_dx", "router_topk_bwd" };
		static const char *const dw[] = { "router_dw", NULL };
		emit(&l, ops, 2, ph, dx, dw, 1, 0, e);
		return l.n;
	}
	double Tr = part == 1 ? T * m->moe.top_k * factor : T;
	double local = part == 1 ? (double)m->moe.experts / ep : m->moe.shared_experts;
	if (part == 2 && local == 0)
		return 0;
	if (part == 2)
		up *= local, f *= local;
	struct par_op ops[3] = {
		gemm(part == 1 ? "expert_up" : "shared_up", Tr, up, h, e),
		{ .name = part == 1 ? "expert_act" : "shared_act", .cls = PAR_OP_MEMBOUND,
		  .flops = 8 * Tr * f / t, .bytes = 3 * 2 * Tr * f / t },
		gemm(part == 1 ? "expert_down" : "shared_down", Tr, h, f / t, e),
	};
	static const char *const dx1[] = { "expert_up_dx", "expert_act_bwd", "expert_down_dx" };
	static const char *const dw1[] = { "expert_up_dw", NULL, "expert_down_dw" };
	static const char *const dx2[] = { "shared_up_dx", "shared_act_bwd", "shared_down_dx" };
	static const char *const dw2[] = { "shared_up_dw", NULL, "shared_down_dw" };
	/* A batched GEMM of the rank's experts: its weights are `local` matrices. */
	emit(&l, ops, 3, ph, part == 1 ? dx1 : dx2, part == 1 ? dw1 : dw2,
	     part == 1 ? local : 1, part == 1, e);
	return l.n;
}
