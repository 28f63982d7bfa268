/*
 * dp_bucket.c - the machinery of data parallelism with replicated
 * parameters and bucketed gradients, shared by PyTorch DDP (dp_ddp.c) and
 * DeepSpeed's ZeRO stages 1 and 2 (dp_zero1.c, dp_zero2.c); each chooses
 * its policy (struct dp_bucket_policy, dp-int.h) in its init hook.
 *
 * As each weight-gradient op finishes, its parameters join the open bucket
 * in backward order; a bucket closes once it holds at least
 * parallel.ddp.bucket bytes (whole tensors, PyTorch's rule). Then:
 *   ddp    all-reduces each bucket at once (overlapping the backward) when
 *          ddp.overlap is on, else after the backward; only the last
 *          micro-batch reduces (gradient accumulation: no_sync before);
 *   zero1  shards the optimizer states: reduce-scatters the buckets after the
 *          backward of the last micro-batch, steps on its shard, all-gathers
 *          the updated parameters (SPEC C18: 2Ψ, as DDP's all-reduce);
 *   zero2  shards gradients too: reduce-scatters each bucket during the
 *          backward of every micro-batch (the shard accumulates), steps,
 *          all-gathers.
 * With ddp.overlap_grad_reduce (Megatron-Core's --overlap-grad-reduce), or
 * ddp.overlap_param_gather, which implies it, ZeRO-1 reduce-scatters each
 * bucket during the last micro-batch's backward; with overlap_param_gather
 * (--overlap-param-gather) the updated
 * parameters are all-gathered during the next step's forward instead of
 * after the step: in this step's program (the steady state), the gathers of
 * the previous update start at once, bucket by bucket in forward order
 * (layers grouped to at least ddp.bucket bytes, the head with the last
 * layer), and the first forward of each layer waits for its bucket.
 * Memory (SPEC C12): 2Ψ weights, 2Ψ gradients (2Ψ/N with zero2), 12Ψ
 * optimizer (12Ψ/N with zero1 and zero2), plus two buckets in flight.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "parallel/dp-int.h"
#include "sim/units.h"

/* The strategy's bucket state (b->dp_state). */
struct dp_bucket {
	struct dp_bucket_policy p;
	double open;                 /* gradient bytes in the open bucket    */
	double *held;                /* closed buckets not yet issued        */
	unsigned nheld, nops;
	uint32_t *gather;            /* per layer piece (gather ahead): its
				      * gather op                            */
};

static struct dp_bucket *state(const struct builder *b)
{
	BUG_ON(!b->dp_state);
	return b->dp_state;
}

void par_dpb_init(struct builder *b, const struct dp_bucket_policy *p)
{
	struct dp_bucket *s = xcalloc(1, sizeof(*s));
	s->p = *p;
	b->dp_state = s;
}

void par_dpb_fini(struct builder *b)
{
	struct dp_bucket *s = b->dp_state;
	if (s) {
		free(s->held);
		free(s->gather);
		free(s);
	}
	b->dp_state = NULL;
}

/* Reduce one closed bucket: all-reduce (ddp) or reduce-scatter (zero). */
static void bucket_issue(struct builder *b, double bytes, uint32_t after)
{
	struct dp_bucket *s = state(b);
	int ar = s->p.reduce == SIM_COLL_ALLREDUCE;
	char name[64];
	sim_fmt(name, sizeof(name), "%s.bucket%u.%s", b->dp->name, s->nops++,
		ar ? "allreduce" : "reducescatter");
	b->last_grad_comm = par_b_coll(b, STREAM_GRAD, name, s->p.reduce, SLOT_DP, bytes, after);
	par_b_label(b, SIM_PHASE_BWD, 0, NULL);
}

/* Close the open bucket after op `after`; issue it now or hold it. */
static void bucket_close(struct builder *b, uint32_t after, int last)
{
	struct dp_bucket *s = state(b);
	if (s->open > 0) {
		s->held = xreallocarray(s->held, s->nheld + 1, sizeof(double));
		s->held[s->nheld++] = s->open;
		s->open = 0;
	}
	if (!s->p.overlap && !last)
		return;
	for (unsigned i = 0; i < s->nheld; i++)
		bucket_issue(b, s->held[i], after);
	s->nheld = 0;
}

void par_dpb_grads(struct builder *b, double params, uint32_t op)
{
	struct dp_bucket *s = state(b);
	s->open += params * b->grad_elem;
	if (s->open >= b->t->layout->ddp.bucket_bytes)
		bucket_close(b, op, 0);
}

void par_dpb_backward_end(struct builder *b, uint32_t last)
{
	bucket_close(b, last, 1);
}

/* All-gather `total` bytes over a slot in buckets of `cap`, the first
 * after op `after`; `what` names them. */
static void gather_buckets(struct builder *b, const char *what, unsigned slot, double total,
			   double cap, uint32_t after)
{
	unsigned k = 0;
	for (double done = 0; done < total; done += cap, k++) {
		char name[64];
		sim_fmt(name, sizeof(name), "%s.%s%u.allgather", b->dp->name, what, k);
		double bytes = total - done < cap ? total - done : cap;
		b->last_param_comm = par_b_coll(b, STREAM_PARAM, name, SIM_COLL_ALLGATHER,
						slot, bytes, k ? NO_OP : after);
	}
}

/* ZeRO-1/2: all-gather the updated parameters, bucket by bucket: the dense
 * ones over the data-parallel group, the routed experts over the ranks
 * that hold the same experts (their shards). */
void par_dpb_after_step(struct builder *b, uint32_t step)
{
	if (!state(b)->p.gather_params || state(b)->p.gather_ahead)
		return;  /* none, or the next step's forward gathers them */
	double e = 2 * par_b_expert_params(b), cap = b->t->layout->ddp.bucket_bytes;
	gather_buckets(b, "params", SLOT_DP, 2 * par_b_params(b) - e, cap, step);
	if (e > 0 && par_step_expert_shard(b->s) > 1)
		gather_buckets(b, "experts", SLOT_EDP, e, cap, step);
}

/*
 * The all-gathers par_dpb_after_step issues: ceil(2 x params / ddp.bucket), which
 * no other key bounds (the bucket may be 1 B). Gradient buckets, and the
 * gathers ahead of overlap_param_gather, hold whole tensors: at most one per
 * layer piece, so the program's other ops bound them.
 */
int par_dpb_check_gathers(const struct builder *b, double *most, char *err, size_t errlen)
{
	/* The program is built and its state freed: the layout says it. */
	if (b->dpn <= 1 || b->t->layout->ddp.overlap_param_gather)
		return 0;
	double e = 2 * par_b_expert_params(b), total = 2 * par_b_params(b);
	double cap = b->t->layout->ddp.bucket_bytes;
	int split = e > 0 && par_step_expert_shard(b->s) > 1;  /* experts gathered apart */
	double n = split ? ceil((total - e) / cap) + ceil(e / cap) : ceil((total - e) / cap);
	if (n <= PAR_MAX_PARAM_GATHERS || n <= *most)
		return 0;
	*most = n;
	/* The smallest bucket that will do (two partial buckets where the
	 * experts are apart), rounded up to the 3 digits printed. */
	double min = ceil(total / (PAR_MAX_PARAM_GATHERS - split));
	double unit = min >= 1000 ? pow(10, floor(log10(min)) - 2) : 1;
	char have[32], params[32], need[32];
	sim_units_format(SIM_UNIT_BYTES, cap, have, sizeof(have));
	sim_units_format(SIM_UNIT_BYTES, total, params, sizeof(params));
	sim_units_format(SIM_UNIT_BYTES, ceil(min / unit) * unit, need, sizeof(need));
	return sim_errf(err, errlen, "parallel.ddp.bucket: %s gives %.0f parameter all-gathers "
			"per step (%s gathers the %s of parameters of a GPU of stage %u in buckets "
			"of that size): at most %d; use a bucket of at least %s", have, n,
			b->dp->name, params, b->stage, PAR_MAX_PARAM_GATHERS, need);
}

/* The pieces of parameters in forward order, while the gathers are planned. */
struct gather_plan {
	struct builder *b;
	int *piece;
	double *bytes, *experts;   /* dense, routed experts' */
	size_t n, cap;
};

static void plan_piece(void *ctx, int piece, double params)
{
	struct gather_plan *g = ctx;
	if (g->n == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 64;
		g->piece = xreallocarray(g->piece, g->cap, sizeof(int));
		g->bytes = xreallocarray(g->bytes, g->cap, sizeof(double));
		g->experts = xreallocarray(g->experts, g->cap, sizeof(double));
	}
	double e = par_b_layer_expert_params(g->b, piece);
	g->piece[g->n] = piece;
	g->bytes[g->n] = 2 * (params - e);  /* the parameters in bf16 */
	g->experts[g->n++] = 2 * e;
}

/*
 * Issue the previous update's gathers at the start of the program, pieces
 * grouped into buckets of the gradient buckets' parameter count (at least
 * ddp.bucket bytes of gradients; a bucket does not end just before the
 * head), and note for each layer (gather[piece + 2]) the gather its first
 * forward waits for. A bucket's routed experts are gathered after its dense
 * parameters, over the ranks that hold the same experts; the layer waits
 * for the later one (the stream runs them in order).
 */
static void plan_gathers(struct builder *b)
{
	struct dp_bucket *s = state(b);
	struct gather_plan g = { .b = b };
	unsigned L = b->t->model->layers;
	double cap = b->t->layout->ddp.bucket_bytes / b->grad_elem * 2, acc = 0, eacc = 0;
	int edp = par_step_expert_shard(b->s) > 1;
	size_t start = 0;
	unsigned k = 0;
	par_b_each_param(b, plan_piece, &g);
	s->gather = xmalloc((L + 2) * sizeof(uint32_t));
	for (unsigned i = 0; i < L + 2; i++)
		s->gather[i] = NO_OP;
	for (size_t i = 0; i < g.n; i++) {
		acc += g.bytes[i], eacc += g.experts[i];
		int last = i + 1 == g.n;
		if (!last && (acc + eacc < cap || g.piece[i + 1] == -2))
			continue;
		char name[64];
		uint32_t op = NO_OP;
		if (acc > 0 || !(eacc > 0 && edp)) {
			sim_fmt(name, sizeof(name), "%s.params%u.allgather", b->dp->name, k);
			op = par_b_coll(b, STREAM_PARAM, name, SIM_COLL_ALLGATHER, SLOT_DP, acc,
					NO_OP);
		}
		if (eacc > 0 && edp) {
			sim_fmt(name, sizeof(name), "%s.experts%u.allgather", b->dp->name, k);
			op = par_b_coll(b, STREAM_PARAM, name, SIM_COLL_ALLGATHER, SLOT_EDP, eacc,
					NO_OP);
		}
		k++;
		b->last_param_comm = op;
		for (size_t j = start; j <= i; j++)
			s->gather[g.piece[j] + 2] = op;
		start = i + 1;
		acc = 0, eacc = 0;
	}
	free(g.piece);
	free(g.bytes);
	free(g.experts);
}

/* Before a layer's (or the embedding's) first forward: wait for its bucket. */
void par_dpb_layer_begin(struct builder *b, int l, enum par_phase ph)
{
	struct dp_bucket *s = state(b);
	if (!s->p.gather_ahead || ph != PAR_FWD)
		return;
	if (!s->gather)
		plan_gathers(b);
	uint32_t *g = &s->gather[l + 2];
	par_b_wait(b, *g);
	*g = NO_OP;  /* later forwards of the layer come after it on the stream */
}

void par_dpb_memory(const struct builder *b, double *bytes)
{
	par_b_states(b, par_dp_zero_stage(b->dp), bytes);
	bytes[PAR_MEM_BUFFERS] = b->dpn > 1 ? 2 * b->t->layout->ddp.bucket_bytes : 0;
}

/* As par_step_states: the routed experts sharded over their own group. */
double par_dp_plan_states(const struct par_dp_costs *c, unsigned zero)
{
	struct par_states st;
	par_moe_model_states(c->params, c->expert_params, c->precision, c->optimizer, zero, c->dp,
			     c->expert_dp, c->layout->ddp.fp32_grads, &st);
	return st.weights + st.grads + st.optimizer;
}

/* The planner counts two buckets whatever the group (a group of one holds
 * none in the simulator: an estimate, on the safe side). */
void par_dpb_plan_memory(const struct par_dp_costs *c, unsigned zero, struct par_dp_mem *m)
{
	m->states = par_dp_plan_states(c, zero);
	m->buffers = 2 * c->layout->ddp.bucket_bytes;
}

/* ---- the planner's closed forms ------------------------------------------ */

void par_dpb_plan_add(struct par_dp_chunk *c, double *open, double cap, double bytes)
{
	*open += bytes;
	if (*open >= cap)
		par_dpb_plan_close(c, open);
}

void par_dpb_plan_close(struct par_dp_chunk *c, double *open)
{
	double b = *open;
	if (!(b > 0))
		return;
	*open = 0;
	c->bytes += b;
	c->last = b;
	unsigned near = 0;
	for (unsigned i = 0; i < c->nbucket; i++) {
		if (c->bucket[i].bytes == b) {
			c->bucket[i].n++;
			return;
		}
		if (fabs(c->bucket[i].bytes - b) < fabs(c->bucket[near].bytes - b))
			near = i;
	}
	if (c->nbucket < PAR_DP_PLAN_SIZES) {
		c->bucket[c->nbucket++] = (struct par_dp_bucket){ .bytes = b, .n = 1 };
		return;
	}
	/* More sizes than kept: the nearest one takes it, its bytes averaged
	 * (the chunk's bytes stay exact). */
	struct par_dp_bucket *k = &c->bucket[near];
	k->bytes = (k->bytes * k->n + b) / (k->n + 1);
	k->n++;
}

/*
 * The reductions of a step on one stream, chunk by chunk as backward_end
 * (or, with overlap, each bucket as it closes) issues them: chunk j's may
 * start `lead` before its last backward ends (its share of a micro-batch's
 * backward with overlap, else 0), which is after_s before the step's last
 * backward ends; each takes the sum of its buckets' collectives (whole:
 * one collective of the chunk's bytes), the routed experts' first, during
 * the chunk's last backward (moe_step.c). The time the stream runs past the
 * last backward; *busy (if not NULL) the stream's whole time.
 */
double par_dpb_plan_reduce(const struct par_dp_costs *c, enum sim_coll_op op, int whole,
			   int overlap, double *busy)
{
	double end = -INFINITY, sum = 0;
	double lead = overlap && c->nchunks ? c->backward_s / c->nchunks : 0;
	for (uint32_t j = 0; j < c->nchunks; j++) {
		const struct par_dp_chunk *k = &c->chunk[j];
		double r = 0;
		if (whole && k->bytes > 0)
			r = c->coll_s(c->coll_ctx, op, k->bytes);
		for (unsigned i = 0; !whole && i < k->nbucket; i++)
			r += k->bucket[i].n * c->coll_s(c->coll_ctx, op, k->bucket[i].bytes);
		sum += r + par_dpb_plan_experts(c, k, op, &end);
		end = fmax(end, -k->after_s - lead) + r;
	}
	if (busy)
		*busy = sum;
	return fmax(0, end);
}

double par_dpb_plan_experts(const struct par_dp_costs *c, const struct par_dp_chunk *k,
			    enum sim_coll_op op, double *end)
{
	if (!k->nexperts || c->expert_dp < 2 || !c->expert_coll_s)
		return 0;
	double x = k->nexperts * c->expert_coll_s(c->coll_ctx, op, k->expert_bytes);
	/* They go as each MoE layer's backward ends, through the chunk's last
	 * backward: from its start on, the last no earlier than its end. */
	*end = fmax(fmax(*end, -k->after_s - c->backward_s / c->nchunks) + x,
		    -k->after_s + x / k->nexperts);
	return x;
}

double par_dpb_plan_chunk_s(const struct par_dp_costs *c, enum sim_coll_op op, uint32_t j)
{
	if (j >= c->nchunks)
		return 0;
	const struct par_dp_chunk *k = &c->chunk[j];
	double r = 0, end = 0;
	for (unsigned i = 0; i < k->nbucket; i++)
		r += k->bucket[i].n * c->coll_s(c->coll_ctx, op, k->bucket[i].bytes);
	return r + par_dpb_plan_experts(c, k, op, &end);
}

/* Buckets of `cap` over `total` bytes, the last one the rest. */
static double gathers_s(const struct par_dp_costs *c, double (*coll)(void *, enum sim_coll_op,
								     double),
			double total, double cap)
{
	double full = floor(total / cap), rest = total - full * cap;
	return full * coll(c->coll_ctx, SIM_COLL_ALLGATHER, cap) +
	       (rest > 0 ? coll(c->coll_ctx, SIM_COLL_ALLGATHER, rest) : 0);
}

/*
 * ZeRO-1/2: the all-gathers of the updated parameters, as
 * par_dpb_after_step issues them (buckets of ddp.bucket bytes of bf16
 * parameters, the last one the rest; the routed experts' apart, over
 * the ranks that hold them), exposed whole after the step; with
 * ddp.overlap_param_gather the next forward's first micro-batch hides
 * what it can (its layers wait for their gathers in order; the pieces are
 * counted as these buckets). *busy (if not NULL): the gathers' whole time.
 */
double par_dpb_plan_gather(const struct par_dp_costs *c, double *busy)
{
	double e = 2 * c->expert_params, cap = c->layout->ddp.bucket_bytes;
	double g = gathers_s(c, c->coll_s, 2 * c->params - e, cap);
	if (e > 0 && c->expert_dp > 1 && c->expert_coll_s)
		g += gathers_s(c, c->expert_coll_s, e, cap);
	if (busy)
		*busy = g;
	return c->layout->ddp.overlap_param_gather ? fmax(0, g - (c->stage_s - c->backward_s)) : g;
}
