/*
 * moe.h - mixture-of-experts layers: how routing loads the expert-parallel
 * ranks, and the kernels of an MoE MLP (router, experts, shared experts).
 *
 * Dispatch and combine all-to-alls are added by the step builder around the
 * experts (SPEC C28); this file only sizes the compute.
 */
#ifndef PAR_MOE_H
#define PAR_MOE_H

#include <stddef.h>
#include <stdint.h>

#include "parallel/config.h"
#include "parallel/model.h"

struct par_moe_load {
	double factor;      /* the busiest EP rank's routed tokens over the even share */
	double dropped;     /* share of routed tokens over capacity, dropped */
};

/*
 * Routing of MoE layer `layer` over an expert-parallel group of ep ranks
 * (rank j hosts experts j E/ep .. (j+1) E/ep - 1). With moe.skew = 0 every
 * expert gets the same share; with skew s expert popularity follows a Zipf
 * law (the i-th most popular gets 1/i^s), the order of popularity drawn for
 * each layer with GSL from the scenario's seed. Each expert takes at most
 * capacity_factor times its even share (when set); the rest is dropped.
 * Expected loads, not sampled ones: the result depends on the seed only
 * through which experts are popular.
 */
void par_moe_load(const struct par_model *m, uint32_t ep, uint64_t seed, unsigned layer,
		  struct par_moe_load *out);

/*
 * The kernels of one MoE MLP on one rank for T = b s tokens: the router, the
 * rank's experts on T k factor routed tokens (one batched GEMM per matrix),
 * and the shared experts on all T tokens. `part` 0 gives what comes before
 * the dispatch (router), 1 the experts, 2 the shared experts. Backward ops
 * mark expert weight gradients (expert = 1) with the rank's parameters.
 * Returns the count; writes at most max.
 */
size_t par_moe_ops(const struct par_model *m, const struct par_training *tr, unsigned tp,
		   uint32_t ep, double factor, int part, enum par_phase ph,
		   struct par_op *out, size_t max);

/*
 * What an MoE layer keeps for its backward: a dense layer's activations
 * whose MLP is k routed experts at `factor` times the even load plus the
 * shared experts (the step builder and the planner both).
 */
double par_moe_layer_activation_bytes(const struct par_model *m, const struct par_training *tr,
				      unsigned tp, int sp, double factor);

#endif
