/*
 * moe_step.c - the mixture-of-experts layers in the step: the routing load
 * of each layer (moe.c), the dispatch and combine all-to-alls over the
 * expert group (SPEC C28), the rank's experts, the shared experts, and the
 * expert gradients reduced over the ranks that hold the same experts
 * (all-reduced, or reduce-scattered where the optimizer is sharded).
 */
#include "parallel/train-int.h"
#include "parallel/moe.h"

#include <stdlib.h>

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
	par_b_emit_ops(b, where, ph, ops, n);
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
	par_b_mb_label(b, mb, sizeof(mb));
	sim_fmt(name, sizeof(name), "moe.%s.%s.%s.%s.alltoall", where, mb, bwd ? "bwd" : "fwd", what);
	uint32_t c = par_b_coll(b, STREAM_TP, name, SIM_COLL_ALLTOALL, SLOT_EP,
				2.0 * T * m->moe.top_k * m->hidden, b->last_compute);
	par_b_label(b, b->sub_phase, 1, NULL);
	par_b_wait(b, c);
}

/* The MoE MLP: router, dispatch, the rank's experts, combine, shared experts;
 * the backward in reverse, then the expert gradients reduced over the ranks
 * that hold the same experts. */
void par_moe_block(struct builder *b, const char *where, int bwd)
{
	if (!bwd) {  /* the forward, or its recomputation in the backward */
		b->recomputing = b->sub_phase == SIM_PHASE_RECOMPUTE;
		moe_part(b, where, 0, PAR_FWD);
		moe_alltoall(b, where, "dispatch", 0);
		moe_part(b, where, 1, PAR_FWD);
		moe_alltoall(b, where, "combine", 0);
		moe_part(b, where, 2, PAR_FWD);
		b->recomputing = 0;
		return;
	}
	moe_part(b, where, 2, PAR_BWD);
	moe_alltoall(b, where, "combine", 1);
	moe_part(b, where, 1, PAR_BWD);
	moe_alltoall(b, where, "dispatch", 1);
	moe_part(b, where, 0, PAR_BWD);
	/* Over the ranks that hold the same experts: all-reduced, or where the
	 * strategy shards the optimizer, reduce-scattered (the updated experts
	 * are all-gathered after the step, dp_bucket.c). */
	uint32_t edp = b->dpn / b->t->layout->ep;
	if (b->expert_grads > 0 && edp > 1) {
		int rs = (b->dp->flags & PAR_DP_SHARDS_OPTIMIZER) != 0;
		enum sim_coll_op op = rs ? SIM_COLL_REDUCESCATTER : SIM_COLL_ALLREDUCE;
		char name[128], mb[24];
		par_b_mb_label(b, mb, sizeof(mb));
		sim_fmt(name, sizeof(name), "moe.%s.%s.experts.%s", where, mb, sim_coll_op_name(op));
		b->last_grad_comm = par_b_coll(b, STREAM_GRAD, name, op, SLOT_EDP,
					       b->expert_grads, b->last_compute);
		par_b_label(b, SIM_PHASE_BWD, 1, NULL);
	}
	b->expert_grads = 0;
}

/* What an MoE layer keeps at this layer's load (moe.c). */
double par_moe_activation_bytes(struct builder *b)
{
	return par_moe_layer_activation_bytes(b->t->model, &b->local, b->tp, b->sp, moe_factor(b));
}
