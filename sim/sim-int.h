/*
 * sim-int.h - the engine's internals shared by sim.c (clock, links,
 * transfers, ranks, point-to-point) and coll.c (collectives).
 */
#ifndef SIM_SIM_INT_H
#define SIM_SIM_INT_H

#include <stddef.h>

#include "sim/heap-int.h"
#include "sim/sim.h"

struct sim_xfer;
struct share_link;
struct coll_inst;
struct coll_wake;
struct coll_links_memo;

struct sim_link {
	double bw_Bps;
	double bytes;       /* carried so far                               */
	sim_ps free_ps;     /* the wire is reserved until then              */
	sim_ps busy_ps;     /* sum of the wire time of what it carried      */
	/* The transfer whose bulk reservation ends at free_ps, or NULL for a
	 * single chunk's. Meaningful only while free_ps > now: every
	 * reservation overwrites it. */
	struct sim_xfer *holder;
	uint32_t tag;
};

/*
 * A message in flight. It moves in chunks: each chunk reserves every link of
 * the route from s = max(ready, free of each link) for its own wire time on
 * that link, and the next chunk is issued when this one has left the
 * bottleneck link, so flows sharing a link interleave chunk by chunk. The
 * message arrives alpha after its last chunk left the wire: latency is paid
 * once per message, on its route, not per hop or per chunk.
 */
struct sim_xfer {
	struct sim_event ev;
	uint64_t due_seq;            /* ev's live heap entry; others are stale */
	struct sim_route route;
	double left;                 /* bytes not yet issued                */
	double slow;                 /* its wire time's factor, beside compute
				      * at either end (sim_set_interference) */
	uint32_t src, dst;
	uint8_t intra;               /* src and dst share a node           */
	double carry_ps;             /* rounding of the wire time so far   */
	uint8_t arriving;            /* ev is the arrival, not a chunk issue */
	uint8_t bulk;                /* holds a bulk reservation (see sim.c) */
	void (*done)(struct sim *sim, struct sim_xfer *x);
	void *owner;                 /* the owner's context and indices     */
	uint32_t a, b, c, d;
	struct sim_xfer *next_free;
	/* A bulk reservation: where it started and what the route's links
	 * held before it, so that a split can replay it chunk by chunk. */
	struct {
		sim_ps s0, free0[SIM_ROUTE_MAX], busy0[SIM_ROUTE_MAX];
		double left0, carry0, bytes0[SIM_ROUTE_MAX];
	} b0;
};

/* A rank's stream in 32 bits, as bundles and point-to-point waits keep it:
 * rank << 4 | stream (ranks < 2^20, TOPO_MAX_RANKS; streams < 16), bit 31
 * free. */
_Static_assert(SIM_MAX_STREAMS <= 16, "a packed stream holds 4 bits");
static inline uint32_t rs_pack(uint32_t rank, unsigned stream) { return rank << 4 | stream; }
static inline uint32_t rs_rank(uint32_t rs) { return rs >> 4; }
static inline unsigned rs_stream(uint32_t rs) { return rs & 0xfu; }

/* Streams whose ops end at one time, fired from one heap entry (sim.c). */
struct sim_bundle {
	struct sim_event ev;
	struct sim_bundle *next_free;
	uint32_t n, cap;
	uint32_t *s;                 /* rs_pack(rank, stream), in the order
				      * they were scheduled                */
};

/* A rank's group slot: what a collective or a message on it reads, in 16
 * bytes. */
struct sim_rank_slot {
	uint32_t group;       /* group id                                    */
	uint32_t member;      /* the rank's member index in it               */
	/* Collectives joined on the group while this program runs (the
	 * membership's seq is written back when the rank gets a new program);
	 * slots naming the same group share the first one's count (seq_slot). */
	uint32_t seq;
	uint16_t memb;        /* its sim_membership (a rank's groups: few)   */
	uint8_t seq_slot;
};

/*
 * A rank. Ordered for the cache: the first two lines (an aligned pair) hold
 * what every start and finish of an op reads and writes: program, ops left,
 * busy flags, accounting, each stream's head and running op, and the first
 * group slot (SIM_HOT_SLOTS). Collectives on the other slots touch one more
 * pair; recording, the end of the program and memory changes touch the
 * rest.
 */
struct sim_rank {
	const struct sim_program *prog;
	uint32_t left;                    /* ops not finished               */
	uint16_t busy;                    /* bit s: stream s runs an op     */
	uint16_t counted;                 /* bit s: it counts as communication
					   * in progress (stream_set_busy)  */
	sim_ps since;                     /* last change of busy state      */
	sim_ps compute_ps, exposed_ps;    /* st's, kept here (rank_account) */
	uint32_t next[SIM_MAX_STREAMS];   /* head op: index into the stream */
	uint16_t run[SIM_MAX_STREAMS];    /* ops the running op stands for
					   * (>= 1; runs are at most
					   * SIM_RUN_MAX ops)                */
	struct sim_rank_slot slot[SIM_MAX_GROUPS];
	sim_ps start[SIM_MAX_STREAMS];    /* when the running op started:
					   * kept only for a recorder       */
	sim_ps end;                       /* when the program ended         */
	/* A waiting send or receive of stream s: the next waiter of its
	 * conversation (sim.c, p2p_post), rs_pack'ed, or none. */
	uint32_t p2p_next[SIM_MAX_STREAMS];
	/* CUDA blocks the op of stream s holds while it communicates (counted):
	 * a collective its channels, a send or receive one (interference). */
	uint8_t blocks[SIM_MAX_STREAMS];
	uint8_t ngroups;
	/* Aligned so that mem_now and mem_peak, which every change of memory
	 * reads, are one pair of lines. */
	struct sim_rank_stats st __attribute__((aligned(128)));
	/* Read only with interference or a host set (sim_set_interference,
	 * sim_set_host), after the lines every event reads. The compute op
	 * running one at a time (or in progress in a cut run), its stream. */
	uint8_t comp_stream;
	uint16_t host_wait;               /* bit s: stream s waits for its
					   * head's issue (sim_set_host)    */
	uint16_t coalesced;               /* bit s: stream s runs a run of
					   * compute ops begun without
					   * communication (interference)   */
	const struct sim_op *comp;
	sim_ps host0;                     /* the host's start: the rank's   */
	sim_ps run_end[SIM_MAX_STREAMS];  /* a coalesced run's end           */
	sim_ps stale_t[SIM_MAX_STREAMS];  /* a cut run's end in the heap,    */
	uint16_t stale;                   /* bit s: stale_t[s] holds one     */
} __attribute__((aligned(128)));  /* sim_new allocates the ranks so aligned */
_Static_assert(_Alignof(struct sim_rank) == 128, "a rank starts on a pair of lines");
_Static_assert(offsetof(struct sim_rank, slot) + SIM_HOT_SLOTS * sizeof(struct sim_rank_slot) <= 128,
	       "the hot slots lie in the first two lines");

/* The most ops one run (of kernels, or of collectives in a chain) stands
 * for: longer ones are cut (sim.c, program_stream_hot). */
#define SIM_RUN_MAX UINT16_MAX

struct coll_inst;
struct coll_links_memo;

/* A resolved collective: what was asked, what runs, and its closed form. */
struct coll_choice {
	const struct sim_coll_algo *asked;  /* NULL: auto                 */
	double bytes;
	uint32_t peer;
	uint16_t channels_asked;
	uint8_t op, used;
	const struct sim_coll_algo *algo;
	struct sim_coll_plan plan;
	unsigned channels;
	double time_s;                  /* closed form (where costed so)  */
	sim_ps time_ps;                 /* the same in ps                  */
};

/* Choices a group remembers (a layer's few collectives, round robin). */
#define COLL_CHOICES 8

struct sim_group {
	/* What every join and finish reads, in the first cache line. */
	uint32_t n;
	uint32_t *ranks;
	uint32_t npresent;            /* members not absent, counted at:  */
	uint32_t npresent_gen;        /* sim.absent_gen + 1 (0: never)    */
	/* Live collective instances, by sequence number from base_seq. */
	struct coll_inst **live;
	uint32_t base_seq, nlive, livecap;
	/* Layout over nodes, built on first use (coll.c). */
	uint32_t *by_node;      /* members sorted by node, stable          */
	uint32_t *node_first;   /* nodes+1 offsets into by_node             */
	uint32_t nodes, per_node;
	struct sim_coll_links basic;  /* ring-neighbour routes, once      */
	uint8_t basic_done;
	uint8_t choice_next;
	uint8_t shared;               /* a link it crosses is another
				       * group's too (share.c's census)   */
	struct coll_choice choice[COLL_CHOICES];
	struct coll_links_memo *memo;
	struct coll_inst *spare;      /* a finished instance's block      */
};

/*
 * A rank's membership of a group, found when the rank is started. seq
 * counts the collectives the rank joined on the group, across programs:
 * the n-th of every member is one instance.
 */
struct sim_membership {
	uint32_t group, member, seq;
};

struct sim {
	sim_ps *exposed_by;          /* nranks x SIM_MAX_STREAMS, or NULL:
				      * sim_track_exposed_by_stream */
	struct sim_config cfg;
	sim_ps now;
	uint64_t events;
	struct sim_heap heap;
	const struct sim_topo_ops *topo_ops;
	void *topo;
	const struct sim_recorder_ops *rec;
	void *rec_ctx;

	struct sim_link *links;
	uint32_t nlinks, linkcap;

	uint32_t nranks;
	struct sim_rank *ranks;
	/* Groups each rank belongs to: CSR built lazily from the groups. */
	struct sim_membership **memberships;
	uint32_t *nmemberships;
	int memberships_stale;       /* groups were added since the build   */

	struct sim_group *groups;
	uint32_t ngroups, groupcap;

	struct sim_xfer *xfer_free;
	void **xfer_blocks;
	uint32_t nxfer_blocks;

	struct p2p_map *p2p;
	uint32_t *scratch;           /* nlinks counters for coll.c          */
	uint32_t scratchcap;
	/* Closed-form instances sharing links (share.c). */
	struct share_link *share_links;  /* [link]: census and users        */
	uint32_t share_cap;
	uint32_t *share_map;         /* [link]: a footprint's index + 1     */
	uint32_t share_mapcap;
	struct coll_inst **share_aff;  /* instances to re-rate              */
	uint32_t share_naff, share_affcap, share_gen;
	struct sim_coll_links *share_per;
	uint32_t share_percap;
	struct coll_wake *share_wake_free;

	char *err;                   /* first fatal error of the run        */
	uint64_t fire_seq;           /* heap sequence of the event firing   */
	uint8_t *absent;             /* [rank], NULL while none is          */
	double (*scale)(void *ctx, uint32_t rank, const struct sim_op *op);
	void *scale_ctx;             /* sim_set_compute_scale               */
	const double *speed;         /* [rank], sim_set_rank_speed          */
	double (*interf)(void *ctx, uint32_t rank, const struct sim_op *op, unsigned blocks);
	double (*interf_comm)(void *ctx, uint32_t rank, const struct sim_op *beside,
			      unsigned blocks);
	double (*host)(void *ctx, const struct sim_op *op);  /* sim_set_host */
	/* Ends of cut runs still in the heap beyond each stream's first
	 * (sim_rank.stale_t), skipped when they fire (sim.c, runs_cut):
	 * rs_pack'ed stream and time. */
	struct stale_end { uint32_t rs; sim_ps t; } *stale;
	uint32_t nstale, stalecap;
	uint32_t stale_pending;      /* stale ends in the heap, all ranks   */
	void *host_ctx;
	struct host_wake *host_free;  /* spare wakes                    */
	void *interf_ctx;            /* sim_set_interference                */
	const sim_ps *chain_end;     /* while coll.c finishes a member of a
				      * chain: each op's end (run_record)   */
	struct sim_bundle *bundle;   /* the last heap entry, if a bundle of
				      * streams still open (sim.c)          */
	sim_ps bundle_t;
	uint64_t bundle_seq;
	struct sim_bundle *bundle_free;
	void (*rank_done)(void *ctx, struct sim *sim, uint32_t rank);
	void *rank_done_ctx;         /* sim_set_rank_done                   */
	uint32_t absent_gen;         /* changes of `absent` so far          */
	uint8_t ranks_started;       /* a rank has started: the recorder is
				      * fixed (sim_set_recorder)            */
	uint8_t clock_failed;        /* err: a time passed SIM_PS_MAX       */
};

/* share.c */
/* sim_free's drain: a heap entry that share.c owns is taken back (1). */
int coll_share_event_free(struct sim *sim, struct sim_event *ev);
void coll_share_free(struct sim *sim);

/* sim.c */
/* Schedule as sim_schedule and return the entry's heap sequence number. */
uint64_t sim_schedule_seq(struct sim *sim, sim_ps t, struct sim_event *ev);
void sim_fail(struct sim *sim, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Fail the run (if nothing failed it before) because what (a phrase: "rank
 * 3's op 'x'") would end at or past SIM_PS_MAX; sim_failed_clock says so. */
void sim_fail_clock(struct sim *sim, const char *what);
struct sim_xfer *sim_xfer_start(struct sim *sim, uint32_t src, uint32_t dst, double bytes,
				void (*done)(struct sim *, struct sim_xfer *), void *owner);
/* The op running at the head of a stream has finished now. */
void sim_stream_finish(struct sim *sim, uint32_t rank, unsigned stream);
/* The factor of a communication kernel's time on rank now, beside its
 * running compute op (sim_set_interference's comm; 1 when none). */
double sim_comm_slow(const struct sim *sim, uint32_t rank);
/* Finish it at the current time through an event (no recursion). */
void sim_stream_finish_later(struct sim *sim, uint32_t rank, unsigned stream);
const struct sim_op *sim_stream_head(const struct sim *sim, uint32_t rank, unsigned stream);

/* Members of a group that are not absent (sim_rank_absent), counted once
 * after each change of the absent ranks (sim_group_count_present). */
uint32_t sim_group_count_present(struct sim *sim, uint32_t group);
static inline uint32_t sim_group_present(struct sim *sim, uint32_t group)
{
	const struct sim_group *g = &sim->groups[group];
	return g->npresent_gen == sim->absent_gen + 1 ? g->npresent
						       : sim_group_count_present(sim, group);
}

/* coll.c */
/* Join a collective: op, the head of the stream, which begins a chain of
 * `chain` collectives on its group (run_n, 0 or 1: none). Returns the ops
 * the join stands for: the chain where it is costed in closed form and
 * every member runs this program, else 1. */
uint32_t sim_coll_join(struct sim *sim, uint32_t rank, unsigned stream, const struct sim_op *op,
		       uint32_t chain);
void sim_group_free(struct sim_group *g);

#endif
