/* coll-int.h - small helpers shared by the algorithm files. */
#ifndef COLL_COLL_INT_H
#define COLL_COLL_INT_H

#include <stdint.h>

static inline int coll_is_pow2(uint32_t p) { return p && !(p & (p - 1)); }

/* floor(log2(p)) for p >= 1. */
static inline uint32_t coll_log2(uint32_t p)
{
	uint32_t l = 0;
	while (p >>= 1)
		l++;
	return l;
}

/* Bytes one channel carries of the full buffer. */
#define COLL_CHANNEL_BYTES(plan) ((plan)->bytes / (plan)->channels)

#endif
