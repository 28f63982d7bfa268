/*
 * heap-int.h - the event queue: a radix heap of (time, sequence, event)
 * entries, popped in (time, sequence) order.
 *
 * A discrete-event engine pops times that never decrease and never pushes a
 * time below the last one popped, which is what a radix heap needs (Ahuja,
 * Mehlhorn, Orlin and Tarjan, 1990). Entries sit in 64 buckets by the highest
 * bit in which their time differs from the last popped time; bucket 0 holds
 * the entries at exactly that time, in push order. Pushing appends to one
 * bucket: O(1). Popping takes bucket 0's next entry or, when it is empty,
 * moves the lowest non-empty bucket down into the buckets below it, each
 * entry to a strictly lower bucket, so an entry moves at most 64 times and
 * in practice a few. Every access is a sequential walk through an array,
 * which is what makes it faster than a binary or 4-ary heap once the queue
 * outgrows the cache (docs/performance.md).
 *
 * Ties: entries of equal time are always in one bucket together (their
 * bucket depends on the time only), buckets keep push order and are moved
 * in order, so equal times pop first in, first out. The sequence number,
 * assigned at push, records that order for callers (sim.c tells a live
 * event from a stale one by it). Bucket arrays grow by doubling and never
 * shrink: once warm, a push allocates nothing. Cancelling is done by the
 * owner marking its own state (see sim.h).
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

struct sim_heap_bucket {
	struct sim_heap_entry *a;
	uint32_t n, cap;
};

#define SIM_HEAP_BUCKETS 64

struct sim_heap {
	struct sim_heap_bucket b[SIM_HEAP_BUCKETS];
	uint32_t head;          /* bucket 0's next entry to pop            */
	uint32_t n;             /* entries in the queue                    */
	uint64_t nonempty;      /* bit i: bucket i holds entries           */
	sim_ps last;            /* the last time popped                    */
	uint64_t next_seq;
};

void sim_heap_init(struct sim_heap *h);
void sim_heap_clear(struct sim_heap *h);   /* frees the buckets */
/* Push an entry; t must not be below the last time popped. */
void sim_heap_push(struct sim_heap *h, sim_ps t, struct sim_event *ev);
/* Pop the smallest entry into *out; returns 0 if the heap is empty. */
int sim_heap_pop(struct sim_heap *h, struct sim_heap_entry *out);

static inline uint32_t sim_heap_size(const struct sim_heap *h) { return h->n; }

/* The event that pops next if it has the time last popped, else NULL: a
 * look ahead for prefetching, O(1). */
static inline struct sim_event *sim_heap_peek(const struct sim_heap *h)
{
	return h->head < h->b[0].n ? h->b[0].a[h->head].ev : NULL;
}

#endif
