/*
 * heap.c - the radix heap of events; see heap-int.h.
 *
 * Invariant: an entry of time t sits in bucket index(t ^ last), where
 * index(0) = 0 and index(x) = 64 - clz(x) otherwise; bucket 0 holds entries
 * of time last from position head on. When last moves to the least time of
 * bucket k (all buckets below k being empty), the entries of buckets above k
 * keep their index: the new last agrees with the old one on every bit from
 * k on.
 */
#include "sim/heap-int.h"

#include <stdlib.h>

static inline unsigned bucket_of(sim_ps t, sim_ps last)
{
	uint64_t x = (uint64_t)t ^ (uint64_t)last;
	return x ? 64u - (unsigned)__builtin_clzll(x) : 0u;
}

static inline void bucket_append(struct sim_heap *h, unsigned i, const struct sim_heap_entry *e)
{
	struct sim_heap_bucket *b = &h->b[i];
	if (b->n == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 64;
		b->a = xreallocarray(b->a, b->cap, sizeof(*b->a));
	}
	b->a[b->n++] = *e;
	h->nonempty |= 1ull << i;
}

void sim_heap_init(struct sim_heap *h)
{
	*h = (struct sim_heap){ 0 };
}

void sim_heap_clear(struct sim_heap *h)
{
	for (unsigned i = 0; i < SIM_HEAP_BUCKETS; i++)
		free(h->b[i].a);
	sim_heap_init(h);
}

void sim_heap_push(struct sim_heap *h, sim_ps t, struct sim_event *ev)
{
	BUG_ON(t < h->last);
	struct sim_heap_entry e = { .t = t, .seq = h->next_seq++, .ev = ev };
	bucket_append(h, bucket_of(t, h->last), &e);
	h->n++;
}

/*
 * Bucket 0 is empty: move the lowest non-empty bucket k down. Its least time
 * becomes last; each entry goes to the bucket of its time against the new
 * last, which is below k, in the order the entries had (ties stay in push
 * order). O(entries of bucket k).
 */
static void heap_refill(struct sim_heap *h)
{
	unsigned k = (unsigned)__builtin_ctzll(h->nonempty);
	struct sim_heap_bucket *b = &h->b[k];
	sim_ps least = b->a[0].t;
	for (uint32_t i = 1; i < b->n; i++)
		if (b->a[i].t < least)
			least = b->a[i].t;
	h->last = least;
	for (uint32_t i = 0; i < b->n; i++)
		bucket_append(h, bucket_of(b->a[i].t, least), &b->a[i]);
	b->n = 0;
	h->nonempty &= ~(1ull << k);
}

int sim_heap_pop(struct sim_heap *h, struct sim_heap_entry *out)
{
	if (h->n == 0)
		return 0;
	if (!(h->nonempty & 1u))
		heap_refill(h);
	struct sim_heap_bucket *b0 = &h->b[0];
	*out = b0->a[h->head++];
	if (h->head == b0->n) {
		b0->n = h->head = 0;
		h->nonempty &= ~1ull;
	} else {
		/* The next event's owner is about to be touched: fetch it now. */
		__builtin_prefetch(b0->a[h->head].ev);
	}
	h->n--;
	return 1;
}
