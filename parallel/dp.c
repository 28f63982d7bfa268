/*
 * dp.c - the table of data-parallel strategies, and the rules their flags
 * state.
 *
 * To add a strategy: write parallel/dp_NAME.c exporting
 * `const struct par_dp_strategy par_dp_NAME` (copy dp_ddp.c; the smallest
 * whole one is dp_ddp_after.c; dp.h says what each field means), add one
 * line X(NAME, "its-name") to STRATEGIES below and one to
 * libclustersim_a_SOURCES in Makefile.am, and give it a case in
 * tests/conformance/test_dp_spec.c (its closed form of exposed
 * communication against flow fidelity on an idealised case). Its name
 * becomes a value of parallel.strategy (the key's names come from this
 * table; regenerate docs/scenario.md's key table), its flags decide what
 * the checks refuse. Order: the order parallel.strategy lists the names in.
 */
#include "parallel/dp.h"

#include <string.h>

#include "sim/util.h"

#define STRATEGIES(X) \
	X(ddp, "ddp") \
	X(ddp_after, "ddp-after") \
	X(zero1, "zero1") \
	X(zero2, "zero2") \
	X(zero3, "zero3") \
	X(fsdp, "fsdp")

#define DECLARE(id, name) extern const struct par_dp_strategy par_dp_##id;
#define ENTRY(id, name) &par_dp_##id,
#define NAME(id, name) name,
STRATEGIES(DECLARE)

const struct par_dp_strategy *const par_dp_strategies[] = { STRATEGIES(ENTRY) NULL };
/* parallel.strategy's names (test_dp_spec.c checks them against the
 * strategies' own). */
static const char *const key_names[] = { "auto", STRATEGIES(NAME) NULL };

size_t par_dp_count(void)
{
	return ARRAY_SIZE(par_dp_strategies) - 1;
}

const struct par_dp_strategy *par_dp_find(const char *name)
{
	for (const struct par_dp_strategy *const *s = par_dp_strategies; *s; s++)
		if (!strcmp((*s)->name, name))
			return *s;
	return NULL;
}

int par_dp_index(const struct par_dp_strategy *s)
{
	for (size_t i = 0; par_dp_strategies[i]; i++)
		if (par_dp_strategies[i] == s)
			return (int)i;
	return -1;
}

const char *const *par_dp_key_names(void)
{
	return key_names;
}

const char *par_dp_key_help(unsigned i)
{
	if (i == 0)
		return "from the aliases";
	BUG_ON(i > par_dp_count());
	return par_dp_strategies[i - 1]->help;
}

unsigned par_dp_zero_stage(const struct par_dp_strategy *s)
{
	return s->flags & PAR_DP_SHARDS_PARAMS ? 3 : s->flags & PAR_DP_SHARDS_GRADS ? 2
	       : s->flags & PAR_DP_SHARDS_OPTIMIZER ? 1 : 0;
}

const struct par_dp_strategy *par_dp_of_aliases(uint32_t zero, bool fsdp)
{
	for (const struct par_dp_strategy *const *s = par_dp_strategies; *s; s++)
		if (fsdp ? ((*s)->flags & PAR_DP_ALIAS_FSDP) != 0
			 : ((*s)->flags & PAR_DP_ALIAS_ZERO) && par_dp_zero_stage(*s) == zero)
			return *s;
	BUG("no data-parallel strategy for parallel.zero %u, fsdp %d", zero, fsdp);
}

const struct par_dp_strategy *par_dp_strategy_of(const struct par_layout *l)
{
	if (l->strategy > 0) {
		BUG_ON((size_t)l->strategy > par_dp_count());
		return par_dp_strategies[l->strategy - 1];
	}
	return par_dp_of_aliases(l->zero, l->fsdp.enabled);
}

int par_dp_check_layout(const struct par_layout *l, char *err, size_t errlen)
{
	const struct par_dp_strategy *s = par_dp_strategy_of(l);
	if (l->pp > 1 && !(s->flags & PAR_DP_PIPELINE))
		return sim_errf(err, errlen, "parallel.pp: pipeline parallelism combines with DDP "
				"and ZeRO-1 (Megatron's distributed optimizer), not with %s", s->title);
	return s->check_layout ? s->check_layout(l, err, errlen) : 0;
}

int par_dp_check(const struct par_dp_env *e, char *err, size_t errlen)
{
	const struct par_layout *l = e->layout;
	const struct par_dp_strategy *s = par_dp_strategy_of(l);
	if (e->model->moe.experts && !(s->flags & PAR_DP_MOE))
		return sim_errf(err, errlen, "model.moe: mixture-of-experts layers are simulated "
				"with DDP or ZeRO-1 (Megatron's distributed optimizer), not with %s",
				s->title);
	if (l->offload.enabled && !(s->flags & PAR_DP_OFFLOAD))
		return sim_errf(err, errlen, "parallel.offload.enabled: optimizer offload works "
				"with parallel.zero 1 or 2 (ZeRO-Offload), not with %s", s->title);
	if (l->ddp.overlap_param_gather && !(s->flags & PAR_DP_PARAM_GATHER))
		return sim_errf(err, errlen, "parallel.ddp.overlap_param_gather: the parameters "
				"gathered after the step are ZeRO-1's and ZeRO-2's (parallel.zero 1 or "
				"2), not %s's", s->title);
	if (l->ddp.overlap_grad_reduce && strcmp(s->name, "zero1"))
		return sim_errf(err, errlen, "parallel.ddp.overlap_grad_reduce: overlaps ZeRO-1's "
				"reduce-scatters (parallel.zero 1), not %s's; DDP's all-reduces overlap "
				"with parallel.ddp.overlap, ZeRO-2 and 3 reduce as buckets fill anyway",
				s->title);
	return s->check ? s->check(e, err, errlen) : 0;
}
