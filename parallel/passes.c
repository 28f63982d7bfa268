/*
 * passes.c - the pipeline passes: a forward pass of a micro-batch through
 * a model chunk receives the previous stage's activations, runs the
 * embedding (first virtual stage), its layers and the LM head (last), and
 * sends its output on; a backward pass mirrors it with gradients. The
 * data-parallel strategy's hooks run around each layer. Memory: each
 * layer's activations from its forward to its backward (SPEC C13), fp32
 * logits from the head's forward to its backward (C14); with full
 * recomputation a layer's whole set returns during its backward.
 *
 * A schedule that splits the backward (par_action_kind) runs a
 * backward-input pass (the recomputed forward and every kernel but the
 * weight gradients: the dX chain, which sends the gradient on) and later a
 * backward-weight pass (the weight-gradient GEMMs, model.c's dW passes,
 * and the embedding's gradient; its kernels labelled SIM_PHASE_WEIGHT).
 * The layer's activations stay until its weight pass: model.c does not say
 * which of them the dW GEMMs read, so the split holds all of them (an upper
 * bound); the fp32 logits go with the head's input-gradient pass (the
 * loss's gradient reads them). Not modelled with a split: MoE layers (the
 * experts' block is one unit) and strategies that shard parameters (their
 * hooks gather and free around one backward): par_step_derive refuses
 * them for a splitting schedule (step.c), and BUG here.
 */
#include "parallel/train-int.h"
#include "parallel/schedule.h"

#include <string.h>

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
	b->layer = (int)l;
	par_b_emit(b, where, PAR_FWD, par_b_fetch_layer(b, PAR_FWD));
	sim_program_mem(b->prog, PAR_MEM_ACTIVATIONS, b->moe_layer >= 0 ? par_moe_activation_bytes(b)
			: par_layer_activation_bytes(t->model, &b->local, b->tp, b->sp));
	b->moe_layer = -1;
	b->layer = -1;
	hook_end(b, (int)l, PAR_FWD);
}

/* Which part of a backward pass is built. */
enum part { PART_ALL, PART_INPUT, PART_WEIGHT };

/* A weight-gradient kernel: a GEMM's dW. */
static int weight_grad(const struct par_op *o)
{
	return o->part == PAR_PART_DW && !o->recompute;
}

/* Emit the first n ops of the scratch list that belong to part. */
static void emit_part(struct builder *b, const char *where, size_t n, enum part part)
{
	if (part == PART_ALL) {
		par_b_emit(b, where, PAR_BWD, n);
		return;
	}
	struct par_op *sel = xmalloc((n ? n : 1) * sizeof(*sel));
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (weight_grad(&b->ops[i]) == (part == PART_WEIGHT))
			sel[k++] = b->ops[i];
	if (k)
		par_b_emit_ops(b, where, PAR_BWD, sel, k);
	free(sel);
}

static void layer_backward(struct builder *b, unsigned l, enum part part)
{
	const struct par_train *t = b->t;
	b->moe_layer = par_layer_is_moe(t->model, l) ? (int)l : -1;
	if (part != PART_ALL && b->moe_layer >= 0)
		BUG("a split backward of MoE layer %u is not modelled", l);
	double kept = b->moe_layer >= 0 ? par_moe_activation_bytes(b)
					: par_layer_activation_bytes(t->model, &b->local, b->tp, b->sp);
	double peak = b->moe_layer >= 0 && t->training->recompute == PAR_RECOMPUTE_FULL
			      ? kept : par_layer_activation_peak_bytes(t->model, &b->local, b->tp, b->sp);
	if (b->moe_layer >= 0 && t->training->recompute == PAR_RECOMPUTE_FULL)
		kept = par_layer_activation_bytes(t->model, &b->local, b->tp, b->sp);
	size_t n = par_b_fetch_layer(b, PAR_BWD), re = 0;
	char where[32];
	sim_fmt(where, sizeof(where), "L%u", l);
	while (re < n && b->ops[re].recompute)
		re++;
	if (part != PART_WEIGHT)
		hook_begin(b, (int)l, PAR_BWD);
	b->layer = (int)l;
	if (part == PART_WEIGHT) {
		/* The input pass left the layer's full set (see the header). */
		struct par_op *all = b->ops;
		b->ops = all + re;
		emit_part(b, where, n - re, PART_WEIGHT);
		b->ops = all;
		sim_program_mem(b->prog, PAR_MEM_ACTIVATIONS, re ? -peak : -kept);
	} else if (re) {
		/* The recomputed forward rebuilds the layer's full set. */
		struct par_op *all = b->ops;
		par_b_emit(b, where, PAR_BWD, re);
		sim_program_mem(b->prog, PAR_MEM_ACTIVATIONS, peak - kept);
		b->ops = all + re;
		emit_part(b, where, n - re, part);
		b->ops = all;
		if (part == PART_ALL)
			sim_program_mem(b->prog, PAR_MEM_ACTIVATIONS, -peak);
	} else {
		emit_part(b, where, n, part);
		if (part == PART_ALL)
			sim_program_mem(b->prog, PAR_MEM_ACTIVATIONS, -kept);
	}
	b->moe_layer = -1;
	b->layer = -1;
	if (part != PART_WEIGHT)
		hook_end(b, (int)l, PAR_BWD);
}

/* A pipeline message: activations forward, gradients backward. */
static uint32_t p2p(struct builder *b, int send, int act, uint32_t peer, uint32_t after)
{
	const struct par_training *tr = &b->local;
	double bytes = 2.0 * tr->seq * tr->micro_batch * b->t->model->hidden / (b->sp ? b->tp : 1);
	char name[96], mb[24];
	par_b_mb_label(b, mb, sizeof(mb));
	sim_fmt(name, sizeof(name), "pp.%s.%s.%s", mb, send ? "send" : "recv", act ? "act" : "grad");
	unsigned stream = send ? (act ? STREAM_SEND_NEXT : STREAM_SEND_PREV)
			       : (act ? STREAM_RECV_PREV : STREAM_RECV_NEXT);
	uint32_t i = send ? sim_program_send(b->prog, stream, name, SLOT_PP, peer, bytes)
			  : sim_program_recv(b->prog, stream, name, SLOT_PP, peer, bytes);
	par_b_label(b, act ? SIM_PHASE_FWD : SIM_PHASE_BWD, 1, NULL);
	sim_program_tag(b->prog, act ? TAG_ACT : TAG_GRAD);
	if (after != NO_OP)
		sim_program_dep(b->prog, after);
	return i;
}

static uint32_t prev_stage(const struct builder *b) { return (b->stage + b->pp - 1) % b->pp; }
static uint32_t next_stage(const struct builder *b) { return (b->stage + 1) % b->pp; }

/* The forward pass of micro-batch b->mb through chunk b->chunk. */
static void pass_forward(struct builder *b)
{
	const struct par_train *t = b->t;
	uint32_t vs = par_b_vstage(b, b->chunk), V = b->pp * b->vpp, first, count;
	par_b_stage_range(b, vs, &first, &count);
	if (vs > 0)
		par_b_wait(b, p2p(b, 0, 1, prev_stage(b), NO_OP));
	if (vs == 0) {
		hook_begin(b, -1, PAR_FWD);
		par_b_emit(b, "embed", PAR_FWD, par_b_fetch(b, par_embed_ops, PAR_FWD));
	}
	for (uint32_t l = first; l < first + count; l++)
		layer_forward(b, l);
	if (vs == V - 1) {
		par_b_emit(b, "head", PAR_FWD, par_b_fetch(b, par_head_ops, PAR_FWD));
		sim_program_mem(b->prog, PAR_MEM_LOGITS, par_logits_bytes(t->model, &b->local, b->tp));
		hook_end(b, -1, PAR_FWD);
	} else {
		p2p(b, 1, 1, next_stage(b), b->last_compute);
	}
}

/* The backward pass (or part of it) of micro-batch b->mb through chunk
 * b->chunk. */
static void pass_backward(struct builder *b, enum part part, int last_action)
{
	const struct par_train *t = b->t;
	uint32_t vs = par_b_vstage(b, b->chunk), V = b->pp * b->vpp, first, count;
	par_b_stage_range(b, vs, &first, &count);
	if (part != PART_ALL && (b->dp->flags & PAR_DP_SHARDS_PARAMS))
		BUG("a split backward with the sharded parameters of %s is not modelled",
		    b->dp->name);
	if (part != PART_WEIGHT && vs < V - 1)
		par_b_wait(b, p2p(b, 0, 0, next_stage(b), NO_OP));
	b->weight_pass = part == PART_WEIGHT;
	if (vs == V - 1) {
		if (part != PART_WEIGHT)
			hook_begin(b, -1, PAR_BWD);
		emit_part(b, "head", par_b_fetch(b, par_head_ops, PAR_BWD), part);
		/* The loss's gradient reads the logits: they go with the
		 * input-gradient pass, not with the weight gradients. */
		if (part != PART_WEIGHT)
			sim_program_mem(b->prog, PAR_MEM_LOGITS,
					-par_logits_bytes(t->model, &b->local, b->tp));
	}
	for (uint32_t l = first + count; l-- > first;)
		layer_backward(b, l, part);
	if (vs == 0) {
		/* The embedding's gradient is a weight gradient (no input to pass). */
		if (part != PART_INPUT)
			par_b_emit(b, "embed", PAR_BWD, par_b_fetch(b, par_embed_ops, PAR_BWD));
		if (part != PART_WEIGHT)
			hook_end(b, -1, PAR_BWD);
	} else if (part != PART_WEIGHT) {
		p2p(b, 1, 0, prev_stage(b), b->last_compute);
	}
	b->weight_pass = 0;
	/* The pipeline phase of this stage ends with its last backward kernel. */
	if (last_action)
		sim_program_flags(b->prog, SIM_OP_MARK);
	if (part != PART_INPUT && b->reduce && b->dp->backward_end)
		b->dp->backward_end(b, b->last_compute);
}

void par_pass(struct builder *b, unsigned kind, int last_action)
{
	switch (kind) {
	case PAR_ACT_FORWARD:
		pass_forward(b);
		return;
	case PAR_ACT_BACKWARD:
		pass_backward(b, PART_ALL, last_action);
		return;
	case PAR_ACT_BACKWARD_INPUT:
		pass_backward(b, PART_INPUT, last_action);
		return;
	case PAR_ACT_BACKWARD_WEIGHT:
		pass_backward(b, PART_WEIGHT, last_action);
		return;
	}
	BUG("action kind %u", kind);
}
