/*
 * dp.h - data-parallel strategies as plug-ins: DDP, ZeRO-1/2/3, FSDP (with
 * HSDP as its fsdp.hsdp option) and the reference ddp-after.
 *
 * A strategy is one file (parallel/dp_NAME.c) exporting one const struct
 * par_dp_strategy, listed once in the registry (parallel/dp.c). It says what
 * it is (flags), what it cannot run (check), what it holds from the start
 * (memory), what it adds to a step's program (the hooks, with private state
 * it allocates in init and frees in fini), and the closed forms of its
 * exposed communication and of its memory given stage costs (the
 * planner's estimate, parallel/plan.c, is their sum with the pipeline's).
 * Nothing outside the strategy's own file tests which strategy it is.
 */
#ifndef PAR_DP_H
#define PAR_DP_H

#include <stddef.h>
#include <stdint.h>

#include "parallel/config.h"
#include "parallel/model.h"
#include "sim/sim.h"
#include "topology/topo.h"

struct builder;

/* What a strategy is: what it shards, when it reduces, what it combines with. */
enum par_dp_flag {
	PAR_DP_SHARDS_OPTIMIZER = 1u << 0, /* optimizer states over the group (ZeRO-1 up) */
	PAR_DP_SHARDS_GRADS = 1u << 1,     /* gradients too (ZeRO-2 up)               */
	PAR_DP_SHARDS_PARAMS = 1u << 2,    /* parameters too, gathered per use        */
	PAR_DP_REDUCE_EVERY_MB = 1u << 3,  /* reduce every micro-batch, not the last  */
	PAR_DP_PIPELINE = 1u << 4,         /* combines with pipeline parallelism      */
	PAR_DP_MOE = 1u << 5,              /* runs mixture-of-experts layers          */
	PAR_DP_OFFLOAD = 1u << 6,          /* parallel.offload (ZeRO-Offload)         */
	PAR_DP_PARAM_GATHER = 1u << 7,     /* all-gathers the updated parameters after
					    * the step: ddp.overlap_param_gather applies */
	PAR_DP_ALIAS_ZERO = 1u << 8,       /* parallel.zero: its stage names it       */
	PAR_DP_ALIAS_FSDP = 1u << 9,       /* parallel.fsdp.enabled: true names it    */
};

/* What the checks see: the layout and what it runs on. */
struct par_dp_env {
	const struct par_layout *layout;
	const struct par_model *model;
	const struct topo_config *cluster;
	uint32_t dp;                     /* data-parallel size                      */
};

/* The distinct bucket sizes a chunk keeps apart (more merge into the
 * nearest size). */
enum { PAR_DP_PLAN_SIZES = 16 };

/* Gradient buckets of one size: n of them (the planner counts by size). */
struct par_dp_bucket {
	double bytes;
	uint32_t n;
};

/*
 * One model chunk of a rank as the bucketed strategies reduce it: the
 * buckets its gradients close in the step's last backward of the chunk
 * (par_dpb_plan_add), and the stage's compute that follows that backward
 * (what can hide the chunk's reduction).
 */
struct par_dp_chunk {
	struct par_dp_bucket bucket[PAR_DP_PLAN_SIZES];
	unsigned nbucket;                /* distinct sizes                          */
	double bytes;                    /* the chunk's gradient bytes              */
	double last;                     /* the last bucket's, closed at its end    */
	double after_s;                  /* the stage's compute after its last backward */
	/* An MoE layer's routed-expert gradients, outside the buckets: each
	 * layer's reduced alone over the ranks that hold the same experts
	 * (moe_step.c), nexperts of expert_bytes. */
	double expert_bytes;
	unsigned nexperts;
};

/* Bucketing a chunk's gradients as dp_bucket.c does (par_dpb_grads: a
 * bucket closes once it holds at least `cap` bytes, whole tensors; the
 * chunk's end closes the open one). */
void par_dpb_plan_add(struct par_dp_chunk *c, double *open, double cap, double bytes);
void par_dpb_plan_close(struct par_dp_chunk *c, double *open);

/*
 * Stage costs for the closed forms (the planner's, parallel/plan.c): the
 * rank of the first stage, one micro-batch through it.
 */
struct par_dps_fetch;

struct par_dp_costs {
	const struct par_layout *layout; /* the candidate's (its ddp.*, fsdp.* keys) */
	double params;                   /* parameters the rank holds               */
	uint32_t dp;                     /* ranks gradients are reduced over (dp x cp) */
	enum par_precision precision;
	enum par_optimizer optimizer;
	uint32_t micro_batches;          /* per replica                             */
	double allreduce_s;              /* the all-reduce of the rank's gradients
					  * over dp (its collective's closed form)  */
	double backward_s;               /* one micro-batch's backward of the stage
					  * (of a split one, its weight pass: the
					  * one that completes the gradients)      */
	double gather_calls;             /* ZeRO-3: all-gathers of a micro-batch    */
	double gather_passes;            /* ZeRO-3/FSDP: gathers of all parameters
					  * per micro-batch: 2 (forward, backward),
					  * 3 with full recomputation; 0 reads as 2 */
	double call_s;                   /* the latency of one all-gather over dp
					  * (its closed form of no bytes)           */
	double stage_s;                  /* one micro-batch's forward and backward  */
	/* DDP, ZeRO-1/2, ddp-after: the rank's model chunks in the order their
	 * last backward ends (the step's last one last), and the time of a
	 * collective of `bytes` over the data-parallel group, alone on its
	 * links (every strategy's closed forms call it). */
	const struct par_dp_chunk *chunk;
	uint32_t nchunks;
	/* ZeRO-3, FSDP: the parameters of the embedding and head on the rank
	 * (gathered before the first forward, reduced last) and the bytes of
	 * a backward's last reduce-scatter (ZeRO-3's last bucket). */
	double edge_params, last_reduce_bytes;
	double (*coll_s)(void *ctx, enum sim_coll_op op, double bytes);
	void *coll_ctx;
	/* Of `params`, the routed experts' (an MoE model), and the ranks
	 * holding the same experts they are sharded and gathered over (dp /
	 * ep), with the time of a collective over those (same context). */
	double expert_params;
	uint32_t expert_dp;
	double (*expert_coll_s)(void *ctx, enum sim_coll_op op, double bytes);
	/* ZeRO-3: its modules' compute and sizes (NULL: the phases' closed
	 * form, gathers weighed against each phase's compute as a whole). */
	const struct par_dps_fetch *fetch;
};

/* The reductions of a chunk's routed-expert gradients, `op` over the
 * expert-data-parallel group (0 where it is one rank); *end, the stream's
 * end so far (seconds from the step's last backward), moves past them. */
double par_dpb_plan_experts(const struct par_dp_costs *c, const struct par_dp_chunk *k,
			    enum sim_coll_op op, double *end);

/* The closed form of a strategy's memory: bytes of one rank. */
struct par_dp_mem {
	double states;                   /* weights + gradients + optimizer         */
	double buffers;                  /* communication buffers                   */
};

struct par_dp_strategy {
	const char *name;                /* parallel.strategy's value; the report's */
	const char *title;               /* in messages: "ZeRO-2"                   */
	const char *help;                /* one line                                */
	unsigned flags;                  /* enum par_dp_flag                        */
	/* Refuse what the flags do not say (NULL: nothing more). check_layout
	 * sees the layout alone (at load); check the model and cluster too. */
	int (*check_layout)(const struct par_layout *l, char *err, size_t errlen);
	int (*check)(const struct par_dp_env *e, char *err, size_t errlen);
	/* Ranks a parameter is sharded over, of the dpn reducing gradients
	 * (NULL: all of them). */
	uint32_t (*shard)(const struct par_layout *l, const struct topo_config *cl, uint32_t dpn);
	/* Private state: init sets b->dp_state, fini frees it (NULL: none). */
	void (*init)(struct builder *b);
	void (*fini)(struct builder *b);
	/* Bytes held from the start, by category (PAR_MEM_*). */
	void (*memory)(const struct builder *b, double *bytes);
	/* Around the ops of layer l in phase ph (-1: the embedding and head). */
	void (*layer_begin)(struct builder *b, int l, enum par_phase ph);
	void (*layer_end)(struct builder *b, int l, enum par_phase ph);
	/* Around each kernel of a layer's pass (not the embedding's or the
	 * head's): before its op is added, and right after (the op is the
	 * program's last: kernel_end may give it a memory change). */
	void (*kernel_begin)(struct builder *b, const struct par_op *o, enum par_phase ph);
	void (*kernel_end)(struct builder *b, const struct par_op *o, enum par_phase ph);
	/* Op `op` completed the gradients of `params` parameters. */
	void (*grads)(struct builder *b, double params, uint32_t op);
	/* The backward of a reducing micro-batch ended with op `last`. */
	void (*backward_end)(struct builder *b, uint32_t last);
	/* After the optimizer step `op` (gather the updated parameters). */
	void (*after_step)(struct builder *b, uint32_t op);
	/* What only the built program shows (bounds on its ops): if it is
	 * refused and needs more than *most, set *most and say why (NULL: none). */
	int (*check_program)(const struct builder *b, double *most, char *err, size_t errlen);
	/* Closed forms given stage costs: the communication the step waits
	 * for, and the memory. */
	double (*exposed_s)(const struct par_dp_costs *c);
	void (*plan_memory)(const struct par_dp_costs *c, struct par_dp_mem *m);
	/* The time the step's communication runs, latencies included: less
	 * what is exposed, it runs beside the compute (the interference). */
	double (*busy_s)(const struct par_dp_costs *c);
	/* Of that, chunk c->chunk[j]'s reduction where it runs beside the
	 * backward, issued bucket by bucket as the chunk's last backward goes
	 * on: its time alone on its links; 0 where it waits for the backward's
	 * end (NULL: none runs beside it). The planner runs it beside the
	 * pipeline's passes (struct par_sched_slow). */
	double (*beside_s)(const struct par_dp_costs *c, uint32_t j);
};

/* ZeRO-3's granularity (dp_shard.c), for the planner's closed form too. */
/* The weight GEMMs of one layer's forward on a rank, their
 * elements in out[] (at most max); the count. */
unsigned par_dps_layer_modules(const struct par_model *m, const struct par_training *tr,
			       unsigned tp, bool sp, double *out, unsigned max);
/* The gather calls of one micro-batch's fetch sequence (forward,
 * the recomputed forward, backward) of `layers` layers of the modules
 * given, by DeepSpeed's prefetch rule (buckets of `prefetch` elements, at
 * most `max_live` gathered). */
unsigned par_dps_gather_calls(const double *mod, unsigned n, unsigned layers, int recompute,
			      double prefetch, double max_live);

/*
 * ZeRO-3's micro-batch module by module, for its closed form (the planner
 * fills it for a dense layer): a layer's modules (elements) and, for the
 * forward (fwd[n]) and the backward (bwd[nb], in its fetch order: with
 * full recomputation the recomputed forward's n first, then the n in
 * reverse), the kernel seconds from each module's begin to the next one's
 * (the last one's to the next layer's first), and the gradient elements
 * each backward segment completes (grads[nb]). kernels_s: their sum over
 * a micro-batch's layers; stage_s: the par_dp_costs.stage_s they were
 * taken at (a larger one stretches them, the interference).
 */
enum { PAR_DPS_MAX_MODULES = 16 };
struct par_dps_fetch {
	unsigned n, nb, layers;
	double mod[PAR_DPS_MAX_MODULES];
	double fwd[PAR_DPS_MAX_MODULES];
	double bwd[2 * PAR_DPS_MAX_MODULES], grads[2 * PAR_DPS_MAX_MODULES];
	double kernels_s, stage_s;
};

/* The time one micro-batch's compute waits for its gathers (seconds):
 * the fetches run as the simulator issues them (DeepSpeed's calls, each
 * prefetched when the module before it begins), one call at a time, each
 * alone on the group's links for c->coll_s; in the backward the
 * reduce-scatters of the closed buckets run on their own stream and the
 * two share the links' bandwidth, not their latency. `stretch` scales the
 * kernels. */
double par_dps_plan_fetch_wait(const struct par_dps_fetch *f, const struct par_dp_costs *c,
			       double stretch);

/* The registry (parallel/dp.c), NULL-terminated, and lookups. */
extern const struct par_dp_strategy *const par_dp_strategies[];
size_t par_dp_count(void);
const struct par_dp_strategy *par_dp_find(const char *name);  /* NULL: none */
int par_dp_index(const struct par_dp_strategy *s);             /* its entry  */
/* parallel.strategy's names: "auto", then the registry's (value i >= 1 is
 * entry i - 1); NULL-terminated. */
const char *const *par_dp_key_names(void);
/* The help of parallel.strategy's value i (0: auto). */
const char *par_dp_key_help(unsigned i);

/* Does the strategy reduce gradients every micro-batch (not only the last)? */
static inline int par_dp_reduces_every_mb(const struct par_dp_strategy *s)
{
	return (s->flags & PAR_DP_REDUCE_EVERY_MB) != 0;
}
/* The ZeRO stage of a strategy's model states (0-3), from its flags. */
unsigned par_dp_zero_stage(const struct par_dp_strategy *s);
/* The strategy parallel.zero and parallel.fsdp.enabled name. */
const struct par_dp_strategy *par_dp_of_aliases(uint32_t zero, bool fsdp);
/* The layout's strategy: parallel.strategy, or (auto) its aliases'. */
const struct par_dp_strategy *par_dp_strategy_of(const struct par_layout *l);

/* The layout's strategy can run it: the rules its flags state, then its
 * own check. par_dp_check_layout: the layout alone (scenario load). */
int par_dp_check_layout(const struct par_layout *l, char *err, size_t errlen);
int par_dp_check(const struct par_dp_env *e, char *err, size_t errlen);

#endif
