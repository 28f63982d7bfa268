/*
 * builder.c - the step builder's own machinery: the helpers the strategies
 * call (collectives, parameters, memory markers, waits), appending model
 * ops to the compute stream, and building one stage's program of a
 * resolved step (step.h) from the schedule's actions (par_b_build), with
 * the strategy's private state from its init to its fini hook.
 *
 * A compute op waits for what the builder holds for it (par_b_wait): a
 * pipeline receive, tensor- or context-parallel collectives, parameter
 * gathers. Tensor parallelism (tp.c), context parallelism (cp.c) and the
 * experts of an MoE layer (moe_step.c) add their ops around the model's
 * kernels as they are appended (par_b_emit_ops).
 */
#include "parallel/train-int.h"
#include "parallel/layout.h"
#include "parallel/schedule.h"

#include <stdlib.h>
#include <string.h>

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
	return par_step_layer_params(b->s, l);
}

double par_b_expert_params(const struct builder *b)
{
	return b->s->stage_expert_params[b->stage];
}

double par_b_layer_expert_params(const struct builder *b, int l)
{
	return par_step_layer_expert_params(b->s, l);
}

/* The virtual stages of this program's stage: chunk c is vs = c p + s. */
uint32_t par_b_vstage(const struct builder *b, unsigned chunk)
{
	return chunk * b->pp + b->stage;
}

void par_b_stage_range(const struct builder *b, uint32_t vs, uint32_t *first, uint32_t *count)
{
	*first = b->s->layer_first[vs];
	*count = b->s->layer_count[vs];
}

/* This rank's parameters in forward order (par_step_each_param). */
void par_b_each_param(const struct builder *b, void (*fn)(void *ctx, int piece, double params),
		      void *ctx)
{
	par_step_each_param(b->s, b->stage, fn, ctx);
}

void par_b_states(const struct builder *b, unsigned zero, double bytes[PAR_MEM_NCATS])
{
	struct par_states st;
	par_step_states(b->s, b->stage, zero, &st);
	memset(bytes, 0, PAR_MEM_NCATS * sizeof(double));
	bytes[PAR_MEM_WEIGHTS] = st.weights;
	bytes[PAR_MEM_GRADS] = st.grads;
	/* ZeRO-Offload keeps the optimizer states (and fp32 master) on the host. */
	bytes[PAR_MEM_OPTIMIZER] = b->t->layout->offload.enabled ? 0 : st.optimizer;
}

/* ---- the compute stream -------------------------------------------------- */

/* "mb3" or "mb3.c1": which micro-batch (and chunk) an op belongs to. */
void par_b_mb_label(const struct builder *b, char *buf, size_t len)
{
	if (b->vpp > 1)
		sim_fmt(buf, len, "mb%u.c%u", b->mb, b->chunk);
	else
		sim_fmt(buf, len, "mb%u", b->mb);
}

void par_b_label(struct builder *b, enum sim_phase ph, int placed, const char *kernel)
{
	const struct sim_op_label l = {
		.layer = placed ? b->layer : -1, .mb = placed ? (int16_t)b->mb : -1,
		.chunk = placed && b->vpp > 1 ? (int16_t)b->chunk : -1,
		.phase = (uint8_t)ph, .kernel = kernel,
	};
	sim_program_label(b->prog, &l);
}

enum sim_phase par_b_phase(enum par_phase ph, const struct par_op *o)
{
	return ph == PAR_FWD ? SIM_PHASE_FWD : o->recompute ? SIM_PHASE_RECOMPUTE : SIM_PHASE_BWD;
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
void par_b_take_waits(struct builder *b)
{
	for (unsigned i = 0; i < b->nwaits; i++)
		sim_program_dep(b->prog, b->waits[i]);
	b->nwaits = 0;
}


/* Append a list of model ops to the compute stream; returns the last index. */
uint32_t par_b_emit_ops(struct builder *b, const char *where, enum par_phase ph,
			 const struct par_op *ops, size_t n)
{
	const struct par_train *t = b->t;
	char mb[24];
	int moe_done = 0;
	par_b_mb_label(b, mb, sizeof(mb));
	for (size_t i = 0; i < n; i++) {
		const struct par_op *o = &ops[i];
		char name[96];
		if (b->moe_layer >= 0 && par_kernel_is_mlp(o->kernel)) {
			/* An MoE layer: the experts replace the dense MLP, once per
			 * pass (the recomputed forward has its own). */
			int bwd = ph == PAR_BWD && !o->recompute;
			if (moe_done != 1 + bwd) {
				b->sub_phase = par_b_phase(ph, o);
				par_moe_block(b, where, bwd);
				moe_done = 1 + bwd;
			}
			continue;
		}
		if (b->cp > 1 && o->cls == PAR_OP_ATTENTION) {
			b->sub_phase = par_b_phase(ph, o);
			par_cp_attention(b, o, ph == PAR_BWD && !o->recompute, where);
			continue;
		}
		par_tp_hook(b, o, ph, 1, where);
		if (b->layer >= 0 && b->dp->kernel_begin)
			b->dp->kernel_begin(b, o, ph);
		sim_fmt(name, sizeof(name), "%s.%s.%s.%s%s", where, mb,
			ph == PAR_FWD ? "fwd" : "bwd", o->recompute ? "re." : "", o->name);
		enum sim_phase lp = par_b_phase(ph, o);
		if (lp == SIM_PHASE_FWD && b->recomputing)
			lp = SIM_PHASE_RECOMPUTE;
		else if (lp == SIM_PHASE_BWD && b->weight_pass)
			lp = SIM_PHASE_WEIGHT;
		if (!par_tp_overlapped(b, o, ph, where, name, lp)) {
			sim_ps d = sim_ps_from_s(par_compute_time_s(t->compute, o));
			b->last_compute = sim_program_compute(b->prog, STREAM_COMPUTE, name, d,
							      o->flops, o->bytes);
			par_b_label(b, lp, 1, o->name);
			par_b_take_waits(b);
		}
		if (b->layer >= 0 && b->dp->kernel_end)  /* may free at the op's end */
			b->dp->kernel_end(b, o, ph);
		if (b->reduce && o->params > 0 && o->expert)
			b->expert_grads += o->params * b->grad_elem;
		else if (b->reduce && o->params > 0 && b->dp->grads)
			b->dp->grads(b, o->params, b->last_compute);
		par_tp_hook(b, o, ph, 0, where);
	}
	return b->last_compute;
}

uint32_t par_b_emit(struct builder *b, const char *where, enum par_phase ph, size_t n)
{
	return par_b_emit_ops(b, where, ph, b->ops, n);
}

void par_b_mem(struct builder *b, const char *name, unsigned cat, double bytes)
{
	char n[96], mb[24];
	par_b_mb_label(b, mb, sizeof(mb));
	sim_fmt(n, sizeof(n), "%s.%s", name, mb);
	b->last_compute = sim_program_compute(b->prog, STREAM_COMPUTE, n, 0, 0, 0);
	par_b_label(b, SIM_PHASE_NONE, 1, NULL);
	sim_program_mem(b->prog, cat, bytes);
	par_b_take_waits(b);
}

/* Fill the scratch list from one of model.c's op writers. */

size_t par_b_fetch(struct builder *b, ops_fn fn, enum par_phase ph)
{
	size_t n = fn(b->t->model, &b->local, b->tp, ph, NULL, 0);
	if (n > b->cap) {
		b->cap = n;
		b->ops = xreallocarray(b->ops, n, sizeof(*b->ops));
	}
	return fn(b->t->model, &b->local, b->tp, ph, b->ops, n);
}

/* The layer's kernels, with sequence parallelism when it is on. */
size_t par_b_fetch_layer(struct builder *b, enum par_phase ph)
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

struct sim_program *par_b_build(const struct par_step *s, struct builder *b, uint32_t stage,
				uint32_t cpi)
{
	return par_b_build_with(s, b, stage, cpi, s->schedule);
}

struct sim_program *par_b_build_with(const struct par_step *s, struct builder *b,
				     uint32_t stage, uint32_t cpi,
				     const struct par_schedule_ops *sched)
{
	const struct par_train *t = s->t;
	const struct par_layout *l = t->layout;
	memset(b, 0, sizeof(*b));
	b->s = s;
	b->t = t;
	b->dp = s->strategy;
	b->prog = sim_program_new();
	b->grad_elem = par_grad_bytes(t->training->precision, l->ddp.fp32_grads);
	b->dpn = s->dpn;  /* gradients are reduced over DP x CP */
	b->tp = s->d.tp, b->pp = s->d.pp, b->vpp = s->d.vpp, b->stage = stage;
	b->sp = s->sp;
	b->tp_overlap = s->tp_overlap;
	b->nranks = s->gpus;
	b->shard = s->shard;
	b->params = s->stage_params[stage];
	b->cp = s->d.cp, b->cpi = cpi;
	b->local = *t->training;
	b->local.seq = t->training->seq / l->cp;  /* each CP rank's tokens */
	b->nmb = s->micro_batches;
	b->nwaits = 0;
	b->last_grad_comm = b->last_param_comm = NO_OP;
	b->last_compute = NO_OP;
	b->moe_layer = -1;
	b->layer = -1;
	if (b->dp->init)
		b->dp->init(b);
	/* The schedule's actions, each a pass of one micro-batch and chunk. */
	size_t n = sched->nactions(b->pp, stage, b->nmb, b->vpp);
	struct par_action *acts = xmalloc((n ? n : 1) * sizeof(*acts));
	sched->actions(b->pp, stage, b->nmb, b->vpp, acts);
	for (size_t i = 0; i < n; i++) {
		b->mb = acts[i].mb, b->chunk = acts[i].chunk;
		b->reduce = b->dpn > 1 && (par_dp_reduces_every_mb(b->dp) || b->mb + 1 == b->nmb);
		par_pass(b, acts[i].kind, i + 1 == n);
	}
	free(acts);
	uint32_t step = par_b_optimizer_step(b);
	/* What follows the step is built unless the strategy refuses it (ZeRO-1/2's
	 * parameter gathers are bounded: a 1 B bucket would be billions of ops). */
	if (b->dp->check_program)
		b->dp->check_program(b, &b->refused_most, b->refused, sizeof(b->refused));
	if (b->dp->after_step && b->dpn > 1 && b->refused_most == 0)
		b->dp->after_step(b, step);
	if (b->dp->fini)
		b->dp->fini(b);
	free(b->ops);
	free(b->moe_factor);
	free(b->moe_dropped);
	free(b->waits);
	b->ops = NULL, b->moe_factor = b->moe_dropped = NULL;
	b->waits = NULL, b->nwaits = b->waitcap = 0;
	return b->prog;
}
