/*
 * sim.c - the engine core: clock and event loop, links and chunked
 * transfers, programs, ranks and their streams, point-to-point matching.
 * Collectives are in coll.c.
 *
 * Invariants:
 * - sim->now never decreases; every event is scheduled at t >= now.
 * - A stream runs at most one op at a time: the op at stream_ops[next],
 *   while busy. An op of stream s at position pos is finished iff
 *   rank.next[s] > pos, so dependencies need no per-op state per rank and
 *   ranks can share one program.
 * - Finishing an op never recurses into another finish: ops that end at
 *   once (a collective of one member) finish through an event at now.
 */
#include "sim/sim-int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names ------------------------------------------------------------ */

static const char *const op_kind_names[SIM_OP_NKINDS] = {
	[SIM_OP_COMPUTE] = "compute",
	[SIM_OP_COLL] = "coll",
	[SIM_OP_SEND] = "send",
	[SIM_OP_RECV] = "recv",
};

const char *sim_op_kind_name(enum sim_op_kind kind)
{
	return (unsigned)kind < SIM_OP_NKINDS ? op_kind_names[kind] : "?";
}

const char *sim_fidelity_name(enum sim_fidelity f)
{
	return f == SIM_FIDELITY_ANALYTIC ? "analytic" : "flow";
}

/* ---- setup ------------------------------------------------------------- */

void sim_config_init(struct sim_config *cfg)
{
	*cfg = (struct sim_config){
		.fidelity = SIM_FIDELITY_FLOW,
		.chunk_bytes = SIM_DEFAULT_CHUNK_BYTES,
		.algos = NULL,
		.analytic_sharing = 1,
	};
}

struct sim *sim_new(const struct sim_config *cfg, uint32_t nranks,
		    const struct sim_topo_ops *topo_ops, void *topo)
{
	struct sim *sim = xcalloc(1, sizeof(*sim));
	sim->cfg = *cfg;
	if (!(sim->cfg.chunk_bytes > 0))
		sim->cfg.chunk_bytes = SIM_DEFAULT_CHUNK_BYTES;
	sim_heap_init(&sim->heap);
	sim->topo_ops = topo_ops;
	sim->topo = topo;
	sim->nranks = nranks;
	sim->ranks = xcalloc_aligned(nranks, sizeof(*sim->ranks), _Alignof(struct sim_rank));
	return sim;
}

struct p2p_map;
static void p2p_free(struct p2p_map *m);

static void bundle_fire(struct sim *sim, struct sim_event *ev);
static void bundles_free(struct sim *sim);

/* ---- the host (sim_set_host) ---------------------------------------------- */

/* A stream whose head waits for the host to issue it. */
struct host_wake {
	struct sim_event ev;
	uint32_t rank;
	unsigned stream;
	struct host_wake *next_free;
};

static void host_fire(struct sim *sim, struct sim_event *ev);

static int host_event_free(struct sim *sim, struct sim_event *ev)
{
	if (ev->fire != host_fire)
		return 0;
	struct host_wake *w = container_of(ev, struct host_wake, ev);
	w->next_free = sim->host_free;
	sim->host_free = w;
	return 1;
}

void sim_set_host(struct sim *sim, double (*cost)(void *ctx, const struct sim_op *op), void *ctx)
{
	sim->host = cost;
	sim->host_ctx = ctx;
}

/* Each op's issue time from the program's start: the host's costs summed
 * in op order, each op issued once its own cost is spent. */
static void program_issue(struct sim *sim, struct sim_program *prog)
{
	free(prog->issue_ps);
	prog->issue_ps = xreallocarray(NULL, prog->nops ? prog->nops : 1, sizeof(sim_ps));
	double t = 0;
	for (uint32_t i = 0; i < prog->nops; i++) {
		double c = sim->host(sim->host_ctx, &prog->ops[i]);
		BUG_ON(!(c >= 0));
		t += c;
		prog->issue_ps[i] = sim_ps_from_s(t);
	}
	prog->issue_of = sim->host_ctx;
}

void sim_free(struct sim *sim)
{
	if (!sim)
		return;
	/* Drain the queue first: after a failed run it still holds events
	 * that live in the groups, transfer blocks and bundles freed below. */
	while (sim->heap.n) {
		struct sim_heap_entry e;
		sim_heap_pop(&sim->heap, &e);
		if (e.ev->fire == bundle_fire) {
			struct sim_bundle *b = container_of(e.ev, struct sim_bundle, ev);
			b->next_free = sim->bundle_free;
			sim->bundle_free = b;
		} else if (!host_event_free(sim, e.ev)) {
			coll_share_event_free(sim, e.ev);
		}
	}
	free(sim->stale);
	free(sim->exposed_by);
	while (sim->host_free) {
		struct host_wake *w = sim->host_free;
		sim->host_free = w->next_free;
		free(w);
	}
	for (uint32_t g = 0; g < sim->ngroups; g++)
		sim_group_free(&sim->groups[g]);
	free(sim->groups);
	for (uint32_t i = 0; i < sim->nxfer_blocks; i++)
		free(sim->xfer_blocks[i]);
	free(sim->xfer_blocks);
	if (sim->memberships)
		free(sim->memberships[0]);
	free(sim->memberships);
	free(sim->nmemberships);
	p2p_free(sim->p2p);
	bundles_free(sim);
	free(sim->links);
	free(sim->ranks);
	free(sim->scratch);
	coll_share_free(sim);
	free(sim->absent);
	free(sim->err);
	sim_heap_clear(&sim->heap);
	free(sim);
}

uint32_t sim_nranks(const struct sim *sim) { return sim->nranks; }
sim_ps sim_now(const struct sim *sim) { return sim->now; }
uint64_t sim_events(const struct sim *sim) { return sim->events; }
const char *sim_error(const struct sim *sim) { return sim->err; }
int sim_failed_clock(const struct sim *sim) { return sim->clock_failed; }

void sim_set_recorder(struct sim *sim, const struct sim_recorder_ops *ops, void *ctx)
{
	BUG_ON(sim->ranks_started);
	sim->rec = ops;
	sim->rec_ctx = ctx;
}

void sim_set_compute_scale(struct sim *sim,
			   double (*scale)(void *ctx, uint32_t rank, const struct sim_op *op),
			   void *ctx)
{
	sim->scale = scale;
	sim->scale_ctx = ctx;
}

void sim_set_rank_speed(struct sim *sim, const double *speed)
{
	sim->speed = speed;
}

void sim_set_interference(struct sim *sim,
			  double (*factor)(void *ctx, uint32_t rank, const struct sim_op *op,
					   unsigned blocks),
			  double (*comm)(void *ctx, uint32_t rank, const struct sim_op *beside,
					 unsigned blocks),
			  void *ctx)
{
	sim->interf = factor;
	sim->interf_comm = factor ? comm : NULL;
	sim->interf_ctx = ctx;
}

/* The CUDA blocks a rank's communication holds now: its streams that
 * count as communication in progress. */
static unsigned comm_blocks(const struct sim_rank *r)
{
	unsigned n = 0;
	for (uint16_t c = r->counted; c; c &= (uint16_t)(c - 1))
		n += r->blocks[__builtin_ctz(c)];
	return n;
}

double sim_comm_slow(const struct sim *sim, uint32_t rank)
{
	const struct sim_rank *r = &sim->ranks[rank];
	if (!sim->interf_comm || !r->comp)
		return 1;
	double g = sim->interf_comm(sim->interf_ctx, rank, r->comp, comm_blocks(r));
	BUG_ON(!(g >= 1));
	return g;
}

void sim_set_rank_done(struct sim *sim, void (*done)(void *ctx, struct sim *sim, uint32_t rank),
		       void *ctx)
{
	sim->rank_done = done;
	sim->rank_done_ctx = ctx;
}

/* A compute time of dur at rank's speed. */
static inline sim_ps at_speed(const struct sim *sim, uint32_t rank, sim_ps dur)
{
	return sim->speed ? sim_ps_scale(dur, sim->speed[rank]) : dur;
}

void sim_fail(struct sim *sim, const char *fmt, ...)
{
	if (sim->err)
		return;  /* keep the first cause */
	va_list ap;
	va_start(ap, fmt);
	char buf[512];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	sim->err = xstrdup(buf);
}

void sim_fail_clock(struct sim *sim, const char *what)
{
	if (sim->err)
		return;
	sim_fail(sim, "%s would end past the simulated clock's limit of %.2f days (2^63 ps): "
		 "a latency, bandwidth, compute efficiency or size of the input is beyond what "
		 "can be simulated", what, SIM_PS_MAX_DAYS);
	sim->clock_failed = 1;
}

/* ---- events ------------------------------------------------------------ */

/* Times saturate at SIM_PS_MAX (util.h): an event due there fails the run,
 * after the callers that know what it is have said so (sim_fail_clock). It
 * is still queued, as a failed run's events are (sim_free). */
void sim_schedule(struct sim *sim, sim_ps t, struct sim_event *ev)
{
	BUG_ON(t < sim->now);
	if (t == SIM_PS_MAX)
		sim_fail_clock(sim, "an event");
	sim_heap_push(&sim->heap, t, ev);
}

uint64_t sim_schedule_seq(struct sim *sim, sim_ps t, struct sim_event *ev)
{
	sim_schedule(sim, t, ev);
	return sim->heap.next_seq - 1;
}

static int report_stuck(struct sim *sim);

/*
 * Streams whose ops end at one time, scheduled one right after another (a
 * tensor-parallel group's kernels after their collective), share one heap
 * entry: a bundle, fired as the entries it stands for would have been, one
 * stream after another in the order they were scheduled. Nothing can come
 * between them: their sequence numbers would have been consecutive. A
 * bundle is closed when another event is scheduled or it starts firing.
 */
static void bundle_fire(struct sim *sim, struct sim_event *ev);

static void stream_schedule(struct sim *sim, sim_ps t, uint32_t rank, unsigned stream)
{
	struct sim_bundle *b = sim->bundle;
	if (!b || sim->bundle_t != t || sim->heap.next_seq != sim->bundle_seq + 1) {
		b = sim->bundle_free;
		if (b)
			sim->bundle_free = b->next_free;
		else
			b = xcalloc(1, sizeof(*b));
		b->ev.fire = bundle_fire;
		b->n = 0;
		sim->bundle = b;
		sim->bundle_t = t;
		sim->bundle_seq = sim_schedule_seq(sim, t, &b->ev);
	}
	if (b->n == b->cap)
		b->s = xreallocarray(b->s, b->cap = b->cap ? 2 * b->cap : 8, sizeof(*b->s));
	b->s[b->n++] = rs_pack(rank, stream);
}

/* Whether a stream's end due now is a cut run's stale one (and forget it). */
static int stale_take(struct sim *sim, uint32_t rs)
{
	struct sim_rank *r = &sim->ranks[rs_rank(rs)];
	unsigned s = rs_stream(rs);
	if ((r->stale >> s & 1u) && r->stale_t[s] == sim->now) {
		r->stale &= (uint16_t)~(1u << s);
		sim->stale_pending--;
		return 1;
	}
	for (uint32_t i = 0; i < sim->nstale; i++)
		if (sim->stale[i].rs == rs && sim->stale[i].t == sim->now) {
			sim->stale[i] = sim->stale[--sim->nstale];
			sim->stale_pending--;
			return 1;
		}
	return 0;
}

static void bundle_fire(struct sim *sim, struct sim_event *ev)
{
	struct sim_bundle *b = container_of(ev, struct sim_bundle, ev);
	if (sim->bundle == b)
		sim->bundle = NULL;
	for (uint32_t i = 0; i < b->n && !sim->err; i++) {
		if (i + 2 < b->n) {  /* the rank two ahead: cold lines */
			const struct sim_rank *r = &sim->ranks[rs_rank(b->s[i + 2])];
			__builtin_prefetch(r);
			__builtin_prefetch((const char *)r + 64);
		}
		if (i)
			sim->events++;  /* one event per stream, as unbundled */
		if (__builtin_expect(sim->stale_pending != 0, 0) && stale_take(sim, b->s[i]))
			continue;  /* the end of a run since cut (run_cut) */
		sim_stream_finish(sim, rs_rank(b->s[i]), rs_stream(b->s[i]));
	}
	b->next_free = sim->bundle_free;
	sim->bundle_free = b;
}

static void bundles_free(struct sim *sim)
{
	for (struct sim_bundle *b = sim->bundle_free, *n; b; b = n) {
		n = b->next_free;
		free(b->s);
		free(b);
	}
}

int sim_run(struct sim *sim)
{
	struct sim_heap_entry e;
	while (!sim->err && sim_heap_pop(&sim->heap, &e)) {
		sim->now = e.t;
		sim->fire_seq = e.seq;
		sim->events++;
		/* Events of one time come in groups at scale (a tensor-parallel
		 * group's compute ends together): while this one runs, fetch the
		 * first lines of the next one's rank if it is a stream's. */
		struct sim_event *next = sim_heap_peek(&sim->heap);
		if (next && next->fire == bundle_fire) {
			const struct sim_bundle *b = container_of(next, struct sim_bundle, ev);
			const struct sim_rank *r = &sim->ranks[rs_rank(b->s[0])];
			__builtin_prefetch(r);
			__builtin_prefetch((const char *)r + 64);
		}
		e.ev->fire(sim, e.ev);
	}
	if (!sim->err)
		report_stuck(sim);
	return sim->err ? -1 : 0;
}

/* ---- links ------------------------------------------------------------- */

uint32_t sim_link_add(struct sim *sim, double bw_Bps, uint32_t tag)
{
	BUG_ON(!(bw_Bps > 0));
	if (sim->nlinks == sim->linkcap) {
		sim->linkcap = sim->linkcap ? 2 * sim->linkcap : 64;
		sim->links = xreallocarray(sim->links, sim->linkcap, sizeof(*sim->links));
	}
	sim->links[sim->nlinks] = (struct sim_link){ .bw_Bps = bw_Bps, .tag = tag };
	return sim->nlinks++;
}

uint32_t sim_nlinks(const struct sim *sim) { return sim->nlinks; }

void sim_link_stats(const struct sim *sim, uint32_t link, struct sim_link_stats *out)
{
	BUG_ON(link >= sim->nlinks);
	const struct sim_link *l = &sim->links[link];
	*out = (struct sim_link_stats){
		.bw_Bps = l->bw_Bps, .bytes = l->bytes, .busy_ps = l->busy_ps, .tag = l->tag,
	};
}

/* ---- transfers --------------------------------------------------------- */

static sim_ps wire_ps(double bytes, double bw_Bps)
{
	return bw_Bps > 0 ? sim_ps_from_s(bytes / bw_Bps) : 0;
}

/*
 * Reserve the route for one chunk from event time t: the chunk starts when
 * every link of the route is free, s = max(t, free), and holds each link for
 * its wire time there. The time on the bottleneck is rounded to picoseconds
 * with the rounding error carried to the next chunk, so a message of many
 * chunks takes bytes / W to within a picosecond, whatever the chunk size.
 * Returns s; *wire is the bottleneck time.
 */
static sim_ps chunk_reserve(struct sim *sim, struct sim_xfer *x, sim_ps t, sim_ps *wire)
{
	double chunk = sim->cfg.chunk_bytes;
	double c = x->left <= chunk ? x->left : chunk;
	sim_ps s = t;
	for (uint32_t i = 0; i < x->route.n; i++) {
		sim_ps f = sim->links[x->route.link[i]].free_ps;
		if (f > s)
			s = f;
	}
	double exact = x->route.bw_Bps > 0 ? c * x->slow / x->route.bw_Bps * (double)SIM_PS_PER_S
					    : 0;
	*wire = sim_ps_round(exact + x->carry_ps);
	x->carry_ps += exact - (double)*wire;
	for (uint32_t i = 0; i < x->route.n; i++) {
		struct sim_link *l = &sim->links[x->route.link[i]];
		sim_ps w = l->bw_Bps == x->route.bw_Bps ? *wire : wire_ps(c * x->slow, l->bw_Bps);
		l->free_ps = sim_ps_add(s, w);
		l->busy_ps = sim_ps_add(l->busy_ps, w);
		l->bytes += c;
		l->holder = NULL;
	}
	x->left = x->left <= chunk ? 0 : x->left - c;
	return s;
}

static void xfer_schedule(struct sim *sim, struct sim_xfer *x, sim_ps t)
{
	if (t == SIM_PS_MAX)
		sim_fail_clock(sim, "a transfer");
	x->due_seq = sim_schedule_seq(sim, t, &x->ev);
}

/*
 * Bulk reservations. Chunks exist so that flows sharing a link interleave;
 * a message whose links are all free now would send its chunks back to back
 * with nobody in between until some other flow wants one of its links. So it
 * reserves them all at once, for the wire time of the whole rest of the
 * message (rounded once, where chunk by chunk rounds each chunk with the
 * error carried: the two agree to a picosecond), and schedules its arrival:
 * one event instead of one per chunk. The first other flow that wants one of
 * its links splits it (xfer_split): the link state is put back as it was
 * before the bulk and the chunks started by now are replayed, which leaves
 * the route exactly as chunk-by-chunk issue would have, and the message
 * continues chunk by chunk from the end of the chunk in flight. Its arrival
 * event left in the heap is stale; due_seq tells the live entry from it.
 */
static void xfer_bulk(struct sim *sim, struct sim_xfer *x)
{
	x->b0.s0 = sim->now;
	x->b0.left0 = x->left;
	x->b0.carry0 = x->carry_ps;
	for (uint32_t i = 0; i < x->route.n; i++) {
		const struct sim_link *l = &sim->links[x->route.link[i]];
		x->b0.free0[i] = l->free_ps;
		x->b0.busy0[i] = l->busy_ps;
		x->b0.bytes0[i] = l->bytes;
	}
	double exact = x->left * x->slow / x->route.bw_Bps * (double)SIM_PS_PER_S;
	sim_ps wire = sim_ps_round(exact + x->carry_ps);
	x->carry_ps += exact - (double)wire;
	for (uint32_t i = 0; i < x->route.n; i++) {
		struct sim_link *l = &sim->links[x->route.link[i]];
		sim_ps w = l->bw_Bps == x->route.bw_Bps ? wire
							: wire_ps(x->left * x->slow, l->bw_Bps);
		l->free_ps = sim_ps_add(sim->now, w);
		l->busy_ps = sim_ps_add(l->busy_ps, w);
		l->bytes += x->left;
		l->holder = x;
	}
	x->left = 0;
	x->bulk = 1;
	x->arriving = 1;
	xfer_schedule(sim, x, sim_ps_add(sim_ps_add(sim->now, wire), x->route.alpha_ps));
}

/* Another flow wants a link of x's bulk reservation now: see xfer_bulk. */
static void xfer_split(struct sim *sim, struct sim_xfer *x)
{
	for (uint32_t i = 0; i < x->route.n; i++) {
		struct sim_link *l = &sim->links[x->route.link[i]];
		l->free_ps = x->b0.free0[i];
		l->busy_ps = x->b0.busy0[i];
		l->bytes = x->b0.bytes0[i];
	}
	x->left = x->b0.left0;
	x->carry_ps = x->b0.carry0;
	x->bulk = 0;
	sim_ps t = x->b0.s0, wire;
	do {  /* the chunks that chunk-by-chunk issue has started by now */
		sim_ps s = chunk_reserve(sim, x, t, &wire);
		t = sim_ps_add(s, wire);
	} while (x->left > 0 && t <= sim->now);
	if (x->left > 0) {  /* else the arrival scheduled by the bulk stands */
		x->arriving = 0;
		xfer_schedule(sim, x, t);
	}
}

/*
 * Issue the next chunk, or all of them at once if the route is free now, at
 * the slowdown of compute beside either end now (inside a node only).
 */
static void xfer_issue(struct sim *sim, struct sim_xfer *x)
{
	if (x->intra) {
		double a = sim_comm_slow(sim, x->src), b = sim_comm_slow(sim, x->dst);
		x->slow = a > b ? a : b;
	}
	int idle = 1;
	for (uint32_t i = 0; i < x->route.n; i++) {
		struct sim_link *l = &sim->links[x->route.link[i]];
		if (l->free_ps <= sim->now)
			continue;
		if (l->holder && l->holder != x)
			xfer_split(sim, l->holder);
		if (l->free_ps > sim->now)
			idle = 0;
	}
	if (idle && x->left > sim->cfg.chunk_bytes && x->route.n > 0) {
		xfer_bulk(sim, x);
		return;
	}
	sim_ps wire, s = chunk_reserve(sim, x, sim->now, &wire);
	x->arriving = x->left == 0;
	sim_ps end = sim_ps_add(s, wire);
	xfer_schedule(sim, x, x->arriving ? sim_ps_add(end, x->route.alpha_ps) : end);
}

static void xfer_release(struct sim *sim, struct sim_xfer *x)
{
	x->next_free = sim->xfer_free;
	sim->xfer_free = x;
}

static void xfer_fire(struct sim *sim, struct sim_event *ev)
{
	struct sim_xfer *x = container_of(ev, struct sim_xfer, ev);
	if (sim->fire_seq != x->due_seq)
		return;  /* the arrival of a bulk reservation since split */
	if (!x->arriving) {
		xfer_issue(sim, x);
		return;
	}
	x->bulk = 0;
	x->done(sim, x);
	xfer_release(sim, x);
}

/* Transfers come from a free list refilled a block at a time. */
static struct sim_xfer *xfer_alloc(struct sim *sim)
{
	if (!sim->xfer_free) {
		enum { BLOCK = 1024 };
		struct sim_xfer *b = xcalloc(BLOCK, sizeof(*b));
		sim->xfer_blocks = xreallocarray(sim->xfer_blocks, sim->nxfer_blocks + 1,
						 sizeof(*sim->xfer_blocks));
		sim->xfer_blocks[sim->nxfer_blocks++] = b;
		for (int i = BLOCK - 1; i >= 0; i--)
			xfer_release(sim, &b[i]);
	}
	struct sim_xfer *x = sim->xfer_free;
	sim->xfer_free = x->next_free;
	return x;
}

struct sim_xfer *sim_xfer_start(struct sim *sim, uint32_t src, uint32_t dst, double bytes,
				void (*done)(struct sim *, struct sim_xfer *), void *owner)
{
	struct sim_xfer *x = xfer_alloc(sim);
	x->ev.fire = xfer_fire;
	x->left = bytes > 0 ? bytes : 0;
	x->carry_ps = 0;
	x->slow = 1;
	x->src = src, x->dst = dst;
	x->intra = sim->interf_comm && src != dst &&
		   sim->topo_ops->node_of(sim->topo, src) == sim->topo_ops->node_of(sim->topo, dst);
	x->done = done;
	x->owner = owner;
	if (src == dst) {
		x->route = (struct sim_route){ .alpha_ps = 0, .bw_Bps = 0, .n = 0 };
	} else {
		sim->topo_ops->route(sim->topo, sim, src, dst, &x->route);
		BUG_ON(x->route.n > SIM_ROUTE_MAX);
	}
	/* A message whose own time passes the clock's range, named (xfer_schedule
	 * catches the rest). */
	double alone_ps = (double)x->route.alpha_ps +
			  (x->route.bw_Bps > 0 ? x->left / x->route.bw_Bps * SIM_PS_PER_S : 0);
	if ((double)sim->now + alone_ps >= 0x1p63) {
		char what[192], lat[48];
		if (x->route.alpha_ps == SIM_PS_MAX)
			snprintf(lat, sizeof(lat), "a latency past the clock");
		else
			snprintf(lat, sizeof(lat), "latency %g s", sim_ps_to_s(x->route.alpha_ps));
		snprintf(what, sizeof(what), "a transfer of %.0f bytes from rank %u to rank %u "
			 "(started at %g s; %s, %g B/s)", x->left, src, dst, sim_ps_to_s(sim->now),
			 lat, x->route.bw_Bps);
		sim_fail_clock(sim, what);
	}
	xfer_issue(sim, x);
	return x;
}

/* ---- programs ---------------------------------------------------------- */

struct sim_program *sim_program_new(void)
{
	return xcalloc(1, sizeof(struct sim_program));
}

void sim_program_free(struct sim_program *prog)
{
	if (!prog)
		return;
	free(prog->issue_ps);
	for (uint32_t i = 0; i < prog->nnames; i++)
		free(prog->names[i]);
	for (int s = 0; s < SIM_MAX_STREAMS; s++)
		free(prog->stream_ops[s]);
	free(prog->names);
	free(prog->ops);
	free(prog->deps);
	for (int s = 0; s < SIM_MAX_STREAMS; s++)
		free(prog->hot[s]);
	free(prog->dep_at);
	free(prog);
}

/*
 * Sealing a program (program_seal, when a rank starts on it): the hot
 * records the event loop reads, by stream, and the compute runs. A stream
 * that runs several compute ops back to back, none of
 * which another stream waits for or changes memory or marks the rank's
 * stats before the last, is busy without a break from the first start to the
 * last end, and nothing else on the rank can observe the ops in between. The
 * engine runs such a run as one event and records its ops afterwards (the
 * event count of a training step falls by the number of kernels between two
 * collectives). A run ends at an op that another op depends on, that changes
 * memory or carries a mark; the next op joins only if it is a compute op of
 * the same stream without dependencies. The runs partition each stream
 * greedily from its first op, so a stream's head is always a run's first op.
 * O(ops + deps) per program, once.
 */

/* dep_at from deps, and the streams whose ops wait for each op (a new
 * array of masks, one per op, for the caller to free). */
static uint16_t *program_waiters(struct sim_program *prog)
{
	uint16_t *waiters = xcalloc(prog->nops ? prog->nops : 1, sizeof(uint16_t));
	prog->dep_at = xreallocarray(prog->dep_at, prog->ndeps ? prog->ndeps : 1,
				     sizeof(*prog->dep_at));
	for (uint32_t o = 0; o < prog->nops; o++) {
		const struct sim_op *op = &prog->ops[o];
		for (uint32_t i = op->dep0; i < op->dep0 + op->ndeps; i++) {
			const struct sim_op *d = &prog->ops[prog->deps[i]];
			waiters[prog->deps[i]] |= (uint16_t)(1u << op->stream);
			prog->dep_at[i] = (struct sim_dep_at){ .pos = d->pos, .stream = d->stream };
		}
	}
	return waiters;
}

/*
 * Can the run that ends with op (which is `waiters` of others) take in the
 * stream's next op? Compute ops run together; collectives on one group slot
 * chain, the chain joined as one where it is costed in closed form (coll.c,
 * sim_coll_join).
 */
static int run_extends(const struct sim_op *op, uint16_t waiters, const struct sim_op *next)
{
	if (waiters || op->mem_bytes != 0 || (op->flags & SIM_OP_MARK) || next->ndeps ||
	    next->kind != op->kind)
		return 0;
	return op->kind == SIM_OP_COMPUTE || (op->kind == SIM_OP_COLL && next->group == op->group);
}

/* The hot records of one stream: each op's, then the runs, greedily. */
static void program_stream_hot(struct sim_program *prog, unsigned st, const uint16_t *waiters)
{
	const uint32_t *list = prog->stream_ops[st];
	uint32_t len = prog->stream_n[st];
	struct sim_op_hot *hot = prog->hot[st] =
		xreallocarray(prog->hot[st], len ? len : 1, sizeof(*hot));
	for (uint32_t k = 0; k < len; k++) {
		const struct sim_op *op = &prog->ops[list[k]];
		hot[k] = (struct sim_op_hot){
			.op = list[k], .dep0 = op->dep0, .ndeps = op->ndeps,
			.kind = op->kind, .wakes = waiters[list[k]],
			.run_n = 1, .run_ps = op->dur_ps,
			.effects = op->mem_bytes != 0 || (op->flags & SIM_OP_MARK),
		};
		if (op->ndeps) {
			hot[k].dep_stream = (uint8_t)prog->dep_at[op->dep0].stream;
			hot[k].dep_pos = prog->dep_at[op->dep0].pos;
		}
	}
	for (uint32_t k = 0, n; k < len; k += n) {
		for (n = 1; k + n < len && n < SIM_RUN_MAX && run_extends(&prog->ops[list[k + n - 1]],
						      waiters[list[k + n - 1]],
						      &prog->ops[list[k + n]]); n++) {
			hot[k].run_ps = sim_ps_add(hot[k].run_ps, prog->ops[list[k + n]].dur_ps);
			hot[k + n].run_n = 0;
		}
		hot[k].run_n = n;
	}
}

static void program_seal(struct sim_program *prog)
{
	if (prog->sealed)
		return;
	uint16_t *waiters = program_waiters(prog);
	for (unsigned st = 0; st < SIM_MAX_STREAMS; st++)
		program_stream_hot(prog, st, waiters);
	free(waiters);
	prog->sealed = 1;
}

/* Append an op of the given kind on a stream; the caller fills the rest. */
static struct sim_op *program_add(struct sim_program *prog, enum sim_op_kind kind,
				  unsigned stream, const char *name)
{
	BUG_ON(stream >= SIM_MAX_STREAMS);
	if (prog->nops == prog->cap) {
		prog->cap = prog->cap ? 2 * prog->cap : 16;
		prog->ops = xreallocarray(prog->ops, prog->cap, sizeof(*prog->ops));
	}
	if (prog->stream_n[stream] == prog->stream_cap[stream]) {
		uint32_t c = prog->stream_cap[stream] ? 2 * prog->stream_cap[stream] : 16;
		prog->stream_ops[stream] = xreallocarray(prog->stream_ops[stream], c, sizeof(uint32_t));
		prog->stream_cap[stream] = c;
	}
	if (prog->nnames == prog->namecap) {
		prog->namecap = prog->namecap ? 2 * prog->namecap : 16;
		prog->names = xreallocarray(prog->names, prog->namecap, sizeof(char *));
	}
	prog->names[prog->nnames] = xstrdup(name ? name : "");
	prog->sealed = 0;
	struct sim_op *op = &prog->ops[prog->nops];
	*op = (struct sim_op){
		.kind = (uint8_t)kind,
		.stream = (uint8_t)stream,
		.pos = prog->stream_n[stream],
		.dep0 = prog->ndeps,
		.name = prog->names[prog->nnames++],
		.layer = -1, .mb = -1, .chunk = -1,
	};
	prog->stream_ops[stream][prog->stream_n[stream]++] = prog->nops++;
	if (stream + 1 > prog->nstreams)
		prog->nstreams = (uint8_t)(stream + 1);
	return op;
}

/* An op names group slot `group`: a rank runs the program only with a
 * group for every slot named (sim_rank_start). */
static void program_uses_group(struct sim_program *prog, unsigned group)
{
	if (group + 1 > prog->ngroups)
		prog->ngroups = (uint8_t)(group + 1);
}

uint32_t sim_program_compute(struct sim_program *prog, unsigned stream, const char *name,
			     sim_ps dur_ps, double flops, double bytes)
{
	BUG_ON(dur_ps < 0);
	struct sim_op *op = program_add(prog, SIM_OP_COMPUTE, stream, name);
	op->dur_ps = dur_ps;
	op->flops = flops;
	op->bytes = bytes;
	return prog->nops - 1;
}

uint32_t sim_program_coll(struct sim_program *prog, unsigned stream, const char *name,
			  enum sim_coll_op cop, const struct sim_coll_algo *algo,
			  unsigned group, double bytes, unsigned channels, uint32_t root)
{
	BUG_ON(group >= SIM_MAX_GROUPS || cop >= SIM_COLL_NOPS || channels > UINT16_MAX);
	struct sim_op *op = program_add(prog, SIM_OP_COLL, stream, name);
	op->coll = (uint8_t)cop;
	program_uses_group(prog, group);
	op->algo = algo;
	op->group = (uint8_t)group;
	op->bytes = bytes;
	op->channels = (uint16_t)channels;
	op->peer = root;
	return prog->nops - 1;
}

static uint32_t program_p2p(struct sim_program *prog, enum sim_op_kind kind, unsigned stream,
			    const char *name, unsigned group, uint32_t peer, double bytes)
{
	BUG_ON(group >= SIM_MAX_GROUPS);
	struct sim_op *op = program_add(prog, kind, stream, name);
	program_uses_group(prog, group);
	op->group = (uint8_t)group;
	op->peer = peer;
	op->bytes = bytes;
	return prog->nops - 1;
}

uint32_t sim_program_send(struct sim_program *prog, unsigned stream, const char *name,
			  unsigned group, uint32_t peer, double bytes)
{
	return program_p2p(prog, SIM_OP_SEND, stream, name, group, peer, bytes);
}

uint32_t sim_program_recv(struct sim_program *prog, unsigned stream, const char *name,
			  unsigned group, uint32_t peer, double bytes)
{
	return program_p2p(prog, SIM_OP_RECV, stream, name, group, peer, bytes);
}

void sim_program_tag(struct sim_program *prog, unsigned tag)
{
	struct sim_op *op = &prog->ops[prog->nops - 1];
	BUG_ON(prog->nops == 0 || (op->kind != SIM_OP_SEND && op->kind != SIM_OP_RECV) || tag > 3);
	op->tag = (uint8_t)tag;
}

void sim_program_flags(struct sim_program *prog, unsigned flags)
{
	BUG_ON(prog->nops == 0);
	prog->ops[prog->nops - 1].flags |= (uint8_t)flags;
	prog->sealed = 0;
}

void sim_program_mem(struct sim_program *prog, unsigned cat, double bytes)
{
	BUG_ON(prog->nops == 0 || cat >= SIM_MEM_CATS);
	prog->ops[prog->nops - 1].mem_cat = (uint8_t)cat;
	prog->ops[prog->nops - 1].mem_bytes = bytes;
	prog->sealed = 0;
}

void sim_program_label(struct sim_program *prog, const struct sim_op_label *l)
{
	BUG_ON(prog->nops == 0 || l->phase >= SIM_PHASE_N);
	struct sim_op *op = &prog->ops[prog->nops - 1];
	op->phase = l->phase;
	op->layer = l->layer;
	op->mb = l->mb;
	op->chunk = l->chunk;
	op->kernel = l->kernel;
}

struct sim_op_label sim_op_label_of(const struct sim_op *op)
{
	return (struct sim_op_label){ .layer = op->layer, .mb = op->mb, .chunk = op->chunk,
				      .phase = op->phase, .kernel = op->kernel };
}

const char *sim_phase_name(enum sim_phase p)
{
	static const char *const names[SIM_PHASE_N] = {
		[SIM_PHASE_FWD] = "fwd", [SIM_PHASE_BWD] = "bwd", [SIM_PHASE_RECOMPUTE] = "recompute",
		[SIM_PHASE_WEIGHT] = "wgt",
	};
	return (unsigned)p < SIM_PHASE_N ? names[p] : NULL;
}

void sim_program_dep(struct sim_program *prog, uint32_t dep)
{
	BUG_ON(prog->nops == 0 || dep >= prog->nops - 1);
	struct sim_op *op = &prog->ops[prog->nops - 1];
	/* A dependency on an earlier op of the same stream is implied by order. */
	if (prog->ops[dep].stream == op->stream)
		return;
	if (prog->ndeps == prog->depcap) {
		prog->depcap = prog->depcap ? 2 * prog->depcap : 16;
		prog->deps = xreallocarray(prog->deps, prog->depcap, sizeof(uint32_t));
	}
	prog->deps[prog->ndeps++] = dep;
	op->ndeps++;
	prog->sealed = 0;
}

/* ---- groups ------------------------------------------------------------ */

uint32_t sim_group_add(struct sim *sim, const uint32_t *ranks, uint32_t n)
{
	BUG_ON(n == 0);
	if (sim->ngroups == sim->groupcap) {
		sim->groupcap = sim->groupcap ? 2 * sim->groupcap : 16;
		sim->groups = xreallocarray(sim->groups, sim->groupcap, sizeof(*sim->groups));
	}
	struct sim_group *g = &sim->groups[sim->ngroups];
	*g = (struct sim_group){ .n = n, .ranks = xmalloc(n * sizeof(uint32_t)) };
	for (uint32_t i = 0; i < n; i++) {
		BUG_ON(ranks[i] >= sim->nranks);
		g->ranks[i] = ranks[i];
	}
	sim->memberships_stale = 1;  /* rebuilt on the next rank start */
	return sim->ngroups++;
}

uint32_t sim_group_size(const struct sim *sim, uint32_t group)
{
	BUG_ON(group >= sim->ngroups);
	return sim->groups[group].n;
}

/*
 * Index, for every rank, the groups it belongs to: O(sum of group sizes).
 * Groups are only ever appended, so a rank's old entries are a prefix of its
 * new ones and keep their collective counts.
 */
static void build_memberships(struct sim *sim)
{
	struct sim_membership **old = sim->memberships;
	uint32_t *nold = sim->nmemberships;
	size_t total = 0;
	sim->nmemberships = xcalloc(sim->nranks, sizeof(uint32_t));
	for (uint32_t g = 0; g < sim->ngroups; g++) {
		total += sim->groups[g].n;
		for (uint32_t i = 0; i < sim->groups[g].n; i++)
			sim->nmemberships[sim->groups[g].ranks[i]]++;
	}
	struct sim_membership *all = xmalloc((total ? total : 1) * sizeof(*all));
	sim->memberships = xmalloc((sim->nranks ? sim->nranks : 1) * sizeof(*sim->memberships));
	sim->memberships[0] = all;
	size_t off = 0;
	for (uint32_t r = 0; r < sim->nranks; r++) {
		sim->memberships[r] = all + off;
		off += sim->nmemberships[r];
		sim->nmemberships[r] = 0;
	}
	for (uint32_t g = 0; g < sim->ngroups; g++)
		for (uint32_t i = 0; i < sim->groups[g].n; i++) {
			uint32_t r = sim->groups[g].ranks[i], k = sim->nmemberships[r]++;
			uint32_t seq = old && k < nold[r] ? old[r][k].seq : 0;
			sim->memberships[r][k] = (struct sim_membership){ g, i, seq };
		}
	if (old)
		free(old[0]);
	free(old);
	free(nold);
	sim->memberships_stale = 0;
}

/* Index of the rank's membership of a group. */
static uint32_t membership_of(struct sim *sim, uint32_t rank, uint32_t group)
{
	for (uint32_t i = 0; i < sim->nmemberships[rank]; i++)
		if (sim->memberships[rank][i].group == group)
			return i;
	BUG("rank %u is not a member of group %u", rank, group);
}

/* ---- ranks and streams --------------------------------------------------- */

/* Share dt of exposed time among the busy communication streams. */
static void exposed_split(struct sim *sim, const struct sim_rank *r, sim_ps dt)
{
	sim_ps *by = sim->exposed_by + (size_t)(r - sim->ranks) * SIM_MAX_STREAMS;
	unsigned n = (unsigned)__builtin_popcount(r->counted);
	sim_ps share = dt / n, left = dt - share * n;
	for (uint16_t c = r->counted; c; c &= (uint16_t)(c - 1)) {
		by[__builtin_ctz(c)] += share + (left ? 1 : 0);
		if (left)
			left--;
	}
}

void sim_track_exposed_by_stream(struct sim *sim)
{
	if (!sim->exposed_by)
		sim->exposed_by = xcalloc((size_t)sim->nranks * SIM_MAX_STREAMS, sizeof(sim_ps));
}

const sim_ps *sim_rank_exposed_by_stream(const struct sim *sim, uint32_t rank)
{
	BUG_ON(rank >= sim->nranks);
	return sim->exposed_by ? sim->exposed_by + (size_t)rank * SIM_MAX_STREAMS : NULL;
}

/*
 * Account the time since the rank's last change of state: compute if the
 * compute stream is busy, exposed communication if only communication is.
 * Called before every change of a stream's busy flag.
 */
static void rank_account(struct sim *sim, struct sim_rank *r)
{
	sim_ps dt = sim->now - r->since;
	if (r->busy & (1u << SIM_STREAM_COMPUTE))
		r->compute_ps += dt;
	else if (r->counted) {
		r->exposed_ps += dt;
		if (sim->exposed_by && dt)
			exposed_split(sim, r, dt);
	}
	r->since = sim->now;
}

/*
 * A stream starts or ends an op. Communication counts from when it moves
 * data: at once for a collective, but a send or receive that waits for its
 * peer to post the other half counts only from the rendezvous
 * (stream_moving), so a pipeline stage waiting for its input is idle, not
 * communicating.
 */
static void compute_schedule(struct sim *sim, uint32_t rank, unsigned stream,
			     const struct sim_op_hot *h, sim_ps end);

/*
 * Communication begins on a rank whose compute streams run coalesced runs
 * (interference set; no communication when they began): each run is cut
 * after the op in progress, whose time stands, so that the ops after it
 * start one by one, each with its own factor, as they would have without
 * the run. The run's end already in the heap goes stale (stale_take).
 */
static __attribute__((noinline, cold)) void runs_cut(struct sim *sim, struct sim_rank *r)
{
	uint32_t rank = (uint32_t)(r - sim->ranks);
	const struct sim_program *prog = r->prog;
	for (uint16_t c = r->coalesced; c; c &= (uint16_t)(c - 1)) {
		unsigned s = (unsigned)__builtin_ctz(c);
		const struct sim_op_hot *h = &prog->hot[s][r->next[s]];
		uint32_t n = r->run[s], i = 0;
		sim_ps e = r->start[s];
		for (;; i++) {
			e = sim_ps_add(e, prog->ops[h[i].op].dur_ps);
			if (e >= sim->now || i + 1 == n)
				break;
		}
		r->comp = &prog->ops[h[i].op];
		r->comp_stream = (uint8_t)s;
		if (i + 1 == n)
			continue;  /* the last op is in progress: the end stands */
		r->run[s] = (uint16_t)(i + 1);
		sim->stale_pending++;
		if (!(r->stale >> s & 1u)) {
			r->stale |= (uint16_t)(1u << s);
			r->stale_t[s] = r->run_end[s];
		} else {
			sim->stale = xgrow_zeroed(sim->stale, &sim->stalecap, sim->nstale,
						  sizeof(*sim->stale), 8);
			sim->stale[sim->nstale++] =
				(struct stale_end){ rs_pack(rank, s), r->run_end[s] };
		}
		compute_schedule(sim, rank, s, h, e);
	}
	r->coalesced = 0;
}

static inline __attribute__((always_inline)) void stream_set_busy(struct sim *sim,
								   struct sim_rank *r,
								   unsigned stream, int busy,
								   int moving)
{
	rank_account(sim, r);
	if (busy)
		r->busy |= (uint16_t)(1u << stream);
	else
		r->busy &= (uint16_t)~(1u << stream);
	if (stream == SIM_STREAM_COMPUTE)
		return;
	if (busy && moving) {
		r->counted |= (uint16_t)(1u << stream);
		if (__builtin_expect(sim->interf != NULL, 0) && r->coalesced)
			runs_cut(sim, r);
	}
	if (!busy)
		r->counted &= (uint16_t)~(1u << stream);
}

/* A waiting send or receive of this stream has met its peer. */
static void stream_moving(struct sim *sim, uint32_t rank, unsigned stream)
{
	struct sim_rank *r = &sim->ranks[rank];
	if (!(r->counted >> stream & 1u))
		stream_set_busy(sim, r, stream, 1, 1);
}

/* Change a category of the rank's memory; keep the peak and its breakdown. */
static void rank_mem(struct sim *sim, uint32_t rank, unsigned cat, double bytes)
{
	struct sim_rank_stats *st = &sim->ranks[rank].st;
	st->mem_now[cat] += bytes;
	double total = 0;
	for (unsigned c = 0; c < SIM_MEM_CATS; c++)
		total += st->mem_now[c];
	if (total > st->mem_peak) {
		st->mem_peak = total;
		for (unsigned c = 0; c < SIM_MEM_CATS; c++)
			st->mem_at_peak[c] = st->mem_now[c];
	}
	if (sim->rec && sim->rec->mem)
		sim->rec->mem(sim->rec_ctx, rank, sim->now, cat, st->mem_now[cat]);
}

void sim_rank_mem_add(struct sim *sim, uint32_t rank, unsigned cat, double bytes)
{
	BUG_ON(rank >= sim->nranks || cat >= SIM_MEM_CATS);
	rank_mem(sim, rank, cat, bytes);
}

const struct sim_rank_stats *sim_rank_stats(const struct sim *sim, uint32_t rank)
{
	BUG_ON(rank >= sim->nranks);
	/* The event loop keeps the two busy times in the rank's first line;
	 * the statistics are brought up to date when read. */
	struct sim_rank *r = &((struct sim *)sim)->ranks[rank];
	r->st.compute_ps = r->compute_ps;
	r->st.exposed_comm_ps = r->exposed_ps;
	return &r->st;
}


const struct sim_op *sim_stream_head(const struct sim *sim, uint32_t rank, unsigned stream)
{
	const struct sim_rank *r = &sim->ranks[rank];
	return &r->prog->ops[r->prog->stream_ops[stream][r->next[stream]]];
}

static void p2p_post(struct sim *sim, uint32_t rank, unsigned stream, const struct sim_op *op);

/* A compute run (head h) of a stream ends at `end`: past the clock's
 * range, the run fails naming the op. */
static void compute_schedule(struct sim *sim, uint32_t rank, unsigned stream,
			     const struct sim_op_hot *h, sim_ps end)
{
	if (end == SIM_PS_MAX) {
		char what[160];
		snprintf(what, sizeof(what), "rank %u's op '%.100s' (started at %g s)", rank,
			 sim->ranks[rank].prog->ops[h->op].name, sim_ps_to_s(sim->now));
		sim_fail_clock(sim, what);
	}
	stream_schedule(sim, end, rank, stream);
}

static inline void stream_try_start(struct sim *sim, uint32_t rank, unsigned stream);

static void host_fire(struct sim *sim, struct sim_event *ev)
{
	struct host_wake *w = container_of(ev, struct host_wake, ev);
	uint32_t rank = w->rank;
	unsigned stream = w->stream;
	w->next_free = sim->host_free;
	sim->host_free = w;
	sim->ranks[rank].host_wait &= (uint16_t)~(1u << stream);
	stream_try_start(sim, rank, stream);
}

/* Whether the host has issued the head op h of a stream by now; if not, the
 * stream is woken when it has. */
static __attribute__((noinline)) int host_issued(struct sim *sim, uint32_t rank, unsigned stream,
						  const struct sim_op_hot *h)
{
	struct sim_rank *r = &sim->ranks[rank];
	sim_ps at = sim_ps_add(r->host0, r->prog->issue_ps[h->op]);
	if (at <= sim->now)
		return 1;
	if (r->host_wait >> stream & 1u)
		return 0;
	if (at == SIM_PS_MAX) {
		sim_fail_clock(sim, "the host's issue of an op");
		return 0;
	}
	struct host_wake *w = sim->host_free;
	if (w)
		sim->host_free = w->next_free;
	else
		w = xcalloc(1, sizeof(*w));
	w->ev.fire = host_fire;
	w->rank = rank;
	w->stream = stream;
	r->host_wait |= (uint16_t)(1u << stream);
	sim_schedule(sim, at, &w->ev);
	return 0;
}

/*
 * Start the head op of a stream, its first dependency (if any) done: the
 * part of stream_try_start that runs when the quick checks pass.
 */
static void stream_start(struct sim *sim, uint32_t rank, unsigned stream,
			 const struct sim_op_hot *h)
{
	struct sim_rank *r = &sim->ranks[rank];
	const struct sim_program *prog = r->prog;
	for (uint32_t i = 1; i < h->ndeps; i++) {
		const struct sim_dep_at *d = &prog->dep_at[h->dep0 + i];
		if (r->next[d->stream] <= d->pos)
			return;
	}
	if (__builtin_expect(sim->host != NULL, 0) && !host_issued(sim, rank, stream, h))
		return;
	stream_set_busy(sim, r, stream, 1, h->kind != SIM_OP_SEND && h->kind != SIM_OP_RECV);
	if (sim->rec || sim->interf)
		r->start[stream] = sim->now;
	r->run[stream] = 1;
	switch (h->kind) {
	case SIM_OP_COMPUTE:
		if (__builtin_expect(sim->scale != NULL || sim->host != NULL ||
					     (sim->interf != NULL &&
					      (sim->speed || !h->run_n || r->counted)), 0)) {
			/* One op at a time, each with its own draw, interference
			 * and issue. */
			const struct sim_op *op = &prog->ops[h->op];
			double f = sim->scale ? sim->scale(sim->scale_ctx, rank, op) : 1;
			BUG_ON(!(f > 0));
			if (sim->speed)  /* two tiny factors may give 0: a time of 0 ps */
				f *= sim->speed[rank];
			sim_ps d = sim_ps_scale(op->dur_ps, f);
			if (sim->interf && r->counted) {
				double g = sim->interf(sim->interf_ctx, rank, op, comm_blocks(r));
				BUG_ON(!(g >= 1));
				sim_ps dg = sim_ps_scale(op->dur_ps, f * g);
				r->st.interference_ps = sim_ps_add(r->st.interference_ps, dg - d);
				d = dg;
			}
			if (sim->interf) {
				r->comp = op;
				r->comp_stream = (uint8_t)stream;
			}
			compute_schedule(sim, rank, stream, h, sim_ps_add(sim->now, d));
			break;
		}
		r->run[stream] = (uint16_t)h->run_n;
		if (__builtin_expect(sim->interf != NULL, 0)) {
			/* A run begun without communication: cut if some begins
			 * before it ends (runs_cut). */
			r->coalesced |= (uint16_t)(1u << stream);
			r->run_end[stream] = sim_ps_add(sim->now, h->run_ps);
			r->comp = NULL;
		}
		compute_schedule(sim, rank, stream, h,
				 sim_ps_add(sim->now, at_speed(sim, rank, h->run_ps)));
		break;
	case SIM_OP_COLL:
		r->run[stream] = (uint16_t)sim_coll_join(sim, rank, stream, &prog->ops[h->op],
							 sim->host ? 1 : h->run_n);
		break;
	case SIM_OP_SEND:
	case SIM_OP_RECV:
		r->blocks[stream] = 1;
		p2p_post(sim, rank, stream, &prog->ops[h->op]);
		break;
	default:
		BUG("op kind %u", h->kind);
	}
}

/*
 * Start the head op of a stream if the stream is idle and its deps are done.
 * Inlined: about half the calls (a stream that runs, or waits for another
 * stream) end at these checks, without a call.
 */
static inline __attribute__((always_inline)) void stream_try_start(struct sim *sim, uint32_t rank,
								    unsigned stream)
{
	const struct sim_rank *r = &sim->ranks[rank];
	const struct sim_program *prog = r->prog;
	if ((r->busy >> stream & 1u) || r->next[stream] >= prog->stream_n[stream])
		return;
	const struct sim_op_hot *h = &prog->hot[stream][r->next[stream]];
	if (h->ndeps && r->next[h->dep_stream] <= h->dep_pos)
		return;
	stream_start(sim, rank, stream, h);
}

static void rank_try_start(struct sim *sim, uint32_t rank)
{
	unsigned n = sim->ranks[rank].prog->nstreams;
	for (unsigned s = 0; s < n; s++)
		stream_try_start(sim, rank, s);
}

/*
 * A run has ended: record its ops with the times they had, one after the
 * other from the run's start. A compute run's last op ends now (at a rank's
 * speed the ops' rounded times may add up to a few ps more or less than the
 * run's); a chain of collectives ends op k at sim->chain_end[k] after the
 * chain's closed-form start (coll.c sets it for the finish it is making).
 */
static void run_record(struct sim *sim, uint32_t rank, unsigned stream)
{
	const struct sim_rank *r = &sim->ranks[rank];
	uint32_t run = r->run[stream];
	const struct sim_op_hot *h = &r->prog->hot[stream][r->next[stream]];
	sim_ps t = r->start[stream];
	BUG_ON(run > 1 && h->kind == SIM_OP_COLL && !sim->chain_end);
	for (uint32_t k = 0; k < run; k++) {
		const struct sim_op *op = &r->prog->ops[h[k].op];
		sim_ps end = sim->now;
		if (k + 1 < run && h->kind == SIM_OP_COLL) {  /* ends relative to the start */
			end = sim->now - sim->chain_end[run - 1] + sim->chain_end[k];
		} else if (k + 1 < run) {
			sim_ps d = at_speed(sim, rank, op->dur_ps);
			end = d < sim->now - t ? t + d : sim->now;
		}
		sim->rec->op_done(sim->rec_ctx, rank, op, t, end);
		t = end;
	}
	BUG_ON(t != sim->now);
}

void sim_stream_finish(struct sim *sim, uint32_t rank, unsigned stream)
{
	struct sim_rank *r = &sim->ranks[rank];
	uint32_t run = r->run[stream];
	BUG_ON(!(r->busy >> stream & 1u));
	/* The op that ends now: the stream's head, or the last of its run. */
	const struct sim_op_hot *h = &r->prog->hot[stream][r->next[stream] + run - 1];
	if (sim->rec)
		run_record(sim, rank, stream);
	stream_set_busy(sim, r, stream, 0, 0);
	if (__builtin_expect(sim->interf != NULL, 0)) {
		if (r->comp && r->comp_stream == stream)
			r->comp = NULL;
		r->coalesced &= (uint16_t)~(1u << stream);
	}
	if (h->effects) {
		const struct sim_op *op = &r->prog->ops[h->op];
		if (op->mem_bytes != 0)
			rank_mem(sim, rank, op->mem_cat, op->mem_bytes);
		if (op->flags & SIM_OP_MARK) {
			r->st.mark_ps = sim->now;
			r->st.mark_compute_ps = r->compute_ps;
			r->st.mark_exposed_ps = r->exposed_ps;
		}
	}
	r->next[stream] += run;
	r->left -= run;
	if (!r->left)
		r->end = sim->now;
	/* The stream's next op, then the heads of the streams that wait for
	 * this op, in stream order: it may have been their last dependency (no
	 * other head can have become ready). */
	stream_try_start(sim, rank, stream);
	for (unsigned w = h->wakes; w; w &= w - 1)
		stream_try_start(sim, rank, (unsigned)__builtin_ctz(w));
	if (!r->left && sim->rank_done)
		sim->rank_done(sim->rank_done_ctx, sim, rank);
}

void sim_stream_finish_later(struct sim *sim, uint32_t rank, unsigned stream)
{
	stream_schedule(sim, sim->now, rank, stream);
}

void sim_rank_start(struct sim *sim, uint32_t rank, const struct sim_program *prog,
		    const uint32_t *groups, unsigned ngroups)
{
	BUG_ON(rank >= sim->nranks || ngroups > SIM_MAX_GROUPS || prog->ngroups > ngroups);
	struct sim_rank *r = &sim->ranks[rank];
	BUG_ON(r->left != 0);
	for (unsigned i = 0; r->prog && i < r->ngroups; i++)  /* the counts back */
		if (r->slot[i].seq_slot == i)
			sim->memberships[rank][r->slot[i].memb].seq = r->slot[i].seq;
	if (!sim->memberships || sim->memberships_stale)
		build_memberships(sim);
	/* The hot arrays are derived data kept with the program; computing
	 * them once changes none of its ops. */
	int fresh = !prog->sealed;
	program_seal((struct sim_program *)prog);
	if (sim->host && (fresh || !prog->issue_ps || prog->issue_of != sim->host_ctx))
		program_issue(sim, (struct sim_program *)prog);
	sim->ranks_started = 1;
	r->prog = prog;
	r->ngroups = (uint8_t)ngroups;
	for (unsigned i = 0; i < ngroups; i++) {
		BUG_ON(groups[i] >= sim->ngroups);
		struct sim_rank_slot *sl = &r->slot[i];
		sl->group = groups[i];
		uint32_t memb = membership_of(sim, rank, groups[i]);
		BUG_ON(memb > UINT16_MAX);
		sl->memb = (uint16_t)memb;
		sl->member = sim->memberships[rank][sl->memb].member;
		sl->seq = sim->memberships[rank][sl->memb].seq;
		sl->seq_slot = (uint8_t)i;
		for (unsigned j = 0; j < i; j++)
			if (r->slot[j].group == groups[i]) {
				sl->seq_slot = (uint8_t)j;
				break;
			}
	}
	r->left = prog->nops;
	r->end = sim->now;
	r->since = sim->now;
	r->counted = 0;
	r->busy = 0;
	r->host_wait = 0;
	r->coalesced = 0;
	r->host0 = sim->now;
	memset(r->next, 0, sizeof(r->next));
	memset(r->run, 0, sizeof(r->run));
	memset(r->start, 0, sizeof(r->start));
	BUG_ON(prog->nstreams > SIM_MAX_STREAMS);
	rank_try_start(sim, rank);
}

void sim_rank_absent(struct sim *sim, uint32_t rank)
{
	/* Every absent rank before the first start: a rank may join a
	 * collective as it starts, and its group's present members are
	 * counted then (sim_group_present). */
	BUG_ON(rank >= sim->nranks || sim->ranks[rank].prog || sim->ranks_started);
	if (!sim->absent)
		sim->absent = xcalloc(sim->nranks, 1);
	sim->absent[rank] = 1;
	sim->absent_gen++;  /* the groups count again */
}

int sim_rank_present(const struct sim *sim, uint32_t rank)
{
	return !sim->absent || !sim->absent[rank];
}

/* O(members). */
uint32_t sim_group_count_present(struct sim *sim, uint32_t group)
{
	struct sim_group *g = &sim->groups[group];
	g->npresent = 0;
	for (uint32_t i = 0; i < g->n; i++)
		g->npresent += sim_rank_present(sim, g->ranks[i]);
	g->npresent_gen = sim->absent_gen + 1;
	return g->npresent;
}

sim_ps sim_rank_end(const struct sim *sim, uint32_t rank)
{
	return sim->ranks[rank].end;
}

/* After the heap ran dry: any rank with ops left is stuck. */
static int report_stuck(struct sim *sim)
{
	for (uint32_t rank = 0; rank < sim->nranks; rank++) {
		const struct sim_rank *r = &sim->ranks[rank];
		if (!r->left)
			continue;
		for (unsigned s = 0; s < SIM_MAX_STREAMS; s++) {
			if (r->next[s] >= r->prog->stream_n[s])
				continue;
			const struct sim_op *op = sim_stream_head(sim, rank, s);
			sim_fail(sim, "deadlock: rank %u cannot finish op '%s' (%s, stream %u)%s",
				 rank, op->name, sim_op_kind_name(op->kind), s,
				 (r->busy >> s & 1u) ? ": it waits for its peers" : ": a dependency never finished");
			return -1;
		}
	}
	return 0;
}

/* ---- point-to-point ----------------------------------------------------- */

/*
 * Sends and receives meet by (source rank, destination rank, tag) in program
 * order, as NCCL's send/recv do: the n-th send from a to b pairs with the
 * n-th receive on b from a (of the same tag). The transfer starts when both are posted
 * (rendezvous) and both ops finish when it has arrived. Waiting posts of one
 * pair wait in a list, oldest first.
 */
/*
 * One (src, dst, tag) conversation: 16 bytes, four to a cache line, so the
 * table of a large run (two or three conversations per rank) stays small.
 * Its waiting posts are a FIFO list of (rank, stream): head and tail here,
 * the links in the waiting ranks (sim_rank.p2p_next). A post waits only
 * while the other side has none waiting, so the list holds one kind.
 */
struct p2p_pair {
	uint64_t key;            /* src << 23 | dst << 2 | tag, plus one: 0 is empty */
	uint32_t head, tail;     /* P2P_NONE, or rs_pack'ed, and the head's
				  * P2P_SENDS bit: the waiting are sends     */
};
#define P2P_NONE UINT32_MAX
#define P2P_SENDS (1u << 31)

struct p2p_map {
	struct p2p_pair *slots;
	uint32_t cap, used;      /* open addressing, linear probing           */
};

static void p2p_free(struct p2p_map *m)
{
	if (!m)
		return;
	free(m->slots);
	free(m);
}

static uint32_t p2p_hash(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (uint32_t)key;
}

static struct p2p_pair *p2p_slot(struct p2p_map *m, uint64_t key)
{
	uint32_t i = p2p_hash(key) & (m->cap - 1);
	while (m->slots[i].key && m->slots[i].key != key)
		i = (i + 1) & (m->cap - 1);
	return &m->slots[i];
}

/* The pair's entry, created on first use; the table stays under half full. */
static struct p2p_pair *p2p_find(struct sim *sim, uint32_t src, uint32_t dst, unsigned tag)
{
	struct p2p_map *m = sim->p2p;
	if (!m)
		m = sim->p2p = xcalloc(1, sizeof(*m));
	if (2 * (m->used + 1) > m->cap) {
		struct p2p_map old = *m;
		m->cap = m->cap ? 2 * m->cap : 64;
		m->slots = xcalloc(m->cap, sizeof(*m->slots));
		for (uint32_t i = 0; i < old.cap; i++)
			if (old.slots[i].key)
				*p2p_slot(m, old.slots[i].key) = old.slots[i];
		free(old.slots);
	}
	/* ranks < 2^20 (TOPO_MAX_RANKS is checked by the topology) and tag < 4 */
	uint64_t key = ((((uint64_t)src << 21) | dst) << 2 | tag) + 1;
	struct p2p_pair *p = p2p_slot(m, key);
	if (!p->key) {
		*p = (struct p2p_pair){ .key = key, .head = P2P_NONE, .tail = P2P_NONE };
		m->used++;
	}
	return p;
}

static void p2p_arrived(struct sim *sim, struct sim_xfer *x)
{
	sim_stream_finish(sim, x->a, x->b);
	sim_stream_finish(sim, x->c, x->d);
}

static void p2p_post(struct sim *sim, uint32_t rank, unsigned stream, const struct sim_op *op)
{
	const struct sim_rank *r = &sim->ranks[rank];
	const struct sim_group *g = &sim->groups[r->slot[op->group].group];
	uint32_t member = op->peer, self = r->slot[op->group].member;
	if (member == SIM_PEER_NEXT)
		member = (self + 1) % g->n;
	else if (member == SIM_PEER_PREV)
		member = (self + g->n - 1) % g->n;
	if (member >= g->n) {
		sim_fail(sim, "rank %u: %s '%s' names member %u of a group of %u",
			 rank, sim_op_kind_name(op->kind), op->name, member, g->n);
		return;
	}
	uint32_t peer = g->ranks[member];
	int is_send = op->kind == SIM_OP_SEND;
	struct p2p_pair *p = is_send ? p2p_find(sim, rank, peer, op->tag)
				     : p2p_find(sim, peer, rank, op->tag);
	uint32_t me = rs_pack(rank, stream), kind = is_send ? P2P_SENDS : 0;
	if (p->head != P2P_NONE && (p->head & P2P_SENDS) != kind) {
		/* The other side is waiting: take the oldest and start. */
		uint32_t w = p->head & ~P2P_SENDS, wrank = rs_rank(w);
		unsigned wstream = rs_stream(w);
		uint32_t next = sim->ranks[wrank].p2p_next[wstream];
		if (next == P2P_NONE)
			p->head = p->tail = P2P_NONE;
		else
			p->head = next | (p->head & P2P_SENDS);
		uint32_t src = is_send ? rank : wrank, dst = is_send ? wrank : rank;
		unsigned ss = is_send ? stream : wstream, ds = is_send ? wstream : stream;
		double bytes = is_send ? op->bytes : sim_stream_head(sim, wrank, wstream)->bytes;
		stream_moving(sim, src, ss);
		stream_moving(sim, dst, ds);
		struct sim_xfer *x = sim_xfer_start(sim, src, dst, bytes, p2p_arrived, NULL);
		x->a = src, x->b = ss, x->c = dst, x->d = ds;
		return;
	}
	/* Wait, last in the pair's list. */
	sim->ranks[rank].p2p_next[stream] = P2P_NONE;
	if (p->head == P2P_NONE) {
		p->head = me | kind;
	} else {
		uint32_t t = p->tail;
		sim->ranks[rs_rank(t)].p2p_next[rs_stream(t)] = me;
	}
	p->tail = me;
}
