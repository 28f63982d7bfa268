/*
 * schedule.h - pipeline schedules: the order in which one stage runs the
 * forward (F) and backward (B) passes of micro-batches and model chunks.
 *
 * A schedule is one const struct in schedule.c's table. Its actions()
 * writes the stage's sequence; the step builder turns each action into the
 * receive, compute and send ops of that chunk.
 */
#ifndef PAR_SCHEDULE_H
#define PAR_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "parallel/config.h"

struct par_action {
	uint8_t backward;   /* 0: forward pass, 1: backward pass */
	uint32_t mb;        /* micro-batch                        */
	uint32_t chunk;     /* model chunk (0 unless interleaved) */
};

struct par_schedule_ops {
	const char *name;
	/* Check p stages, m micro-batches, v chunks. 0 or -1 with err. */
	int (*check)(uint32_t p, uint32_t m, uint32_t v, char *err, size_t errlen);
	/* The 2 m v actions of stage s, written to out. */
	void (*actions)(uint32_t p, uint32_t s, uint32_t m, uint32_t v, struct par_action *out);
};

const struct par_schedule_ops *par_schedule(enum par_schedule s);

#endif
