/*
 * train_of.h - the training step of a loaded scenario, as run, sweep, plan
 * and validate simulate it (scenarios/train_of.c).
 */
#ifndef SCENARIOS_TRAIN_OF_H
#define SCENARIOS_TRAIN_OF_H

struct scn;
struct par_train;
struct par_compute_model;

/*
 * Fill *t from scenario s: its model, training, layout and cluster,
 * sim.steps steps, sim.seed, sim.fidelity, sim.chunk_bytes, sim.symmetry,
 * its variability and failures, and every collective algorithm. The
 * scenario and the compute model must outlive *t.
 */
void scn_train_of(struct par_train *t, const struct scn *s, const struct par_compute_model *cm);

#endif
