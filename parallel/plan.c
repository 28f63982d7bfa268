/*
 * plan.c - the planner's closed-form estimator; see plan.h.
 *
 * For a layout, one pipeline stage's micro-batch takes
 *   S = layers x (forward + backward kernels + tensor-parallel collectives)
 *       + embedding or head + the pipeline messages,
 * with kernel times from the compute model (cached by shape: tp, sp,
 * micro-batch, cp, recomputation) and collectives from the algorithms'
 * closed forms on the cluster's NVLink and network links. The step is the
 * pipeline phase of the layout's schedule for stages of cost S (the
 * schedule's closed forms, schedule.h: (m + (p-1)/v) S for 1F1B, GPipe and
 * interleaved, the bubble (p-1)/v S), plus the data-parallel reduction that
 * the last backward cannot hide (the strategy's closed form, dp.h), plus the
 * optimizer on the rank's share. Memory: model states and buffers (the
 * strategy's closed form, over DP x CP), the first stage's micro-batches in
 * flight (the schedule's closed form) and the last stage's logits.
 * Approximations: context-parallel transfers are assumed hidden, expert
 * routing uniform, DP overlap one micro-batch's backward.
 */
#include "parallel/plan.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "collectives/coll.h"
#include "parallel/dp.h"
#include "parallel/moe.h"
#include "parallel/schedule.h"
#include "parallel/step.h"
#include "parallel/train.h"
#include "sim/util.h"

/* Kernel times of one layer for one shape, forward and backward. */
struct shape {
	uint32_t tp, mb, cp, ep;
	uint8_t sp, rc, moe;
	double fwd, bwd;          /* seconds of kernels                     */
	double act, act_peak;     /* bytes kept per layer, and during its bwd */
	double zero3_calls;       /* ZeRO-3's all-gathers of a micro-batch of
				   * every layer (dp_shard.c's modules)    */
};

struct par_planner {
	struct par_model m;
	struct par_training tr;
	struct par_layout base;
	struct topo_config cl;
	uint32_t gpus;
	const struct par_compute_model *cm;
	double capacity;
	struct shape *cache;
	size_t ncache, capcache;
	struct par_plan_rule *rules;
	size_t nrules;
};

struct par_planner *par_planner_new(const struct par_model *m, const struct par_training *tr,
				    const struct par_layout *base, const struct topo_config *cl,
				    uint32_t gpus, const struct par_compute_model *cm)
{
	struct par_planner *p = xcalloc(1, sizeof(*p));
	p->m = *m, p->tr = *tr, p->base = *base, p->cl = *cl, p->gpus = gpus, p->cm = cm;
	p->capacity = topo_gpu_find(cl->gpu)->mem_bytes;
	return p;
}

void par_planner_free(struct par_planner *p)
{
	if (!p)
		return;
	free(p->cache);
	free(p);
}

void par_planner_rules(struct par_planner *p, struct par_plan_rule *r, size_t n)
{
	p->rules = r, p->nrules = n;
}

/* ---- rules: --fix and --exclude ------------------------------------------- */

static const char *const key_names[PAR_PK_N] = {
	[PAR_PK_TP] = "tp", [PAR_PK_SP] = "sp", [PAR_PK_PP] = "pp", [PAR_PK_VPP] = "vpp",
	[PAR_PK_CP] = "cp", [PAR_PK_EP] = "ep", [PAR_PK_DP] = "dp",
	[PAR_PK_MB] = "micro_batch", [PAR_PK_ZERO] = "zero", [PAR_PK_RECOMPUTE] = "recompute",
};
static const char *const rc_names[] = { "none", "selective", "full" };

const char *par_plan_key_name(enum par_plan_key k)
{
	return (unsigned)k < PAR_PK_N ? key_names[k] : "?";
}

uint32_t par_plan_key_value(const struct par_candidate *c, enum par_plan_key k)
{
	const struct par_layout *l = &c->layout;
	switch (k) {
	case PAR_PK_TP: return l->tp;
	case PAR_PK_SP: return l->sp;
	case PAR_PK_PP: return l->pp;
	case PAR_PK_VPP: return l->vpp;
	case PAR_PK_CP: return l->cp;
	case PAR_PK_EP: return l->ep;
	case PAR_PK_DP: return l->dp;
	case PAR_PK_MB: return c->micro_batch;
	case PAR_PK_ZERO: return l->zero;
	case PAR_PK_RECOMPUTE: return (uint32_t)c->recompute;
	case PAR_PK_N: break;
	}
	BUG("unknown plan key %d", (int)k);
}

int par_plan_key_of_scenario(const char *key)
{
	static const struct { const char *name; enum par_plan_key k; } keys[] = {
		{ "parallel.tp", PAR_PK_TP }, { "parallel.sp", PAR_PK_SP },
		{ "parallel.pp", PAR_PK_PP }, { "parallel.vpp", PAR_PK_VPP },
		{ "parallel.cp", PAR_PK_CP }, { "parallel.ep", PAR_PK_EP },
		{ "parallel.dp", PAR_PK_DP }, { "training.micro_batch", PAR_PK_MB },
		{ "parallel.zero", PAR_PK_ZERO }, { "parallel.strategy", PAR_PK_ZERO },
		{ "parallel.fsdp.enabled", PAR_PK_ZERO }, { "training.recompute", PAR_PK_RECOMPUTE },
	};
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (!strcmp(key, keys[i].name))
			return (int)keys[i].k;
	return -1;
}

int par_plan_rule_parse(const char *text, bool exclude, struct par_plan_rule *r, char *err,
			size_t errlen)
{
	const char *eq = strchr(text, '=');
	const char *opt = exclude ? "--exclude" : "--fix";
	if (!eq || eq == text || !eq[1])
		return sim_errf(err, errlen, "option %s: expected KEY=VALUE (e.g. tp=8, zero=3, "
				"recompute=full), got '%s'", opt, text);
	char key[64];
	size_t kl = (size_t)(eq - text);
	if (kl >= sizeof(key))
		kl = sizeof(key) - 1;
	memcpy(key, text, kl), key[kl] = 0;
	int k = -1;
	for (int i = 0; i < PAR_PK_N; i++)
		if (!strcmp(key, key_names[i]))
			k = i;
	if (k < 0 && !strcmp(key, "mb"))
		k = PAR_PK_MB;
	if (k < 0 && strcmp(key, "parallel.strategy") && strcmp(key, "parallel.fsdp.enabled"))
		k = par_plan_key_of_scenario(key);
	if (k < 0)
		return sim_errf(err, errlen, "option %s: unknown key '%s': expected tp, sp, pp, vpp, "
				"cp, ep, dp, zero, micro_batch (mb) or recompute", opt, key);
	const char *v = eq + 1;
	*r = (struct par_plan_rule){ .key = (enum par_plan_key)k, .exclude = exclude };
	if (k == PAR_PK_SP) {
		if (!strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "1"))
			r->value = 1;
		else if (!strcmp(v, "false") || !strcmp(v, "off") || !strcmp(v, "0"))
			r->value = 0;
		else
			return sim_errf(err, errlen, "option %s: %s: expected true or false, got '%s'",
					opt, key, v);
		return 0;
	}
	if (k == PAR_PK_RECOMPUTE) {
		for (uint32_t i = 0; i < ARRAY_SIZE(rc_names); i++)
			if (!strcmp(v, rc_names[i])) {
				r->value = i;
				return 0;
			}
		return sim_errf(err, errlen, "option %s: %s: expected none, selective or full, got "
				"'%s'", opt, key, v);
	}
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (*end || errno || v[0] == '-' || n > UINT32_MAX || (n == 0 && k != PAR_PK_ZERO))
		return sim_errf(err, errlen, "option %s: %s: expected a whole number%s, got '%s'", opt,
				key, k == PAR_PK_ZERO ? " from 0 to 3" : " from 1", v);
	if (k == PAR_PK_ZERO && n > 3)
		return sim_errf(err, errlen, "option %s: zero: expected 0 (DDP), 1, 2 or 3, got '%s'",
				opt, v);
	r->value = (uint32_t)n;
	return 0;
}

void par_plan_rule_text(const struct par_plan_rule *r, char *buf, size_t len)
{
	if (r->key == PAR_PK_SP)
		snprintf(buf, len, "sp=%s", r->value ? "true" : "false");
	else if (r->key == PAR_PK_RECOMPUTE)
		snprintf(buf, len, "recompute=%s", r->value < 3 ? rc_names[r->value] : "?");
	else
		snprintf(buf, len, "%s=%u", par_plan_key_name(r->key), r->value);
}

bool par_plan_rules_pass(const struct par_plan_rule *r, size_t n, const struct par_candidate *c)
{
	unsigned fixed = 0, held = 0;   /* keys with fixes; those c has one of */
	for (size_t i = 0; i < n; i++) {
		uint32_t v = par_plan_key_value(c, r[i].key);
		if (r[i].exclude) {
			if (v == r[i].value)
				return false;
			continue;
		}
		fixed |= 1u << r[i].key;
		if (v == r[i].value)
			held |= 1u << r[i].key;
	}
	return fixed == held;
}

/* Sum of kernel times of a list; attention scaled (ring over cp ranks). */
static double kernels_s(const struct par_planner *p, const struct par_op *ops, size_t n,
			uint32_t cp, int moe)
{
	double s = 0;
	for (size_t i = 0; i < n; i++) {
		if (moe && par_kernel_is_mlp(ops[i].kernel))
			continue;
		double t = par_compute_time_s(p->cm, &ops[i]);
		s += ops[i].cls == PAR_OP_ATTENTION ? t * cp : t;
	}
	return s;
}

/* The experts of an MoE layer at an even load, forward or backward. */
static double experts_s(const struct par_planner *p, const struct par_training *local,
			uint32_t tp, uint32_t ep, enum par_phase ph)
{
	struct par_op ops[16];
	double s = 0;
	for (int part = 0; part < 3; part++) {
		size_t n = par_moe_ops(&p->m, local, tp, ep, 1, part, ph, ops, ARRAY_SIZE(ops));
		s += kernels_s(p, ops, n, 1, 0);
	}
	return s;
}

/* The kernel times and activations of one shape, from the cache (by value:
 * the cache moves as it grows). */
static struct shape shape_of(struct par_planner *p, uint32_t tp, uint32_t mb, uint32_t cp,
				    int sp, enum par_recompute rc, int moe, uint32_t ep)
{
	for (size_t i = 0; i < p->ncache; i++) {
		const struct shape *c = &p->cache[i];
		if (c->tp == tp && c->mb == mb && c->cp == cp && c->sp == sp && c->rc == rc &&
		    c->moe == moe && c->ep == ep)
			return *c;
	}
	struct par_training local = p->tr;
	local.micro_batch = mb, local.seq = p->tr.seq / cp, local.recompute = rc;
	struct par_op ops[64];
	struct shape s = { .tp = tp, .mb = mb, .cp = cp, .ep = ep, .sp = (uint8_t)sp,
			   .rc = (uint8_t)rc, .moe = (uint8_t)moe };
	size_t n = par_layer_ops_sp(&p->m, &local, tp, sp, PAR_FWD, ops, ARRAY_SIZE(ops));
	s.fwd = kernels_s(p, ops, n, cp, moe) + (moe ? experts_s(p, &local, tp, ep, PAR_FWD) : 0);
	n = par_layer_ops_sp(&p->m, &local, tp, sp, PAR_BWD, ops, ARRAY_SIZE(ops));
	s.bwd = kernels_s(p, ops, n, cp, moe) + (moe ? experts_s(p, &local, tp, ep, PAR_BWD) : 0);
	s.act = par_layer_activation_bytes(&p->m, &local, tp, sp);
	s.act_peak = par_layer_activation_peak_bytes(&p->m, &local, tp, sp);
	double mod[64];
	unsigned nm = par_dps_layer_modules(&p->m, &local, tp, sp, mod, ARRAY_SIZE(mod));
	s.zero3_calls = par_dps_gather_calls(mod, nm, p->m.layers, rc == PAR_RECOMPUTE_FULL,
					     p->base.zero3.prefetch_bucket,
					     p->base.zero3.max_live);
	if (p->ncache == p->capcache) {
		p->capcache = p->capcache ? 2 * p->capcache : 64;
		p->cache = xreallocarray(p->cache, p->capcache, sizeof(*p->cache));
	}
	p->cache[p->ncache++] = s;
	return s;
}

/* A ring collective of n bytes over `members` ranks: NVLink inside a node
 * (when the group fits one), else the network with one ring per rail. */
static double ring_s(const struct par_planner *p, enum sim_coll_op op, double n,
		     uint32_t members, int inside)
{
	if (members < 2)
		return 0;
	struct sim_coll_plan plan = { .op = op, .p = members, .bytes = n, .channels = 1 };
	char err[128];
	coll_ring.plan(&plan, err, sizeof(err));
	struct sim_coll_linkset ls = { 0 };
	if (inside || p->cl.kind == TOPO_IDEAL) {
		ls.all.alpha_intra_s = inside ? p->cl.nvlink_lat_s : p->cl.net_lat_s;
		ls.all.bw_intra_Bps = inside ? p->cl.nvlink_bw_Bps : p->cl.net_bw_Bps;
	} else {
		ls.all.alpha_inter_s = p->cl.net_lat_s;
		ls.all.bw_inter_Bps = p->cl.net_bw_Bps;
	}
	return coll_ring.time_s(&plan, &ls);
}

/* Parameters a rank of the first stage holds: L / pp layers (its share of
 * the experts), the embedding, and the head too without a pipeline. */
static double rank_params(const struct par_planner *p, const struct par_layout *l)
{
	const struct par_model *m = &p->m;
	double layers = 0;
	for (unsigned i = 0; i < m->layers; i++)
		layers += par_layer_is_moe(m, i)
				  ? par_moe_layer_params(m) - m->moe.experts * par_expert_params(m) *
					    (1 - 1.0 / l->ep)
				  : par_layer_params(m);
	double params = layers / l->pp + par_embedding_params(m) +
			(l->pp == 1 ? par_head_params(m) : 0);
	return params / l->tp;
}

/*
 * A stage's cost for the schedule's closed forms: its forward and backward
 * per micro-batch, of sum exactly `stage`. The backward is the larger share
 * (between half the stage and all of it; outside that, half), so that
 * stage - bwd is exact (Sterbenz) and fwd + bwd gives stage bit for bit.
 */
static struct par_stage_cost stage_cost(double stage, double bwd)
{
	if (!(bwd >= stage / 2 && bwd <= stage))
		bwd = stage / 2;
	return (struct par_stage_cost){ .fwd_s = stage - bwd, .bwd_s = bwd };
}

/* The estimate of a candidate its step resolved (st). */
static int estimate(struct par_planner *p, struct par_candidate *c, const struct par_step *st)
{
	const struct par_layout *l = &c->layout;
	const struct par_model *m = &p->m;
	int moe = m->moe.experts > 0;
	uint32_t mbs = st->micro_batches, v = st->d.vpp;
	uint32_t per = m->layers / l->pp, D = st->dpn;
	const struct shape sh = shape_of(p, l->tp, c->micro_batch, l->cp, l->sp, c->recompute, 0, 1);
	const struct shape eh = moe ? shape_of(p, l->tp, c->micro_batch, l->cp, l->sp,
					       c->recompute, 1, l->ep) : sh;
	const struct shape *s = &sh, *e = &eh;
	double frac = moe ? 1.0 / (m->moe.every ? m->moe.every : 1) : 0;
	double T = (double)p->tr.seq / l->cp * c->micro_batch, act_bytes = 2 * T * m->hidden;
	double tp = 4 * ring_s(p, SIM_COLL_ALLREDUCE, act_bytes, l->tp, 1);
	double a2a = moe && l->ep > 1 ? 4 * ring_s(p, SIM_COLL_REDUCESCATTER,
						   2 * T * m->moe.top_k * m->hidden, l->ep, 0) : 0;
	double layer = (1 - frac) * (s->fwd + s->bwd) + frac * (e->fwd + e->bwd + a2a) + tp;
	double p2p = l->pp > 1 ? 2 * (p->cl.net_lat_s + act_bytes / p->cl.net_bw_Bps) : 0;
	double stage = per * layer + p2p;
	const struct par_schedule_ops *sched = st->schedule;
	struct par_stage_cost cost = stage_cost(stage, per * ((1 - frac) * s->bwd +
					frac * (e->bwd + a2a / 2) + tp / 2) + p2p / 2);
	/* Memory: the model states (the strategy's closed form), the first
	 * stage's micro-batches in flight (the schedule's). */
	const struct par_dp_strategy *dps = st->strategy;
	double params = rank_params(p, l);
	double grads = par_grad_bytes(p->tr.precision, p->base.ddp.fp32_grads) * params;
	struct par_dp_costs dc = {
		.layout = l, .params = params, .dp = D, .precision = p->tr.precision,
		.optimizer = p->tr.optimizer, .micro_batches = mbs,
		.allreduce_s = ring_s(p, SIM_COLL_ALLREDUCE, grads, D, 0),
		.backward_s = per * (s->bwd + tp / 2), .stage_s = stage,
		.gather_calls = s->zero3_calls,
		.call_s = ring_s(p, SIM_COLL_ALLGATHER, 0, D, 0),
	};
	struct par_dp_mem dm;
	dps->plan_memory(&dc, &dm);
	double inflight = sched->in_flight(l->pp, 0, mbs, v);
	double act = inflight * per * s->act + (s->act_peak - s->act);
	double logits = 4 * T * m->vocab / l->tp;
	c->peak_bytes = dm.states + act + (l->pp == 1 ? logits : 0) + dm.buffers;
	if (c->peak_bytes > p->capacity)
		return 1 + PAR_DROP_MEMORY;
	/* Time: the pipeline, the exposed DP reduction (the strategy's closed
	 * form), the optimizer on the rank's share. */
	double phase = sched->pipeline_s(l->pp, mbs, v, &cost);
	double exposed = dps->exposed_s(&dc);
	struct par_op opt = { .name = par_kernel_name(PAR_K_ADAM, PAR_PART_FWD),
			      .kernel = PAR_K_ADAM, .cls = PAR_OP_MEMBOUND,
			      .bytes = 28 * params /
				       (dps->flags & PAR_DP_SHARDS_OPTIMIZER ? D : 1) };
	c->bubble_s = sched->bubble_s(l->pp, mbs, v, &cost);
	c->exposed_s = exposed;
	c->step_s = phase + exposed + par_compute_time_s(p->cm, &opt);
	return 0;
}

int par_plan_estimate(struct par_planner *p, struct par_candidate *c)
{
	/* The simulator's own checks and derivation (step.h, par_step_derive:
	 * par_step_resolve without its arrays): what it refuses, the planner
	 * drops as invalid. */
	struct par_training tr = p->tr;
	tr.micro_batch = c->micro_batch, tr.recompute = c->recompute;
	const struct par_train t = {
		.model = &p->m, .training = &tr, .layout = &c->layout, .cluster = &p->cl,
	};
	struct par_step st;
	char err[512];
	if (par_step_derive(&st, &t, err, sizeof(err)) < 0)
		return 1 + PAR_DROP_INVALID;
	return estimate(p, c, &st);
}

static int by_step(const void *a, const void *b)
{
	const struct par_candidate *x = a, *y = b;
	return x->step_s < y->step_s ? -1 : x->step_s > y->step_s;
}

/* Powers of two from 1 up to max. */
static uint32_t pow2s(uint32_t max, uint32_t *out, uint32_t cap)
{
	uint32_t n = 0;
	for (uint32_t x = 1; x <= max && n < cap; x *= 2)
		out[n++] = x;
	return n;
}

/* Divisors of x from 1 up to max, ascending. */
static uint32_t divisors(uint32_t x, uint32_t max, uint32_t *out, uint32_t cap)
{
	uint32_t n = 0;
	for (uint32_t d = 1; d <= x && d <= max && n < cap; d++)
		if (x % d == 0)
			out[n++] = d;
	return n;
}

void par_plan_each(struct par_planner *p, void (*fn)(void *ctx, struct par_candidate *c),
		   void *ctx)
{
	uint32_t tps[16], cps[16], pps[64], mbs[64], vpps[16], eps[16], ntp, ncp, npp, nep;
	uint32_t gpn = p->cl.kind == TOPO_IDEAL ? 1 : p->cl.gpus_per_node;
	ntp = pow2s(gpn > 64 ? 64 : gpn, tps, 16);
	ncp = pow2s(16, cps, 16);
	nep = p->m.moe.experts ? pow2s(p->m.moe.experts, eps, 16) : (eps[0] = 1, 1);
	npp = divisors(p->m.layers, p->m.layers, pps, 64);
	/* Chunks need the interleaved schedule; one chunk a stage keeps the
	 * scenario's schedule, 1F1B for an interleaved one. */
	int inter_i = par_schedule_find("interleaved"), f1b1_i = par_schedule_find("1f1b");
	BUG_ON(inter_i < 0 || f1b1_i < 0);
	uint32_t inter = (uint32_t)inter_i, f1b1 = (uint32_t)f1b1_i;
	for (uint32_t a = 0; a < ntp; a++)
	for (uint32_t b = 0; b < ncp; b++)
	for (uint32_t d = 0; d < npp; d++) {
		uint64_t mp = (uint64_t)tps[a] * cps[b] * pps[d];
		if (p->gpus % mp)
			continue;
		uint32_t dp = (uint32_t)(p->gpus / mp);
		/* Micro-batches: every divisor of a replica's share of the batch
		 * (up to 64 sequences); virtual stages: every divisor of a
		 * stage's layers (up to 16), with a pipeline only. */
		uint32_t nmb = p->tr.global_batch % dp ? (mbs[0] = 1, 1)
			     : divisors(p->tr.global_batch / dp, 64, mbs, 64);
		uint32_t nv = pps[d] > 1 ? divisors(p->m.layers / pps[d], 16, vpps, 16)
					 : (vpps[0] = 1, 1);
		for (uint32_t vi = 0; vi < nv; vi++)
		for (uint32_t ei = 0; ei < nep; ei++)
		for (uint32_t mi = 0; mi < nmb; mi++)
		for (uint32_t z = 0; z < 4; z++)
		for (int rc = 0; rc < 3; rc++)
		for (int sp = 0; sp < (tps[a] > 1 ? 2 : 1); sp++) {
			/* With flash attention there is no attention core to keep, so
			 * selective recomputation is the same layout as none. */
			if (rc == PAR_RECOMPUTE_SELECTIVE && p->tr.flash_attention)
				continue;
			struct par_candidate k = { .layout = p->base, .micro_batch = mbs[mi],
						   .recompute = (enum par_recompute)rc };
			struct par_layout *l = &k.layout;
			l->tp = tps[a], l->cp = cps[b], l->pp = pps[d], l->vpp = vpps[vi];
			l->dp = dp, l->ep = eps[ei], l->zero = z;
			l->sp = sp, l->fsdp.enabled = false, l->strategy = 0;  /* by zero */
			l->schedule = l->vpp > 1 ? inter : p->base.schedule == inter ? f1b1
				      : p->base.schedule;
			fn(ctx, &k);
		}
	}
}

/* What par_plan gathers while the candidates go by. */
struct gather {
	struct par_planner *p;
	struct par_candidate *c;
	size_t n, cap;
	uint64_t *dropped, *total;
};

static void gather_one(void *ctx, struct par_candidate *k)
{
	struct gather *g = ctx;
	(*g->total)++;
	struct par_planner *p = g->p;
	for (size_t i = 0; i < p->nrules; i++)
		p->rules[i].matched += par_plan_key_value(k, p->rules[i].key) == p->rules[i].value;
	if (p->nrules && !par_plan_rules_pass(p->rules, p->nrules, k)) {
		g->dropped[PAR_DROP_RULES]++;
		return;
	}
	int why = par_plan_estimate(g->p, k);
	if (why) {
		g->dropped[why - 1]++;
		return;
	}
	if (g->n == g->cap)
		g->c = xreallocarray(g->c, g->cap *= 2, sizeof(*g->c));
	g->c[g->n++] = *k;
}

size_t par_plan(struct par_planner *p, struct par_candidate **out, uint64_t dropped[],
		uint64_t *total)
{
	memset(dropped, 0, PAR_DROP_NCAUSES * sizeof(uint64_t));
	*total = 0;
	struct gather g = { .p = p, .cap = 1024, .dropped = dropped, .total = total };
	g.c = xmalloc(g.cap * sizeof(*g.c));
	par_plan_each(p, gather_one, &g);
	struct par_candidate *c = g.c;
	size_t n = g.n;
	qsort(c, n, sizeof(*c), by_step);
	*out = c;
	return n;
}
