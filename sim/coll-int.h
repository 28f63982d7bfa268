/*
 * coll-int.h - collectives' internals shared by coll.c (plans, the two
 * fidelities) and share.c (closed-form collectives sharing links).
 */
#ifndef SIM_COLL_INT_H
#define SIM_COLL_INT_H

#include "sim/sim-int.h"

/*
 * The links of one collective (algorithm, op, channels) on a group,
 * computed on first use: the linkset its closed form reads, and for sharing
 * its footprint: each link it crosses once, with its most messages on it in
 * any one step and its demand there, the most bytes a second it moves on
 * the link in one step alone (its messages times the rate of that step's
 * slowest route: a message on a fast link behind a slow one uses a fraction
 * of the fast link). A group alone on its links drops its memos'
 * footprints (share.c's census).
 */
struct coll_links_memo {
	const struct sim_coll_algo *algo;
	enum sim_coll_op op;
	unsigned channels;
	double bytes;                 /* the first collective planned       */
	struct sim_coll_linkset ls;
	uint32_t *pattern;            /* owned arrays behind ls            */
	struct sim_coll_links *per;
	uint8_t has_fp;               /* the footprint is here              */
	uint32_t nfp, fpcap;
	uint32_t *fp_link, *fp_count; /* [nfp]                             */
	double *fp_dem;               /* [nfp], B/s                        */
	uint8_t *fp_class;            /* [nfp]: 1 routes inside nodes cross
				       * it, 2 routes between them         */
	struct coll_links_memo *next;
};

enum { CM_SEND_DONE = 1, CM_RECV_DONE = 2, CM_SEND_WAIT = 4 };

/* coll_inst.stream of a member that has not joined (absent ones never do). */
#define COLL_ABSENT 0xffu

struct coll_member {
	int32_t step;     /* -1 before joining, nsteps when done */
	uint8_t flags;
};

/* One segment of a shared closed-form instance's progress: from wall time
 * t, at tau ps of its closed form done, it advances rate ps a ps. */
struct share_seg {
	sim_ps t;
	double tau, rate;
};

struct coll_wake;

struct coll_inst {
	struct sim_event ev;          /* closed-form completion            */
	sim_ps time_ps;               /* analytic: the closed form         */
	uint32_t group;
	uint32_t chain;               /* collectives it stands for (>= 1)  */
	sim_ps *chain_end;            /* chain > 1: each op's end, from the
				       * start of the first (closed form)  */
	const struct sim_op **chain_op; /* chain > 1: its ops (sharing)    */
	const struct sim_op *op;      /* the first joiner's op             */
	const struct sim_coll_algo *algo;
	unsigned channels_asked;
	struct sim_coll_plan *plan;   /* per channel (roots differ)        */
	uint32_t joined, finished;
	uint32_t *order;              /* [c * p + v] -> member             */
	uint32_t *vpos;               /* [c * p + member] -> v             */
	struct coll_member *m;        /* [c * p + v]                       */
	uint16_t *chan_left;          /* [member]                          */
	uint8_t *stream;              /* [member]: stream of its op        */
	/* Sharing (share.c), while it runs in closed form. */
	struct coll_links_memo *fp;  /* its first collective's links  */
	uint8_t registered;           /* on its footprint's links' users    */
	uint8_t started;              /* every member joined: it runs       */
	struct coll_wake *wake;       /* its live completion event          */
	sim_ps t0, t_upd;             /* its start; the last re-rating      */
	double tau, rate;             /* closed-form ps done by t_upd; rate */
	double total;                 /* its whole closed form, ps          */
	double intra;                 /* its bandwidths inside nodes' factor
				       * beside compute (coll.c, <= 1)      */
	struct sim_event beside;      /* at its start, after the others then
				       * (coll.c, beside_fire)              */
	struct share_seg *seg;        /* rate changes, for the chain's ends */
	uint32_t nseg, segcap;
	uint32_t mark;                /* share.c's visit stamp              */
	struct sim_coll_plan plan1;   /* plan when it has one channel      */
	/* chan_left and stream follow the struct, in the same allocation */
};

/* coll.c */
/* The resolved collective for an op (cached per group); NULL with err. */
const struct coll_choice *coll_choose(struct sim *sim, uint32_t group, const struct sim_op *op,
				      char *err, size_t errlen);
/* The links memo of a collective on a group, computed on first use; NULL if
 * it cannot be planned. */
struct coll_links_memo *coll_memo_get(struct sim *sim, uint32_t group,
					    const struct sim_coll_algo *algo,
					    enum sim_coll_op op, double bytes,
					    unsigned channels);
/* Scan a memo's footprint again if the census dropped it. */
void coll_memo_footprint(struct sim *sim, uint32_t group, struct coll_links_memo *m);
/* Every present member of a closed-form instance is done now. */
void coll_closed_finish(struct sim *sim, struct coll_inst *in);

/* share.c */
/* A closed-form instance of a shared group started (its end alone is
 * scheduled, t0 and total set): register its links and re-rate it and the
 * instances it shares them with. */
void coll_share_start(struct sim *sim, struct coll_inst *in);
/* A registered instance ends now: unregister, re-rate the instances it
 * shared links with, finish its members. */
void coll_share_end(struct sim *sim, struct coll_inst *in);
/* Bring in's progress to now and set its rate and end from the sharing and
 * in->intra now (share.c). */
void coll_share_rerate(struct sim *sim, struct coll_inst *in);
/* A chain whose rate changed: its ops' ends mapped through the rate
 * segments (share.c); nothing to do otherwise. */
void coll_chain_map(struct sim *sim, struct coll_inst *in);
/* The rate of in's op with its bandwidths inside nodes scaled by f_intra and
 * between them by f_inter: the closed form alone over the one so scaled. */
double coll_class_rate(struct sim *sim, const struct coll_inst *in, const struct sim_op *op,
		       double f_intra, double f_inter);
/* A memo was made: note whose links its footprint crosses (a group that
 * meets another becomes shared: its running instances register); a group
 * still alone drops the memo's footprint. */
void coll_share_census(struct sim *sim, uint32_t group, struct coll_links_memo *m);
/* Make a memo's footprint: begin, note each link of each step's routes
 * (its messages on it, the step's rate), end. */
void coll_fp_begin(struct sim *sim, struct coll_links_memo *m);
void coll_fp_note(struct sim *sim, struct coll_links_memo *m, uint32_t link, uint32_t own,
		  double rate, int inter);
void coll_fp_end(struct sim *sim, struct coll_links_memo *m);
void coll_memo_free(struct coll_links_memo *m);

#endif
