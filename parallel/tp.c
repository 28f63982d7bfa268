/*
 * tp.c - tensor parallelism in the step (Megatron, SPEC C20): the
 * collectives each kernel needs before or after it, with and without
 * sequence parallelism. Blocking: the next kernel waits for them.
 */
#include "parallel/train-int.h"

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
	enum par_kernel kernel;
	enum par_part part;
	uint8_t backward, before, sp;   /* sp: 0 without SP, 1 with it */
	enum sim_coll_op op;
	uint8_t loss;                   /* bytes: 8 per token, not an activation */
};

static const struct tp_rule tp_rules[] = {
	{ PAR_K_ATTN_OUT, PAR_PART_FWD, 0, 0, 0, SIM_COLL_ALLREDUCE, 0 },
	{ PAR_K_MLP_DOWN, PAR_PART_FWD, 0, 0, 0, SIM_COLL_ALLREDUCE, 0 },
	{ PAR_K_QKV, PAR_PART_DX, 1, 0, 0, SIM_COLL_ALLREDUCE, 0 },
	{ PAR_K_MLP_UP, PAR_PART_DX, 1, 0, 0, SIM_COLL_ALLREDUCE, 0 },
	{ PAR_K_MLP_GATE_UP, PAR_PART_DX, 1, 0, 0, SIM_COLL_ALLREDUCE, 0 },
	{ PAR_K_EMBED, PAR_PART_FWD, 0, 0, 0, SIM_COLL_ALLREDUCE, 0 },
	{ PAR_K_LM_HEAD, PAR_PART_DX, 1, 0, 0, SIM_COLL_ALLREDUCE, 0 },
	{ PAR_K_QKV, PAR_PART_FWD, 0, 1, 1, SIM_COLL_ALLGATHER, 0 },
	{ PAR_K_MLP_UP, PAR_PART_FWD, 0, 1, 1, SIM_COLL_ALLGATHER, 0 },
	{ PAR_K_MLP_GATE_UP, PAR_PART_FWD, 0, 1, 1, SIM_COLL_ALLGATHER, 0 },
	{ PAR_K_ATTN_OUT, PAR_PART_FWD, 0, 0, 1, SIM_COLL_REDUCESCATTER, 0 },
	{ PAR_K_MLP_DOWN, PAR_PART_FWD, 0, 0, 1, SIM_COLL_REDUCESCATTER, 0 },
	{ PAR_K_ATTN_OUT, PAR_PART_DX, 1, 1, 1, SIM_COLL_ALLGATHER, 0 },
	{ PAR_K_MLP_DOWN, PAR_PART_DX, 1, 1, 1, SIM_COLL_ALLGATHER, 0 },
	{ PAR_K_QKV, PAR_PART_DX, 1, 0, 1, SIM_COLL_REDUCESCATTER, 0 },
	{ PAR_K_MLP_UP, PAR_PART_DX, 1, 0, 1, SIM_COLL_REDUCESCATTER, 0 },
	{ PAR_K_MLP_GATE_UP, PAR_PART_DX, 1, 0, 1, SIM_COLL_REDUCESCATTER, 0 },
	{ PAR_K_EMBED, PAR_PART_FWD, 0, 0, 1, SIM_COLL_REDUCESCATTER, 0 },
	{ PAR_K_LM_HEAD, PAR_PART_FWD, 0, 1, 1, SIM_COLL_ALLGATHER, 0 },
	{ PAR_K_LM_HEAD, PAR_PART_DX, 1, 0, 1, SIM_COLL_REDUCESCATTER, 0 },
	{ PAR_K_CROSS_ENTROPY, PAR_PART_FWD, 0, 0, 0, SIM_COLL_ALLREDUCE, 1 },
	{ PAR_K_CROSS_ENTROPY, PAR_PART_FWD, 0, 0, 1, SIM_COLL_ALLREDUCE, 1 },
};

/* Activations of T tokens of h values (bf16); the loss: two floats a token. */
static double rule_bytes(const struct tp_rule *r, double tokens, double hidden)
{
	return r->loss ? 8 * tokens : 2 * tokens * hidden;
}

unsigned par_tp_op_colls(const struct par_op *o, enum par_phase ph, bool sp, double tokens,
			 double hidden, enum sim_coll_op *ops, double *bytes, unsigned max)
{
	int bwd = ph == PAR_BWD && !o->recompute;
	unsigned n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(tp_rules) && n < max; i++) {
		const struct tp_rule *r = &tp_rules[i];
		if (r->backward != bwd || r->sp != sp || r->kernel != o->kernel ||
		    r->part != o->part)
			continue;
		ops[n] = r->op;
		bytes[n++] = rule_bytes(r, tokens, hidden);
	}
	return n;
}

/* Issue the tensor-parallel collectives a kernel needs before or after it. */
void par_tp_hook(struct builder *b, const struct par_op *o, enum par_phase ph, int before,
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
		    r->kernel != o->kernel || r->part != o->part)
			continue;
		char name[96], mb[24];
		par_b_mb_label(b, mb, sizeof(mb));
		sim_fmt(name, sizeof(name), "tp.%s.%s.%s.%s.%s", where, mb, bwd ? "bwd" : "fwd",
			o->name, sim_coll_op_name(r->op));
		double bytes = rule_bytes(r, T, b->t->model->hidden);
		uint32_t c = par_b_coll(b, STREAM_TP, name, r->op, SLOT_TP, bytes, b->last_compute);
		par_b_label(b, par_b_phase(ph, o), 1, NULL);
		par_b_wait(b, c);
	}
}
