/*
 * topo.c - a built topology: placement of ranks on nodes and the engine's
 * view of it (struct sim_topo_ops), dispatching to the kind (ideal.c,
 * fattree.c).
 */
#include "topology/topo-int.h"

#include <stdio.h>
#include <stdlib.h>

struct topo *topo_new(const struct topo_config *cfg, uint32_t nranks, char *err, size_t errlen)
{
	if (nranks == 0 || nranks > TOPO_MAX_RANKS) {
		snprintf(err, errlen, "%u ranks: expected 1 to %u", nranks, TOPO_MAX_RANKS);
		return NULL;
	}
	if (topo_config_check(cfg, err, errlen) < 0)
		return NULL;
	struct topo *t = xcalloc(1, sizeof(*t));
	t->cfg = *cfg;
	t->nranks = nranks;
	t->ops = cfg->kind == TOPO_IDEAL ? &topo_ideal_ops : &topo_fattree_ops;
	t->gpn = cfg->kind == TOPO_IDEAL ? 1 : cfg->gpus_per_node;
	if (t->ops->check(t, err, errlen) < 0) {
		free(t);
		return NULL;
	}
	return t;
}

void topo_attach(struct topo *t, struct sim *sim)
{
	BUG_ON(t->sim);
	t->sim = sim;
	t->ops->attach(t);
}

void topo_free(struct topo *t)
{
	if (!t)
		return;
	if (t->ops->free)
		t->ops->free(t);
	free(t);
}

uint32_t topo_node_of(const struct topo *t, uint32_t rank) { return rank / t->gpn; }
uint32_t topo_local_of(const struct topo *t, uint32_t rank) { return rank % t->gpn; }
const struct topo_config *topo_config(const struct topo *t) { return &t->cfg; }

static void sim_route(void *topo, struct sim *sim, uint32_t src, uint32_t dst,
		      struct sim_route *out)
{
	struct topo *t = topo;
	BUG_ON(sim != t->sim);
	t->ops->route(t, src, dst, out);
}

static uint32_t sim_node_of(void *topo, uint32_t rank)
{
	return topo_node_of(topo, rank);
}

static uint32_t sim_rails(void *topo)
{
	const struct topo *t = topo;
	return t->cfg.kind == TOPO_IDEAL ? 1 : t->cfg.nics_per_node;
}

static void sim_link_name(void *topo, uint32_t tag, char *buf, size_t len)
{
	struct topo *t = topo;
	t->ops->link_name(t, tag, buf, len);
}

static const struct sim_topo_ops topo_ops = {
	.route = sim_route,
	.node_of = sim_node_of,
	.rails = sim_rails,
	.link_name = sim_link_name,
};

const struct sim_topo_ops *topo_sim_ops(void)
{
	return &topo_ops;
}
