/*
 * heap.c - 4-ary min-heap keyed by (t, seq); see heap-int.h.
 *
 * Invariant: for every entry i > 0, key(parent(i)) < key(i), where
 * parent(i) = (i - 1) / 4 and keys compare by time first, then by sequence.
 * Keys are unique (seq is), so "<" is a strict total order and the pop order
 * is fully determined by the push order. A 4-ary heap halves the depth of a
 * binary one; the four children share a cache line pair.
 */
#include "sim/heap-int.h"

#include <stdlib.h>

/*
 * Strict order on keys: earlier time first, then earlier push. Written
 * without short-circuits so the compiler emits flag arithmetic, not branches:
 * the sift-down's comparisons are data-dependent and mispredicted branches
 * were most of the cost of a pop (docs/performance.md).
 */
static inline int key_less(const struct sim_heap_entry *a, const struct sim_heap_entry *b)
{
	return (a->t < b->t) | ((a->t == b->t) & (a->seq < b->seq));
}

/* The smallest of the four children starting at c: a two-round tournament. */
static inline uint32_t min_of_four(const struct sim_heap_entry *a, uint32_t c)
{
	const struct sim_heap_entry *k = a + c;
	uint32_t b01 = (uint32_t)key_less(&k[1], &k[0]);
	uint32_t b23 = 2 + (uint32_t)key_less(&k[3], &k[2]);
	return c + (key_less(&k[b23], &k[b01]) ? b23 : b01);
}

void sim_heap_init(struct sim_heap *h)
{
	h->a = NULL;
	h->n = h->cap = 0;
	h->next_seq = 0;
}

void sim_heap_clear(struct sim_heap *h)
{
	free(h->a);
	sim_heap_init(h);
}

void sim_heap_push(struct sim_heap *h, sim_ps t, struct sim_event *ev)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 256;
		h->a = xreallocarray(h->a, h->cap, sizeof(*h->a));
	}
	struct sim_heap_entry e = { .t = t, .seq = h->next_seq++, .ev = ev };
	uint32_t i = h->n++;
	/* Sift up: move parents down into the hole until e fits. */
	while (i > 0) {
		uint32_t parent = (i - 1) / 4;
		if (!key_less(&e, &h->a[parent]))
			break;
		h->a[i] = h->a[parent];
		i = parent;
	}
	h->a[i] = e;
}

int sim_heap_pop(struct sim_heap *h, struct sim_heap_entry *out)
{
	if (h->n == 0)
		return 0;
	*out = h->a[0];
	struct sim_heap_entry last = h->a[--h->n];
	uint32_t n = h->n, i = 0;
	/* Sift down: move the smallest child up into the hole until last fits. */
	for (;;) {
		uint32_t c = 4 * i + 1;
		if (c >= n)
			break;
		uint32_t best = c;
		if (c + 3 < n) {
			best = min_of_four(h->a, c);
		} else {  /* the last level's one to three children */
			for (uint32_t j = c + 1; j < n; j++)
				if (key_less(&h->a[j], &h->a[best]))
					best = j;
		}
		if (!key_less(&h->a[best], &last))
			break;
		h->a[i] = h->a[best];
		i = best;
	}
	if (n > 0)
		h->a[i] = last;
	return 1;
}
