/*
 * ideal.c - the ideal cluster: every ordered pair of ranks has its own
 * directed link of latency network.latency and bandwidth network.bandwidth,
 * and each rank is a node of its own. Links are created on first use (a
 * ring over 2^20 ranks touches 2^20 pairs, not 2^40), found again through
 * an open-addressing table keyed by the pair.
 */
#include "topology/topo-int.h"

#include <stdio.h>
#include <stdlib.h>

enum { TAG_PAIR = 1 };

struct pair_slot {
	uint64_t key;      /* (src << 32 | dst) + 1; 0 = empty */
	uint32_t link;
};

struct ideal {
	struct pair_slot *slots;
	uint32_t cap, used;
	uint64_t *pair_of_link;  /* link tag index -> key, for names */
	uint32_t npairs;
	sim_ps alpha_ps;
};

static int ideal_check(struct topo *t, char *err, size_t errlen)
{
	(void)t, (void)err, (void)errlen;
	return 0;
}

static void ideal_attach(struct topo *t)
{
	struct ideal *s = xcalloc(1, sizeof(*s));
	s->alpha_ps = sim_ps_from_s(t->cfg.net_lat_s);
	t->state = s;
}

static uint32_t slot_index(const struct ideal *s, uint64_t key)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ULL;
	uint32_t i = (uint32_t)(h >> 32) & (s->cap - 1);
	while (s->slots[i].key && s->slots[i].key != key)
		i = (i + 1) & (s->cap - 1);
	return i;
}

/* Double the table when it would pass half full. */
static void grow(struct ideal *s)
{
	struct pair_slot *old = s->slots;
	uint32_t oldcap = s->cap;
	s->cap = s->cap ? 2 * s->cap : 1024;
	s->slots = xcalloc(s->cap, sizeof(*s->slots));
	for (uint32_t i = 0; i < oldcap; i++)
		if (old[i].key)
			s->slots[slot_index(s, old[i].key)] = old[i];
	free(old);
}

static void ideal_route(struct topo *t, uint32_t src, uint32_t dst, struct sim_route *out)
{
	struct ideal *s = t->state;
	uint64_t key = (((uint64_t)src << 32) | dst) + 1;
	if (2 * (s->used + 1) > s->cap)
		grow(s);
	uint32_t i = slot_index(s, key);
	if (!s->slots[i].key) {
		s->slots[i].key = key;
		s->slots[i].link = sim_link_add(t->sim, t->cfg.net_bw_Bps,
						TOPO_TAG(TAG_PAIR, s->npairs));
		s->pair_of_link = xreallocarray(s->pair_of_link, s->npairs + 1, sizeof(uint64_t));
		s->pair_of_link[s->npairs++] = key;
		s->used++;
	}
	*out = (struct sim_route){
		.alpha_ps = s->alpha_ps, .bw_Bps = t->cfg.net_bw_Bps, .n = 1,
		.link = { s->slots[i].link },
	};
}

static void ideal_link_name(struct topo *t, uint32_t tag, char *buf, size_t len)
{
	const struct ideal *s = t->state;
	uint64_t key = s->pair_of_link[TOPO_TAG_INDEX(tag)] - 1;
	snprintf(buf, len, "rank%u->rank%u", (uint32_t)(key >> 32), (uint32_t)key);
}

static void ideal_free(struct topo *t)
{
	struct ideal *s = t->state;
	if (!s)
		return;
	free(s->slots);
	free(s->pair_of_link);
	free(s);
}

const struct topo_kind_ops topo_ideal_ops = {
	.name = "ideal",
	.check = ideal_check,
	.attach = ideal_attach,
	.route = ideal_route,
	.link_name = ideal_link_name,
	.free = ideal_free,
};
