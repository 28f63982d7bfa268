/*
 * sim.h - the event engine: virtual clock, event heap, ranks with streams
 * running programs of ops, links with chunked transfers, collectives.
 *
 * One struct sim holds all state of one simulation; there are no globals, so
 * several simulations may live in one process. The caller owns programs,
 * topology and recorder and must keep them alive while the sim runs; the sim
 * owns its links, groups, events and collective instances.
 *
 * Time is an integer count of picoseconds. Events are ordered by (time,
 * insertion sequence), so equal times resolve in the order they were
 * scheduled and every run of the same input is identical.
 *
 * Layers above fill in the interfaces declared here: topology/ implements
 * struct sim_topo_ops (routes between ranks over links it adds with
 * sim_link_add), collectives/ implements struct sim_coll_algo, and a
 * recorder (sim/store.h for SQLite) implements struct sim_recorder_ops.
 */
#ifndef SIM_SIM_H
#define SIM_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "sim/util.h"

struct sim;

/* ---- events ---------------------------------------------------------- */

/*
 * An event is embedded in the struct that owns it (a stream, a transfer, a
 * collective) and scheduled at most once at a time; the handler finds its
 * owner with container_of. Nothing is allocated per event.
 */
struct sim_event {
	void (*fire)(struct sim *sim, struct sim_event *ev);
};

/* Schedule ev at absolute time t (t >= sim_now). */
void sim_schedule(struct sim *sim, sim_ps t, struct sim_event *ev);
sim_ps sim_now(const struct sim *sim);
/* Events dispatched so far. */
uint64_t sim_events(const struct sim *sim);

/* ---- links and routes ------------------------------------------------- */

/* Longest route, in links (GPU - NIC - leaf - spine - leaf - NIC - GPU). */
#define SIM_ROUTE_MAX 8

/*
 * A route: the directed links a message crosses, the latency it pays once
 * (cut-through) and its bottleneck bandwidth (the smallest of its links').
 */
struct sim_route {
	sim_ps alpha_ps;
	double bw_Bps;
	uint32_t n;
	uint32_t link[SIM_ROUTE_MAX];
};

/*
 * Add a directed link of bandwidth bw_Bps. tag is the topology's own
 * description of the link (kind and endpoints), handed back to its
 * link_name(). Returns the link id, dense from 0.
 */
uint32_t sim_link_add(struct sim *sim, double bw_Bps, uint32_t tag);
uint32_t sim_nlinks(const struct sim *sim);

/* What one link carried: bytes, time busy with them, its bandwidth. */
struct sim_link_stats {
	double bw_Bps;
	double bytes;
	sim_ps busy_ps;
	uint32_t tag;
};
void sim_link_stats(const struct sim *sim, uint32_t link, struct sim_link_stats *out);

/*
 * What the engine needs of a cluster. route() may add links lazily (the
 * ideal cluster joins each pair of ranks by its own link, created on first
 * use). node_of() numbers nodes densely; rails is the number of NICs per node
 * (the default channel count of ring collectives across nodes).
 */
struct sim_topo_ops {
	void (*route)(void *topo, struct sim *sim, uint32_t src, uint32_t dst,
		      struct sim_route *out);
	uint32_t (*node_of)(void *topo, uint32_t rank);
	uint32_t (*rails)(void *topo);
	/* Human-readable name of a link, from its tag ("node3.nic5.tx"). */
	void (*link_name)(void *topo, uint32_t tag, char *buf, size_t len);
};

/* ---- collectives ------------------------------------------------------ */

enum sim_coll_op {
	SIM_COLL_ALLREDUCE,
	SIM_COLL_REDUCESCATTER,
	SIM_COLL_ALLGATHER,
	SIM_COLL_ALLTOALL,
	SIM_COLL_BROADCAST,
	SIM_COLL_NOPS
};

const char *sim_coll_op_name(enum sim_coll_op op);
/* Returns the op or -1 for an unknown name. */
int sim_coll_op_parse(const char *name);
/* nccl-tests bus bandwidth factor (SPEC C6): 2(p-1)/p, (p-1)/p or 1. */
double sim_coll_busbw_factor(enum sim_coll_op op, uint32_t p);

/*
 * One collective on one group as an algorithm sees it. Members are numbered
 * in "virtual" order 0..p-1: the engine lays the group's members out node by
 * node (a ring snakes through nodes so that consecutive nodes meet on one NIC
 * rail, one rotation per channel) and hands that order to the algorithm.
 */
struct sim_coll_plan {
	enum sim_coll_op op;
	uint32_t p;          /* members                                       */
	double bytes;        /* n: the full buffer (SPEC.md's convention)     */
	uint32_t channels;   /* c >= 1: the data is split over c channels     */
	uint32_t root;       /* broadcast root, a virtual index                */
	uint32_t nodes;      /* nodes the members sit on                      */
	uint32_t per_node;   /* members per node, 0 if it differs by node     */
	double alpha_s;      /* slowest route's latency, for the algorithm's  */
	double beta_s;       /* own choices (broadcast slices): s and s/B     */
	uint32_t nsteps;     /* filled by plan()                              */
	uint32_t slices;     /* filled by plan(): broadcast pipeline slices   */
};

/* What virtual member v does in one step: at most one send, one receive. */
struct sim_coll_step {
	int32_t send_to;     /* virtual index, or -1 */
	int32_t recv_from;   /* virtual index, or -1 */
	double send_bytes;
	double recv_bytes;
};

/* Latency and bandwidth of the routes inside a node and across nodes. */
struct sim_coll_links {
	double alpha_intra_s, bw_intra_Bps;
	double alpha_inter_s, bw_inter_Bps;  /* both 0 if the group is in one node */
};

/*
 * The links of a collective by step pattern (see sim_coll_algo.pattern): the
 * classes of the routes one step of each pattern crosses, and `all`, the
 * worst of every pattern. n = 0 means uniform: every pattern has `all`.
 */
struct sim_coll_linkset {
	struct sim_coll_links all;
	uint32_t n;
	const uint32_t *pattern;            /* n pattern ids                  */
	const struct sim_coll_links *per;   /* n classes, one per pattern     */
};

/* The classes of one pattern (all of them if it was not scanned). */
const struct sim_coll_links *sim_coll_linkset_at(const struct sim_coll_linkset *ls,
						 uint32_t pattern);

/* Algorithm flags. */
#define SIM_COLL_SNAKE    1u  /* lay members out as a ring snaking through nodes */
#define SIM_COLL_CHANNELS 2u  /* default channels across nodes: one per NIC rail */

/*
 * A collective algorithm: one file in collectives/, one line in its table.
 * The engine runs every algorithm with one state machine (sim/coll.c): a
 * member at step k sends its message (once the receiver has reached step k)
 * and waits for the one it receives; it enters step k+1 when both are done.
 * Every algorithm's step() must be consistent: if v sends to d at step k,
 * then d receives from v at step k, the same bytes.
 */
struct sim_coll_algo {
	const char *name;
	const char *help;
	unsigned ops;        /* bit (1u << op) for each op it implements */
	unsigned flags;      /* SIM_COLL_* */
	/* Check the plan (p, layout) and fill nsteps (and slices). 0 or -1 with err. */
	int (*plan)(struct sim_coll_plan *plan, char *err, size_t errlen);
	/* What virtual member v does at step k, on one channel. */
	void (*step)(const struct sim_coll_plan *plan, uint32_t v, uint32_t k,
		     struct sim_coll_step *out);
	/* Steps of equal pattern use the same peers: sim_coll_links() looks at
	 * one step of each pattern only (ring: one pattern; rd: one per step). */
	uint32_t (*pattern)(const struct sim_coll_plan *plan, uint32_t k);
	/* Closed-form time in seconds on the given links, without contention:
	 * each step costs its latency and bytes on the links of its pattern. */
	double (*time_s)(const struct sim_coll_plan *plan, const struct sim_coll_linkset *ls);
};

/* ---- programs ---------------------------------------------------------- */

enum sim_op_kind {
	SIM_OP_COMPUTE,  /* occupies its stream for dur_ps                  */
	SIM_OP_COLL,     /* a collective on one of the rank's groups        */
	SIM_OP_SEND,     /* point-to-point send to a member of a group      */
	SIM_OP_RECV,     /* the matching receive                            */
	SIM_OP_NKINDS
};

const char *sim_op_kind_name(enum sim_op_kind kind);

/* Streams per rank: compute and communication, as CUDA streams. Stream 0
 * is the compute stream: a rank's busy and exposed-communication times are
 * measured against it. */
#define SIM_MAX_STREAMS 12
#define SIM_STREAM_COMPUTE 0
/* Memory categories a rank tracks (their meaning is the caller's). */
#define SIM_MEM_CATS 8
/* Group slots per rank (world, TP, CP, PP, DP, EP, ...). A rank's first
 * SIM_HOT_SLOTS slots share its first cache lines, the next eight its
 * next two: give them the groups with the most collectives. */
#define SIM_MAX_GROUPS 12
#define SIM_HOT_SLOTS 1

/* Op flags. SIM_OP_MARK: when the op finishes, the rank's stats remember
 * the time and its compute and exposed-communication totals (mark_*). */
#define SIM_OP_MARK 1u

/* The phase of a training step an op belongs to (its label). */
enum sim_phase {
	SIM_PHASE_NONE,       /* none: the optimizer, gradient buckets, ...    */
	SIM_PHASE_FWD,        /* a forward pass                                */
	SIM_PHASE_BWD,        /* a backward pass                               */
	SIM_PHASE_RECOMPUTE,  /* a forward recomputed in the backward          */
	SIM_PHASE_WEIGHT,     /* a split backward's weight-gradient pass       */
	SIM_PHASE_N
};
/* "fwd", "bwd", "recompute", "wgt"; NULL for none. */
const char *sim_phase_name(enum sim_phase p);

/*
 * What an op is part of, for the tools: the store records it as columns
 * (docs/schema.md) and pictures colour by it; the engine never reads it.
 * The writer of a program sets it on the op just added
 * (sim_program_label); an op without one has SIM_NO_LABEL.
 */
struct sim_op_label {
	int32_t layer;       /* transformer layer, or -1                        */
	int16_t mb;          /* micro-batch, or -1                              */
	int16_t chunk;       /* model chunk of an interleaved pipeline, or -1   */
	uint8_t phase;       /* enum sim_phase                                  */
	const char *kernel;  /* the kernel it runs (a static string), or NULL  */
};
#define SIM_NO_LABEL ((struct sim_op_label){ .layer = -1, .mb = -1, .chunk = -1 })

/*
 * One op of a program. Ops of one stream run in program order; an op may also
 * wait for ops of other streams of the same rank (deps). Cross-rank ordering
 * comes only from communication: collectives and send/recv pairs.
 */
struct sim_op {
	uint8_t kind;        /* enum sim_op_kind                               */
	uint8_t stream;
	uint8_t group;       /* COLL, SEND, RECV: the rank's group slot         */
	uint8_t coll;        /* COLL: enum sim_coll_op                          */
	uint16_t channels;   /* COLL: 0 = the algorithm's default               */
	uint8_t mem_cat;     /* memory category mem_bytes changes               */
	uint8_t flags;       /* SIM_OP_MARK                                     */
	uint8_t tag;         /* SEND/RECV: pairs match by (src, dst, tag)       */
	uint8_t phase;       /* its label (struct sim_op_label): enum sim_phase */
	uint16_t ndeps;
	uint32_t pos;        /* position within its stream                      */
	uint32_t dep0;       /* first of ndeps entries in the program's deps    */
	uint32_t peer;       /* SEND/RECV: peer member index; COLL: root        */
	const struct sim_coll_algo *algo; /* COLL: NULL picks the fastest      */
	const char *name;    /* owned by the program                            */
	sim_ps dur_ps;       /* COMPUTE                                         */
	double flops;        /* COMPUTE: recorded, not used for time            */
	double bytes;        /* COMPUTE: memory traffic; COLL: n; SEND: message */
	double mem_bytes;    /* allocated (> 0) or freed (< 0) when it finishes */
	int32_t layer;       /* the rest of its label                           */
	int16_t mb, chunk;
	const char *kernel;
};

/*
 * What the engine reads of an op at the head of a stream, in one place: a
 * run of compute ops (run_n > 1, see sim.c) stands for run_n ops of total
 * duration run_ps; a chain of collectives on one group (run_n > 1, kind
 * COLL) may be joined as one where they are costed in closed form (coll.c).
 */
struct sim_op_hot {
	uint32_t op;         /* index into ops                                 */
	uint32_t dep0;       /* first of ndeps entries in dep_at               */
	uint32_t run_n;      /* ops of the run it starts, 0 inside a run       */
	uint16_t ndeps;
	uint16_t wakes;      /* bit s: an op of stream s waits for this one     */
	uint8_t kind;
	uint8_t effects;     /* changes memory or carries SIM_OP_MARK          */
	uint8_t dep_stream;  /* the first dependency, inline (most ops have at */
	uint32_t dep_pos;    /* most one): stream and position                 */
	sim_ps run_ps;
};

/*
 * A program: the ops of one rank. Ranks that run the same sequence share one
 * program (pointers to it), so a program is immutable once ranks use it.
 */
struct sim_program {
	struct sim_op *ops;
	uint32_t nops, cap;
	uint32_t *deps;
	uint32_t ndeps, depcap;
	uint32_t *stream_ops[SIM_MAX_STREAMS];
	uint32_t stream_n[SIM_MAX_STREAMS], stream_cap[SIM_MAX_STREAMS];
	char **names;
	uint32_t nnames, namecap;
	uint8_t nstreams;         /* highest stream used + 1                 */
	uint8_t ngroups;          /* highest group slot an op names + 1      */
	/* Derived by the engine when a rank starts (sim.c, program_seal) and
	 * recomputed after any change: what the event loop reads of each op, by
	 * stream and position, and the dependencies as (stream, position). */
	struct sim_op_hot *hot[SIM_MAX_STREAMS];
	struct sim_dep_at { uint32_t pos; uint32_t stream; } *dep_at;
	uint8_t sealed;
	/* With a host (sim_set_host): each op's issue time from the program's
	 * start, and the cost whose sums they are. */
	sim_ps *issue_ps;
	const void *issue_of;
};

struct sim_program *sim_program_new(void);
void sim_program_free(struct sim_program *prog);
/* Append ops; each returns the op's index. name is copied. */
uint32_t sim_program_compute(struct sim_program *prog, unsigned stream, const char *name,
			     sim_ps dur_ps, double flops, double bytes);
uint32_t sim_program_coll(struct sim_program *prog, unsigned stream, const char *name,
			  enum sim_coll_op op, const struct sim_coll_algo *algo,
			  unsigned group, double bytes, unsigned channels, uint32_t root);
/* A send's or receive's peer is a member index of the group, or one of
 * these: the member after or before the rank's own in the group, so that
 * ranks sharing one program each talk to their own ring neighbours. */
#define SIM_PEER_NEXT 0xFFFFFFFFu
#define SIM_PEER_PREV 0xFFFFFFFEu
uint32_t sim_program_send(struct sim_program *prog, unsigned stream, const char *name,
			  unsigned group, uint32_t peer, double bytes);
uint32_t sim_program_recv(struct sim_program *prog, unsigned stream, const char *name,
			  unsigned group, uint32_t peer, double bytes);
/* Give the most recent send or receive a tag: sends and receives of one
 * pair of ranks match in order within each tag (activations and gradients
 * between two pipeline stages are separate conversations). */
void sim_program_tag(struct sim_program *prog, unsigned tag);
/* Set flags (SIM_OP_MARK) on the most recently added op. */
void sim_program_flags(struct sim_program *prog, unsigned flags);
/* Make the most recently added op wait for op dep (of another stream). */
void sim_program_dep(struct sim_program *prog, uint32_t dep);
/* The most recently added op allocates (bytes > 0) or frees memory of a
 * category when it finishes. */
void sim_program_mem(struct sim_program *prog, unsigned cat, double bytes);
/* Label the most recently added op (what it is part of: layer, micro-batch,
 * chunk, phase, kernel). */
void sim_program_label(struct sim_program *prog, const struct sim_op_label *l);
/* An op's label. */
struct sim_op_label sim_op_label_of(const struct sim_op *op);

/* ---- the simulation ---------------------------------------------------- */

enum sim_fidelity {
	SIM_FIDELITY_FLOW,      /* chunked transfers over links, contention  */
	SIM_FIDELITY_ANALYTIC,  /* one event per collective, closed forms     */
};

const char *sim_fidelity_name(enum sim_fidelity f);

/* Called for every finished op, and every change of a rank's memory (the
 * recorder); mem may be NULL. */
struct sim_recorder_ops {
	void (*op_done)(void *ctx, uint32_t rank, const struct sim_op *op,
			sim_ps start, sim_ps end);
	void (*mem)(void *ctx, uint32_t rank, sim_ps t, unsigned cat, double bytes_now);
};

struct sim_config {
	enum sim_fidelity fidelity;
	double chunk_bytes;  /* transfers move in chunks of this size        */
	/* Algorithms that `auto` chooses from (NULL-terminated), best first
	 * on ties. Usually collectives/'s registry. */
	const struct sim_coll_algo *const *algos;
	/* Collectives costed in closed form share the links they cross with
	 * the others running there (share.c); 0: each alone on its links. */
	int analytic_sharing;
	/* auto chooses as NCCL can: an all-gather or reduce-scatter on a group
	 * with more than one member on a node runs by ring (NCCL's only
	 * algorithm there; its PAT, log steps, needs one GPU a node), the rest
	 * from every algorithm. 0: from every algorithm, the fastest closed
	 * form (docs/collectives.md, "What NCCL would pick"). */
	int auto_nccl;
};

/* NCCL's Simple protocol: a 4 MiB buffer in 8 slots, 512 KiB per slot. */
#define SIM_DEFAULT_CHUNK_BYTES (512.0 * 1024.0)

void sim_config_init(struct sim_config *cfg);
struct sim *sim_new(const struct sim_config *cfg, uint32_t nranks,
		    const struct sim_topo_ops *topo_ops, void *topo);
void sim_free(struct sim *sim);
uint32_t sim_nranks(const struct sim *sim);
/* Before the first sim_rank_start (a later call is a BUG): the engine keeps
 * the start times of running ops only while a recorder is set. */
void sim_set_recorder(struct sim *sim, const struct sim_recorder_ops *ops, void *ctx);

/*
 * Scale compute times: every compute op a rank starts takes its programmed
 * duration times scale(ctx, rank, op) (> 0), drawn when it starts, so the
 * draws follow the deterministic event order. With a scale set, compute ops
 * run one event each (no coalesced runs). NULL restores the programmed
 * durations. The parallel layer uses it for kernel jitter.
 */
void sim_set_compute_scale(struct sim *sim,
			   double (*scale)(void *ctx, uint32_t rank, const struct sim_op *op),
			   void *ctx);
/*
 * Each rank's compute ops take speed[rank] (> 0) times their programmed
 * duration, on top of any scale; runs of compute ops stay one event. The
 * array (sim_nranks entries) is the caller's and must outlive the runs;
 * NULL restores the programmed speed. The parallel layer uses it for the
 * GPUs' spread and stragglers.
 */
void sim_set_rank_speed(struct sim *sim, const double *speed);
/*
 * Interference, both ways.
 *
 * Compute slowed by communication: when a compute op starts on a rank while
 * its communication holds `blocks` CUDA blocks (the channels of each
 * collective it is in, one for each send or receive moving data), the op
 * takes factor(ctx, rank, op, blocks) (>= 1) times its time (after any
 * scale and speed); the time added counts in the rank's interference_ps.
 * The factor is taken at the op's start and holds to its end. With it set,
 * a run of compute ops is one event only if it begins while the rank has no
 * communication in progress; where some begins during the run, the run is
 * cut after the op in progress and the rest start one by one (an op that
 * ends at the very time communication begins is the one in progress: the
 * next one counts the communication). Other compute ops run one event each.
 *
 * Communication slowed by compute: comm(ctx, rank, beside, blocks) (>= 1)
 * is the factor of a communication kernel's time on a rank whose compute op
 * `beside` runs, the kernels holding `blocks` blocks. It slows only what
 * the GPU's own data path bounds: routes inside a node (NVLink; across
 * nodes the NIC is the bound). A transfer inside a node (flow fidelity)
 * puts each chunk on the wire at its bandwidth over the larger factor of
 * its two ends, taken as the chunk (or the rest of the message, when its
 * route is free) is issued. A closed-form collective (analytic fidelity)
 * runs with its bandwidths inside nodes over the largest factor among its
 * members, taken at its start. comm NULL: communication is not slowed.
 * factor NULL: no interference either way.
 */
/*
 * The host: one thread per rank issues the rank's ops in program order
 * (op index), each at cost(ctx, op) seconds of its own time (>= 0), from
 * the rank's start (sim_rank_start) without waiting for the GPU. An op
 * starts no earlier than it is issued: the sum of the costs of the ops up
 * to it. A rank whose kernels are shorter than their host costs runs at the
 * host's pace. With a host, compute ops and collectives run one event each
 * (no runs, no chains). NULL: no host (ops are issued when ready).
 */
void sim_set_host(struct sim *sim, double (*cost)(void *ctx, const struct sim_op *op),
		  void *ctx);
void sim_set_interference(struct sim *sim,
			  double (*factor)(void *ctx, uint32_t rank, const struct sim_op *op,
					   unsigned blocks),
			  double (*comm)(void *ctx, uint32_t rank, const struct sim_op *beside,
					 unsigned blocks),
			  void *ctx);
/*
 * Call done(ctx, sim, rank) when a rank's program has finished (its last op
 * ended), at that time, from inside the dispatch: it may schedule events
 * (to start the rank's next program from their handler) but must not start
 * programs itself. NULL: no call. Several jobs on one cluster step on their
 * own this way (parallel/jobs.c).
 */
void sim_set_rank_done(struct sim *sim, void (*done)(void *ctx, struct sim *sim, uint32_t rank),
		       void *ctx);

/* A group of ranks (its members in the given order); returns its id. */
uint32_t sim_group_add(struct sim *sim, const uint32_t *ranks, uint32_t n);
uint32_t sim_group_size(const struct sim *sim, uint32_t group);

/*
 * Give a rank its program and its group slots (groups[i] is a group id) and
 * start it at the current time. ngroups covers every slot the program's ops
 * name (checked here: a BUG otherwise). A rank may get a new program once
 * the previous one has finished.
 */
void sim_rank_start(struct sim *sim, uint32_t rank, const struct sim_program *prog,
		    const uint32_t *groups, unsigned ngroups);
/* When the rank's program ended: its last op finished (while it runs: when
 * it started). */
sim_ps sim_rank_end(const struct sim *sim, uint32_t rank);

/*
 * Symmetry collapse: mark a rank absent before any rank starts
 * (sim_rank_start; a BUG otherwise: a rank may join a collective as it
 * starts, and whether all of a group have joined depends on who is
 * absent). An absent rank runs
 * nothing; it stands for a present rank that would behave the same (a
 * data-parallel replica). A collective on a group with absent members ends
 * when its present members have joined, after its closed form for the whole
 * group (analytic costing, in either fidelity: its traffic is not simulated
 * on the links). Point-to-point messages to an absent rank never arrive.
 */
void sim_rank_absent(struct sim *sim, uint32_t rank);
int sim_rank_present(const struct sim *sim, uint32_t rank);

/* Memory a rank holds from the start (weights, optimizer state, ...). */
void sim_rank_mem_add(struct sim *sim, uint32_t rank, unsigned cat, double bytes);

/*
 * Where a rank's time went: compute stream busy; some communication stream
 * busy while the compute stream is idle (exposed communication); and its
 * memory by category now and at its peak (total over categories).
 */
struct sim_rank_stats {
	double mem_now[SIM_MEM_CATS];  /* first: the engine aligns it to a line */
	double mem_peak;
	double mem_at_peak[SIM_MEM_CATS];
	sim_ps compute_ps;
	sim_ps exposed_comm_ps;
	sim_ps mark_ps;                /* when the last SIM_OP_MARK op ended */
	sim_ps mark_compute_ps;        /* compute_ps then                    */
	sim_ps mark_exposed_ps;        /* exposed_comm_ps then               */
	sim_ps interference_ps;        /* compute time added by communication
					* beside it (sim_set_interference)   */
};
const struct sim_rank_stats *sim_rank_stats(const struct sim *sim, uint32_t rank);

/*
 * Exposed communication by stream: once asked for (before any rank
 * starts), each stretch of a rank's exposed time is shared among the
 * communication streams busy then, equally (the picoseconds a share leaves
 * over to the lowest streams), so a rank's streams sum to its
 * exposed_comm_ps exactly. SIM_MAX_STREAMS values of the rank, or NULL if
 * not tracked.
 */
void sim_track_exposed_by_stream(struct sim *sim);
const sim_ps *sim_rank_exposed_by_stream(const struct sim *sim, uint32_t rank);

/*
 * Run until no event is left. Returns 0, or -1 if the programs could not
 * finish (an invalid collective, a deadlock): sim_error() says why.
 */
int sim_run(struct sim *sim);
const char *sim_error(const struct sim *sim);
/* The run failed because a time would have passed the clock's range
 * (SIM_PS_MAX, about 106.75 days; sim/util.h): durations saturate there and
 * the first event due at it fails the run. The cause is the input (a
 * latency, bandwidth, efficiency or size beyond what can be simulated), so
 * the tools report it as bad input. */
int sim_failed_clock(const struct sim *sim);

/*
 * Check that a collective can run on a group, before running anything:
 * resolves algo (NULL = auto) and channels (0 = default). Returns the chosen
 * algorithm, or NULL with err set.
 */
const struct sim_coll_algo *sim_coll_check(struct sim *sim, uint32_t group,
					   enum sim_coll_op op,
					   const struct sim_coll_algo *algo,
					   double bytes, unsigned *channels,
					   char *err, size_t errlen);

/*
 * The links one collective crosses, as its closed form sees them: the
 * slowest route inside a node and across nodes among the routes the
 * algorithm's steps use, each route's bandwidth divided by the number of
 * the collective's own messages (all channels) that share its busiest link
 * in one step. Cached per group.
 */
void sim_coll_links(struct sim *sim, uint32_t group, const struct sim_coll_algo *algo,
		    enum sim_coll_op op, double bytes, unsigned channels,
		    struct sim_coll_links *out);

/* Closed-form time of the collective as the analytic fidelity costs it. */
double sim_coll_time_s(struct sim *sim, uint32_t group, const struct sim_coll_algo *algo,
		       enum sim_coll_op op, double bytes, unsigned channels);

/*
 * Time of one step that moves bytes on the slower of the two route classes
 * (for algorithms whose steps all cross the same kind of route).
 */
double sim_coll_step_s(const struct sim_coll_links *l, double bytes);

#endif
