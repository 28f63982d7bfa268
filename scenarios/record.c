/*
 * record.c - the timelines a run stores (record.h).
 *
 * The rank that finished last is known only at the end. In flow fidelity
 * the other ranks' records go to a temporary spill file (32 bytes each,
 * written in batches) and the last rank's are read back from it and
 * recorded before the programs they point into are freed; the file is
 * deleted when closed. In analytic fidelity a spill would cost more than
 * the simulation itself (its 2 GB at 16,384 GPUs take longer to write than
 * the 4 s step), and the replicas of a layout end together, so that the
 * lowest-numbered last rank is nearly always kept: when it is not, the
 * step is simulated a second time on the same programs, recording it
 * alone.
 */
#include "scenarios/record.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/layout.h"
#include "parallel/step.h"
#include "parallel/train.h"
#include "sim/store.h"
#include "sim/util.h"
#include "topology/topo.h"

/*
 * What goes into the store. Every rank gets its ranks row (placement and
 * summary); timelines (ops and memory rows) only for the ranks kept: all of
 * them, or for `sample` one whole pipeline (tp = cp = dp = 0), one TP group
 * (cp = pp = dp = 0) and the rank that finished last (the file's comment
 * says how it is caught).
 */
struct scn_recording {
	struct sim_store *st;
	struct par_dims dims;
	uint8_t *keep;            /* [rank]: its timeline is stored; NULL: all */
	FILE *spill;              /* sample: the other ranks' records        */
	struct rec_spilled *buf;  /* written to spill SPILL_BATCH at a time  */
	size_t nbuf;
	int spill_failed;
	int second;               /* the second pass: only `last` is recorded */
	struct par_train *t;      /* the step's description (its recorder)   */
	uint32_t nranks, last;
	struct rec_rank {
		uint32_t node, local;
		int present;          /* simulated (not absent: sim.symmetry) */
		struct sim_store_rank_summary sum;
	} *ranks;
};

/* A finished op (op != NULL) or a memory change (op == NULL) in the spill. */
struct rec_spilled {
	uint32_t rank, cat;
	const struct sim_op *op;
	sim_ps start;
	union {
		sim_ps end;
		double bytes;
	} u;
};

/* Records per write to the spill file (2 MiB). */
#define SPILL_BATCH 65536

static void rec_spill_flush(struct scn_recording *f)
{
	if (f->nbuf && fwrite(f->buf, sizeof(*f->buf), f->nbuf, f->spill) != f->nbuf)
		f->spill_failed = 1;
	f->nbuf = 0;
}

static void rec_spill(struct scn_recording *f, const struct rec_spilled *r)
{
	if (!f->spill || f->second)
		return;
	if (!f->buf)
		f->buf = xmalloc(SPILL_BATCH * sizeof(*f->buf));
	f->buf[f->nbuf++] = *r;
	if (f->nbuf == SPILL_BATCH)
		rec_spill_flush(f);
}

/* Is the rank's timeline recorded in this pass? */
static int rec_keep(const struct scn_recording *f, uint32_t rank)
{
	return f->second ? rank == f->last : !f->keep || f->keep[rank];
}

static void rec_op(void *ctx, uint32_t rank, const struct sim_op *op, sim_ps s, sim_ps e)
{
	struct scn_recording *f = ctx;
	if (rec_keep(f, rank))
		sim_store_recorder.op_done(f->st, rank, op, s, e);
	else
		rec_spill(f, &(struct rec_spilled){ .rank = rank, .op = op, .start = s, .u.end = e });
}

static void rec_mem(void *ctx, uint32_t rank, sim_ps t, unsigned cat, double bytes)
{
	struct scn_recording *f = ctx;
	if (rec_keep(f, rank))
		sim_store_recorder.mem(f->st, rank, t, cat, bytes);
	else
		rec_spill(f, &(struct rec_spilled){ .rank = rank, .cat = cat, .start = t,
						    .u.bytes = bytes });
}

static const struct sim_recorder_ops rec_filter_ops = { .op_done = rec_op, .mem = rec_mem };

/* Record the last rank's timeline from the spill (sample mode); 0 or -1. */
static int rec_unspill(struct scn_recording *f, char *err, size_t errlen)
{
	rec_spill_flush(f);
	if (f->spill_failed || fflush(f->spill) != 0 || fseek(f->spill, 0, SEEK_SET) != 0) {
		snprintf(err, errlen, "--db: the temporary file of the sampled timelines failed: %s",
			 strerror(errno));
		return -1;
	}
	if (!f->buf)
		f->buf = xmalloc(SPILL_BATCH * sizeof(*f->buf));
	size_t n;
	while ((n = fread(f->buf, sizeof(*f->buf), SPILL_BATCH, f->spill)) > 0)
		for (size_t i = 0; i < n; i++) {
			const struct rec_spilled *r = &f->buf[i];
			if (r->rank != f->last)
				continue;
			if (r->op)
				sim_store_recorder.op_done(f->st, r->rank, r->op, r->start, r->u.end);
			else
				sim_store_recorder.mem(f->st, r->rank, r->start, r->cat, r->u.bytes);
		}
	f->keep[f->last] = 1;
	return 0;
}

/* The sample: one pipeline and one TP group. */
static uint8_t *rec_sample(const struct par_dims *d, uint32_t nranks)
{
	uint8_t *keep = xcalloc(nranks, 1);
	for (uint32_t p = 0; p < d->pp; p++)
		keep[par_rank_of(d, &(struct par_coords){ .pp = p })] = 1;
	for (uint32_t t = 0; t < d->tp; t++)
		keep[par_rank_of(d, &(struct par_coords){ .tp = t })] = 1;
	return keep;
}

/*
 * After the run, while its programs live: every rank's placement and summary
 * (written later, once the timelines are complete, so that ops_stored counts
 * them), the rank that finished last (the lowest of equal ends) and its
 * timeline if it was spilled, and every link's totals.
 */
static int rec_finish(void *ctx, struct sim *sim, struct topo *topo, char *err, size_t errlen)
{
	struct scn_recording *f = ctx;
	sim_ps end = 0;
	for (uint32_t r = 0; r < f->nranks; r++)
		if (sim_rank_end(sim, r) > end)
			end = sim_rank_end(sim, r), f->last = r;
	for (uint32_t r = 0; r < f->nranks; r++) {
		f->ranks[r].present = sim_rank_present(sim, r);
		if (!f->ranks[r].present) {  /* symmetry: its replica 0 stands for it */
			f->ranks[r].node = topo_node_of(topo, r);
			f->ranks[r].local = topo_local_of(topo, r);
			continue;
		}
		f->ranks[r] = (struct rec_rank){
			.present = 1,
			.node = topo_node_of(topo, r), .local = topo_local_of(topo, r),
		};
		sim_store_rank_summary_of(sim, r, end, &f->ranks[r].sum);
	}
	if (f->keep && !f->keep[f->last] && f->spill && rec_unspill(f, err, errlen) < 0)
		return -1;
	if (sim_store_links(f->st, sim, topo_sim_ops(), topo) < 0) {
		snprintf(err, errlen, "--db: %s", sim_store_error(f->st));
		return -1;
	}
	return 0;
}

enum scn_record scn_record_mode(enum scn_record mode, uint32_t gpus)
{
	if (mode != SCN_RECORD_AUTO)
		return mode;
	return gpus <= SCN_RECORD_ALL_MAX ? SCN_RECORD_ALL : SCN_RECORD_SAMPLE;
}

struct scn_recording *scn_record_begin(struct par_step *s, struct par_train *t,
				       struct sim_store *st, enum scn_record mode)
{
	struct scn_recording *f = xcalloc(1, sizeof(*f));
	f->st = st;
	f->nranks = s->gpus;
	f->dims = s->d;
	f->ranks = xcalloc(f->nranks, sizeof(*f->ranks));
	if (mode == SCN_RECORD_SAMPLE)
		f->keep = rec_sample(&f->dims, f->nranks);
	if (mode == SCN_RECORD_SAMPLE && t->sim.fidelity == SIM_FIDELITY_FLOW &&
	    !(f->spill = tmpfile())) {
		int e = errno;
		scn_record_end(f);
		errno = e;
		return NULL;
	}
	f->t = t;
	t->rec_ctx = f;
	t->finish = rec_finish;
	if (mode != SCN_RECORD_NONE)
		t->rec = &rec_filter_ops;
	return f;
}

void scn_record_end(struct scn_recording *f)
{
	if (!f)
		return;
	if (f->spill)
		fclose(f->spill);
	free(f->buf);
	free(f->keep);
	free(f->ranks);
	free(f);
}

int scn_record_simulate(struct scn_recording *f, struct par_step *s, struct par_report *r,
			char *err, size_t errlen)
{
	int rc = par_train_simulate(s, r, err, errlen);
	if (rc < 0 || !f || !f->keep || f->keep[f->last])
		return rc;
	/* The same run again, recording the last rank alone. */
	struct par_report again = *r;
	again.step_times = NULL;
	f->second = 1;
	f->t->finish = NULL;
	f->t->keep_steps = false;
	return par_train_simulate(s, &again, err, errlen) < 0 ? SCN_RECORD_AGAIN_FAILED : 0;
}

int scn_record_ranks(struct scn_recording *f)
{
	for (uint32_t r = 0; r < f->nranks; r++) {
		struct par_coords c;
		par_coords_of(&f->dims, r, &c);
		const uint32_t coords[5] = { c.tp, c.cp, c.pp, c.dp, c.ep };
		if (sim_store_rank(f->st, r, f->ranks[r].node, f->ranks[r].local, coords,
				   f->ranks[r].present ? &f->ranks[r].sum : NULL) < 0)
			return -1;
	}
	return 0;
}

