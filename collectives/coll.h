/*
 * coll.h - the collective algorithms and their registry.
 *
 * Each algorithm is one file exporting one const struct sim_coll_algo (the
 * interface is declared in sim/sim.h); coll_algos lists them all, in the
 * order `auto` prefers on equal closed-form time.
 */
#ifndef COLL_COLL_H
#define COLL_COLL_H

#include "sim/sim.h"

extern const struct sim_coll_algo coll_ring;
extern const struct sim_coll_algo coll_rd;
extern const struct sim_coll_algo coll_hd;
extern const struct sim_coll_algo coll_hier;
extern const struct sim_coll_algo coll_pairwise;

/* Every algorithm, NULL-terminated: pass it as sim_config.algos. */
extern const struct sim_coll_algo *const coll_algos[];

/* The algorithm of that name, or NULL. */
const struct sim_coll_algo *coll_find(const char *name);

/* "ring, rd, hd, hier, pairwise" for messages and help. */
const char *coll_names(void);

#endif
