/*
 * dp_shard.c - the machinery of data parallelism with sharded parameters,
 * shared by DeepSpeed ZeRO-3 (dp_zero3.c) and PyTorch FSDP (dp_fsdp.c: full
 * shard, and HSDP); each chooses its policy (struct dp_shard_policy,
 * dp-int.h) in its init hook.
 *
 * The model is cut into units: FSDP wraps parallel.fsdp.unit_layers layers
 * per unit, ZeRO-3 one layer; the embedding and the head form the root unit,
 * gathered at the start of the forward and kept to the end of the backward.
 * For every micro-batch, each unit:
 *   forward   all-gathers its parameters before its first op (with prefetch,
 *             the next unit's gather is issued when this unit starts, so it
 *             overlaps this unit's compute; without, compute waits for
 *             every gather) and frees them after its last op when resharding;
 *   backward  gathers them again (only if they were freed; prefetched one
 *             unit ahead), holds the unit's full gradients, reduce-scatters
 *             them after its last op and frees parameters and gradients.
 * HSDP shards over the GPUs of a node and replicates across nodes: after the
 * reduce-scatter inside the node, the shard is all-reduced across nodes.
 *
 * Modules (DeepSpeed ZeRO-3): a layer's units are its weight GEMMs (nn.Linear
 * modules); norms and biases, tensors under parallel.zero3.persistence
 * elements, stay whole on every GPU and are never gathered. The modules are
 * fetched in program order (the micro-batch's forward, then per layer the
 * recomputed forward with full recomputation and the backward), the trace
 * DeepSpeed records and prefetches along: when a module is reached it is
 * all-gathered now if no earlier call brought it, the compute waits for it,
 * and one call gathers the coming modules not yet issued until at least
 * parallel.zero3.prefetch_bucket elements are on their way, or what
 * parallel.zero3.max_live leaves of the elements gathered and not yet freed
 * (a module larger than the bucket goes alone: one call per module,
 * prefetched one ahead). It is freed after its
 * forward GEMM, or its weight gradient in backward. Where another
 * micro-batch's forward comes between a micro-batch's forward and its
 * backward (GPipe's order), the backward's fetches start again at its
 * first, gathered when reached, and what the forward had gathered ahead
 * for it is let go. Gradients join a bucket
 * in backward order; at parallel.zero3.reduce_bucket elements (and at the
 * end of each micro-batch's backward) the bucket is reduce-scattered. The
 * root unit (embedding, head) is gathered and kept as above.
 * Communication per step (SPEC C18): 3Ψ, all-gather twice and reduce-scatter
 * once (2Ψ without resharding). Memory (SPEC C12): (2 + 2 + 12)Ψ/N, plus the
 * gathered units (SPEC C19).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "parallel/dp-int.h"

/* Parameters gathered and computed in bf16 (FSDP mixed precision). */
#define PARAM_BYTES 2.0

/* The strategy's shard state (b->dp_state). */
struct dp_shard {
	struct dp_shard_policy p;
	uint32_t *gather;            /* per phase and unit: its gather issued
				      * ahead, or NO_OP                     */
	unsigned units;
	/* Modules: a micro-batch's fetches in order, their elements, the call
	 * that brings each (NO_OP: none yet); the next fetch, the first not yet
	 * issued, the one in use; the open gradient bucket. */
	double *seq;
	uint32_t *call;
	uint8_t *alone;              /* plan_calls' decisions                */
	unsigned *pre_to;
	unsigned nseq, nfwd, ev, next, cur, nrs;
	uint32_t mb;                 /* the micro-batch the fetches are of    */
	double rs_open;
};

static struct dp_shard *state(const struct builder *b)
{
	BUG_ON(!b->dp_state);
	return b->dp_state;
}

void par_dps_init(struct builder *b, const struct dp_shard_policy *p)
{
	struct dp_shard *s = xcalloc(1, sizeof(*s));
	s->p = *p;
	BUG_ON(s->p.unit_layers < 1);
	b->dp_state = s;
}

void par_dps_fini(struct builder *b)
{
	struct dp_shard *s = b->dp_state;
	if (s) {
		free(s->seq);
		free(s->call);
		free(s->alone);
		free(s->pre_to);
		free(s->gather);
		free(s);
	}
	b->dp_state = NULL;
}

static unsigned unit_layers(const struct builder *b)
{
	return state(b)->p.unit_layers;
}

static int prefetch(const struct builder *b)
{
	return state(b)->p.prefetch;
}

static int reshard(const struct builder *b)
{
	return state(b)->p.reshard;
}

/* Units: index u covers layers [u*k, (u+1)*k); the root unit is -1. */
static int unit_of(const struct builder *b, int l)
{
	return l < 0 ? -1 : l / (int)unit_layers(b);
}

static int unit_count(const struct builder *b)
{
	unsigned k = unit_layers(b), L = b->t->model->layers;
	return (int)((L + k - 1) / k);
}

static double unit_params(const struct builder *b, int u)
{
	if (u < 0)
		return par_b_layer_params(b, -1);
	unsigned k = unit_layers(b), L = b->t->model->layers, first = (unsigned)u * k;
	double p = 0;
	for (unsigned l = first; l < first + k && l < L; l++)
		p += par_b_layer_params(b, (int)l);
	return p;
}

static int first_layer(const struct builder *b, int l, enum par_phase ph)
{
	int k = (int)unit_layers(b), L = (int)b->t->model->layers;
	return ph == PAR_FWD ? l % k == 0 : (l % k == k - 1 || l == L - 1);
}

static int last_layer(const struct builder *b, int l, enum par_phase ph)
{
	return first_layer(b, l, ph == PAR_FWD ? PAR_BWD : PAR_FWD);
}

/*
 * All-gather unit u's parameters; it may start once op `after` is done
 * (NO_OP: at once). The gathered parameters count from its completion.
 */
static uint32_t gather(struct builder *b, int u, enum par_phase ph, uint32_t after)
{
	char name[64];
	sim_fmt(name, sizeof(name), "%s.unit%d.mb%u.%s.allgather", b->dp->name, u, b->mb,
		ph == PAR_FWD ? "fwd" : "bwd");
	double bytes = PARAM_BYTES * unit_params(b, u);
	uint32_t i = par_b_coll(b, STREAM_PARAM, name, SIM_COLL_ALLGATHER, SLOT_SHARD, bytes, after);
	par_b_label(b, ph == PAR_FWD ? SIM_PHASE_FWD : SIM_PHASE_BWD, 1, NULL);
	sim_program_mem(b->prog, PAR_MEM_WEIGHTS, bytes * (b->shard - 1) / b->shard);
	b->last_param_comm = i;
	return i;
}

/* The slot of the gather issued ahead for unit u in phase ph. */
static uint32_t *ahead(struct builder *b, int u, enum par_phase ph)
{
	struct dp_shard *s = state(b);
	if (!s->gather) {
		s->units = (unsigned)unit_count(b);
		s->gather = xmalloc(2 * (s->units + 1) * sizeof(uint32_t));
	}
	return &s->gather[(ph == PAR_FWD ? 0 : s->units + 1) + (unsigned)(u + 1)];
}

/* Before a unit's first op: take its prefetched gather, or gather now. */
static void unit_begin(struct builder *b, int u, enum par_phase ph)
{
	uint32_t *mine = ahead(b, u, ph);
	par_b_wait(b, *mine != NO_OP ? *mine : gather(b, u, ph, b->last_compute));
	*mine = NO_OP;
}

/*
 * Prefetch: issue the next unit's gather as this unit starts (after the
 * previous unit's last op), so it overlaps this unit's compute; one ahead.
 */
static void prefetch_next(struct builder *b, int u, enum par_phase ph)
{
	int n = unit_count(b);
	int next = ph == PAR_FWD ? u + 1 : (u < 0 ? n - 1 : u - 1);
	if (next < 0 || next >= n || (ph == PAR_BWD && !reshard(b)))
		return;
	uint32_t *slot = ahead(b, next, ph);
	if (*slot == NO_OP)
		*slot = gather(b, next, ph, b->last_compute);
}

static void modules_reset(struct builder *b);
static void modules_backward(struct builder *b);

void par_dps_layer_begin(struct builder *b, int l, enum par_phase ph)
{
	int u = unit_of(b, l);
	if (l >= 0 && !first_layer(b, l, ph))
		return;
	if (l < 0 && ph == PAR_FWD) {           /* a micro-batch starts */
		struct dp_shard *s = state(b);
		ahead(b, 0, PAR_FWD);
		for (unsigned i = 0; i < 2 * (s->units + 1); i++)
			s->gather[i] = NO_OP;
		if (s->p.modules)
			modules_reset(b);
	}
	if (l < 0 && ph == PAR_BWD && state(b)->p.modules)
		modules_backward(b);
	if (l >= 0 && state(b)->p.modules) {  /* the kernels' hooks gather */
		if (ph == PAR_BWD && b->reduce)
			par_b_mem(b, "unit.grads", PAR_MEM_GRADS,
				  b->grad_elem * unit_params(b, u));
		return;
	}
	/* In backward the root, and every unit without resharding, is still
	 * gathered from the forward. */
	if (!(ph == PAR_BWD && (u < 0 || !reshard(b))))
		unit_begin(b, u, ph);
	if (prefetch(b) && !state(b)->p.modules)
		prefetch_next(b, u, ph);
	if (ph == PAR_BWD && b->reduce)
		par_b_mem(b, "unit.grads", PAR_MEM_GRADS, b->grad_elem * unit_params(b, u));
}

/* Free a unit's gathered parameters (keep this rank's shard). */
static void unit_free(struct builder *b, int u)
{
	double bytes = PARAM_BYTES * unit_params(b, u);
	par_b_mem(b, "unit.free_params", PAR_MEM_WEIGHTS, -bytes * (b->shard - 1) / b->shard);
}

/* After a unit's backward: reduce-scatter its gradients (and, for HSDP,
 * all-reduce the shard across nodes); free them and the parameters. */
static void unit_reduce(struct builder *b, int u)
{
	char name[64];
	double grads = b->grad_elem * unit_params(b, u);
	uint32_t after = b->last_compute;
	sim_fmt(name, sizeof(name), "%s.unit%d.mb%u.reducescatter", b->dp->name, u, b->mb);
	b->last_grad_comm = par_b_coll(b, STREAM_GRAD, name, SIM_COLL_REDUCESCATTER,
				       SLOT_SHARD_RS, grads, after);
	par_b_label(b, SIM_PHASE_BWD, 1, NULL);
	sim_program_mem(b->prog, PAR_MEM_GRADS, -grads);
	if (b->shard < b->dpn) {
		sim_fmt(name, sizeof(name), "%s.unit%d.mb%u.replicas.allreduce", b->dp->name, u,
			b->mb);
		b->last_grad_comm = par_b_coll(b, STREAM_GRAD, name, SIM_COLL_ALLREDUCE,
					       SLOT_REPLICA, grads / b->shard, NO_OP);
		par_b_label(b, SIM_PHASE_BWD, 1, NULL);
	}
}

void par_dps_layer_end(struct builder *b, int l, enum par_phase ph)
{
	int u = unit_of(b, l);
	if (l >= 0 && (!last_layer(b, l, ph) || state(b)->p.modules))
		return;
	if (state(b)->p.modules) {  /* the root: its gradients are in the buckets */
		if (ph == PAR_BWD)
			unit_free(b, u);
		return;
	}
	if (ph == PAR_FWD) {
		if (u >= 0 && reshard(b))
			unit_free(b, u);
		return;
	}
	if (b->reduce)
		unit_reduce(b, u);
	unit_free(b, u);
}

void par_dps_memory(const struct builder *b, double *bytes)
{
	par_b_states(b, 3, bytes);
}

/* ---- modules (DeepSpeed ZeRO-3) ----------------------------------------- */

unsigned par_dps_layer_modules(const struct par_model *m, const struct par_training *tr,
			       unsigned tp, bool sp, double *out, unsigned max)
{
	size_t n = par_layer_ops_sp(m, tr, tp, sp, PAR_FWD, NULL, 0);
	struct par_op *ops = xmalloc((n ? n : 1) * sizeof(*ops));
	par_layer_ops_sp(m, tr, tp, sp, PAR_FWD, ops, n);
	unsigned k = 0;
	for (size_t i = 0; i < n; i++)
		if (ops[i].cls == PAR_OP_GEMM && k < max)
			out[k++] = ops[i].k * ops[i].n;
	free(ops);
	return k;
}

/* A micro-batch's fetches: for each layer forward, modules in order; then
 * each layer backward, the recomputed forward's (full recomputation) and
 * the modules in reverse. Into seq (NULL: count only); the count. */
static unsigned fetch_sequence(const double *mod, unsigned n, unsigned layers, int recompute,
			       double *seq)
{
	unsigned k = 0;
	for (unsigned l = 0; l < layers; l++)
		for (unsigned j = 0; j < n; j++, k++)
			if (seq)
				seq[k] = mod[j];
	for (unsigned l = 0; l < layers; l++) {
		for (unsigned j = 0; recompute && j < n; j++, k++)
			if (seq)
				seq[k] = mod[j];
		for (unsigned j = n; j-- > 0; k++)
			if (seq)
				seq[k] = mod[j];
	}
	return k;
}

/*
 * DeepSpeed's calls for a micro-batch's fetches, decided in order (they do
 * not depend on timing): at fetch e, e alone if no call brought it
 * (alone[e]), then the coming fetches not yet issued until at least the
 * bucket's elements, or what max_live leaves of the elements gathered and
 * not yet freed (pre_to[e]: the call covers [end of the last, pre_to[e])).
 * Returns the number of calls.
 */
static unsigned plan_calls(const double *seq, unsigned nseq, double bucket, double max_live,
			   uint8_t *alone, unsigned *pre_to)
{
	unsigned next = 0, calls = 0;
	double live = 0;
	for (unsigned e = 0; e < nseq; e++) {
		alone[e] = e >= next;
		if (alone[e])
			live += seq[e], next = e + 1, calls++;
		double cap = fmin(bucket, max_live - live), acc = 0;
		unsigned k = next;
		while (k < nseq && acc < cap)
			acc += seq[k++];
		calls += k > next;
		live += acc;
		next = pre_to[e] = k;
		live -= seq[e];
	}
	return calls;
}

unsigned par_dps_gather_calls(const double *mod, unsigned n, unsigned layers, int recompute,
			      double prefetch, double max_live)
{
	unsigned nseq = fetch_sequence(mod, n, layers, recompute, NULL);
	double *seq = xmalloc((nseq ? nseq : 1) * sizeof(double));
	uint8_t *alone = xmalloc(nseq ? nseq : 1);
	unsigned *to = xmalloc((nseq ? nseq : 1) * sizeof(unsigned));
	fetch_sequence(mod, n, layers, recompute, seq);
	unsigned calls = plan_calls(seq, nseq, prefetch, max_live, alone, to);
	free(seq);
	free(alone);
	free(to);
	return calls;
}

/* The fetch sequence of this rank's layers, built on first use. */
static struct dp_shard *modules(struct builder *b)
{
	struct dp_shard *s = state(b);
	if (s->seq)
		return s;
	const struct par_train *t = b->t;
	enum { MAX_MODULES = 64 };
	double mod[MAX_MODULES];
	unsigned n = par_dps_layer_modules(t->model, &b->local, b->tp, b->sp, mod, MAX_MODULES);
	uint32_t first, count;
	par_b_stage_range(b, par_b_vstage(b, 0), &first, &count);
	/* Norms and biases: persistent, or gathered with the layer's first
	 * module where a tensor of them reaches the threshold. */
	double weights = 0, big = fmax(t->model->hidden, (double)t->model->ffn / b->tp);
	for (unsigned j = 0; j < n; j++)
		weights += mod[j];
	double extra = par_b_layer_params(b, (int)first) - weights;
	if (n && extra > 0 && big >= s->p.persistence)
		mod[0] += extra;
	int rc = t->training->recompute == PAR_RECOMPUTE_FULL;
	s->nseq = fetch_sequence(mod, n, count, rc, NULL);
	s->nfwd = n * count;
	size_t k = s->nseq ? s->nseq : 1;
	s->seq = xmalloc(k * sizeof(double));
	s->call = xmalloc(k * sizeof(uint32_t));
	s->alone = xmalloc(k);
	s->pre_to = xmalloc(k * sizeof(unsigned));
	fetch_sequence(mod, n, count, rc, s->seq);
	plan_calls(s->seq, s->nseq, s->p.prefetch_bucket, s->p.max_live, s->alone, s->pre_to);
	for (unsigned i = 0; i < s->nseq; i++)
		s->call[i] = NO_OP;
	return s;
}

/* Fetches [from, nseq) start again: those gathered ahead and not used
 * (another micro-batch's pass came first) are let go. */
static void modules_restart(struct builder *b, unsigned from)
{
	struct dp_shard *s = modules(b);
	double unused = 0;
	for (unsigned i = from; i < s->nseq; i++) {
		if (s->call[i] != NO_OP && i >= s->ev)
			unused += PARAM_BYTES * s->seq[i] * (b->shard - 1) / b->shard;
		s->call[i] = NO_OP;
	}
	if (unused > 0)
		par_b_mem(b, "zero3.unused", PAR_MEM_WEIGHTS, -unused);
	s->ev = s->next = from;
	s->mb = b->mb;
}

/* A micro-batch's forward begins its fetches. */
static void modules_reset(struct builder *b)
{
	modules_restart(b, 0);
}

/* A micro-batch's backward: its fetches go on from its forward's, unless
 * another micro-batch's forward came between (GPipe's order runs every
 * forward first): then they start again at the backward's first. */
static void modules_backward(struct builder *b)
{
	struct dp_shard *s = modules(b);
	if (s->mb != b->mb)
		modules_restart(b, s->nfwd);
}

/* One all-gather of fetches [from, to), issued after the last kernel. */
static void modules_gather(struct builder *b, unsigned from, unsigned to, enum par_phase ph)
{
	struct dp_shard *s = state(b);
	double elems = 0;
	for (unsigned i = from; i < to; i++)
		elems += s->seq[i];
	char name[64];
	sim_fmt(name, sizeof(name), "%s.L%d.mb%u.fetch%u.allgather", b->dp->name, b->layer, b->mb,
		from);
	double bytes = PARAM_BYTES * elems;
	uint32_t op = par_b_coll(b, STREAM_PARAM, name, SIM_COLL_ALLGATHER, SLOT_SHARD, bytes,
				 b->last_compute);
	par_b_label(b, ph == PAR_FWD ? SIM_PHASE_FWD : SIM_PHASE_BWD, 1, NULL);
	sim_program_mem(b->prog, PAR_MEM_WEIGHTS, bytes * (b->shard - 1) / b->shard);
	b->last_param_comm = op;
	for (unsigned i = from; i < to; i++)
		s->call[i] = op;
	if (to > s->next)
		s->next = to;
}

/* A module is reached at its GEMM (forward, recomputed forward) or at its
 * input gradient (backward); it is done after the GEMM or the weight
 * gradient. */
static int module_begins(const struct par_op *o, enum par_phase ph)
{
	return o->cls == PAR_OP_GEMM && (ph == PAR_FWD || o->recompute || o->part != PAR_PART_DW);
}

static int module_ends(const struct par_op *o, enum par_phase ph)
{
	return o->cls == PAR_OP_GEMM && (ph == PAR_FWD || o->recompute || o->part != PAR_PART_DX);
}

void par_dps_kernel_begin(struct builder *b, const struct par_op *o, enum par_phase ph)
{
	if (!module_begins(o, ph))
		return;
	struct dp_shard *s = modules(b);
	unsigned e = s->ev++;
	BUG_ON(e >= s->nseq);
	/* Alone by DeepSpeed's rule, or after a restart nothing brought it. */
	if (s->alone[e] || s->call[e] == NO_OP)
		modules_gather(b, e, e + 1, ph);
	par_b_wait(b, s->call[e]);
	if (s->pre_to[e] > s->next)
		modules_gather(b, s->next, s->pre_to[e], ph);
	s->cur = e;
}

void par_dps_kernel_end(struct builder *b, const struct par_op *o, enum par_phase ph)
{
	if (!module_ends(o, ph))
		return;
	struct dp_shard *s = state(b);
	double bytes = PARAM_BYTES * s->seq[s->cur];
	sim_program_mem(b->prog, PAR_MEM_WEIGHTS, -bytes * (b->shard - 1) / b->shard);
}

/* Reduce-scatter the open bucket after op `after`. */
static void bucket_reduce(struct builder *b, uint32_t after)
{
	struct dp_shard *s = state(b);
	if (s->rs_open <= 0)
		return;
	char name[64], where[16] = "";
	if (b->layer >= 0)  /* closed by a layer's gradient */
		sim_fmt(where, sizeof(where), ".L%d", b->layer);
	sim_fmt(name, sizeof(name), "%s%s.mb%u.bucket%u.reducescatter", b->dp->name, where, b->mb,
		s->nrs++);
	b->last_grad_comm = par_b_coll(b, STREAM_GRAD, name, SIM_COLL_REDUCESCATTER,
				       SLOT_SHARD_RS, s->rs_open, after);
	par_b_label(b, SIM_PHASE_BWD, 1, NULL);
	sim_program_mem(b->prog, PAR_MEM_GRADS, -s->rs_open);
	s->rs_open = 0;
}

void par_dps_grads(struct builder *b, double params, uint32_t op)
{
	struct dp_shard *s = state(b);
	s->rs_open += params * b->grad_elem;
	if (s->rs_open >= s->p.reduce_bucket * b->grad_elem)
		bucket_reduce(b, op);
}

void par_dps_backward_end(struct builder *b, uint32_t last)
{
	bucket_reduce(b, last);
	state(b)->nrs = 0;
}

double par_dps_plan_edges(const struct par_dp_costs *c, double last)
{
	return c->coll_s(c->coll_ctx, SIM_COLL_ALLGATHER, PARAM_BYTES * c->edge_params) +
	       (last > 0 ? c->coll_s(c->coll_ctx, SIM_COLL_REDUCESCATTER, last) : 0);
}

/*
 * The planner's view of a micro-batch's fetches (par_dps_plan_fetch_wait):
 * two streams of collectives, the gathers' and the reduce-scatters', each
 * running its calls in order, a call from the time it is issued. A call
 * alone takes its latency and its bandwidth time; beside the other
 * stream's call the links' bandwidth is shared between the two, so it
 * advances at the rate of a call of its latency and twice its bandwidth
 * time (the analytic fidelity's sharing of one group's links).
 */
struct fl_call {
	double at, lat, bw;
};

struct fl_stream {
	struct fl_call *call;
	unsigned n, head;            /* calls issued; the one running or next */
	double left;                 /* of the running call: the share left    */
	int on;
};

struct fluid {
	double t;
	struct fl_stream s[2];
};

static void fl_issue(struct fl_stream *s, double at, double alone, double lat)
{
	lat = fmin(lat, alone);
	s->call[s->n++] = (struct fl_call){ .at = at, .lat = lat, .bw = alone - lat };
}

/* Run the streams to time `to`, or (k >= 0) until stream k finished call
 * `until`. */
static void fl_run(struct fluid *f, double to, int k, unsigned until)
{
	for (;;) {
		for (int i = 0; i < 2; i++) {
			struct fl_stream *s = &f->s[i];
			if (!s->on && s->head < s->n && s->call[s->head].at <= f->t)
				s->on = 1, s->left = 1;
		}
		if (k >= 0 ? f->s[k].head > until : f->t >= to)
			return;
		int draw = f->s[0].on + f->s[1].on;
		double ev[2], span[2] = { 0, 0 }, dt = k >= 0 ? INFINITY : to - f->t;
		for (int i = 0; i < 2; i++) {
			const struct fl_stream *s = &f->s[i];
			if (s->on) {
				const struct fl_call *c = &s->call[s->head];
				span[i] = c->lat + draw * c->bw;
				ev[i] = s->left * span[i];
			} else {
				ev[i] = s->head < s->n ? s->call[s->head].at - f->t : INFINITY;
			}
			dt = fmin(dt, ev[i]);
		}
		BUG_ON(!(dt < INFINITY));
		double t = f->t + dt;
		for (int i = 0; i < 2; i++) {
			struct fl_stream *s = &f->s[i];
			if (!s->on) {
				if (ev[i] == dt)
					t = fmax(t, s->call[s->head].at);
			} else if (ev[i] == dt) {
				s->on = 0, s->head++;
			} else if (span[i] > 0) {
				s->left -= dt / span[i];
			}
		}
		f->t = t;
	}
}

/* A collective's time alone, of the few sizes a micro-batch's calls take. */
struct fl_memo {
	enum sim_coll_op op;
	double bytes[8], s[8];
	unsigned n;
};

static double fl_coll_s(const struct par_dp_costs *c, struct fl_memo *m, double bytes)
{
	for (unsigned i = 0; i < m->n; i++)
		if (m->bytes[i] == bytes)
			return m->s[i];
	double s = c->coll_s(c->coll_ctx, m->op, bytes);
	unsigned i = m->n < 8 ? m->n++ : 7;
	m->bytes[i] = bytes, m->s[i] = s;
	return s;
}

double par_dps_plan_fetch_wait(const struct par_dps_fetch *f, const struct par_dp_costs *c,
			       double stretch)
{
	const struct par_zero3 *z = &c->layout->zero3;
	unsigned nseq = fetch_sequence(f->mod, f->n, f->layers, f->nb > f->n, NULL);
	if (!nseq || c->dp < 2 || f->nb != (f->nb > f->n ? 2 : 1) * f->n)
		return 0;
	double *seq = xmalloc(nseq * sizeof(double));
	uint8_t *alone = xmalloc(nseq);
	unsigned *pre_to = xmalloc(nseq * sizeof(unsigned)), *call = xmalloc(nseq * sizeof(unsigned));
	struct fl_call *ag = xmalloc(nseq * sizeof(*ag)), *rs = xmalloc(nseq * sizeof(*rs));
	fetch_sequence(f->mod, f->n, f->layers, f->nb > f->n, seq);
	plan_calls(seq, nseq, z->prefetch_bucket, z->max_live, alone, pre_to);
	struct fluid fl = { .s = { { .call = ag }, { .call = rs } } };
	struct fl_memo mg = { .op = SIM_COLL_ALLGATHER }, mr = { .op = SIM_COLL_REDUCESCATTER };
	double ge = par_grad_bytes(c->precision, c->layout->ddp.fp32_grads);
	double ag_lat = fl_coll_s(c, &mg, 0), rs_lat = fl_coll_s(c, &mr, 0);
	double now = 0, kernels = 0, open = 0;
	unsigned next = 0, nfwd = f->layers * f->n;
	for (unsigned e = 0; e < nseq; e++) {
		if (alone[e]) {
			call[e] = fl.s[0].n;
			fl_issue(&fl.s[0], now, fl_coll_s(c, &mg, PARAM_BYTES * seq[e]), ag_lat);
			next = e + 1 > next ? e + 1 : next;
		}
		if (pre_to[e] > next) {
			double elems = 0;
			for (unsigned i = next; i < pre_to[e]; i++)
				elems += seq[i], call[i] = fl.s[0].n;
			fl_issue(&fl.s[0], now, fl_coll_s(c, &mg, PARAM_BYTES * elems), ag_lat);
			next = pre_to[e];
		}
		fl_run(&fl, 0, 0, call[e]);
		now = fmax(now, fl.t);
		unsigned j = e < nfwd ? e % f->n : (e - nfwd) % f->nb;
		double seg = stretch * (e < nfwd ? f->fwd[j] : f->bwd[j]);
		now += seg, kernels += seg;
		if (e >= nfwd && f->grads[j] > 0) {
			open += f->grads[j];
			if (open >= z->reduce_bucket) {
				fl_issue(&fl.s[1], now, fl_coll_s(c, &mr, ge * open), rs_lat);
				open = 0;
			}
		}
	}
	free(seq);
	free(alone);
	free(pre_to);
	free(call);
	free(ag);
	free(rs);
	return fmax(0, now - kernels);
}
