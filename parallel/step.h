/*
 * step.h - whether a training step's layout can be built: the one check of
 * a layout against its model, training run and cluster, shared by the
 * scenario loader (scenarios/load.c, before anything runs) and the
 * planner (plan.c, for every candidate it enumerates), so the two cannot
 * disagree on which layouts are valid.
 */
#ifndef PAR_STEP_H
#define PAR_STEP_H

#include <stddef.h>

#include "parallel/config.h"
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

#endif
