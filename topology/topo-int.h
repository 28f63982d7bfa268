/* topo-int.h - what topo.c shares with the topology kinds (ideal.c, fattree.c). */
#ifndef TOPO_TOPO_INT_H
#define TOPO_TOPO_INT_H

#include "topology/topo.h"

/* A link tag: the link's kind in the top 4 bits, an index below. */
#define TOPO_TAG(kind, index) (((uint32_t)(kind) << 28) | ((uint32_t)(index) & 0x0fffffffu))
#define TOPO_TAG_KIND(tag) ((tag) >> 28)
#define TOPO_TAG_INDEX(tag) ((tag) & 0x0fffffffu)

struct topo {
	struct topo_config cfg;
	const struct topo_kind_ops *ops;
	uint32_t nranks;
	uint32_t gpn;          /* GPUs per node as placed (1 for ideal) */
	struct sim *sim;
	void *state;           /* the kind's own */
};

/* One kind of topology: builds its links and answers routes. */
struct topo_kind_ops {
	const char *name;
	int (*check)(struct topo *t, char *err, size_t errlen);
	void (*attach)(struct topo *t);
	void (*route)(struct topo *t, uint32_t src, uint32_t dst, struct sim_route *out);
	void (*link_name)(struct topo *t, uint32_t tag, char *buf, size_t len);
	void (*free)(struct topo *t);
};

extern const struct topo_kind_ops topo_ideal_ops;
extern const struct topo_kind_ops topo_fattree_ops;

#endif
