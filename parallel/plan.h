/*
 * plan.h - the layout planner's closed-form estimator: every layout of a
 * model on N GPUs, its memory and an estimate of its step time, from the
 * same cost functions the simulator uses (model.c's kernels, compute.c's
 * kernel times, the collectives' closed forms), without the event engine.
 *
 * The estimator is for ranking: `clustersim plan` simulates the best
 * layouts afterwards and reports where the two disagree.
 */
#ifndef PAR_PLAN_H
#define PAR_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "parallel/compute.h"
#include "parallel/config.h"
#include "topology/topo.h"

/* One candidate layout and what the estimator says of it. */
struct par_candidate {
	struct par_layout layout;
	uint32_t micro_batch;
	enum par_recompute recompute;
	uint32_t rank;            /* place by the estimate among those that
				   * fit, from 1 (par_plan); 0: not placed */
	double step_s;            /* estimated step time                    */
	double peak_bytes;        /* estimated peak memory of the busiest GPU */
	double bubble_s, exposed_s;
};

/* Why layouts were dropped before estimating: held out by the rules
 * (--fix, --exclude), not valid, or out of memory. */
enum par_drop { PAR_DROP_INVALID, PAR_DROP_MEMORY, PAR_DROP_RULES, PAR_DROP_NCAUSES };

/* The keys a plan varies, which rules hold or exclude. */
enum par_plan_key {
	PAR_PK_TP, PAR_PK_SP, PAR_PK_PP, PAR_PK_VPP, PAR_PK_CP, PAR_PK_EP, PAR_PK_DP,
	PAR_PK_MB, PAR_PK_ZERO, PAR_PK_RECOMPUTE, PAR_PK_SCHEDULE, PAR_PK_TP_OVERLAP, PAR_PK_N
};

/*
 * A rule: `--fix KEY=V` holds KEY at V (several fixes of one key: any of
 * their values), `--exclude KEY=V` drops the layouts with KEY at V. A
 * layout passes when, for every key with fixes, it has one of their values,
 * and it has no excluded value. `matched` counts the layouts enumerated
 * with KEY at V (before any rule), so that a value the planner never
 * tries can be named.
 */
struct par_plan_rule {
	enum par_plan_key key;
	uint32_t value;
	bool exclude;
	uint64_t matched;
};

/*
 * Parse "KEY=V" into r: KEY tp, sp, pp, vpp, cp, ep, dp, zero, micro_batch
 * (or mb), recompute, schedule, or the scenario key of one (parallel.tp,
 * training.micro_batch, ...); V a count, true/false for sp, none/selective/
 * full for recompute, a schedule's name. 0, or -1 with err.
 */
int par_plan_rule_parse(const char *text, bool exclude, struct par_plan_rule *r, char *err,
			size_t errlen);
/* The key's name ("tp", "micro_batch") and a candidate's value of it. */
const char *par_plan_key_name(enum par_plan_key k);
uint32_t par_plan_key_value(const struct par_candidate *c, enum par_plan_key k);
/* Can candidate c run a schedule that splits its backwards (zb-h1): a
 * pipeline of one chunk a stage, no MoE layers, a strategy that combines
 * with a pipeline and does not gather parameters (DDP, ZeRO-1), at least
 * as many micro-batches per replica as stages? The plan tries zb-h1
 * beside the scenario's schedule where it can, and runs 1F1B where the
 * scenario's splits and c cannot. */
bool par_plan_can_split(const struct par_model *m, const struct par_training *tr,
			const struct par_candidate *c);
/* "tp=8", "sp=true", "recompute=full" */
void par_plan_rule_text(const struct par_plan_rule *r, char *buf, size_t len);
/* Does the scenario key (parallel.tp, training.recompute, ...) name what a
 * plan varies? The key of it, or -1. */
int par_plan_key_of_scenario(const char *key);

struct par_planner;

/*
 * Set up for a model and training run on a cluster of `gpus` GPUs; the
 * layout keys of `base` that the planner does not vary (schedule, cp_algo,
 * bucket size, algorithms) are kept. The compute model must outlive it.
 * Collectives are costed by the simulator's closed forms on the cluster of
 * `gpus` GPUs (a sim of them, no events). `seed` is sim.seed, which sets
 * an MoE model's routing (moe.c) as in the simulation. NULL with err if the
 * cluster cannot be built.
 */
struct par_planner *par_planner_new(const struct par_model *m, const struct par_training *tr,
				    const struct par_layout *base, const struct topo_config *cl,
				    uint32_t gpus, const struct par_compute_model *cm,
				    uint64_t seed, char *err, size_t errlen);
void par_planner_free(struct par_planner *p);
/* Does the estimate count compute.interference (kernels and communication
 * slowed by each other)? As the step it estimates does: the default is
 * whether the compute model has the curves; `clustersim plan` sets what
 * the scenario's compute.interference resolves to (scn_train_of). */
void par_planner_set_interference(struct par_planner *p, bool on);

/* The rules the plan keeps to (r[0..n) stays the caller's and must
 * outlive the plan; their `matched` counts are updated by par_plan). */
void par_planner_rules(struct par_planner *p, struct par_plan_rule *r, size_t n);
/* Does c pass the rules? */
bool par_plan_rules_pass(const struct par_plan_rule *r, size_t n, const struct par_candidate *c);

/*
 * Enumerate every layout, estimate those that are valid and fit, and return
 * them sorted by estimated step time (best first) in *out (caller frees).
 * dropped[] counts the others by cause; *total counts every candidate. The
 * values tried: tp a power of two up to a node's GPUs (sp on and off when
 * tp > 1), cp a power of two up to 16, pp every divisor of the layers, dp
 * the rest of the GPUs, vpp every divisor of a stage's layers up to 16 (with
 * pp > 1), the micro-batch every divisor of a replica's share of the global
 * batch up to 64, ep a power of two up to the experts, ZeRO 0 to 3, and
 * recomputation none, selective (not with flash attention, where it keeps
 * what none keeps) and full.
 */
size_t par_plan(struct par_planner *p, struct par_candidate **out, uint64_t dropped[],
		uint64_t *total);

/* Every candidate layout par_plan considers, in its order, before any
 * check: fn(ctx, c) for each (c is the caller's to estimate or copy). */
void par_plan_each(struct par_planner *p, void (*fn)(void *ctx, struct par_candidate *c),
		   void *ctx);

/* Estimate one layout (0 if it is valid and fits, else the drop cause + 1).
 * Valid means what the simulator accepts: the layout resolves
 * (par_step_derive, the checks of par_step_resolve: step.h). */
int par_plan_estimate(struct par_planner *p, struct par_candidate *c);
/* Is c a layout the simulator accepts? 0, or -1 with the reason in err. */
int par_plan_check(struct par_planner *p, const struct par_candidate *c, char *err,
		   size_t errlen);
/* Set a candidate's value of key k (as par_plan_rule_parse reads it). */
void par_plan_key_set(struct par_candidate *c, enum par_plan_key k, uint32_t v);

/*
 * The families a plan explains its winner against ("why not"): no
 * pipeline, a pipeline, an interleaved one, ZeRO-3, replicated parameters
 * (ZeRO 0-2), context parallelism, expert parallelism (MoE models only).
 * A layout may be in several. par_plan_family_name(i) for i below
 * PAR_PLAN_NFAMILIES; par_plan_in_family says whether c is in family i.
 */
#define PAR_PLAN_NFAMILIES 10
const char *par_plan_family_name(unsigned i);
bool par_plan_in_family(unsigned i, const struct par_candidate *c);

/* Do a and b have the same value of every key a plan varies? */
bool par_plan_same_layout(const struct par_candidate *a, const struct par_candidate *b);

#endif
