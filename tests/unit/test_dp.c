/*
 * test_dp.c - the data-parallel strategy registry (parallel/dp.c): names
 * unique and found, every strategy complete, the aliases and flags keeping
 * what the code decided before the strategies were plug-ins, the checks'
 * texts; parallel.strategy against its aliases at load; and ZeRO-3's
 * module-by-module closed form on a case computed by hand.
 */
#include <check.h>
#include <string.h>

#include "parallel/dp.h"
#include "scenarios/scenario.h"
#include "tests/checkmain.h"

#define BASE CLUSTERSIM_SRCDIR "/tests/badinput/base.yaml"

START_TEST(registry_names_unique_and_found)
{
	size_t n = par_dp_count();
	ck_assert_uint_ge(n, 5);
	const char *const *names = par_dp_key_names();
	ck_assert_str_eq(names[0], "auto");
	for (size_t i = 0; i < n; i++) {
		const struct par_dp_strategy *s = par_dp_strategies[i];
		ck_assert_ptr_nonnull(s);
		ck_assert_ptr_eq(par_dp_find(s->name), s);
		ck_assert_int_eq(par_dp_index(s), (int)i);
		ck_assert_str_eq(names[i + 1], s->name);
		for (size_t j = 0; j < i; j++)
			ck_assert_str_ne(par_dp_strategies[j]->name, s->name);
		/* What every strategy must give. */
		ck_assert_msg(s->title && *s->title && s->help && *s->help &&
			      !strchr(s->help, '\n'), "%s: title and one line of help", s->name);
		ck_assert_msg(s->memory && s->exposed_s && s->plan_memory,
			      "%s: memory and closed forms", s->name);
		ck_assert_msg(!s->init == !s->fini, "%s: init and fini go together", s->name);
		/* A layout naming entry i gets it. */
		struct par_layout l = { .strategy = (int)i + 1 };
		ck_assert_ptr_eq(par_dp_strategy_of(&l), s);
	}
	ck_assert_ptr_null(par_dp_strategies[n]);
	ck_assert_ptr_null(names[n + 1]);
	ck_assert_ptr_null(par_dp_find("zero4"));
	ck_assert_ptr_null(par_dp_find("auto"));
}
END_TEST

/* The aliases and flags say what the code said before the strategies were
 * plug-ins: parallel.zero N and fsdp.enabled pick them; ZeRO-1 and up step
 * on a shard; ZeRO-2 and up reduce every micro-batch; only DDP and ZeRO-1
 * take MoE and a pipeline; only ZeRO-1 and -2 offload and gather after the
 * step. */
START_TEST(flags_keep_the_old_rules)
{
	static const char *const by_zero[] = { "ddp", "zero1", "zero2", "zero3" };
	for (unsigned z = 0; z < 4; z++) {
		const struct par_dp_strategy *s = par_dp_of_aliases(z, false);
		ck_assert_str_eq(s->name, by_zero[z]);
		ck_assert_uint_eq(par_dp_zero_stage(s), z);
		struct par_layout l = { .zero = z };
		ck_assert_ptr_eq(par_dp_strategy_of(&l), s);
		ck_assert_ptr_eq(par_dp_of_aliases(z, true), par_dp_find("fsdp"));
	}
	for (size_t i = 0; par_dp_strategies[i]; i++) {
		const struct par_dp_strategy *s = par_dp_strategies[i];
		unsigned z = par_dp_zero_stage(s), f = s->flags;
		int fsdp = (f & PAR_DP_ALIAS_FSDP) != 0;
		if (!(f & (PAR_DP_ALIAS_ZERO | PAR_DP_ALIAS_FSDP)))
			continue;  /* named by parallel.strategy only */
		ck_assert_str_eq(s->name, fsdp ? "fsdp" : by_zero[z]);
		ck_assert_int_eq(!!(f & PAR_DP_SHARDS_OPTIMIZER), z >= 1 || fsdp);
		ck_assert_int_eq(!!(f & PAR_DP_REDUCE_EVERY_MB), z >= 2 || fsdp);
		ck_assert_int_eq(!!(f & PAR_DP_SHARDS_PARAMS), z == 3 || fsdp);
		ck_assert_int_eq(!!(f & PAR_DP_MOE), z < 2 && !fsdp);
		ck_assert_int_eq(!!(f & PAR_DP_PIPELINE), z < 2 && !fsdp);
		ck_assert_int_eq(!!(f & PAR_DP_OFFLOAD), (z == 1 || z == 2) && !fsdp);
		ck_assert_int_eq(!!(f & PAR_DP_PARAM_GATHER), (z == 1 || z == 2) && !fsdp);
		if (fsdp)
			ck_assert_uint_eq(z, 3);
	}
}
END_TEST

/* The checks the flags state keep their texts. */
START_TEST(checks_refuse_with_the_old_texts)
{
	char err[512];
	struct par_model m = { .layers = 4 };
	struct topo_config cl = { .kind = TOPO_IDEAL, .gpus_per_node = 1 };
	struct par_layout l = { .tp = 1, .pp = 2, .cp = 1, .zero = 2 };
	ck_assert_int_eq(par_dp_check_layout(&l, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "parallel.pp: pipeline parallelism combines with DDP and ZeRO-1 "
		       "(Megatron's distributed optimizer), not with ZeRO-2");
	l.pp = 1, l.fsdp.enabled = true, l.fsdp.hsdp = true, l.tp = 2;
	ck_assert_int_eq(par_dp_check_layout(&l, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "parallel.fsdp.hsdp: HSDP is simulated with data parallelism only "
		       "(tp, cp and pp 1)");
	l.tp = 1;
	ck_assert_int_eq(par_dp_check_layout(&l, err, sizeof(err)), 0);
	struct par_dp_env e = { .layout = &l, .model = &m, .cluster = &cl, .dp = 8 };
	ck_assert_int_eq(par_dp_check(&e, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "parallel.fsdp.hsdp: sharding inside a node needs nodes of several "
		       "GPUs, all in the data-parallel group");
	l.fsdp.enabled = false, l.fsdp.hsdp = false, l.zero = 3, l.offload.enabled = true;
	ck_assert_int_eq(par_dp_check(&e, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "parallel.offload.enabled: optimizer offload works with "
		       "parallel.zero 1 or 2 (ZeRO-Offload), not with ZeRO-3");
	l.zero = 0, l.offload.enabled = false, l.ddp.overlap_param_gather = true;
	ck_assert_int_eq(par_dp_check(&e, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "parallel.ddp.overlap_param_gather: the parameters gathered after "
		       "the step are ZeRO-1's and ZeRO-2's (parallel.zero 1 or 2), not DDP's");
	l.zero = 1;
	ck_assert_int_eq(par_dp_check(&e, err, sizeof(err)), 0);
	l.zero = 2, l.ddp.overlap_param_gather = false, m.moe.experts = 8;
	ck_assert_int_eq(par_dp_check(&e, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "model.moe: mixture-of-experts layers are simulated with DDP or "
		       "ZeRO-1 (Megatron's distributed optimizer), not with ZeRO-2");
}
END_TEST

/* parallel.strategy at load: auto stays auto; a named strategy sets the
 * aliases to agree; an alias naming another is refused, naming both keys. */
static int load(const char *const *sets, size_t n, struct scn *s, char *err, size_t len)
{
	return scn_load(s, BASE, sets, n, err, len);
}

START_TEST(aliases_at_load)
{
	static struct scn s;
	char err[SCN_ERRLEN];
	const char *z2[] = { "parallel.zero=2" };
	ck_assert_msg(load(z2, 1, &s, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(s.parallel.strategy, 0);
	ck_assert_str_eq(par_dp_strategy_of(&s.parallel)->name, "zero2");
	const char *named[] = { "parallel.strategy=zero3" };
	ck_assert_msg(load(named, 1, &s, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(s.parallel.zero, 3);
	ck_assert(!s.parallel.fsdp.enabled);
	ck_assert_str_eq(par_dp_strategy_of(&s.parallel)->name, "zero3");
	const char *fsdp[] = { "parallel.strategy=fsdp", "parallel.zero=0" };
	ck_assert_msg(load(fsdp, 2, &s, err, sizeof(err)) == 0, "%s", err);
	ck_assert(s.parallel.fsdp.enabled);
	const char *both[] = { "parallel.fsdp.enabled=true", "parallel.zero=2",
			       "parallel.strategy=fsdp" };
	ck_assert_msg(load(both, 3, &s, err, sizeof(err)) == 0, "fsdp ignores zero: %s", err);
	const char *agree[] = { "parallel.zero=1", "parallel.strategy=zero1" };
	ck_assert_msg(load(agree, 2, &s, err, sizeof(err)) == 0, "%s", err);
	const char *bad[] = { "parallel.zero=1", "parallel.strategy=ddp" };
	ck_assert_int_eq(load(bad, 2, &s, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "--set parallel.strategy=ddp: parallel.strategy: ddp contradicts "
			     "--set parallel.zero=1: parallel.zero: 1, which names zero1; give "
			     "one of parallel.strategy and parallel.zero"), "%s", err);
	const char *badf[] = { "parallel.strategy=zero1", "parallel.fsdp.enabled=yes" };
	ck_assert_int_eq(load(badf, 2, &s, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "parallel.fsdp.enabled: true, which names fsdp"), "%s", err);
}
END_TEST

/* Every collective of `bytes` takes 1 s of latency and 1 s per 2e8 bytes. */
static double one_per_2e8(void *ctx, enum sim_coll_op op, double bytes)
{
	(void)ctx, (void)op;
	return 1 + bytes / 2e8;
}

/*
 * ZeRO-3's micro-batch module by module (par_dps_plan_fetch_wait), by
 * hand: one layer of two modules of 1e8 elements (each above the prefetch
 * bucket: one call each, prefetched one ahead), every gather and
 * reduce-scatter 1 s of latency and 1 s of bandwidth alone. The forward's
 * segments take 3 s and 0.5 s, the backward's 0.5 s each, a bucket of
 * 1e8 closing after each backward segment.
 *   m0 gathered 0-2, computed 2-5; m1 gathered 2-4 (prefetched), computed
 *   5-5.5; backward m1: gathered 5-7 (issued at 5), computed 7-7.5, its
 *   bucket reduce-scattered from 7.5; m0 gathered from 7 (issued at 5.5):
 *   half done at 7.5, the rest at the shared rate (1 s + 2 x 1 s), 0.75 x
 *   3 s, so done at 9.75 and computed 9.75-10.25.
 * Waits: 10.25 - 4.5 s of kernels = 5.75 s. Without the reduce-scatter
 * beside it (a bucket never filled), m0's gather ends at 9: 5 s.
 */
START_TEST(zero3_fetch_by_hand)
{
	struct par_layout l = { .zero3 = { .prefetch_bucket = 50000000, .reduce_bucket = 100000000,
					   .persistence = 100000, .max_live = 1000000000 } };
	struct par_dp_costs c = { .layout = &l, .dp = 2, .precision = PAR_BF16,
				  .coll_s = one_per_2e8 };
	struct par_dps_fetch f = { .n = 2, .nb = 2, .layers = 1, .mod = { 1e8, 1e8 },
				   .fwd = { 3, 0.5 }, .bwd = { 0.5, 0.5 }, .grads = { 1e8, 1e8 } };
	ck_assert_double_eq_tol(par_dps_plan_fetch_wait(&f, &c, 1), 5.75, 1e-12);
	l.zero3.reduce_bucket = 1000000000;
	ck_assert_double_eq_tol(par_dps_plan_fetch_wait(&f, &c, 1), 5.0, 1e-12);
	/* One rank gathers nothing. */
	c.dp = 1;
	ck_assert_double_eq(par_dps_plan_fetch_wait(&f, &c, 1), 0);
}
END_TEST

static Suite *dp_suite(void)
{
	Suite *su = suite_create("dp");
	TCase *t = tcase_create("registry");
	tcase_add_test(t, registry_names_unique_and_found);
	tcase_add_test(t, flags_keep_the_old_rules);
	tcase_add_test(t, checks_refuse_with_the_old_texts);
	tcase_add_test(t, aliases_at_load);
	tcase_add_test(t, zero3_fetch_by_hand);
	suite_add_tcase(su, t);
	return su;
}

int main(void)
{
	return check_run(dp_suite());
}
