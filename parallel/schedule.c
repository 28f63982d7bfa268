/*
 * schedule.c - the registry of pipeline schedules (schedule.h).
 *
 * To add a schedule, four places:
 *   1. parallel/sched_NAME.c exporting `const struct par_schedule_ops
 *      par_sched_NAME`: copy sched_1f1b.c, the reference plug-in (name,
 *      help, check, nactions, actions, and the closed forms bubble_s,
 *      pipeline_s and in_flight);
 *   2. one line S(par_sched_NAME) at the end of SCHEDULES below (the order
 *      is the key's value order, entry i being value i: add at the end);
 *   3. one line for the file in libclustersim_a_SOURCES in Makefile.am;
 *   4. its test in tests/unit/test_schedule.c, whose registry-wide tests
 *      already check its actions and its closed forms against the flow
 *      simulation.
 * Nothing else: the key parallel.schedule takes its names and help from
 * here (regenerate docs/scenario.md's key table with `clustersim help
 * --keys`), the builder runs the actions, the planner uses the closed forms
 * and runs the actions on its estimated stage costs (par_schedule_run_s,
 * below).
 */
#include "parallel/schedule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/util.h"

#define SCHEDULES \
	S(par_sched_1f1b) \
	S(par_sched_gpipe) \
	S(par_sched_interleaved) \
	S(par_sched_fthenb) \
	S(par_sched_zbh1) \
	/* new schedules go on the line above this one */

#define S(x) extern const struct par_schedule_ops x;
SCHEDULES
#undef S

#define S(x) &x,
const struct par_schedule_ops *const par_schedules[] = { SCHEDULES NULL };
#undef S

/* The names, filled on first use (the registry is constant after that). */
#define S(x) 1 +
static const char *names[SCHEDULES 1];
#undef S

unsigned par_schedule_count(void)
{
	return (unsigned)ARRAY_SIZE(par_schedules) - 1;
}

const struct par_schedule_ops *par_schedule(unsigned i)
{
	BUG_ON(i >= par_schedule_count());
	return par_schedules[i];
}

int par_schedule_find(const char *name)
{
	for (unsigned i = 0; i < par_schedule_count(); i++)
		if (strcmp(par_schedules[i]->name, name) == 0)
			return (int)i;
	return -1;
}

const char *const *par_schedule_names(void)
{
	for (unsigned i = 0; i < par_schedule_count(); i++)
		names[i] = par_schedules[i]->name;
	return names;
}

const char *par_schedule_help(unsigned i)
{
	return par_schedule(i)->help;
}

int par_sched_check_one_chunk(uint32_t p, uint32_t m, uint32_t v, char *err, size_t errlen)
{
	(void)p, (void)m;
	if (v != 1)
		return sim_errf(err, errlen, "parallel.vpp: %u chunks need parallel.schedule: "
				"interleaved", v);
	return 0;
}

/*
 * The schedule run action by action (par_schedule_run_s). Each stage runs
 * its actions in order, an action (of its virtual stage's cost) as soon as
 * the stage is free and what it needs has arrived: a chunk's forward the
 * previous virtual stage's forward of that micro-batch (none for virtual
 * stage 0), its backward the next virtual stage's backward (the last
 * virtual stage: its own forward), each `hop` seconds after it ended on
 * another stage; a weight-gradient half the same stage's input-gradient
 * half. Sweeps the stages until every action has run; NAN if a sweep runs
 * nothing (a schedule that cannot finish). With `slow`, a pass that
 * starts while the stage's last message out is still moving loses what
 * slow->lost says for the rest of that flight, and a message in that
 * arrives while the stage is busy costs the pass in progress what it
 * says for the time it moved beside it. With slow->dp_s, each stage's
 * data-parallel stream takes chunk c's reduction as the chunk's last
 * backward starts, after the ones before it; the passes it runs beside
 * lose slow->dp_rate of their shared time and the messages sent while it
 * runs take slow->dp_hop.
 */
/* A schedule's actions for (p, m, v) and the run's scratch. */
struct par_sched_plan {
	const struct par_schedule_ops *sched;
	uint32_t p, m, v;
	size_t total, *first, *pos;
	struct par_action *act;
	uint8_t *lastb;   /* per action: its chunk's last backward on the stage */
	double *fend, *bend, *fhop, *bhop, *clock, *sent, *dpfrom, *dpto;
	const struct par_action **last;
};

struct par_sched_plan *par_schedule_plan_new(const struct par_schedule_ops *sched, uint32_t p,
					     uint32_t m, uint32_t v)
{
	struct par_sched_plan *r = xcalloc(1, sizeof(*r));
	size_t cells = (size_t)p * v * m;
	r->sched = sched, r->p = p, r->m = m, r->v = v;
	r->first = xmalloc((p + 1) * sizeof(*r->first));
	r->pos = xmalloc(p * sizeof(*r->pos));
	for (uint32_t s = 0; s < p; s++)
		r->first[s] = r->total, r->total += sched->nactions(p, s, m, v);
	r->first[p] = r->total;
	r->act = xmalloc((r->total ? r->total : 1) * sizeof(*r->act));
	for (uint32_t s = 0; s < p; s++)
		sched->actions(p, s, m, v, r->act + r->first[s]);
	/* Walk each stage's actions back: a chunk's last backward (the
	 * weight-gradient half of a split one) is the first one met. */
	r->lastb = xcalloc(r->total ? r->total : 1, 1);
	uint8_t *seen = xmalloc(v ? v : 1);
	for (uint32_t s = 0; s < p; s++) {
		memset(seen, 0, v);
		for (size_t i = r->first[s + 1]; i-- > r->first[s];) {
			const struct par_action *a = &r->act[i];
			if ((a->kind == PAR_ACT_BACKWARD || a->kind == PAR_ACT_BACKWARD_WEIGHT) &&
			    a->chunk < v && !seen[a->chunk])
				seen[a->chunk] = 1, r->lastb[i] = 1;
		}
	}
	free(seen);
	r->fend = xcalloc(4 * (cells ? cells : 1), sizeof(double));
	r->bend = r->fend + cells;
	r->fhop = r->bend + cells;
	r->bhop = r->fhop + cells;
	r->clock = xmalloc(4 * p * sizeof(double));
	r->sent = r->clock + p;
	r->dpfrom = r->sent + p;
	r->dpto = r->dpfrom + p;
	r->last = xmalloc(p * sizeof(*r->last));
	return r;
}

void par_schedule_plan_free(struct par_sched_plan *r)
{
	if (!r)
		return;
	free(r->first);
	free(r->pos);
	free(r->act);
	free(r->lastb);
	free(r->fend);
	free(r->clock);
	free(r->last);
	free(r);
}

int par_schedule_plan_is(const struct par_sched_plan *r, const struct par_schedule_ops *sched,
			 uint32_t p, uint32_t m, uint32_t v)
{
	return r && r->sched == sched && r->p == p && r->m == m && r->v == v;
}

double par_schedule_plan_run_s(struct par_sched_plan *r, const double *f, const double *b,
			       const double *w, double hop, const struct par_sched_slow *slow, double *lost_s)
{
	uint32_t p = r->p, m = r->m, v = r->v;
	double lost = 0;
	size_t vs_n = (size_t)p * v, cells = vs_n * m, total = r->total;
	const size_t *first = r->first;
	size_t *pos = r->pos;
	const struct par_action *act = r->act, **last = r->last;
	double *fend = r->fend, *bend = r->bend, *fhop = r->fhop, *bhop = r->bhop;
	double *clock = r->clock, *sent = r->sent, *dpfrom = r->dpfrom, *dpto = r->dpto;
	for (uint32_t s = 0; s < p; s++)
		pos[s] = first[s], clock[s] = 0, sent[s] = NAN, last[s] = NULL,
		dpfrom[s] = dpto[s] = 0;
	for (size_t i = 0; i < 2 * cells; i++)
		fend[i] = NAN;
	int slowed = slow && slow->lost && hop > 0;
	int reduced = slow && slow->dp_s;
	size_t done = 0;
	int stuck = 0;
	while (done < total && !stuck) {
		stuck = 1;
		for (uint32_t s = 0; s < p; s++)
			for (; pos[s] < first[s + 1]; pos[s]++) {
				const struct par_action *a = &act[pos[s]];
				size_t vs = (size_t)a->chunk * p + s, at = vs * m + a->mb;
				double ready, dur;
				switch (a->kind) {
				case PAR_ACT_FORWARD:
					ready = vs == 0 ? 0 : fend[at - m] + (reduced ? fhop[at - m] : hop);
					dur = f[vs];
					break;
				case PAR_ACT_BACKWARD_WEIGHT:
					ready = bend[at];
					dur = w ? w[vs] : b[vs] / 2;
					break;
				default:   /* the backward, or its input-gradient half */
					ready = vs + 1 == vs_n ? fend[at]
							       : bend[at + m] + (reduced ? bhop[at + m] : hop);
					dur = a->kind == PAR_ACT_BACKWARD ? b[vs]
					      : w ? b[vs] - w[vs] : b[vs] / 2;
					break;
				}
				if (isnan(ready))
					break;
				int in = a->kind == PAR_ACT_FORWARD ? vs > 0
					 : a->kind != PAR_ACT_BACKWARD_WEIGHT && vs + 1 < vs_n;
				if (slowed && in && last[s]) {
					/* the message in moved beside the pass before */
					double moved = fmin(hop, fmax(0, clock[s] - (ready - hop)));
					if (moved > 0) {
						const struct par_action *z = last[s];
						double x = slow->lost(slow->ctx, (enum par_action_kind)z->kind,
								      (uint32_t)((size_t)z->chunk * p + s), moved);
						clock[s] += x, lost += x;
					}
				}
				double start = ready > clock[s] ? ready : clock[s];
				if (slowed && !isnan(sent[s]) && sent[s] + hop > start) {
					double x = slow->lost(slow->ctx, (enum par_action_kind)a->kind,
							      (uint32_t)vs, sent[s] + hop - start);
					dur += x, lost += x;
				}
				if (reduced) {
					if (r->lastb[pos[s]]) {   /* the chunk's reduction joins the stream */
						double d = slow->dp_s[a->chunk];
						if (start > dpto[s])
							dpfrom[s] = start, dpto[s] = start;
						dpto[s] += d;
					}
					double beside = fmin(start + dur, dpto[s]) - fmax(start, dpfrom[s]);
					if (beside > 0) {
						double x = slow->dp_rate * beside;
						dur += x, lost += x;
					}
				}
				double end = start + dur;
				int out = a->kind == PAR_ACT_FORWARD ? vs + 1 < vs_n
					  : a->kind != PAR_ACT_BACKWARD_WEIGHT && vs > 0;
				double h = reduced && end < dpto[s] ? slow->dp_hop : hop;
				/* the message's end as the slowing sees it: end + h */
				sent[s] = out ? end + (h - hop) : NAN;
				clock[s] = end, last[s] = a;
				if (a->kind == PAR_ACT_FORWARD)
					fend[at] = end, fhop[at] = h;
				else if (a->kind != PAR_ACT_BACKWARD_WEIGHT)
					bend[at] = end, bhop[at] = h;
				done++, stuck = 0;
			}
	}
	double t = stuck ? NAN : clock[0];
	if (lost_s)
		*lost_s = lost;
	return t;
}

double par_schedule_run_s(const struct par_schedule_ops *sched, uint32_t p, uint32_t m,
			  uint32_t v, const double *f, const double *b, const double *w, double hop,
			  const struct par_sched_slow *slow, double *lost_s)
{
	struct par_sched_plan *r = par_schedule_plan_new(sched, p, m, v);
	double t = par_schedule_plan_run_s(r, f, b, w, hop, slow, lost_s);
	par_schedule_plan_free(r);
	return t;
}
