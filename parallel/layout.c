/*
 * layout.c - rank coordinates in the [TP, CP, PP, DP] order and the split of
 * layers over (virtual) pipeline stages; see layout.h.
 */
#include "parallel/layout.h"

#include <stdio.h>

#include "sim/util.h"

void par_dims_of(const struct par_layout *l, uint32_t gpus, struct par_dims *d)
{
	uint32_t mp = l->tp * l->cp * l->pp;
	*d = (struct par_dims){
		.tp = l->tp, .cp = l->cp, .pp = l->pp, .dp = l->dp ? l->dp : gpus / mp,
		.ep = l->ep ? l->ep : 1, .vpp = l->vpp ? l->vpp : 1,
	};
}

uint32_t par_rank_of(const struct par_dims *d, const struct par_coords *c)
{
	return c->tp + d->tp * (c->cp + d->cp * (c->pp + d->pp * c->dp));
}

void par_coords_of(const struct par_dims *d, uint32_t rank, struct par_coords *c)
{
	c->tp = rank % d->tp;
	rank /= d->tp;
	c->cp = rank % d->cp;
	rank /= d->cp;
	c->pp = rank % d->pp;
	c->dp = rank / d->pp;
	/* Expert groups: consecutive EP members among the CP x DP ranks. */
	c->ep = (c->dp * d->cp + c->cp) % d->ep;
}

int par_stage_layers(const struct par_layout *l, uint32_t layers, uint32_t vs,
		     uint32_t *first, uint32_t *count, char *err, size_t errlen)
{
	uint32_t v = l->pp * (l->vpp ? l->vpp : 1);
	uint32_t a = l->first_stage_layers, z = l->last_stage_layers;
	if (v == 1) {
		*first = 0, *count = layers;
		return 0;
	}
	uint32_t fixed = (a ? 1 : 0) + (z ? 1 : 0);
	if (fixed == v) {  /* two virtual stages, both given: they must add up */
		if (a + z != layers)
			return sim_errf(err, errlen, "parallel: first_stage_layers %u and "
					"last_stage_layers %u of the 2 pipeline stages must add "
					"up to the model's %u layers", a, z, layers);
		*first = vs == 0 ? 0 : a;
		*count = vs == 0 ? a : z;
		return 0;
	}
	uint32_t rest = layers - a - z;
	if (a + z >= layers || rest % (v - fixed))
		return sim_errf(err, errlen, "parallel: %u layers do not split over %u pipeline "
				"stages (x %u chunks)%s: set parallel.first_stage_layers and "
				"last_stage_layers so that the rest divides evenly", layers,
				l->pp, l->vpp ? l->vpp : 1, fixed ? " with the given first/last" : "");
	uint32_t even = rest / (v - fixed);
	uint32_t before = vs == 0 ? 0 : (a ? a : even) + (vs - 1) * even;
	*first = before;
	*count = vs == 0 && a ? a : vs == v - 1 && z ? z : even;
	return 0;
}
