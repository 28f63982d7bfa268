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

/*
 * The kernels whose sequence-parallel collective parallel.tp_overlap
 * pipelines with them: the transformer layer's linear layers, as Megatron's
 * --tp-comm-overlap does (its userbuffers serve the layer's QKV, projection
 * and MLP GEMMs; the embedding's reduce-scatter, the LM head's all-gather
 * and the loss's all-reduce stay blocking). Each has one rule with SP: an
 * all-gather before it or a reduce-scatter after it.
 */
int par_tp_overlaps(const struct par_op *o)
{
	switch (o->kernel) {
	case PAR_K_QKV: case PAR_K_ATTN_OUT: case PAR_K_MLP_UP: case PAR_K_MLP_GATE_UP:
	case PAR_K_MLP_DOWN:
		return o->part != PAR_PART_DW;
	default:
		return 0;
	}
}

void par_tp_piece(const struct par_op *o, uint32_t t, enum par_precision prec,
		  struct par_op *piece)
{
	*piece = *o;
	piece->m = o->m / t;
	piece->flops = o->flops / t;
	/* model.c's bytes: eg (m k + k n) inputs and weight, ea m n output; the
	 * weight read whole, the rows' inputs and outputs a t-th */
	double eg = par_precision_bytes(prec), mn = o->m * o->n;
	if (mn > 0) {
		double ea = (o->bytes - eg * (o->m * o->k + o->k * o->n)) / mn;
		piece->bytes = eg * (piece->m * o->k + o->k * o->n) + ea * piece->m * o->n;
	}
}

double par_tp_overlap_s(uint32_t t, double kernel_s, double step_s)
{
	double piece = kernel_s / t;
	return piece + (t - 1) * (step_s > piece ? step_s : piece);
}

/* The SP rule of op o in phase ph that parallel.tp_overlap pipelines, or NULL. */
static const struct tp_rule *overlapped_rule(const struct builder *b, const struct par_op *o,
					     enum par_phase ph)
{
	if (!b->tp_overlap || b->tp < 2 || !par_tp_overlaps(o))
		return NULL;
	int bwd = ph == PAR_BWD && !o->recompute;
	for (size_t i = 0; i < ARRAY_SIZE(tp_rules); i++) {
		const struct tp_rule *r = &tp_rules[i];
		if (r->backward == bwd && r->sp && r->kernel == o->kernel && r->part == o->part)
			return r;
	}
	return NULL;
}

/* One ring step's send to the next TP rank or receive from the previous. */
static uint32_t ring_p2p(struct builder *b, int send, const char *coll, unsigned k, double bytes,
			 enum sim_phase lp)
{
	char name[160];
	sim_fmt(name, sizeof(name), "%s.step%u.%s", coll, k, send ? "send" : "recv");
	uint32_t i = send ? sim_program_send(b->prog, STREAM_TP, name, SLOT_TP, SIM_PEER_NEXT, bytes)
			  : sim_program_recv(b->prog, STREAM_TP_RECV, name, SLOT_TP, SIM_PEER_PREV,
					     bytes);
	par_b_label(b, lp, 1, NULL);
	sim_program_tag(b->prog, TAG_ACT);
	return i;
}

/*
 * Kernel o (named name, labelled lp) as t pieces pipelined with its SP
 * collective's t - 1 ring steps of S / t bytes each (SPEC C30), the steps on
 * the TP streams beside the compute stream. Each piece is a GEMM of a t-th
 * of the rows (par_tp_piece), timed by the compute model as such: its own
 * launch, and the efficiency of its shape. All-gather before
 * a column-parallel GEMM: piece 0 multiplies the rank's own shard while
 * step 0 passes it on; step k passes on what step k - 1 received and piece
 * k + 1 multiplies it. Reduce-scatter after a row-parallel GEMM: piece k
 * computes the partial sums of one chunk, which step k sends on with what
 * step k - 1 brought; the next kernel waits for the last step. Returns 0
 * (nothing appended) where the kernel's collective is not overlapped.
 */
int par_tp_overlapped(struct builder *b, const struct par_op *o, enum par_phase ph,
		      const char *where, const char *name, enum sim_phase lp)
{
	const struct tp_rule *r = overlapped_rule(b, o, ph);
	if (!r)
		return 0;
	uint32_t t = b->tp;
	const struct par_training *tr = &b->local;
	double bytes = rule_bytes(r, (double)tr->seq * tr->micro_batch, b->t->model->hidden) / t;
	char coll[128], mb[24], piece_name[128];
	par_b_mb_label(b, mb, sizeof(mb));
	sim_fmt(coll, sizeof(coll), "tp.%s.%s.%s.%s.%s", where, mb,
		ph == PAR_BWD && !o->recompute ? "bwd" : "fwd", o->name, sim_coll_op_name(r->op));
	uint32_t start = b->last_compute, recv = NO_OP;
	struct par_op part;
	par_tp_piece(o, t, b->t->training->precision, &part);
	sim_ps piece_ps = sim_ps_from_s(par_compute_time_s(b->t->compute, &part));
	for (uint32_t k = 0; k < t; k++) {
		if (k && r->before)
			par_b_wait(b, recv);  /* piece k multiplies what step k - 1 got */
		sim_fmt(piece_name, sizeof(piece_name), "%s.piece%u", name, k);
		b->last_compute = sim_program_compute(b->prog, STREAM_COMPUTE, piece_name, piece_ps,
						      part.flops, part.bytes);
		par_b_label(b, lp, 1, o->name);
		par_b_take_waits(b);
		if (k + 1 == t)
			break;
		uint32_t piece = b->last_compute;
		ring_p2p(b, 1, coll, k, bytes, lp);
		uint32_t after = r->before ? (k ? recv : start) : piece;
		if (after != NO_OP)
			sim_program_dep(b->prog, after);
		if (!r->before && k)
			sim_program_dep(b->prog, recv);  /* adds what it received */
		recv = ring_p2p(b, 0, coll, k, bytes, lp);
		if (!k && start != NO_OP)
			sim_program_dep(b->prog, start);
	}
	if (!r->before)
		par_b_wait(b, recv);  /* the next kernel reads the reduced chunk */
	return 1;
}

/* Issue the tensor-parallel collectives a kernel needs before or after it
 * (those parallel.tp_overlap pipelines with it are par_tp_overlapped's). */
void par_tp_hook(struct builder *b, const struct par_op *o, enum par_phase ph, int before,
		    const char *where)
{
	if (b->tp < 2)
		return;
	int bwd = ph == PAR_BWD && !o->recompute;
	const struct par_training *tr = &b->local;
	double T = (double)tr->seq * tr->micro_batch;
	const struct tp_rule *skip = overlapped_rule(b, o, ph);
	for (size_t i = 0; i < ARRAY_SIZE(tp_rules); i++) {
		const struct tp_rule *r = &tp_rules[i];
		if (r->backward != bwd || r->before != before || r->sp != b->sp ||
		    r->kernel != o->kernel || r->part != o->part || r == skip)
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
