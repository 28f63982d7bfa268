/*
 * record.h - what a run stores of its timelines (sim.record): every rank's
 * ranks row, and the ops and memory rows of the ranks kept, for all of
 * them, or for `sample` one whole pipeline, one TP group and the rank that
 * finished last (scenarios/record.c says how that rank is caught).
 *
 * A run records through it: scn_record_begin on a resolved, planned step
 * that fits, scn_record_simulate for the steps, scn_record_ranks once they
 * have run, scn_record_end always.
 */
#ifndef SCENARIOS_RECORD_H
#define SCENARIOS_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "scenarios/scenario.h"

struct par_step;
struct par_report;
struct par_train;
struct sim_store;
struct scn_recording;

/* sim.record's auto for a run of `gpus` GPUs: all up to
 * SCN_RECORD_ALL_MAX, sample above. Another mode is itself. */
enum scn_record scn_record_mode(enum scn_record mode, uint32_t gpus);

/*
 * Record step s into st in mode (not auto): sets t's recorder and finish
 * call (t is the step's description, s->t). NULL with errno if the
 * temporary file of a flow-fidelity sample cannot be made.
 */
struct scn_recording *scn_record_begin(struct par_step *s, struct par_train *t,
				       struct sim_store *st, enum scn_record mode);

/*
 * par_train_simulate(s, r) recording as begun (rc NULL: nothing
 * recorded); with `sample` in analytic fidelity, when the rank that
 * finished last is not in the sample, the step is simulated a second time
 * on the same programs recording that rank alone (its report is dropped:
 * it is the first's). 0; what par_train_simulate returns, with err; or
 * SCN_RECORD_AGAIN_FAILED with err if the second pass could not finish.
 */
int scn_record_simulate(struct scn_recording *rc, struct par_step *s, struct par_report *r,
			char *err, size_t errlen);
#define SCN_RECORD_AGAIN_FAILED (-3)

/* Every rank's ranks row, once every timeline is recorded: 0, or -1 (the
 * store's error). */
int scn_record_ranks(struct scn_recording *rc);

/* Release the recording (the temporary file is deleted); NULL: nothing. */
void scn_record_end(struct scn_recording *rc);

#endif
