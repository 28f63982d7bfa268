/*
 * check.c - load-time checks of a training step that need its groups: an
 * explicit collective algorithm (parallel.algorithms.*) must be able to run
 * every collective of its kind on every group the layout gives it.
 *
 * The rules are the algorithms' own: the groups are built on the run's
 * topology as the simulation builds them (par_place), and each distinct
 * (group, collective) is planned with sim_coll_check, which calls the
 * algorithm's plan() (collectives/). So a choice that the simulation would
 * refuse halfway through a step is refused here, before anything is written,
 * naming the key, the group and its size, and the algorithm's reason.
 */
#include "parallel/train-int.h"
#include "topology/topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The group of a slot, in the words of the documentation (without HSDP
 * the shard and replica slots hold the data-parallel group). */
static const char *slot_name(const struct par_layout *l, unsigned slot)
{
	if (!(l->fsdp.enabled && l->fsdp.hsdp) &&
	    (slot == SLOT_SHARD || slot == SLOT_SHARD_RS || slot == SLOT_REPLICA))
		slot = SLOT_DP;
	switch (slot) {
	case SLOT_TP: return "tensor-parallel group";
	case SLOT_DP: return "data-parallel group (dp x cp)";
	case SLOT_PP: return "pipeline group";
	case SLOT_SHARD: case SLOT_SHARD_RS: return "shard group";
	case SLOT_REPLICA: return "replica group";
	case SLOT_CP: return "context-parallel group";
	case SLOT_EP: return "expert-parallel group";
	case SLOT_EDP: return "expert-data-parallel group";
	default: return "group";
	}
}

/* Check the explicit collectives of one program on the groups of the ranks
 * that run it (seen: one flag per group, cleared here). */
static int check_program(const struct par_placed *p, struct sim *sim,
			 const struct sim_program *prog, uint32_t stage, uint32_t cpi,
			 uint8_t *seen, uint32_t ngroups, char *err, size_t errlen)
{
	/* The first op of each (slot, collective) kind with an algorithm. */
	uint32_t first[NSLOTS][SIM_COLL_NOPS];
	for (unsigned s = 0; s < NSLOTS; s++)
		for (unsigned c = 0; c < SIM_COLL_NOPS; c++)
			first[s][c] = UINT32_MAX;
	for (uint32_t i = 0; i < prog->nops; i++) {
		const struct sim_op *op = &prog->ops[i];
		if (op->kind == SIM_OP_COLL && op->algo && op->group < NSLOTS &&
		    op->coll < SIM_COLL_NOPS && first[op->group][op->coll] == UINT32_MAX)
			first[op->group][op->coll] = i;
	}
	for (unsigned s = 0; s < NSLOTS; s++)
		for (unsigned c = 0; c < SIM_COLL_NOPS; c++) {
			if (first[s][c] == UINT32_MAX)
				continue;
			const struct sim_op *op = &prog->ops[first[s][c]];
			memset(seen, 0, ngroups);
			for (uint32_t r = 0; r < p->n; r++) {
				struct par_coords co;
				par_coords_of(&p->d, r, &co);
				uint32_t g = p->slots[(size_t)r * NSLOTS + s];
				if (co.pp != stage || co.cp != cpi || g >= ngroups || seen[g])
					continue;
				seen[g] = 1;
				char why[256] = "";
				unsigned channels = op->channels;
				if (sim_coll_check(sim, g, op->coll, op->algo, op->bytes, &channels, why,
						   sizeof(why)))
					continue;
				return sim_errf(err, errlen, "parallel.algorithms.%s: %s cannot run "
						"'%s' on the %s of %u ranks that rank %u is in: %s (or "
						"leave it auto)", sim_coll_op_name(op->coll),
						op->algo->name, op->name, slot_name(p->t->layout, s),
						sim_group_size(sim, g), r, why);
			}
		}
	return 0;
}

int par_check_algorithms(struct par_step *st, char *err, size_t errlen)
{
	const struct par_train *t = st->t;
	int any = 0;
	for (unsigned c = 0; c < SIM_COLL_NOPS; c++)
		any |= t->layout->algo[c] != NULL;
	if (!any)
		return 0;
	uint32_t n = (uint32_t)topo_config_gpus(t->cluster);
	struct topo *topo = topo_new(t->cluster, n, err, errlen);
	if (!topo)
		return -1;
	struct sim *sim = sim_new(&t->sim, n, topo_sim_ops(), topo);
	topo_attach(topo, sim);
	struct par_placed p;
	par_place(&p, st, sim, 0);
	uint32_t ngroups = 0;  /* the groups are numbered from 0 */
	for (size_t i = 0; i < (size_t)p.n * NSLOTS; i++)
		if (p.slots[i] >= ngroups)
			ngroups = p.slots[i] + 1;
	uint8_t *seen = xmalloc(ngroups ? ngroups : 1);
	int rc = 0;
	for (uint32_t s = 0; rc == 0 && s < p.d.pp; s++)
		for (uint32_t ci = 0; rc == 0 && ci < p.d.cp; ci++)
			rc = check_program(&p, sim, p.progs[s * p.d.cp + ci], s, ci, seen, ngroups,
					   err, errlen);
	free(seen);
	par_place_free(&p);
	sim_free(sim);
	topo_free(topo);
	return rc;
}
