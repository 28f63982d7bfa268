/*
 * dp-int.h - the machinery strategies share: bucketed gradients
 * (dp_bucket.c: DDP, ZeRO-1, ZeRO-2) and sharded parameters in units
 * (dp_shard.c: ZeRO-3, FSDP). A strategy's init hook chooses the policy;
 * the state lives in b->dp_state, allocated there and freed by fini.
 */
#ifndef PAR_DP_INT_H
#define PAR_DP_INT_H

#include "parallel/train-int.h"

/* ---- bucketed gradients (dp_bucket.c) ------------------------------------ */

struct dp_bucket_policy {
	enum sim_coll_op reduce;     /* all-reduce or reduce-scatter a bucket    */
	int overlap;                 /* reduce each bucket as it closes          */
	int gather_params;           /* all-gather the updated parameters after
				      * the step                                 */
	int gather_ahead;            /* ... in the next step's forward instead   */
};

/* Bucket state: init sets b->dp_state (par_dpb_fini frees it). */
void par_dpb_init(struct builder *b, const struct dp_bucket_policy *p);
void par_dpb_fini(struct builder *b);
void par_dpb_grads(struct builder *b, double params, uint32_t op);
void par_dpb_backward_end(struct builder *b, uint32_t last);
/* ZeRO-1/2: gather the updated parameters (after the step, or ahead). */
void par_dpb_after_step(struct builder *b, uint32_t step);
void par_dpb_layer_begin(struct builder *b, int l, enum par_phase ph);
/* Model states of the strategy's ZeRO stage and two buckets in flight. */
void par_dpb_memory(const struct builder *b, double *bytes);
/* ZeRO-1/2: more than PAR_MAX_PARAM_GATHERS gathers after the step. */
int par_dpb_check_gathers(const struct builder *b, double *most, char *err, size_t errlen);
/* The planner's memory of a bucketed strategy: model states of its stage,
 * and two buckets. */
void par_dpb_plan_memory(const struct par_dp_costs *c, unsigned zero, struct par_dp_mem *m);
/* The planner's time of the gradient reductions `op` (whole: one per
 * chunk, else one per bucket), on one stream chunk by chunk, each starting
 * with its chunk's share of the backward (overlap) or after it: the time
 * past the step's last backward; *busy, if not NULL, the stream's whole. */
double par_dpb_plan_reduce(const struct par_dp_costs *c, enum sim_coll_op op, int whole,
			   int overlap, double *busy);
/* Chunk j's reductions `op`, bucket by bucket, its routed experts' too:
 * their time alone on the links. */
double par_dpb_plan_chunk_s(const struct par_dp_costs *c, enum sim_coll_op op, uint32_t j);
/* ZeRO-1/2: the planner's exposed time of the parameter all-gathers;
 * *busy, if not NULL, their whole. */
double par_dpb_plan_gather(const struct par_dp_costs *c, double *busy);

/* ---- sharded parameters (dp_shard.c) ------------------------------------- */

struct dp_shard_policy {
	unsigned unit_layers;        /* layers per unit                          */
	int prefetch;                /* gather the next unit while computing     */
	int reshard;                 /* free gathered parameters after forward   */
	/* DeepSpeed ZeRO-3 (dp_shard.c, "modules"): a layer's units are its
	 * weight GEMMs, gathered as each is reached with the coming ones up to
	 * prefetch_bucket elements ahead; gradients reduce-scattered in buckets
	 * of reduce_bucket elements across layers. */
	int modules;
	double prefetch_bucket, reduce_bucket, max_live, persistence;
};

void par_dps_init(struct builder *b, const struct dp_shard_policy *p);
void par_dps_fini(struct builder *b);
void par_dps_layer_begin(struct builder *b, int l, enum par_phase ph);
void par_dps_layer_end(struct builder *b, int l, enum par_phase ph);
void par_dps_memory(const struct builder *b, double *bytes);
/* Modules (ZeRO-3): the hooks around each kernel, the gradients' buckets. */
void par_dps_kernel_begin(struct builder *b, const struct par_op *o, enum par_phase ph);
void par_dps_kernel_end(struct builder *b, const struct par_op *o, enum par_phase ph);
void par_dps_grads(struct builder *b, double params, uint32_t op);
void par_dps_backward_end(struct builder *b, uint32_t last);
/* The planner's: what no compute hides in a step of sharded parameters,
 * the gather of the embedding and head before the first forward and the
 * backward's last reduce-scatter of `last` bytes after the last. */
double par_dps_plan_edges(const struct par_dp_costs *c, double last);


/* Model states (weights + gradients + optimizer) of a ZeRO stage for the
 * closed forms. */
double par_dp_plan_states(const struct par_dp_costs *c, unsigned zero);

#endif
