/*
 * share.c - collectives costed in closed form share the links they cross.
 *
 * A closed form prices a collective alone on its links: its own messages on
 * a link divide the link's bandwidth, nobody else's do. Two groups whose
 * collectives cross one NIC at once would each get all of it, where a flow
 * run gives each a share. So each running closed-form instance registers its
 * footprint (every link it crosses, with its most messages on it in one
 * step and the bandwidth they demand there alone), and its rate follows the
 * sharing. On a link of bandwidth C where it has m messages and the other
 * instances registered there have M messages demanding D in all, each of
 * its messages gets what the others leave, (C - D) / m, but never less than
 * the fair share C / (m + M) (others that demand more than their share are
 * held to it too); a route's bandwidth is the least over its links. The
 * rate is the closed form alone over the closed form on those bandwidths
 * (<= 1). An
 * instance is re-rated when another starts or ends on one of its links; its
 * progress is kept in ps of its closed form (tau), and its end moves to when
 * tau reaches the whole. Nothing costs an event but the moved ends: an
 * instance is scheduled at its end alone (in->ev, coll.c), and a re-rating
 * that moves it (later: the rate is at most 1) schedules a wake, leaving the
 * earlier entry to be skipped when it fires.
 *
 * A chain (several collectives one after another on one group, one
 * instance) is re-rated by the collective in progress; the chain's op ends,
 * in tau, are mapped to wall time through the segments of its rate when it
 * ends. An instance that never shares a link ends at start + closed form,
 * exactly as without sharing.
 */
#include "sim/coll-int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A completion event of a shared instance. A re-rating schedules a new one
 * and leaves the old in the heap with in = NULL: it is skipped when it fires
 * (the heap cannot remove an entry). Each wake is in the heap once. */
struct coll_wake {
	struct sim_event ev;
	struct coll_inst *in;        /* NULL: superseded                    */
	struct coll_wake *next_free;
};

/* The instances registered on one link, with their footprint there. */
struct link_user {
	struct coll_inst *in;
	uint32_t count;
	double dem;
};

/* What sharing keeps of one link (sim->share_links): the first group
 * whose memo crosses it (the census), and the instances registered on it
 * with the sum of their footprints there. */
struct share_link {
	struct link_user *u;
	uint32_t n, cap;
	uint32_t owner;              /* 1 + the group; 0: none yet          */
	uint32_t load;               /* their messages                      */
	double dem;                  /* their demands, B/s                  */
};

/* sim->share_links, every link there is. */
static void links_fit(struct sim *sim)
{
	if (sim->nlinks)
		sim->share_links = xgrow_zeroed(sim->share_links, &sim->share_cap, sim->nlinks - 1,
						sizeof(*sim->share_links), 64);
}

/* ---- memos: footprints ------------------------------------------------------ */

/* sim->share_map: a link's index in the footprint being made, + 1. */
static void map_fit(struct sim *sim)
{
	if (sim->nlinks)
		sim->share_map = xgrow_zeroed(sim->share_map, &sim->share_mapcap, sim->nlinks - 1,
					      sizeof(uint32_t), 64);
}

static void memo_drop_fp(struct coll_links_memo *m)
{
	free(m->fp_link);
	free(m->fp_count);
	free(m->fp_dem);
	free(m->fp_class);
	m->fp_link = m->fp_count = NULL;
	m->fp_dem = NULL;
	m->fp_class = NULL;
	m->nfp = m->fpcap = 0;
	m->has_fp = 0;
}

void coll_fp_begin(struct sim *sim, struct coll_links_memo *m)
{
	memo_drop_fp(m);
	map_fit(sim);
}

void coll_fp_note(struct sim *sim, struct coll_links_memo *m, uint32_t link, uint32_t own,
		  double rate, int inter)
{
	map_fit(sim);
	uint32_t *slot = &sim->share_map[link];
	if (!*slot) {
		if (m->nfp == m->fpcap) {
			m->fpcap = m->fpcap ? 2 * m->fpcap : 16;
			m->fp_link = xreallocarray(m->fp_link, m->fpcap, sizeof(uint32_t));
			m->fp_count = xreallocarray(m->fp_count, m->fpcap, sizeof(uint32_t));
			m->fp_dem = xreallocarray(m->fp_dem, m->fpcap, sizeof(double));
			m->fp_class = xreallocarray(m->fp_class, m->fpcap, 1);
		}
		m->fp_link[m->nfp] = link;
		m->fp_count[m->nfp] = 0;
		m->fp_dem[m->nfp] = 0;
		m->fp_class[m->nfp] = 0;
		*slot = ++m->nfp;
	}
	uint32_t i = *slot - 1;
	if (own > m->fp_count[i])
		m->fp_count[i] = own;
	if (own * rate > m->fp_dem[i])
		m->fp_dem[i] = own * rate;
	m->fp_class[i] |= inter ? 2 : 1;
}

void coll_fp_end(struct sim *sim, struct coll_links_memo *m)
{
	for (uint32_t i = 0; i < m->nfp; i++)
		sim->share_map[m->fp_link[i]] = 0;
	if (m->nfp && m->nfp < m->fpcap) {  /* kept while the group is shared */
		m->fp_link = xreallocarray(m->fp_link, m->nfp, sizeof(uint32_t));
		m->fp_count = xreallocarray(m->fp_count, m->nfp, sizeof(uint32_t));
		m->fp_dem = xreallocarray(m->fp_dem, m->nfp, sizeof(double));
		m->fp_class = xreallocarray(m->fp_class, m->nfp, 1);
		m->fpcap = m->nfp;
	}
	m->has_fp = 1;
}

void coll_memo_free(struct coll_links_memo *m)
{
	free(m->pattern);
	free(m->per);
	memo_drop_fp(m);
	free(m);
}

/* ---- the links' users ------------------------------------------------------ */

/* Remember u for re-rating, once per visit (stamp share_gen). */
static void affect(struct sim *sim, struct coll_inst *u)
{
	if (u->mark == sim->share_gen)
		return;
	u->mark = sim->share_gen;
	sim->share_aff = xgrow_zeroed(sim->share_aff, &sim->share_affcap, sim->share_naff,
			       sizeof(*sim->share_aff), 16);
	sim->share_aff[sim->share_naff++] = u;
}

/*
 * What each of a collective's m messages gets on a link of bandwidth C
 * where the others have M messages demanding D: what they leave, but never
 * less than the fair share nor more than alone.
 */
static double link_share(double C, uint32_t m, uint32_t M, double D)
{
	double alone = C / m;
	if (!M)
		return alone;
	double left = (C - (D > 0 ? D : 0)) / m, fair = C / (m + M);
	return left > fair ? (left < alone ? left : alone) : fair;
}

/* Does a change of the others on a link from (M0, D0) to (M1, D1) leave a
 * user's rate as it was? Yes if the link is not its bottleneck either way:
 * each of its messages gets at least the rate of its step alone (its
 * demand over its messages there). */
static int share_holds(double C, const struct link_user *u, uint32_t M0, double D0, uint32_t M1,
		       double D1)
{
	double rate = u->dem / u->count;
	return link_share(C, u->count, M0, D0) >= rate && link_share(C, u->count, M1, D1) >= rate;
}

/*
 * Register in on its footprint. If meet is set, the instances whose rate the
 * change may move are affected (share_holds), and so is in if a link it
 * shares holds it below its rate alone.
 */
static void users_add(struct sim *sim, struct coll_inst *in, int meet)
{
	const struct coll_links_memo *m = in->fp;
	links_fit(sim);
	in->registered = 1;
	in->mark = sim->share_gen;  /* not itself, unless below */
	int slowed = 0;
	for (uint32_t i = 0; i < m->nfp; i++) {
		uint32_t l = m->fp_link[i];
		struct share_link *us = &sim->share_links[l];
		double C = sim->links[l].bw_Bps, D = us->dem;
		uint32_t M = us->load;
		for (uint32_t k = 0; k < us->n && meet; k++) {
			const struct link_user *u = &us->u[k];
			if (!share_holds(C, u, M - u->count, D - u->dem, M - u->count + m->fp_count[i],
					 D - u->dem + m->fp_dem[i]))
				affect(sim, u->in);
		}
		struct link_user me = { in, m->fp_count[i], m->fp_dem[i] };
		if (meet && us->n && !share_holds(C, &me, M, D, M, D))
			slowed = 1;
		us->u = xgrow_zeroed(us->u, &us->cap, us->n, sizeof(*us->u), 4);
		us->u[us->n++] = me;
		us->load += m->fp_count[i];
		us->dem += m->fp_dem[i];
	}
	if (slowed) {
		in->mark = sim->share_gen - 1;
		affect(sim, in);
	}
}

/* Unregister in; the instances whose rate its leaving may move are
 * affected. */
static void users_remove(struct sim *sim, struct coll_inst *in)
{
	const struct coll_links_memo *m = in->fp;
	in->mark = sim->share_gen;
	in->registered = 0;
	for (uint32_t i = 0; i < m->nfp; i++) {
		uint32_t l = m->fp_link[i];
		struct share_link *us = &sim->share_links[l];
		uint32_t k = 0;
		while (k < us->n && us->u[k].in != in)
			k++;
		BUG_ON(k == us->n);
		memmove(us->u + k, us->u + k + 1, (us->n - k - 1) * sizeof(*us->u));
		us->n--;
		double C = sim->links[l].bw_Bps, D0 = us->dem;
		uint32_t M0 = us->load;
		us->load -= m->fp_count[i];
		/* exact: back to 0 when the last leaves (sums of equal terms drift) */
		us->dem = us->n ? D0 - m->fp_dem[i] : 0;
		for (k = 0; k < us->n; k++) {
			const struct link_user *u = &us->u[k];
			if (!share_holds(C, u, M0 - u->count, D0 - u->dem,
					 us->load - u->count, us->dem - u->dem))
				affect(sim, u->in);
		}
	}
}

/* ---- the census ------------------------------------------------------------ */

/* The links memo of an instance's (first) collective. */
static struct coll_links_memo *inst_memo(struct sim *sim, const struct coll_inst *in)
{
	return coll_memo_get(sim, in->group, in->algo, in->op->coll, in->op->bytes,
			     in->channels_asked);
}

/*
 * Most groups are alone on their links (a tensor-parallel group on its
 * GPUs' NVLink ports, a data-parallel group on its rail): their instances
 * need not register, and their memos need not keep footprints. The census
 * notes, per link, the first group whose memo crosses it; a group whose
 * memo crosses a link of another group's, and that group, become shared
 * for good. A group becoming shared registers its instances running now.
 * A memo of a group alone drops its footprint; it is scanned again when
 * the group becomes shared.
 */
static void group_share(struct sim *sim, uint32_t group)
{
	struct sim_group *g = &sim->groups[group];
	if (g->shared)
		return;
	g->shared = 1;
	for (uint32_t i = 0; i < g->nlive; i++) {
		struct coll_inst *in = g->live[i];
		if (in && in->started && !in->finished && !in->registered &&
		    (in->fp = inst_memo(sim, in))) {
			coll_memo_footprint(sim, group, in->fp);
			users_add(sim, in, 0);  /* alone so far: nothing to re-rate */
		}
	}
}

void coll_share_census(struct sim *sim, uint32_t group, struct coll_links_memo *m)
{
	links_fit(sim);
	for (uint32_t i = 0; i < m->nfp; i++) {
		uint32_t *o = &sim->share_links[m->fp_link[i]].owner;
		if (!*o) {
			*o = group + 1;
		} else if (*o != group + 1) {
			group_share(sim, *o - 1);
			group_share(sim, group);
		}
	}
	if (!sim->groups[group].shared)
		memo_drop_fp(m);
}

/* ---- rates ------------------------------------------------------------------ */

/* The op of in whose closed form is in progress at tau. */
static const struct sim_op *op_at(const struct coll_inst *in)
{
	if (in->chain < 2)
		return in->op;
	uint32_t k = 0;
	while (k + 1 < in->chain && (double)in->chain_end[k] <= in->tau)
		k++;
	return in->chain_op[k];
}


/* The resolved collective of op on a group and its links memo; NULL when it
 * has no closed form to scale (no choice, no time, no linkset). */
static struct coll_links_memo *op_memo(struct sim *sim, uint32_t group, const struct sim_op *op,
				       const struct coll_choice **choice)
{
	char err[256];
	const struct coll_choice *c = coll_choose(sim, group, op, err, sizeof(err));
	if (!c || !(c->time_s > 0))
		return NULL;
	struct coll_links_memo *m = coll_memo_get(sim, group, c->algo, op->coll, op->bytes,
						  op->channels);
	*choice = c;
	return m && m->ls.n ? m : NULL;
}

/*
 * The closed form alone over the closed form on m's linkset with the
 * bandwidths of its routes inside nodes scaled by f_intra and between them
 * by f_inter (the latencies stay), at most 1. O(linkset).
 */
static double scaled_rate(struct sim *sim, const struct coll_choice *c,
			  const struct coll_links_memo *m, double f_intra, double f_inter)
{
	if (f_intra == 1 && f_inter == 1)
		return 1.0;
	sim->share_per = xgrow_zeroed(sim->share_per, &sim->share_percap, m->ls.n,
				      sizeof(*sim->share_per), 8);
	struct sim_coll_linkset ls = { .all = m->ls.all, .n = m->ls.n, .pattern = m->pattern,
				       .per = sim->share_per };
	ls.all.bw_intra_Bps *= f_intra, ls.all.bw_inter_Bps *= f_inter;
	for (uint32_t i = 0; i < ls.n; i++) {
		sim->share_per[i] = m->per[i];
		sim->share_per[i].bw_intra_Bps *= f_intra;
		sim->share_per[i].bw_inter_Bps *= f_inter;
	}
	double t = c->algo->time_s(&c->plan, &ls);
	return t > c->time_s ? c->time_s / t : 1.0;
}

double coll_class_rate(struct sim *sim, const struct coll_inst *in, const struct sim_op *op,
		       double f_intra, double f_inter)
{
	if (f_intra == 1 && f_inter == 1)
		return 1.0;
	const struct coll_choice *c;
	const struct coll_links_memo *m = op_memo(sim, in->group, op, &c);
	return m ? scaled_rate(sim, c, m, f_intra, f_inter) : 1.0;
}

/*
 * in's rate now. Each link of its footprint that others share and that
 * holds its messages below the rate of their step alone (link_share) slows
 * the class of routes it carries, inside nodes or between them, by what it
 * gives over that rate; the rate is the closed form alone over the closed
 * form on the linkset with each class's bandwidths scaled by its worst
 * link, and those inside nodes also by in->intra (compute beside it, taken
 * at its start). O(footprint links).
 */
static double share_rate(struct sim *sim, const struct coll_inst *in)
{
	const struct sim_op *op = op_at(in);
	const struct coll_choice *c;
	struct coll_links_memo *m = op_memo(sim, in->group, op, &c);
	if (!m)
		return 1.0;
	coll_memo_footprint(sim, in->group, m);
	double f[2] = { in->intra, 1 };  /* inside nodes, between them */
	for (uint32_t i = 0; i < m->nfp; i++) {
		uint32_t l = m->fp_link[i], count = m->fp_count[i];
		uint32_t load = l < sim->share_cap ? sim->share_links[l].load : 0;
		if (load <= count)
			continue;
		double rate = m->fp_dem[i] / count;
		double share = link_share(sim->links[l].bw_Bps, count, load - count,
					  sim->share_links[l].dem - m->fp_dem[i]);
		if (!(share < rate))
			continue;
		for (int k = 0; k < 2; k++)
			if ((m->fp_class[i] >> k & 1) && share / rate < f[k])
				f[k] = share / rate;
	}
	return scaled_rate(sim, c, m, f[0], f[1]);
}

/* ---- completion -------------------------------------------------------------- */

static void wake_fire(struct sim *sim, struct sim_event *ev);

static void share_schedule(struct sim *sim, struct coll_inst *in, sim_ps t)
{
	if (in->wake)
		in->wake->in = NULL;
	struct coll_wake *w = sim->share_wake_free;
	if (w)
		sim->share_wake_free = w->next_free;
	else
		w = xcalloc(1, sizeof(*w));
	w->ev.fire = wake_fire;
	w->in = in;
	in->wake = w;
	if (t == SIM_PS_MAX) {
		char what[160];
		snprintf(what, sizeof(what), "collective '%.100s' (started at %g s)", in->op->name,
			 sim_ps_to_s(in->t0));
		sim_fail_clock(sim, what);
	}
	sim_schedule(sim, t, &w->ev);
}

/* Bring in's progress to now and set its rate and end from the sharing now
 * (registered), and its factor beside compute. */
void coll_share_rerate(struct sim *sim, struct coll_inst *in)
{
	in->tau += (double)(sim->now - in->t_upd) * in->rate;
	if (in->tau > in->total)
		in->tau = in->total;
	in->t_upd = sim->now;
	double rate = in->registered ? share_rate(sim, in)
				     : coll_class_rate(sim, in, op_at(in), in->intra, 1);
	if (rate == in->rate)
		return;  /* its end stands (in->ev's, or the last wake's) */
	in->seg = xgrow_zeroed(in->seg, &in->segcap, in->nseg, sizeof(*in->seg), 4);
	in->seg[in->nseg++] = (struct share_seg){ .t = sim->now, .tau = in->tau, .rate = rate };
	in->rate = rate;
	double left = ceil((in->total - in->tau) / rate);
	share_schedule(sim, in, left >= (double)SIM_PS_MAX ? SIM_PS_MAX
							   : sim_ps_add(sim->now, (sim_ps)left));
}

/* Re-rate the instances affected, in the order they were met. */
static void rerate_affected(struct sim *sim)
{
	for (uint32_t i = 0; i < sim->share_naff; i++)
		coll_share_rerate(sim, sim->share_aff[i]);
	sim->share_naff = 0;
}

void coll_share_start(struct sim *sim, struct coll_inst *in)
{
	in->fp = inst_memo(sim, in);
	if (!in->fp)
		return;
	sim->share_gen++;
	sim->share_naff = 0;
	coll_memo_footprint(sim, in->group, in->fp);
	if (in->fp->nfp)
		users_add(sim, in, 1);
	rerate_affected(sim);  /* none: its end alone stands */
}

/* Wall time, from the start, at which in had done tau of its closed form. */
static sim_ps wall_at(const struct coll_inst *in, double tau)
{
	sim_ps t = in->t0;
	double tau0 = 0, rate = 1;
	for (uint32_t i = 0; i < in->nseg && in->seg[i].tau <= tau; i++)
		t = in->seg[i].t, tau0 = in->seg[i].tau, rate = in->seg[i].rate;
	double d = ceil((tau - tau0) / rate);
	return (t - in->t0) + (d > 0 ? (sim_ps)d : 0);
}

void coll_chain_map(struct sim *sim, struct coll_inst *in)
{
	if (in->chain < 2 || !in->nseg)
		return;
	sim_ps whole = sim->now - in->t0, prev = 0;
	for (uint32_t k = 0; k < in->chain; k++) {
		sim_ps e = k + 1 < in->chain ? wall_at(in, (double)in->chain_end[k]) : whole;
		if (e > whole)
			e = whole;
		if (e < prev)
			e = prev;
		in->chain_end[k] = prev = e;
	}
}

void coll_share_end(struct sim *sim, struct coll_inst *in)
{
	sim->share_gen++;
	sim->share_naff = 0;
	if (in->registered)
		users_remove(sim, in);
	coll_chain_map(sim, in);
	rerate_affected(sim);
	coll_closed_finish(sim, in);
}

static void wake_fire(struct sim *sim, struct sim_event *ev)
{
	struct coll_wake *w = container_of(ev, struct coll_wake, ev);
	struct coll_inst *in = w->in;
	w->next_free = sim->share_wake_free;
	sim->share_wake_free = w;
	if (!in)
		return;  /* superseded by a re-rating */
	in->wake = NULL;
	coll_share_end(sim, in);
}

int coll_share_event_free(struct sim *sim, struct sim_event *ev)
{
	if (ev->fire != wake_fire)
		return 0;
	struct coll_wake *w = container_of(ev, struct coll_wake, ev);
	w->next_free = sim->share_wake_free;
	sim->share_wake_free = w;
	return 1;
}

void coll_share_free(struct sim *sim)
{
	while (sim->share_wake_free) {
		struct coll_wake *w = sim->share_wake_free;
		sim->share_wake_free = w->next_free;
		free(w);
	}
	for (uint32_t i = 0; i < sim->share_cap; i++)
		free(sim->share_links[i].u);
	free(sim->share_links);
	free(sim->share_map);
	free(sim->share_aff);
	free(sim->share_per);
}
