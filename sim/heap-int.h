/*
 * heap-int.h - the event heap: a 4-ary min-heap of (time, sequence, event)
 * entries stored by value in one array.
 *
 * Keys are compared without touching the events, so sifting stays in one
 * cache-friendly array; the array grows by doubling and never shrinks, so a
 * push allocates nothing once the heap has reached its working size. The
 * sequence number is assigned at push and makes every key unique: events of
 * equal time pop in the order they were pushed (deterministic ties).
 * Cancelling is done by the owner marking its own state (see sim.h).
 */
#ifndef SIM_HEAP_INT_H
#define SIM_HEAP_INT_H

#include <stdint.h>

#include "sim/sim.h"

struct sim_heap_entry {
	sim_ps t;
	uint64_t seq;
	struct sim_event *ev;
};

struct sim_heap {
	struct sim_heap_entry *a;
	uint32_t n, cap;
	uint64_t next_seq;
};

void sim_heap_init(struct sim_heap *h);
void sim_heap_clear(struct sim_heap *h);   /* frees the array */
void sim_heap_push(struct sim_heap *h, sim_ps t, struct sim_event *ev);
/* Pop the smallest entry into *out; returns 0 if the heap is empty. */
int sim_heap_pop(struct sim_heap *h, struct sim_heap_entry *out);

static inline uint32_t sim_heap_size(const struct sim_heap *h) { return h->n; }

#endif
