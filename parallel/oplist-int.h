/*
 * oplist-int.h - the op list model.c and moe.c write a layer's ops into:
 * the caller's array of max ops; n counts past max, so that a caller with
 * too small an array learns how many there are.
 */
#ifndef PAR_OPLIST_INT_H
#define PAR_OPLIST_INT_H

#include <stddef.h>

#include "parallel/model.h"

struct oplist {
	struct par_op *out;
	size_t max, n;
};

static inline void oplist_push(struct oplist *l, struct par_op op)
{
	if (l->n < l->max)
		l->out[l->n] = op;
	l->n++;
}

#endif
