/*
 * layout.h - where each rank sits in the parallel layout, its groups, and
 * which layers each pipeline stage holds.
 *
 * Ranks are numbered with TP fastest, then CP, then PP, then DP (SPEC C24,
 * as Llama 3): rank = tp + T (cp + C (pp + P dp)). Expert groups: within one
 * pipeline stage, the CP x DP ranks of equal TP index are split into
 * consecutive groups of EP members.
 */
#ifndef PAR_LAYOUT_H
#define PAR_LAYOUT_H

#include <stdint.h>

#include "parallel/config.h"

struct par_dims {
	uint32_t tp, cp, pp, dp, ep, vpp;
};

struct par_coords {
	uint32_t tp, cp, pp, dp, ep;
};

void par_dims_of(const struct par_layout *l, uint32_t gpus, struct par_dims *d);
uint32_t par_rank_of(const struct par_dims *d, const struct par_coords *c);
void par_coords_of(const struct par_dims *d, uint32_t rank, struct par_coords *c);

/*
 * The layers of virtual stage vs (0 .. pp*vpp-1; model chunk c of stage s is
 * vs = c*pp + s): first layer and count. The first and last virtual stages
 * take parallel.first_stage_layers / last_stage_layers when set (0: even),
 * the others share the rest evenly. 0, or -1 with err if it does not split.
 */
int par_stage_layers(const struct par_layout *l, uint32_t layers, uint32_t vs,
		     uint32_t *first, uint32_t *count, char *err, size_t errlen);

#endif
