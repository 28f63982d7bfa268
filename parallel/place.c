/*
 * place.c - a job's step on a sim: the groups of every kind (DP, TP, PP,
 * CP, HSDP's shard and replica groups, expert groups) and every stage's
 * programs, with each rank's memory from the start.
 */
#include "parallel/train-int.h"

#include <stdlib.h>

/* The coordinate of one kind of group (a slot) in c. */
static uint32_t *coord_of(struct par_coords *c, unsigned slot)
{
	return slot == SLOT_TP ? &c->tp : slot == SLOT_PP ? &c->pp : slot == SLOT_CP ? &c->cp
								: &c->dp;
}

static uint32_t size_of(const struct par_dims *d, unsigned slot)
{
	return slot == SLOT_TP ? d->tp : slot == SLOT_PP ? d->pp : slot == SLOT_CP ? d->cp
								: d->dp * d->cp;
}

/* Member i of the group of kind `slot` that rank coordinates c belong to.
 * The data-parallel group spans CP too: CP ranks hold the same parameters,
 * so gradients are reduced (and ZeRO shards) over DP x CP, as in Megatron. */
static void member_of(const struct par_dims *d, unsigned slot, uint32_t i, struct par_coords *c)
{
	if (slot == SLOT_DP) {
		c->cp = i % d->cp;
		c->dp = i / d->cp;
	} else {
		*coord_of(c, slot) = i;
	}
}

/* A group of the job's ranks (its rank r is the sim's first + r); ranks
 * is left as it was given. */
static uint32_t group_add(struct sim *sim, uint32_t first, uint32_t *ranks, uint32_t n)
{
	for (uint32_t i = 0; first && i < n; i++)
		ranks[i] += first;
	uint32_t id = sim_group_add(sim, ranks, n);
	for (uint32_t i = 0; first && i < n; i++)
		ranks[i] -= first;
	return id;
}

/*
 * Expert groups (SPEC C24): within one stage, the DP x CP ranks of equal TP
 * index (member j = cp + C dp) split into consecutive groups of EP; the
 * expert-data-parallel group of a rank holds the ranks with its experts
 * (equal j mod EP). Without experts both are the rank alone.
 */
static void add_expert_groups(struct sim *sim, uint32_t first, const struct par_dims *d,
			      uint32_t *slots, uint32_t *ranks)
{
	uint32_t ep = d->ep, n = d->dp * d->cp, edp = n / ep;
	for (uint32_t tp = 0; tp < d->tp; tp++)
		for (uint32_t pp = 0; pp < d->pp; pp++) {
			struct par_coords c = { .tp = tp, .pp = pp };
			for (uint32_t g = 0; g < edp; g++) {    /* EP: consecutive */
				for (uint32_t i = 0; i < ep; i++) {
					member_of(d, SLOT_DP, g * ep + i, &c);
					ranks[i] = par_rank_of(d, &c);
				}
				uint32_t id = group_add(sim, first, ranks, ep);
				for (uint32_t i = 0; i < ep; i++)
					slots[ranks[i] * NSLOTS + SLOT_EP] = id;
			}
			for (uint32_t e = 0; e < ep; e++) {     /* EDP: strided */
				for (uint32_t g = 0; g < edp; g++) {
					member_of(d, SLOT_DP, g * ep + e, &c);
					ranks[g] = par_rank_of(d, &c);
				}
				uint32_t id = group_add(sim, first, ranks, edp);
				for (uint32_t g = 0; g < edp; g++)
					slots[ranks[g] * NSLOTS + SLOT_EDP] = id;
			}
		}
}

/*
 * The groups of the step: for each kind (DP, TP, PP, CP), the ranks that
 * share every other coordinate, in the order of theirs; HSDP's shard groups
 * (the DP ranks of one node) and replica groups (one per local index).
 * Ranks and slots are the job's own; its rank r is the sim's first + r.
 */
static void add_groups(struct sim *sim, uint32_t first, const struct par_step *s,
		       uint32_t *slots)
{
	static const unsigned kinds[] = { SLOT_DP, SLOT_TP, SLOT_PP, SLOT_CP };
	const struct par_dims *d = &s->d;
	uint32_t n = s->gpus, *ranks = xmalloc(n * sizeof(uint32_t));
	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
		uint32_t size = size_of(d, kinds[k]);
		for (uint32_t r = 0; r < n; r++) {
			struct par_coords c;
			par_coords_of(d, r, &c);
			if (*coord_of(&c, kinds[k]) != 0 || (kinds[k] == SLOT_DP && c.cp != 0))
				continue;  /* not the group's first member */
			for (uint32_t i = 0; i < size; i++) {
				member_of(d, kinds[k], i, &c);
				ranks[i] = par_rank_of(d, &c);
			}
			uint32_t id = group_add(sim, first, ranks, size);
			for (uint32_t i = 0; i < size; i++)
				slots[ranks[i] * NSLOTS + kinds[k]] = id;
			if (kinds[k] != SLOT_DP || s->shard < s->dpn)
				continue;
			id = group_add(sim, first, ranks, size);   /* reduce-scatters */
			for (uint32_t i = 0; i < size; i++)
				slots[ranks[i] * NSLOTS + SLOT_SHARD_RS] = id;
		}
	}
	add_expert_groups(sim, first, d, slots, ranks);
	uint32_t g = s->shard, nodes = n / g;
	for (uint32_t r = 0; r < n; r++)  /* without HSDP: the DP group */
		slots[r * NSLOTS + SLOT_SHARD] = slots[r * NSLOTS + SLOT_REPLICA] =
			slots[r * NSLOTS + SLOT_DP];
	for (uint32_t x = 0; g < s->dpn && x < nodes; x++) {   /* HSDP (dp only) */
		for (uint32_t j = 0; j < g; j++)
			ranks[j] = x * g + j;
		uint32_t id = group_add(sim, first, ranks, g);
		for (uint32_t j = 0; j < g; j++)
			slots[(x * g + j) * NSLOTS + SLOT_SHARD] = id;
		id = group_add(sim, first, ranks, g);              /* reduce-scatters */
		for (uint32_t j = 0; j < g; j++)
			slots[(x * g + j) * NSLOTS + SLOT_SHARD_RS] = id;
	}
	for (uint32_t j = 0; g < s->dpn && j < g; j++) {
		for (uint32_t x = 0; x < nodes; x++)
			ranks[x] = x * g + j;
		uint32_t id = group_add(sim, first, ranks, nodes);
		for (uint32_t x = 0; x < nodes; x++)
			slots[(x * g + j) * NSLOTS + SLOT_REPLICA] = id;
	}
	free(ranks);
}

/*
 * The step's programs (one per stage and CP rank: causal ring attention
 * gives CP ranks different work; otherwise they are identical), the groups,
 * and every rank's memory from the start.
 */
void par_place(struct par_placed *p, struct par_step *s, struct sim *sim, uint32_t first)
{
	const struct par_dims *d = &s->d;
	*p = (struct par_placed){ .t = s->t, .d = *d, .first = first, .n = s->gpus };
	p->slots = xcalloc((size_t)p->n * NSLOTS, sizeof(uint32_t));
	add_groups(sim, first, s, p->slots);
	p->progs = xcalloc((size_t)d->pp * d->cp, sizeof(*p->progs));
	for (uint32_t st = 0; st < d->pp; st++)
		for (uint32_t ci = 0; ci < d->cp; ci++) {
			double held[PAR_MEM_NCATS];
			p->progs[st * d->cp + ci] = par_step_program(s, st, ci, held);
			for (uint32_t r = 0; r < p->n; r++) {
				struct par_coords c;
				par_coords_of(d, r, &c);
				for (int k = 0; c.pp == st && c.cp == ci && k < PAR_MEM_NCATS; k++)
					if (held[k] > 0)
						sim_rank_mem_add(sim, first + r, (unsigned)k, held[k]);
			}
		}
}

void par_place_start(const struct par_placed *p, struct sim *sim, uint32_t r)
{
	struct par_coords c;
	par_coords_of(&p->d, r, &c);
	sim_rank_start(sim, p->first + r, p->progs[c.pp * p->d.cp + c.cp],
		       p->slots + (size_t)r * NSLOTS, NSLOTS);
}

void par_place_free(struct par_placed *p)
{
	free(p->progs);  /* the programs are the step's */
	free(p->slots);
	*p = (struct par_placed){ 0 };
}
