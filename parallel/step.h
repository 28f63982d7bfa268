/*
 * step.h - one training step resolved: the one check of a layout against
 * its model, training run and cluster, and everything derived from it
 * (struct par_step), once.
 *
 * par_layout_check is shared by the scenario loader (scenarios/load.c,
 * before anything runs) and, through par_step_resolve, by the planner
 * (plan.c, for every candidate it enumerates) and the simulator, so they
 * cannot disagree on which layouts are valid. A resolved step holds the
 * layout's dimensions, micro-batches, shards, the layers of each virtual
 * stage, the chosen schedule and data-parallel plug-ins, and the stage
 * programs, each built on first use and then shared by the memory pass
 * (par_train_plan), the checks that need groups (check.c), placement
 * (place.c) and the engine.
 */
#ifndef PAR_STEP_H
#define PAR_STEP_H

#include <stddef.h>

#include "parallel/config.h"
#include "parallel/layout.h"
#include "parallel/train.h"
#include "topology/topo.h"

/* Micro-batches per replica at most: each is ops in every program, so
 * memory and time grow with their count (training.global_batch's help
 * says it). */
#define PAR_MAX_MICRO_BATCHES 4096u

/*
 * Check the layout l of model m and training run tr on cluster cl: tensor
 * parallelism against the heads and the NVLink domains, the GPUs the
 * layout needs, the pipeline's split of the layers and its schedule,
 * context and expert parallelism, the batch over the replicas and what the
 * data-parallel strategy cannot run on the layout. A tensor-parallel group
 * that crosses nodes with parallel.tp_across_nodes is allowed, with a
 * warning in warn (NULL: none). 0, or -1 with err naming the key.
 */
int par_layout_check(const struct par_model *m, const struct par_training *tr,
		     const struct par_layout *l, const struct topo_config *cl, char *warn,
		     size_t warnlen, char *err, size_t errlen);

/* A training step resolved from its description (struct par_train). */
struct par_step {
	const struct par_train *t;
	struct par_dims d;               /* tp, cp, pp, dp, ep, vpp (>= 1)       */
	uint32_t gpus;                   /* ranks: dp x tp x cp x pp             */
	uint32_t dpn;                    /* ranks gradients are reduced over:
					  * dp x cp (CP ranks hold the same
					  * parameters)                          */
	uint32_t shard;                  /* ranks a parameter is sharded over
					  * (of the dpn; HSDP: a node's)          */
	uint32_t micro_batches;          /* per replica                          */
	bool sp;                         /* sequence parallelism (tp > 1)        */
	bool tp_overlap;                 /* its collectives pipelined with the
					  * GEMMs (parallel.tp_overlap, sp)      */
	const struct par_schedule_ops *schedule;
	const struct par_dp_strategy *strategy;
	uint32_t *layer_first, *layer_count;  /* [pp x vpp]: the layers of each
					  * virtual stage (chunk c of stage s is
					  * vs = c pp + s)                       */
	double *stage_params;            /* [pp]: parameters a rank of the stage
					  * holds (its share of TP and EP)        */
	double *stage_expert_params;     /* [pp]: of these, its routed experts'  */
	/* The programs, one per stage and CP rank ([stage x cp + cp rank]),
	 * built by par_step_program on first use; with each, the bytes its
	 * ranks hold from the start, by category. */
	struct sim_program **progs;
	double (*held)[PAR_MEM_NCATS];
	/* What only a built program shows (the strategy's check_program):
	 * the most any refused program needed (0: none) and why. */
	double refused_most;
	char refused[512];
};

/*
 * Resolve t: par_layout_check, then what the step cannot run beyond its
 * layout (the strategy's checks with the model and cluster, expert
 * parallelism without experts, sim.symmetry, variability), then
 * everything derived from the layout. No
 * program is built yet. 0, or -1 with err naming the key (s is then
 * empty; par_step_free is harmless either way).
 */
int par_step_resolve(struct par_step *s, const struct par_train *t, char *err, size_t errlen);

/* par_step_resolve's checks and what it derives but the per-stage arrays
 * (layer_first, layer_count, stage_params) and the program slots, which
 * stay NULL: nothing is allocated (the planner screens many candidates
 * with it). par_step_program cannot be called on it. */
int par_step_derive(struct par_step *s, const struct par_train *t, char *err, size_t errlen);

/* The program of pipeline stage `stage` and CP rank cpi, built on the
 * first call (then the same one); the bytes its ranks hold from the start
 * go to held when not NULL. */
const struct sim_program *par_step_program(struct par_step *s, uint32_t stage, uint32_t cpi,
					   double held[PAR_MEM_NCATS]);

void par_step_free(struct par_step *s);

/*
 * Ring attention's geometry (cp.c, SPEC C25, C26), for the planner too:
 * the share of a full block (c queries x c keys) that CP rank r computes in
 * round k under the causal mask (contiguous blocks: half the diagonal in
 * round 0, a whole block while r >= k, then nothing; zig-zag: half a block
 * every round), and for one attention op of a micro-batch of `local` (its
 * seq the rank's c tokens) the FLOPs of a full block, the K/V block a round
 * passes on (K/V and their gradients in the backward) and the queries'.
 */
/* The tensor-parallel collectives the step issues around op o in phase ph
 * (tp.c's rules, before and after it) for a micro-batch of `tokens` tokens
 * of the model's `hidden`: their ops and bytes (at most max); the count. */
unsigned par_tp_op_colls(const struct par_op *o, enum par_phase ph, bool sp, double tokens,
			 double hidden, enum sim_coll_op *ops, double *bytes, unsigned max);

/* Whether parallel.tp_overlap pipelines op o's sequence-parallel
 * collective with it (tp.c: the transformer layer's linear layers). */
int par_tp_overlaps(const struct par_op *o);
/* One of the t pieces parallel.tp_overlap splits GEMM o (of precision
 * prec) into: a t-th of its rows (m), of its FLOPs and of its inputs' and
 * outputs' bytes, the weight read whole. */
void par_tp_piece(const struct par_op *o, uint32_t t, enum par_precision prec,
		  struct par_op *piece);
/* SPEC C30: a kernel of kernel_s in t pieces pipelined with t - 1 ring
 * steps of step_s each: kernel_s / t + (t - 1) max(kernel_s / t, step_s). */
double par_tp_overlap_s(uint32_t t, double kernel_s, double step_s);

struct par_cp_ring {
	double full_flops, kv_bytes, q_bytes;
};
double par_cp_ring_share(enum par_cp_algo algo, uint32_t r, uint32_t k);
void par_cp_ring_sizes(const struct par_model *m, const struct par_training *local, uint32_t tp,
		       int bwd, struct par_cp_ring *out);

/* Parameters a rank holds of layer l (-1: the embedding and head together),
 * its share of TP and EP. */
double par_step_layer_params(const struct par_step *s, int l);
/* Of these, its routed experts' (0 for a dense layer). */
double par_step_layer_expert_params(const struct par_step *s, int l);
/* The ranks a rank's routed experts are sharded over where its parameters
 * are sharded over s->shard: the expert-data-parallel group, shard / ep
 * (the ranks of the shard group that hold the same experts; Megatron-Core's
 * distributed optimizer and DeepSpeed-MoE both shard experts over it). */
uint32_t par_step_expert_shard(const struct par_step *s);
/* The model states a rank of stage `stage` holds under ZeRO stage `zero`:
 * the dense parameters sharded over s->shard, the routed experts over
 * par_step_expert_shard. */
void par_step_states(const struct par_step *s, uint32_t stage, unsigned zero,
		     struct par_states *out);
/* A rank of stage `stage`'s parameters in forward order: fn(ctx, piece,
 * params) for the embedding (piece -1), each layer (its index) and the
 * head (-2), chunk by chunk. */
void par_step_each_param(const struct par_step *s, uint32_t stage,
			 void (*fn)(void *ctx, int piece, double params), void *ctx);

#endif
