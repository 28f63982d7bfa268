/*
 * cp.c - context parallelism in the step: ring attention (contiguous or
 * zig-zag blocks under the causal mask, SPEC C25, C26) and Ulysses
 * all-to-alls (SPEC C27) in place of each attention kernel.
 */
#include "parallel/train-int.h"

/* ---- context parallelism ------------------------------------------------- */

/* One attention kernel of `flops` on the compute stream. */
static uint32_t attn_kernel(struct builder *b, const struct par_op *like, const char *name,
			    double flops, double bytes)
{
	struct par_op o = *like;
	o.flops = flops;
	o.bytes = bytes;
	sim_ps d = sim_ps_from_s(par_compute_time_s(b->t->compute, &o));
	b->last_compute = sim_program_compute(b->prog, STREAM_COMPUTE, name, d, flops, bytes);
	par_b_label(b, b->sub_phase, 1, like->name);
	par_b_take_waits(b);
	return b->last_compute;
}

double par_cp_ring_share(enum par_cp_algo algo, uint32_t r, uint32_t k)
{
	if (algo == PAR_CP_ZIGZAG || k == 0)
		return 0.5;
	return r >= k ? 1.0 : 0.0;
}

void par_cp_ring_sizes(const struct par_model *m, const struct par_training *local, uint32_t tp,
		       int bwd, struct par_cp_ring *out)
{
	double c = local->seq, bt = local->micro_batch;
	double heads = (double)m->heads / tp, kv = m->kv_heads >= tp ? (double)m->kv_heads / tp : 1;
	out->full_flops = 4.0 * bt * heads * c * c * m->head_dim * (bwd ? 2.5 : 1);
	out->kv_bytes = 2.0 * 2 * bt * c * kv * m->head_dim * (bwd ? 2 : 1);
	out->q_bytes = 2.0 * 2 * bt * c * heads * m->head_dim;
}

static double ring_share(const struct builder *b, uint32_t k)
{
	return par_cp_ring_share(b->t->layout->cp_algo, b->cpi, k);
}

/*
 * Ring attention (SPEC C25): each rank keeps its queries and passes K/V
 * blocks around the CP ring, N rounds; round k computes against the block
 * received in round k-1 while the next block travels. The backward passes
 * K/V and their gradients (twice the bytes) and computes 2.5x.
 */
static void ring_attention(struct builder *b, const struct par_op *o, int bwd, const char *where)
{
	uint32_t N = b->cp, next = (b->cpi + 1) % N, prev = (b->cpi + N - 1) % N;
	struct par_cp_ring sz;
	par_cp_ring_sizes(b->t->model, &b->local, b->tp, bwd, &sz);
	double full = sz.full_flops, kv_bytes = sz.kv_bytes, q_bytes = sz.q_bytes;
	char name[128], mb[24];
	par_b_mb_label(b, mb, sizeof(mb));
	uint32_t start = b->last_compute, recv = NO_OP;
	for (uint32_t k = 0; k < N; k++) {
		if (k + 1 < N) {  /* pass the block on; receive the next one */
			sim_fmt(name, sizeof(name), "cp.%s.%s.%s.ring%u.send", where, mb,
				bwd ? "bwd" : "fwd", k);
			sim_program_send(b->prog, STREAM_CP_SEND, name, SLOT_CP, next, kv_bytes);
			par_b_label(b, b->sub_phase, 1, NULL);
			sim_program_tag(b->prog, bwd ? TAG_DKV : TAG_KV);
			uint32_t after = k ? recv : start;
			if (after != NO_OP)
				sim_program_dep(b->prog, after);
			sim_fmt(name, sizeof(name), "cp.%s.%s.%s.ring%u.recv", where, mb,
				bwd ? "bwd" : "fwd", k);
			uint32_t r = sim_program_recv(b->prog, STREAM_CP_RECV, name, SLOT_CP, prev,
						      kv_bytes);
			par_b_label(b, b->sub_phase, 1, NULL);
			sim_program_tag(b->prog, bwd ? TAG_DKV : TAG_KV);
			if (k == 0 && start != NO_OP)
				sim_program_dep(b->prog, start);
			if (k)
				par_b_wait(b, recv);  /* round k computes what round k-1 got */
			double share = ring_share(b, k);
			sim_fmt(name, sizeof(name), "%s.%s.%s.%s.ring%u", where, mb, bwd ? "bwd" : "fwd",
				o->name, k);
			if (share > 0)
				attn_kernel(b, o, name, share * full, q_bytes + kv_bytes);
			recv = r;
			continue;
		}
		par_b_wait(b, recv);
		sim_fmt(name, sizeof(name), "%s.%s.%s.%s.ring%u", where, mb, bwd ? "bwd" : "fwd",
			o->name, k);
		double share = ring_share(b, k);
		if (share > 0 || N == 1)
			attn_kernel(b, o, name, share * full, q_bytes + kv_bytes);
		else
			par_b_mem(b, "cp.masked", PAR_MEM_ACTIVATIONS, 0);  /* takes the wait */
	}
}

/*
 * Ulysses (SPEC C27): an all-to-all turns sequence shards into head shards
 * (Q, K, V in), attention runs on the whole sequence for heads / N, and an
 * all-to-all turns the output back; the backward mirrors both.
 */
static void ulysses_attention(struct builder *b, const struct par_op *o, int bwd, const char *where)
{
	const struct par_model *m = b->t->model;
	double c = b->local.seq, bt = b->local.micro_batch, N = b->cp;
	double heads = (double)m->heads / b->tp, kv = (double)m->kv_heads / b->tp;
	double qkv = 2.0 * bt * c * (heads + 2 * kv) * m->head_dim, out = 2.0 * bt * c * heads * m->head_dim;
	char name[128], mb[24];
	par_b_mb_label(b, mb, sizeof(mb));
	sim_fmt(name, sizeof(name), "cp.%s.%s.%s.ulysses.in.alltoall", where, mb, bwd ? "bwd" : "fwd");
	uint32_t in = par_b_coll(b, STREAM_CP_SEND, name, SIM_COLL_ALLTOALL, SLOT_CP,
				 bwd ? out : qkv, b->last_compute);
	par_b_label(b, b->sub_phase, 1, NULL);
	par_b_wait(b, in);
	struct par_op full = *o;
	full.heads = (unsigned)(heads / N > 1 ? heads / N : 1);
	full.seq = (unsigned)(c * N);
	sim_fmt(name, sizeof(name), "%s.%s.%s.%s", where, mb, bwd ? "bwd" : "fwd", o->name);
	/* All N c tokens for heads / N: the same FLOPs as the local op times N. */
	attn_kernel(b, &full, name, o->flops * N, o->bytes);
	sim_fmt(name, sizeof(name), "cp.%s.%s.%s.ulysses.out.alltoall", where, mb, bwd ? "bwd" : "fwd");
	uint32_t back = par_b_coll(b, STREAM_CP_SEND, name, SIM_COLL_ALLTOALL, SLOT_CP,
				   bwd ? qkv : out, b->last_compute);
	par_b_label(b, b->sub_phase, 1, NULL);
	par_b_wait(b, back);
}

void par_cp_attention(struct builder *b, const struct par_op *o, int bwd, const char *where)
{
	if (b->t->layout->cp_algo == PAR_CP_ULYSSES)
		ulysses_attention(b, o, bwd, where);
	else
		ring_attention(b, o, bwd, where);
}
