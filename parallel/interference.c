/*
 * interference.c - compute and communication slowed by each other
 * (compute.interference: measured; docs/calibration.md, "Interference").
 *
 * The engine asks, as a compute op starts on a rank whose communication
 * holds k CUDA blocks (sim_set_interference), for the factor of its time:
 * the compute model's measured curve for an op of its kind at k
 * (par_compute_interference); and, for communication inside a node beside
 * a compute op, the factor of the communication kernel's time beside an op
 * of that kind (par_comm_interference). The kind is read from the op's fields: an
 * attention kernel by its label's kernel, else compute-bound (the GEMM
 * curves, by its FLOPs) when its FLOPs per byte reach the GPU's ridge
 * (peak over HBM bandwidth), else memory-bound.
 */
#include "parallel/train-int.h"

#include <string.h>

/* op as the compute model's kind of kernel. */
static struct par_op kernel_of(const struct par_interf_state *s, const struct sim_op *op)
{
	struct par_op o = { .flops = op->flops, .bytes = op->bytes };
	if (op->kernel && (op->kernel == s->attn[0] || op->kernel == s->attn[1]))
		o.cls = PAR_OP_ATTENTION;
	else if (op->flops > 0 && !(op->bytes > 0 && op->flops / op->bytes < s->ridge))
		o.cls = PAR_OP_GEMM;
	else
		o.cls = PAR_OP_MEMBOUND;
	return o;
}

/* The factor for op beside `blocks` (comm: of the communication beside
 * it), from the memo or the compute model's curves. */
static double memo_factor(struct par_interf_state *s, const struct sim_op *op, unsigned blocks,
			  int comm)
{
	uint64_t a, b;
	memcpy(&a, &op->flops, sizeof(a));
	memcpy(&b, &op->bytes, sizeof(b));
	uint64_t h = (a * 0x9e3779b97f4a7c15ull) ^ (b * 0xc2b2ae3d27d4eb4full) ^
		     ((uint64_t)(uintptr_t)op->kernel * 0x165667b19e3779f9ull) ^
		     ((uint64_t)blocks << 1 | (uint64_t)comm);
	struct par_interf_memo *m = &s->memo[(h ^ h >> 29) % PAR_INTERF_MEMO];
	if (m->used && m->flops == op->flops && m->bytes == op->bytes && m->kernel == op->kernel &&
	    m->blocks == blocks && m->comm == comm)
		return m->f;
	struct par_op o = kernel_of(s, op);
	double f = comm ? par_comm_interference(s->cm, &o, blocks)
			: par_compute_interference(s->cm, &o, blocks);
	*m = (struct par_interf_memo){ .flops = op->flops, .bytes = op->bytes, .f = f,
				       .kernel = op->kernel, .blocks = blocks,
				       .comm = (uint8_t)comm, .used = 1 };
	return f;
}

static double interf_factor(void *ctx, uint32_t rank, const struct sim_op *op, unsigned blocks)
{
	(void)rank;
	return memo_factor(ctx, op, blocks, 0);
}

static double interf_comm(void *ctx, uint32_t rank, const struct sim_op *beside, unsigned blocks)
{
	(void)rank;
	return memo_factor(ctx, beside, blocks, 1);
}

void par_interf_begin(struct par_interf_state *s, const struct par_train *t, struct sim *sim)
{
	const struct topo_gpu *g = topo_gpu_find(t->cluster->gpu);
	*s = (struct par_interf_state){
		.cm = t->compute,
		.ridge = par_compute_peak(t->compute) / g->hbm_Bps,
		.attn = { par_kernel_name(PAR_K_ATTN, PAR_PART_FWD),
			  par_kernel_name(PAR_K_ATTN, PAR_PART_DX) },
	};
	sim_set_interference(sim, interf_factor, interf_comm, s);
}
