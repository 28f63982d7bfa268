/*
 * coll.c - collectives in the engine: groups laid out over nodes, plans,
 * the choice of algorithm, and the two fidelities.
 *
 * Flow: one state machine runs every algorithm. Per channel, member v is at
 * step k (-1 before it joins). Entering step k it asks the algorithm what to
 * do; it sends once the receiver has also reached step k (the receiver has
 * posted its buffer, as NCCL's slots require), and it enters step k+1 when its
 * send has arrived and the message it receives has arrived. A step with
 * nothing to do passes at once. A member is done when all its channels are.
 *
 * Analytic: one event per collective, at the last member's arrival plus the
 * algorithm's closed form on the links the collective crosses. A group with
 * absent members (symmetry collapse) is costed so in either fidelity, and its
 * collectives end when the present members have joined.
 *
 * Instances of one group are found by sequence number: each rank counts the
 * collectives it joined on each group slot, so the n-th collective of every
 * member is the same instance. Instances retire in order once all members
 * are done.
 */
#include "sim/coll-int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const coll_op_names[SIM_COLL_NOPS] = {
	[SIM_COLL_ALLREDUCE] = "allreduce",
	[SIM_COLL_REDUCESCATTER] = "reducescatter",
	[SIM_COLL_ALLGATHER] = "allgather",
	[SIM_COLL_ALLTOALL] = "alltoall",
	[SIM_COLL_BROADCAST] = "broadcast",
};

const char *sim_coll_op_name(enum sim_coll_op op)
{
	return (unsigned)op < SIM_COLL_NOPS ? coll_op_names[op] : "?";
}

int sim_coll_op_parse(const char *name)
{
	for (int i = 0; i < SIM_COLL_NOPS; i++)
		if (strcmp(name, coll_op_names[i]) == 0)
			return i;
	return -1;
}

double sim_coll_busbw_factor(enum sim_coll_op op, uint32_t p)
{
	if (p == 0)
		return 0;
	switch (op) {
	case SIM_COLL_ALLREDUCE:
		return 2.0 * (p - 1) / p;
	case SIM_COLL_REDUCESCATTER:
	case SIM_COLL_ALLGATHER:
	case SIM_COLL_ALLTOALL:
		return (double)(p - 1) / p;
	default:
		return 1.0;
	}
}

double sim_coll_step_s(const struct sim_coll_links *l, double bytes)
{
	double t = l->bw_intra_Bps > 0 ? l->alpha_intra_s + bytes / l->bw_intra_Bps : 0;
	if (l->bw_inter_Bps > 0) {
		double u = l->alpha_inter_s + bytes / l->bw_inter_Bps;
		if (u > t)
			t = u;
	}
	return t;
}

/* ---- layout of a group over nodes ---------------------------------------- */

struct node_key {
	uint32_t node, idx;
};

static int node_key_cmp(const void *a, const void *b)
{
	const struct node_key *x = a, *y = b;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Sort members by node (stable in group order); O(p log p), once per group. */
static void group_layout(struct sim *sim, struct sim_group *g)
{
	if (g->by_node)
		return;
	struct node_key *k = xmalloc(g->n * sizeof(*k));
	for (uint32_t i = 0; i < g->n; i++)
		k[i] = (struct node_key){ sim->topo_ops->node_of(sim->topo, g->ranks[i]), i };
	qsort(k, g->n, sizeof(*k), node_key_cmp);
	g->by_node = xmalloc(g->n * sizeof(uint32_t));
	g->node_first = xmalloc((g->n + 1) * sizeof(uint32_t));
	g->nodes = 0;
	for (uint32_t i = 0; i < g->n; i++) {
		if (i == 0 || k[i].node != k[i - 1].node)
			g->node_first[g->nodes++] = i;
		g->by_node[i] = k[i].idx;
	}
	g->node_first[g->nodes] = g->n;
	g->per_node = g->n / g->nodes;
	for (uint32_t x = 0; x < g->nodes; x++)
		if (g->node_first[x + 1] - g->node_first[x] != g->per_node)
			g->per_node = 0;
	free(k);
}

/*
 * The virtual order of channel c: node by node, each node's members rotated
 * by c. A snaking ring runs every other node backwards, so that the member
 * that leaves a node and the one that enters the next have the same local
 * position (the same NIC rail) and channel c crosses nodes on rail c.
 */
static void group_order(const struct sim_group *g, int snake, uint32_t c, uint32_t *out)
{
	uint32_t pos = 0;
	for (uint32_t x = 0; x < g->nodes; x++) {
		const uint32_t *list = g->by_node + g->node_first[x];
		uint32_t k = g->node_first[x + 1] - g->node_first[x], r = c % k;
		for (uint32_t j = 0; j < k; j++) {
			uint32_t i = (snake && x % 2) ? (r + 2 * k - 1 - j) % k : (r + j) % k;
			out[pos++] = list[i];
		}
	}
}

/* ---- plans ----------------------------------------------------------------- */

/* The slowest route of each class between ring neighbours (node-major). */
static void group_basic_links(struct sim *sim, struct sim_group *g, struct sim_coll_links *out)
{
	if (g->basic_done) {
		*out = g->basic;
		return;
	}
	struct sim_coll_links *l = &g->basic;
	*l = (struct sim_coll_links){ 0 };
	for (uint32_t v = 0; v < g->n && g->n > 1; v++) {
		uint32_t a = g->ranks[g->by_node[v]], b = g->ranks[g->by_node[(v + 1) % g->n]];
		struct sim_route r;
		sim->topo_ops->route(sim->topo, sim, a, b, &r);
		int inter = sim->topo_ops->node_of(sim->topo, a) != sim->topo_ops->node_of(sim->topo, b);
		double *al = inter ? &l->alpha_inter_s : &l->alpha_intra_s;
		double *bw = inter ? &l->bw_inter_Bps : &l->bw_intra_Bps;
		if (sim_ps_to_s(r.alpha_ps) > *al)
			*al = sim_ps_to_s(r.alpha_ps);
		if (*bw == 0 || r.bw_Bps < *bw)
			*bw = r.bw_Bps;
	}
	g->basic_done = 1;
	*out = *l;
}

static unsigned default_channels(struct sim *sim, const struct sim_group *g,
				 const struct sim_coll_algo *algo)
{
	if (!(algo->flags & SIM_COLL_CHANNELS) || g->nodes < 2)
		return 1;
	uint32_t least = g->n;
	for (uint32_t x = 0; x < g->nodes; x++) {
		uint32_t k = g->node_first[x + 1] - g->node_first[x];
		if (k < least)
			least = k;
	}
	uint32_t rails = sim->topo_ops->rails ? sim->topo_ops->rails(sim->topo) : 1;
	return rails < least ? rails : least;
}

/* Fill a plan of one collective; 0, or -1 with err. */
static int plan_build(struct sim *sim, struct sim_group *g, const struct sim_coll_algo *algo,
		      enum sim_coll_op op, double bytes, unsigned *channels,
		      struct sim_coll_plan *plan, char *err, size_t errlen)
{
	if (!(algo->ops & (1u << op))) {
		snprintf(err, errlen, "algorithm '%s' does not implement %s", algo->name,
			 sim_coll_op_name(op));
		return -1;
	}
	group_layout(sim, g);
	unsigned c = *channels ? *channels : default_channels(sim, g, algo);
	struct sim_coll_links basic;
	group_basic_links(sim, g, &basic);
	double bw = basic.bw_inter_Bps > 0 ? basic.bw_inter_Bps : basic.bw_intra_Bps;
	*plan = (struct sim_coll_plan){
		.op = op, .p = g->n, .bytes = bytes, .channels = c, .root = 0,
		.nodes = g->nodes, .per_node = g->per_node,
		.alpha_s = basic.alpha_inter_s > basic.alpha_intra_s ? basic.alpha_inter_s
								     : basic.alpha_intra_s,
		.beta_s = bw > 0 ? 1.0 / bw : 0,
	};
	if (algo->plan(plan, err, errlen) < 0)
		return -1;
	*channels = c;
	return 0;
}

/* ---- links a collective crosses (analytic costs, auto) ---------------------- */


const struct sim_coll_links *sim_coll_linkset_at(const struct sim_coll_linkset *ls,
						 uint32_t pattern)
{
	/* Patterns are mostly numbered 0, 1, ... in order of first use. */
	if (pattern < ls->n && ls->pattern[pattern] == pattern)
		return &ls->per[pattern];
	for (uint32_t i = 0; i < ls->n; i++)
		if (ls->pattern[i] == pattern)
			return &ls->per[i];
	return &ls->all;
}

/* Fold one class into another: the larger latency, the smaller bandwidth. */
static void links_merge(struct sim_coll_links *into, const struct sim_coll_links *l)
{
	if (l->alpha_intra_s > into->alpha_intra_s)
		into->alpha_intra_s = l->alpha_intra_s;
	if (l->bw_intra_Bps > 0 && (into->bw_intra_Bps == 0 || l->bw_intra_Bps < into->bw_intra_Bps))
		into->bw_intra_Bps = l->bw_intra_Bps;
	if (l->alpha_inter_s > into->alpha_inter_s)
		into->alpha_inter_s = l->alpha_inter_s;
	if (l->bw_inter_Bps > 0 && (into->bw_inter_Bps == 0 || l->bw_inter_Bps < into->bw_inter_Bps))
		into->bw_inter_Bps = l->bw_inter_Bps;
}

static void scratch_fit(struct sim *sim)
{
	if (sim->nlinks)
		sim->scratch = xgrow_zeroed(sim->scratch, &sim->scratchcap, sim->nlinks - 1,
					    sizeof(uint32_t), 64);
}

struct scan_route {
	struct sim_route r;
	int inter;
};

/* What a scan does besides the linkset: nothing, or note the footprint
 * (share.c, sim->share_map mapping its links). */
enum scan_mode { SCAN_PLAIN, SCAN_FOOTPRINT };

/* The rate of a step's messages alone: its slowest class's bandwidth. */
static double step_rate(const struct sim_coll_links *l)
{
	double a = l->bw_intra_Bps, b = l->bw_inter_Bps;
	return a > 0 && (b == 0 || a < b) ? a : b;
}

/*
 * Visit one step of the given pattern on every channel: count the messages
 * on each link, then take each route's latency and its bandwidth shared among
 * the messages on its busiest link. O(channels * p) routes per pattern.
 */
static void scan_pattern(struct sim *sim, const struct sim_group *g,
			 const struct sim_coll_algo *algo, const struct sim_coll_plan *plan,
			 const uint32_t *order, uint32_t k, struct sim_coll_links *l,
			 enum scan_mode mode, struct coll_links_memo *m)
{
	uint32_t n = plan->channels * plan->p, nr = 0;
	struct scan_route *rs = xmalloc(n * sizeof(*rs));
	for (uint32_t c = 0; c < plan->channels; c++)
		for (uint32_t v = 0; v < plan->p; v++) {
			struct sim_coll_step st;
			algo->step(plan, v, k, &st);
			if (st.send_to < 0)
				continue;
			uint32_t a = g->ranks[order[c * plan->p + v]];
			uint32_t b = g->ranks[order[c * plan->p + (uint32_t)st.send_to]];
			struct scan_route *s = &rs[nr++];
			sim->topo_ops->route(sim->topo, sim, a, b, &s->r);
			s->inter = sim->topo_ops->node_of(sim->topo, a) !=
				   sim->topo_ops->node_of(sim->topo, b);
			scratch_fit(sim);
			for (uint32_t i = 0; i < s->r.n; i++)
				sim->scratch[s->r.link[i]]++;
		}
	for (uint32_t i = 0; i < nr; i++) {
		const struct sim_route *r = &rs[i].r;
		double bw = r->bw_Bps;
		for (uint32_t j = 0; j < r->n; j++) {
			uint32_t link = r->link[j], own = sim->scratch[link];
			double share = sim->links[link].bw_Bps / own;
			if (share < bw)
				bw = share;
		}
		double *al = rs[i].inter ? &l->alpha_inter_s : &l->alpha_intra_s;
		double *w = rs[i].inter ? &l->bw_inter_Bps : &l->bw_intra_Bps;
		if (sim_ps_to_s(r->alpha_ps) > *al)
			*al = sim_ps_to_s(r->alpha_ps);
		if (*w == 0 || bw < *w)
			*w = bw;
	}
	if (mode == SCAN_FOOTPRINT) {
		double rate = step_rate(l);
		for (uint32_t i = 0; i < nr; i++)
			for (uint32_t j = 0; j < rs[i].r.n; j++)
				coll_fp_note(sim, m, rs[i].r.link[j], sim->scratch[rs[i].r.link[j]],
					     rate, rs[i].inter);
	}
	for (uint32_t i = 0; i < nr; i++)
		for (uint32_t j = 0; j < rs[i].r.n; j++)
			sim->scratch[rs[i].r.link[j]] = 0;
	free(rs);
}

/*
 * Scan one step of every pattern: into m's linkset when the memo is new
 * (SCAN_PLAIN, or SCAN_FOOTPRINT too), else only the footprint.
 */
static void links_scan(struct sim *sim, struct sim_group *g, const struct sim_coll_algo *algo,
		       const struct sim_coll_plan *plan, struct coll_links_memo *m,
		       enum scan_mode mode)
{
	uint32_t *order = xmalloc((size_t)plan->channels * plan->p * sizeof(uint32_t));
	for (uint32_t c = 0; c < plan->channels; c++)
		group_order(g, algo->flags & SIM_COLL_SNAKE, c, order + (size_t)c * plan->p);
	int fresh = !m->pattern;
	/* At most nsteps patterns, usually one or log p; O(patterns^2) lookups. */
	uint32_t *pattern = xmalloc((plan->nsteps + 1) * sizeof(uint32_t));
	struct sim_coll_links *per = xmalloc((plan->nsteps + 1) * sizeof(*per));
	uint32_t n = 0;
	for (uint32_t k = 0; k < plan->nsteps; k++) {
		uint32_t pat = algo->pattern ? algo->pattern(plan, k) : k, i;
		for (i = 0; i < n && pattern[i] != pat; i++)
			;
		if (i < n)
			continue;
		pattern[n] = pat;
		per[n] = (struct sim_coll_links){ 0 };
		scan_pattern(sim, g, algo, plan, order, k, &per[n], mode, m);
		if (fresh)
			links_merge(&m->ls.all, &per[n]);
		n++;
	}
	if (fresh) {
		m->pattern = pattern, m->per = per;
		m->ls.n = n;
		m->ls.pattern = m->pattern;
		m->ls.per = m->per;
	} else {
		free(pattern);
		free(per);
	}
	free(order);
}

/* Plan a memo's collective again (it was planned when the memo was made). */
static void memo_plan(struct sim *sim, struct sim_group *g, const struct coll_links_memo *m,
		      struct sim_coll_plan *plan)
{
	char err[256];
	unsigned c = m->channels;
	BUG_ON(plan_build(sim, g, m->algo, m->op, m->bytes, &c, plan, err, sizeof(err)) < 0);
}

struct coll_links_memo *coll_memo_get(struct sim *sim, uint32_t group,
				      const struct sim_coll_algo *algo,
				      enum sim_coll_op op, double bytes,
				      unsigned channels)
{
	struct sim_group *g = &sim->groups[group];
	struct sim_coll_plan plan;
	char err[256];
	for (struct coll_links_memo *m = g->memo; m; m = m->next)
		if (m->algo == algo && m->op == op && m->channels == channels)
			return m;
	unsigned c = channels;
	if (plan_build(sim, g, algo, op, bytes, &c, &plan, err, sizeof(err)) < 0)
		return NULL;
	struct coll_links_memo *m = xcalloc(1, sizeof(*m));
	m->algo = algo, m->op = op, m->channels = channels, m->bytes = bytes, m->next = g->memo;
	g->memo = m;
	int census = sim->cfg.analytic_sharing;
	if (census)
		coll_fp_begin(sim, m);
	links_scan(sim, g, algo, &plan, m, census ? SCAN_FOOTPRINT : SCAN_PLAIN);
	if (census) {
		coll_fp_end(sim, m);
		coll_share_census(sim, group, m);
	}
	return m;
}

void coll_memo_footprint(struct sim *sim, uint32_t group, struct coll_links_memo *m)
{
	struct sim_coll_plan plan;
	if (m->has_fp)
		return;
	memo_plan(sim, &sim->groups[group], m, &plan);
	coll_fp_begin(sim, m);
	links_scan(sim, &sim->groups[group], m->algo, &plan, m, SCAN_FOOTPRINT);
	coll_fp_end(sim, m);
}


/* The linkset of a collective on a group (empty if it cannot be planned). */
static const struct sim_coll_linkset *links_get(struct sim *sim, uint32_t group,
						const struct sim_coll_algo *algo,
						enum sim_coll_op op, double bytes,
						unsigned channels)
{
	static const struct sim_coll_linkset none;
	const struct coll_links_memo *m = coll_memo_get(sim, group, algo, op, bytes, channels);
	return m ? &m->ls : &none;
}

void sim_coll_links(struct sim *sim, uint32_t group, const struct sim_coll_algo *algo,
		    enum sim_coll_op op, double bytes, unsigned channels,
		    struct sim_coll_links *out)
{
	*out = links_get(sim, group, algo, op, bytes, channels)->all;
}

/* Closed-form time of a planned collective on its links. */
static double plan_time_s(struct sim *sim, uint32_t group, const struct sim_coll_algo *algo,
			  const struct sim_coll_plan *plan, unsigned channels_asked)
{
	return algo->time_s(plan, links_get(sim, group, algo, plan->op, plan->bytes,
					    channels_asked));
}

/* Resolve algo (NULL: the fastest by closed form) and plan it. */
static const struct sim_coll_algo *coll_resolve(struct sim *sim, uint32_t group,
						enum sim_coll_op op,
						const struct sim_coll_algo *algo, double bytes,
						unsigned *channels, struct sim_coll_plan *plan,
						char *err, size_t errlen)
{
	struct sim_group *g = &sim->groups[group];
	if (algo) {
		unsigned c = *channels;
		if (plan_build(sim, g, algo, op, bytes, &c, plan, err, errlen) < 0)
			return NULL;
		*channels = c;
		return algo;
	}
	const struct sim_coll_algo *best = NULL;
	double best_t = INFINITY;
	unsigned best_c = 0;
	int ring_only = 0;
	if (sim->cfg.auto_nccl && (op == SIM_COLL_ALLGATHER || op == SIM_COLL_REDUCESCATTER)) {
		group_layout(sim, g);
		ring_only = g->nodes < g->n;  /* a node holds two members */
	}
	for (const struct sim_coll_algo *const *a = sim->cfg.algos; a && *a; a++) {
		struct sim_coll_plan p;
		unsigned c = *channels;
		char e[256];
		if (ring_only && strcmp((*a)->name, "ring") != 0)
			continue;
		if (plan_build(sim, g, *a, op, bytes, &c, &p, e, sizeof(e)) < 0)
			continue;
		double t = plan_time_s(sim, group, *a, &p, *channels);
		if (t < best_t) {
			best = *a, best_t = t, best_c = c, *plan = p;
		}
	}
	if (!best) {
		snprintf(err, errlen, "no algorithm implements %s on %u ranks",
			 sim_coll_op_name(op), g->n);
		return NULL;
	}
	*channels = best_c;
	return best;
}

/* Is a collective on this group costed in closed form: analytic fidelity, or
 * a group with absent members (symmetry collapse, sim_rank_absent)? */
static int coll_closed_form(struct sim *sim, uint32_t group)
{
	return sim->cfg.fidelity == SIM_FIDELITY_ANALYTIC ||
	       sim_group_present(sim, group) < sim->groups[group].n;
}

/*
 * The resolved collective for an op, from the group's choices or resolved
 * and remembered (a training step repeats a handful of collectives per
 * group thousands of times). NULL with err if it cannot run.
 */
const struct coll_choice *coll_choose(struct sim *sim, uint32_t group, const struct sim_op *op,
				      char *err, size_t errlen)
{
	struct sim_group *g = &sim->groups[group];
	for (unsigned i = 0; i < COLL_CHOICES; i++) {
		const struct coll_choice *c = &g->choice[i];
		if (c->used && c->op == op->coll && c->asked == op->algo && c->bytes == op->bytes &&
		    c->channels_asked == op->channels && c->peer == op->peer)
			return c;
	}
	struct coll_choice c = {
		.asked = op->algo, .bytes = op->bytes, .peer = op->peer,
		.channels_asked = op->channels, .op = op->coll, .used = 1,
		.channels = op->channels,
	};
	c.algo = coll_resolve(sim, group, op->coll, op->algo, op->bytes, &c.channels, &c.plan,
			      err, errlen);
	if (!c.algo)
		return NULL;
	if (coll_closed_form(sim, group)) {
		c.time_s = plan_time_s(sim, group, c.algo, &c.plan, op->channels);
		c.time_ps = sim_ps_from_s(c.time_s);
	}
	struct coll_choice *slot = &g->choice[g->choice_next];
	g->choice_next = (uint8_t)((g->choice_next + 1) % COLL_CHOICES);
	*slot = c;
	return slot;
}

const struct sim_coll_algo *sim_coll_check(struct sim *sim, uint32_t group,
					   enum sim_coll_op op,
					   const struct sim_coll_algo *algo,
					   double bytes, unsigned *channels,
					   char *err, size_t errlen)
{
	struct sim_coll_plan plan;
	BUG_ON(group >= sim->ngroups);
	return coll_resolve(sim, group, op, algo, bytes, channels, &plan, err, errlen);
}

double sim_coll_time_s(struct sim *sim, uint32_t group, const struct sim_coll_algo *algo,
		       enum sim_coll_op op, double bytes, unsigned channels)
{
	struct sim_coll_plan plan;
	char err[256];
	unsigned c = channels;
	algo = coll_resolve(sim, group, op, algo, bytes, &c, &plan, err, sizeof(err));
	return algo ? plan_time_s(sim, group, algo, &plan, channels) : NAN;
}

/* ---- instances -------------------------------------------------------------- */

/* Free what an instance holds besides its own block. */
static void inst_free_parts(struct coll_inst *in)
{
	if (in->plan != &in->plan1)
		free(in->plan);
	free(in->chain_end);
	free(in->chain_op);
	free(in->seg);
	free(in->order);
	free(in->vpos);
	free(in->m);
}

static void inst_free(struct coll_inst *in)
{
	inst_free_parts(in);
	free(in);
}

/* The bytes of an instance's block on a group of n members. */
static size_t inst_size(uint32_t n)
{
	return sizeof(struct coll_inst) + n * (sizeof(uint16_t) + 1);
}

/* An instance is done: its block becomes the group's spare (a group's
 * collectives follow one another, so the next one reuses it). */
static void inst_retire(struct sim_group *g, struct coll_inst *in)
{
	inst_free_parts(in);
	free(g->spare);
	g->spare = in;
}

void sim_group_free(struct sim_group *g)
{
	for (uint32_t i = 0; i < g->nlive; i++)
		if (g->live[i])
			inst_free(g->live[i]);
	free(g->spare);
	while (g->memo) {
		struct coll_links_memo *m = g->memo;
		g->memo = m->next;
		coll_memo_free(m);
	}
	free(g->live);
	free(g->ranks);
	free(g->by_node);
	free(g->node_first);
}

static void analytic_fire(struct sim *sim, struct sim_event *ev);

static struct coll_inst *inst_new(struct sim *sim, uint32_t group, const struct sim_op *op)
{
	struct sim_group *g = &sim->groups[group];
	char err[256];
	const struct coll_choice *choice = coll_choose(sim, group, op, err, sizeof(err));
	if (!choice) {
		sim_fail(sim, "collective '%s' on %u ranks: %s", op->name, g->n, err);
		return NULL;
	}
	/* One allocation: the instance, then chan_left and stream per member;
	 * the group's spare if it has one. */
	struct coll_inst *in = g->spare;
	g->spare = NULL;
	if (in)
		memset(in, 0, inst_size(g->n));
	else
		in = xcalloc(1, inst_size(g->n));
	struct sim_coll_plan plan = choice->plan;
	unsigned c = choice->channels;
	in->algo = choice->algo;
	in->time_ps = choice->time_ps;
	in->ev.fire = analytic_fire;
	in->group = group;
	in->chain = 1;
	in->op = op;
	in->channels_asked = op->channels;
	in->chan_left = (uint16_t *)(in + 1);
	in->stream = (uint8_t *)(in->chan_left + g->n);
	memset(in->stream, COLL_ABSENT, g->n);  /* until the member joins */
	for (uint32_t i = 0; i < g->n; i++)
		in->chan_left[i] = (uint16_t)c;
	in->plan = &in->plan1;
	*in->plan = plan;
	if (coll_closed_form(sim, group))
		return in;
	size_t n = (size_t)c * g->n;
	if (c > 1)
		in->plan = xmalloc(c * sizeof(plan));
	in->order = xmalloc(n * sizeof(uint32_t));
	in->vpos = xmalloc(n * sizeof(uint32_t));
	in->m = xmalloc(n * sizeof(*in->m));
	for (uint32_t ch = 0; ch < c; ch++) {
		uint32_t *ord = in->order + (size_t)ch * g->n;
		group_order(g, in->algo->flags & SIM_COLL_SNAKE, ch, ord);
		for (uint32_t v = 0; v < g->n; v++) {
			in->vpos[(size_t)ch * g->n + ord[v]] = v;
			in->m[(size_t)ch * g->n + v] = (struct coll_member){ .step = -1 };
		}
		in->plan[ch] = plan;
		in->plan[ch].root = in->vpos[(size_t)ch * g->n + op->peer];
	}
	return in;
}

/* The instance for sequence number seq of a group, created on first join
 * (*fresh then 1). */
static struct coll_inst *inst_get(struct sim *sim, uint32_t group, uint32_t seq,
				  const struct sim_op *op, int *fresh)
{
	struct sim_group *g = &sim->groups[group];
	BUG_ON(seq < g->base_seq);
	uint32_t i = seq - g->base_seq;
	g->live = xgrow_zeroed(g->live, &g->livecap, i, sizeof(*g->live), 4);
	if (i >= g->nlive)
		g->nlive = i + 1;
	*fresh = !g->live[i];
	if (*fresh)
		g->live[i] = inst_new(sim, group, op);
	return g->live[i];
}

/* Free the finished instances at the front, in sequence order. */
static void group_retire(struct sim *sim, uint32_t group)
{
	struct sim_group *g = &sim->groups[group];
	uint32_t k = 0;
	while (k < g->nlive && g->live[k] && g->live[k]->finished == sim_group_present(sim, group)) {
		uint32_t span = g->live[k]->chain;  /* a chain holds the next seqs */
		inst_retire(g, g->live[k]);
		k += span;
	}
	if (!k)
		return;
	/* Most often every live instance has finished (k == nlive, small). */
	for (uint32_t i = k; i < g->nlive; i++)
		g->live[i - k] = g->live[i];
	for (uint32_t i = g->nlive - k; i < g->nlive; i++)
		g->live[i] = NULL;
	g->nlive -= k;
	g->base_seq += k;
}

static void member_finish(struct sim *sim, struct coll_inst *in, uint32_t member, int later)
{
	const struct sim_group *g = &sim->groups[in->group];
	in->finished++;
	if (later) {
		BUG_ON(in->chain > 1);
		sim_stream_finish_later(sim, g->ranks[member], in->stream[member]);
		return;
	}
	sim->chain_end = in->chain_end;  /* for the recorder: each op's end */
	sim_stream_finish(sim, g->ranks[member], in->stream[member]);
	sim->chain_end = NULL;
}

static void analytic_fire(struct sim *sim, struct sim_event *ev)
{
	struct coll_inst *in = container_of(ev, struct coll_inst, ev);
	if (in->wake)
		return;  /* re-rated: its end moved later (share.c) */
	if (in->registered) {
		coll_share_end(sim, in);
		return;
	}
	coll_closed_finish(sim, in);
}

void coll_closed_finish(struct sim *sim, struct coll_inst *in)
{
	uint32_t group = in->group, n = sim->groups[group].n;
	const uint32_t *ranks = sim->groups[group].ranks;
	/* The members are cold: fetch a few ahead of the one being finished. */
	enum { AHEAD = 4 };
	for (uint32_t i = 0; i < n + AHEAD; i++) {
		if (i < n && in->stream[i] != COLL_ABSENT) {
			const struct sim_rank *r = &sim->ranks[ranks[i]];
			__builtin_prefetch(r);
			__builtin_prefetch((const char *)r + 64);
		}
		uint32_t j = i - AHEAD;  /* wraps around below AHEAD: skipped */
		if (j < n && in->stream[j] != COLL_ABSENT)
			member_finish(sim, in, j, 0);
	}
	group_retire(sim, group);
}

/* ---- the flow state machine -------------------------------------------------- */

static void xfer_arrived(struct sim *sim, struct sim_xfer *x);

static void send_start(struct sim *sim, struct coll_inst *in, uint32_t c, uint32_t v,
		       uint32_t d, uint32_t k, double bytes)
{
	const struct sim_group *g = &sim->groups[in->group];
	uint32_t p = g->n;
	uint32_t src = g->ranks[in->order[(size_t)c * p + v]];
	uint32_t dst = g->ranks[in->order[(size_t)c * p + d]];
	struct sim_xfer *x = sim_xfer_start(sim, src, dst, bytes, xfer_arrived, in);
	x->a = c, x->b = v, x->c = d, x->d = k;
}

/*
 * Move member v of channel c into step k and on through every step it can
 * finish at once. Returns 1 if the member finished its last step.
 */
static int enter_step(struct sim *sim, struct coll_inst *in, uint32_t c, uint32_t v, uint32_t k)
{
	const struct sim_coll_plan *plan = &in->plan[c];
	struct coll_member *M = in->m + (size_t)c * plan->p;
	for (;; k++) {
		struct coll_member *m = &M[v];
		m->step = (int32_t)k;
		if (k == plan->nsteps)
			return 1;
		struct sim_coll_step st;
		in->algo->step(plan, v, k, &st);
		m->flags = (st.send_to < 0 ? CM_SEND_DONE : 0) | (st.recv_from < 0 ? CM_RECV_DONE : 0);
		if (st.send_to >= 0) {
			if (M[st.send_to].step == (int32_t)k)
				send_start(sim, in, c, v, (uint32_t)st.send_to, k, st.send_bytes);
			else
				m->flags |= CM_SEND_WAIT;
		}
		if (st.recv_from >= 0) {
			struct coll_member *s = &M[st.recv_from];
			if (s->step == (int32_t)k && (s->flags & CM_SEND_WAIT)) {
				s->flags &= (uint8_t)~CM_SEND_WAIT;
				send_start(sim, in, c, (uint32_t)st.recv_from, v, k, st.recv_bytes);
			}
		}
		if ((m->flags & (CM_SEND_DONE | CM_RECV_DONE)) != (CM_SEND_DONE | CM_RECV_DONE))
			return 0;
	}
}

/* Channel c of member v is done; finish the member if all channels are. */
static void channel_done(struct sim *sim, struct coll_inst *in, uint32_t c, uint32_t v, int later)
{
	uint32_t member = in->order[(size_t)c * in->plan->p + v];
	if (--in->chan_left[member] == 0)
		member_finish(sim, in, member, later);
}

static void xfer_arrived(struct sim *sim, struct sim_xfer *x)
{
	struct coll_inst *in = x->owner;
	uint32_t c = x->a, s = x->b, d = x->c, k = x->d, group = in->group;
	struct coll_member *M = in->m + (size_t)c * in->plan->p;
	M[s].flags |= CM_SEND_DONE;
	M[d].flags |= CM_RECV_DONE;
	/* Decide both before moving either: moving one may finish the instance. */
	int adv_s = (M[s].flags & (CM_SEND_DONE | CM_RECV_DONE)) == (CM_SEND_DONE | CM_RECV_DONE);
	int adv_d = (M[d].flags & (CM_SEND_DONE | CM_RECV_DONE)) == (CM_SEND_DONE | CM_RECV_DONE);
	int fin_s = adv_s && enter_step(sim, in, c, s, k + 1);
	int fin_d = adv_d && enter_step(sim, in, c, d, k + 1);
	if (fin_s)
		channel_done(sim, in, c, s, 0);
	if (fin_d)
		channel_done(sim, in, c, d, 0);
	group_retire(sim, group);
}

/*
 * Can a chain of collectives on group g be one closed-form instance? Only
 * if every present member runs the joiner's program (and has started it):
 * then each will join the same chain as its next collectives on the group,
 * at the same sequence numbers. Costed in closed form, the instances of a
 * group do not wait for one another, so a collective that another stream
 * joins while the chain runs has the time it would have had; only its
 * sequence number moves past the chain's, for every member alike.
 * O(members), once per chain.
 */
static int chain_ok(struct sim *sim, uint32_t rank, const struct sim_group *g)
{
	const struct sim_rank *r = &sim->ranks[rank];
	for (uint32_t i = 0; i < g->n; i++) {
		const struct sim_rank *m = &sim->ranks[g->ranks[i]];
		if (sim_rank_present(sim, g->ranks[i]) && (m->prog != r->prog || !m->left))
			return 0;
	}
	return 1;
}

/*
 * Make a new closed-form instance stand for the chain of `chain` collectives
 * that start at the head of the joiner's stream: each op's end from the
 * first's start, the sum of their closed forms rounded one by one, as one
 * event per op would have them. 0, or -1 (the run failed).
 */
static int chain_plan(struct sim *sim, struct coll_inst *in, uint32_t seq, uint32_t rank,
		      unsigned stream, uint32_t chain)
{
	const struct sim_rank *r = &sim->ranks[rank];
	const struct sim_op_hot *h = &r->prog->hot[stream][r->next[stream]];
	struct sim_group *g = &sim->groups[in->group];
	char err[256];
	in->chain_end = xmalloc(chain * sizeof(sim_ps));
	in->chain_op = xmalloc(chain * sizeof(*in->chain_op));
	sim_ps t = 0;
	for (uint32_t k = 0; k < chain; k++) {
		const struct sim_op *op = &r->prog->ops[h[k].op];
		in->chain_op[k] = op;
		const struct coll_choice *c = coll_choose(sim, in->group, op, err, sizeof(err));
		if (!c) {
			sim_fail(sim, "collective '%s' on %u ranks: %s", op->name, g->n, err);
			return -1;
		}
		t = sim_ps_add(t, c->time_ps);
		in->chain_end[k] = t;
	}
	in->chain = chain;
	/* The chain holds sequence numbers seq .. seq + chain - 1. */
	uint32_t last = seq - g->base_seq + chain - 1;
	g->live = xgrow_zeroed(g->live, &g->livecap, last, sizeof(*g->live), 4);
	g->nlive = last + 1;
	return 0;
}

/*
 * A closed-form collective that has started beside compute on its members:
 * its bandwidths inside nodes fall by the largest factor among them
 * (sim_set_interference), its rate to the closed form alone over the closed
 * form so slowed. Fired at its start after the events then (so that the
 * compute ops that start at that time count, whichever order the ranks
 * came in); its end moves later by a wake (share.c).
 */
static void beside_fire(struct sim *sim, struct sim_event *ev)
{
	struct coll_inst *in = container_of(ev, struct coll_inst, beside);
	const struct sim_group *g = &sim->groups[in->group];
	double f = 1;
	for (uint32_t i = 0; i < g->n; i++)
		if (in->stream[i] != COLL_ABSENT) {
			double s = sim_comm_slow(sim, g->ranks[i]);
			if (s > f)
				f = s;
		}
	if (f == 1)
		return;
	in->intra = 1 / f;
	coll_share_rerate(sim, in);
}

uint32_t sim_coll_join(struct sim *sim, uint32_t rank, unsigned stream, const struct sim_op *op,
		       uint32_t chain)
{
	struct sim_rank *r = &sim->ranks[rank];
	const struct sim_rank_slot *sl = &r->slot[op->group];
	uint32_t group = sl->group, member = sl->member;
	uint32_t *seq = &r->slot[sl->seq_slot].seq;
	struct sim_group *g = &sim->groups[group];
	if (g->n == 1) {  /* nothing to exchange */
		(*seq)++;
		sim_stream_finish_later(sim, rank, stream);
		return 1;
	}
	int fresh;
	struct coll_inst *in = inst_get(sim, group, *seq, op, &fresh);
	if (!in)
		return 1;
	if (fresh && chain > 1 && coll_closed_form(sim, group) &&
	    chain_ok(sim, rank, g) && chain_plan(sim, in, *seq, rank, stream, chain) < 0)
		return 1;
	*seq += in->chain;
	const struct sim_op *o = in->op;  /* members of one program share it */
	if (o != op && (in->chain > 1 || o->coll != op->coll || o->bytes != op->bytes ||
			o->algo != op->algo || o->channels != op->channels || o->peer != op->peer)) {
		sim_fail(sim, "rank %u joined collective #%u of its group as '%s' (%s, %.0f B), "
			 "but another member joined it as '%s' (%s, %.0f B)", rank,
			 *seq - in->chain, op->name, sim_coll_op_name(op->coll), op->bytes, o->name,
			 sim_coll_op_name(o->coll), o->bytes);
		return 1;
	}
	in->stream[member] = (uint8_t)stream;
	in->joined++;
	/* Its channels hold CUDA blocks of the rank's GPU (interference). */
	r->blocks[stream] = (uint8_t)(in->plan->channels < 255 ? in->plan->channels : 255);
	if (coll_closed_form(sim, group)) {
		if (in->joined == sim_group_present(sim, group)) {
			sim_ps total = in->chain > 1 ? in->chain_end[in->chain - 1] : in->time_ps;
			sim_ps t = sim_ps_add(sim->now, total);
			if (t == SIM_PS_MAX) {
				char what[160];
				snprintf(what, sizeof(what), "collective '%.100s' (started at %g s)",
					 in->op->name, sim_ps_to_s(sim->now));
				sim_fail_clock(sim, what);
			}
			in->started = 1;
			in->t0 = in->t_upd = sim->now;
			in->rate = 1;
			in->intra = 1;
			in->total = (double)total;
			/* Its end alone; sharing and compute beside it can only
			 * move it later (share.c, beside_fire). */
			sim_schedule(sim, t, &in->ev);
			if (g->shared)
				coll_share_start(sim, in);
			if (sim->interf_comm && total > 0) {
				in->beside.fire = beside_fire;
				sim_schedule(sim, sim->now, &in->beside);
			}
		}
		return in->chain;
	}
	for (uint32_t c = 0; c < in->plan->channels; c++) {
		uint32_t v = in->vpos[(size_t)c * g->n + member];
		if (enter_step(sim, in, c, v, 0))
			channel_done(sim, in, c, v, 1);
	}
	group_retire(sim, group);
	return 1;
}
