/*
 * registry.c - the table of collective algorithms.
 *
 * To add an algorithm: write collectives/NAME.c exporting
 * `const struct sim_coll_algo coll_NAME` (copy ring.c, the reference
 * plug-in), declare it in coll.h, add one line to coll_algos below and one
 * to libclustersim_a_SOURCES in Makefile.am, and give it a closed-form and a
 * step-consistency test in tests/unit/test_collectives.c. Order matters only
 * for ties in `auto`: the earlier wins.
 */
#include "collectives/coll.h"

#include <string.h>

const struct sim_coll_algo *const coll_algos[] = {
	&coll_ring,
	&coll_hier,
	&coll_hd,
	&coll_rd,
	&coll_pairwise,
	NULL,
};

const struct sim_coll_algo *coll_find(const char *name)
{
	for (const struct sim_coll_algo *const *a = coll_algos; *a; a++)
		if (strcmp((*a)->name, name) == 0)
			return *a;
	return NULL;
}

const char *coll_names(void)
{
	return "ring, rd, hd, hier, pairwise";
}
