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
#include "sim/sim.h"
#include "sim/util.h"

/* Kernel times of one layer for one shape, forward and backward. */
enum { PAR_PLAN_LAYER_GRADS = 24, PAR_PLAN_PROFILE = 48 };

struct shape {
	uint32_t tp, mb, cp, ep;
	uint8_t sp, rc, moe;
	uint8_t ov;               /* parallel.tp_overlap (with sp)           */
	double load;              /* an MoE layer's: the busiest EP rank's
				   * routed tokens over the even share      */
	uint8_t moe_recomputed;   /* its experts rerun in the backward      */
	double fwd, bwd;          /* seconds of kernels                     */
	double wgt;               /* of bwd, the weight-gradient GEMMs'      */
	double head_wgt;          /* of head, its backward's dW GEMM          */
	double tp_fwd, tp_bwd;    /* of tensor-parallel collectives          */
	double slow_fwd, slow_bwd;  /* what the kernels lose beside a kernel
				   * of `blocks` CUDA blocks (interference) */
	unsigned blocks;
	double embed, head;       /* the embedding's and the LM head's (with
				   * the loss) kernels and TP collectives,
				   * forward and backward                  */
	double embed_fwd, head_fwd;  /* of them, the forward's             */
	/* compute.interference beside one CUDA block (a pipeline message):
	 * each kernel of a layer's forward [0] and backward [1], when it
	 * starts (seconds into the layer) and what it and the kernels before
	 * it lose if communication moves as they start; len, the layer's time. */
	double prof_at[2][PAR_PLAN_PROFILE], prof_loss[2][PAR_PLAN_PROFILE], prof_len[2];
	unsigned nprof[2];
	double act, act_peak;     /* bytes kept per layer, and during its bwd */
	double zero3_calls;       /* ZeRO-3's all-gathers of a micro-batch of
				   * every layer (dp_shard.c's modules)    */
	struct par_dps_fetch zero3;  /* a dense layer's modules and their
				   * kernels (n 0: none; layers unset)     */
	/* The gradient bytes of each tensor a layer's backward completes, in
	 * its order (the builder's par_dpb_grads calls). */
	double grads[PAR_PLAN_LAYER_GRADS];
	unsigned ngrads;
	double expert_grads;      /* an MoE layer's routed experts': reduced
				   * apart (par_dp_chunk.expert_bytes)   */
	double head_grads[4], embed_grads;  /* the LM head's backward, the
				   * embedding's (its own; with the head's
				   * when tied)                            */
	unsigned nhead_grads;
};

/* The buckets of the rank of stage 0 of a (tp, sp, ep, pp, vpp): chunk j's
 * as dp_bucket.c closes them in its last backward. */
struct grad_plan {
	uint32_t tp, ep, pp, vpp;
	uint8_t sp;
	double cap;
	struct par_dp_chunk *chunk;   /* [vpp], after_s 0 */
};

/* The MoE routing load a (ep, pp, vpp) runs at (moe_load_of). */
struct moe_stage_load {
	uint32_t ep, pp, vpp;
	double load;
};

/* A schedule's stage 0 after each chunk's last backward: its order among
 * the chunks' last backwards, and the passes that follow it. */
struct sched_tail {
	const struct par_schedule_ops *sched;
	uint32_t pp, m, vpp;
	uint32_t *order;              /* [vpp]: the chunk whose last backward is k-th */
	double *fwd, *bwd, *inp, *wgt;  /* [vpp] by chunk: forward, backward, and a
				       * split backward's input and weight passes
				       * of a chunk after it                    */
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
	struct grad_plan *gplans;
	size_t ngplans, capgplans;
	struct sched_tail *tails;
	size_t ntails, captails;
	struct par_dp_chunk *chunks;  /* a candidate's, with after_s */
	double *beside;               /* its chunks' reductions beside the backward */
	size_t capchunks;
	double *vs_cost;              /* pipeline_run_s's virtual stages */
	size_t capvs;
	struct par_sched_plan *sched_plan;  /* its last schedule's actions */
	bool interference;            /* par_planner_set_interference   */
	struct par_plan_rule *rules;
	size_t nrules;
	uint64_t seed;                /* sim.seed: the MoE routing (moe.c)    */
	struct moe_stage_load *loads;
	size_t nloads, caploads;
	/* The simulator's closed forms of collectives on this cluster: a sim
	 * of its GPUs with a group for each kind of group of a layout asked
	 * for, and the times asked for so far. */
	struct topo *topo;
	struct sim *probe;
	struct probe_group *groups;
	size_t ngroups, capgroups;
	struct probe_time *times;
	size_t ntimes, captimes;    /* open addressing, captimes a power of 2 */
};

/* The groups of a layout the estimate asks about: rank 0's. */
enum probe_kind { PROBE_TP, PROBE_CP, PROBE_DP, PROBE_EP, PROBE_EDP };

struct probe_group {
	enum probe_kind kind;
	struct par_dims d;
	uint32_t id;
};

struct probe_time {
	uint32_t group;             /* + 1; 0: empty                       */
	uint32_t op;
	double bytes, s;
};

struct par_planner *par_planner_new(const struct par_model *m, const struct par_training *tr,
				    const struct par_layout *base, const struct topo_config *cl,
				    uint32_t gpus, const struct par_compute_model *cm,
				    uint64_t seed, char *err, size_t errlen)
{
	struct topo_config c = *cl;
	if (c.kind != TOPO_IDEAL)
		c.nodes = gpus / c.gpus_per_node;
	struct topo *t = topo_new(&c, gpus, err, errlen);
	if (!t)
		return NULL;
	struct par_planner *p = xcalloc(1, sizeof(*p));
	p->m = *m, p->tr = *tr, p->base = *base, p->cl = c, p->gpus = gpus, p->cm = cm;
	p->seed = seed;
	p->interference = par_compute_has_interference(cm);
	p->capacity = topo_gpu_find(cl->gpu)->mem_bytes;
	struct sim_config sc;
	sim_config_init(&sc);
	sc.fidelity = SIM_FIDELITY_ANALYTIC;
	sc.algos = coll_algos;
	sc.auto_nccl = base->algo_auto == 0;
	p->topo = t;
	p->probe = sim_new(&sc, gpus, topo_sim_ops(), t);
	topo_attach(t, p->probe);
	return p;
}

void par_planner_set_interference(struct par_planner *p, bool on)
{
	p->interference = on && par_compute_has_interference(p->cm);
	p->ncache = 0;   /* the shapes' kernel times count it */
}

void par_planner_free(struct par_planner *p)
{
	if (!p)
		return;
	sim_free(p->probe);
	topo_free(p->topo);
	free(p->groups);
	free(p->times);
	free(p->cache);
	for (size_t i = 0; i < p->ngplans; i++)
		free(p->gplans[i].chunk);
	free(p->gplans);
	for (size_t i = 0; i < p->ntails; i++) {
		free(p->tails[i].order);
		free(p->tails[i].fwd);
		free(p->tails[i].bwd);
		free(p->tails[i].inp);
		free(p->tails[i].wgt);
	}
	free(p->tails);
	free(p->chunks);
	free(p->beside);
	free(p->vs_cost);
	par_schedule_plan_free(p->sched_plan);
	free(p->loads);
	free(p);
}

/* ---- collectives: the simulator's closed forms ------------------------------ */

static int dims_eq(const struct par_dims *a, const struct par_dims *b)
{
	return a->tp == b->tp && a->cp == b->cp && a->pp == b->pp && a->dp == b->dp &&
	       a->ep == b->ep;
}

/* The probe's group of kind k of a layout (rank 0's), added when first
 * asked for; its members as the step's groups have them (place.c). */
static uint32_t group_size(enum probe_kind k, const struct par_layout *l)
{
	switch (k) {
	case PROBE_TP: return l->tp;
	case PROBE_CP: return l->cp;
	case PROBE_EP: return l->ep;
	case PROBE_EDP: return l->dp * l->cp / l->ep;
	case PROBE_DP: break;
	}
	return l->dp * l->cp;
}

static uint32_t probe_group(struct par_planner *p, enum probe_kind k, const struct par_layout *l)
{
	struct par_dims d = { .tp = l->tp, .cp = l->cp, .pp = l->pp, .dp = l->dp,
			      .ep = k == PROBE_EP || k == PROBE_EDP ? l->ep : 1, .vpp = 1 };
	/* Only the dimensions that shape the group tell groups apart. */
	if (k == PROBE_TP)
		d.cp = d.pp = d.dp = 1;
	if (k == PROBE_CP)
		d.pp = d.dp = 1;
	for (size_t i = 0; i < p->ngroups; i++)
		if (p->groups[i].kind == k && dims_eq(&p->groups[i].d, &d))
			return p->groups[i].id;
	uint32_t n = group_size(k, l);
	struct par_dims full = { .tp = l->tp, .cp = l->cp, .pp = l->pp, .dp = l->dp, .ep = 1,
				 .vpp = 1 };
	uint32_t *ranks = xmalloc(n * sizeof(*ranks));
	for (uint32_t i = 0; i < n; i++) {
		struct par_coords c = { 0 };
		if (k == PROBE_TP)
			c.tp = i;
		else if (k == PROBE_CP)
			c.cp = i;
		else {  /* DP over DP x CP; expert groups its first ep; the
			 * expert-data-parallel group every ep-th (place.c) */
			uint32_t j = k == PROBE_EDP ? i * l->ep : i;
			c.cp = j % l->cp, c.dp = j / l->cp;
		}
		ranks[i] = par_rank_of(&full, &c);
	}
	uint32_t id = sim_group_add(p->probe, ranks, n);
	free(ranks);
	if (p->ngroups == p->capgroups) {
		p->capgroups = p->capgroups ? 2 * p->capgroups : 16;
		p->groups = xreallocarray(p->groups, p->capgroups, sizeof(*p->groups));
	}
	p->groups[p->ngroups++] = (struct probe_group){ .kind = k, .d = d, .id = id };
	return id;
}

static size_t time_slot(const struct par_planner *p, uint32_t g, uint32_t op, double bytes)
{
	uint64_t b;
	memcpy(&b, &bytes, sizeof(b));
	uint64_t h = (b ^ ((uint64_t)g << 40) ^ ((uint64_t)op << 56)) * 0x9E3779B97F4A7C15ull;
	return (size_t)(h >> 20) & (p->captimes - 1);
}

/*
 * A collective of `bytes` on a layout's group of kind k, alone on its
 * links: the simulator's closed form (sim_coll_time_s) with the scenario's
 * algorithm, or the one `auto` picks there. Memoized.
 */
static double coll_s(struct par_planner *p, enum sim_coll_op op, double bytes, enum probe_kind k,
		     const struct par_layout *l)
{
	uint32_t n = group_size(k, l);
	if (n < 2)
		return 0;
	uint32_t g = probe_group(p, k, l);
	if (2 * (p->ntimes + 1) > p->captimes) {   /* grow, rehash */
		struct probe_time *old = p->times;
		size_t oldcap = p->captimes;
		p->captimes = oldcap ? 2 * oldcap : 1024;
		p->times = xcalloc(p->captimes, sizeof(*p->times));
		for (size_t i = 0; i < oldcap; i++)
			if (old[i].group) {
				size_t j = time_slot(p, old[i].group - 1, old[i].op, old[i].bytes);
				while (p->times[j].group)
					j = (j + 1) & (p->captimes - 1);
				p->times[j] = old[i];
			}
		free(old);
	}
	size_t j = time_slot(p, g, op, bytes);
	for (; p->times[j].group; j = (j + 1) & (p->captimes - 1))
		if (p->times[j].group == g + 1 && p->times[j].op == op && p->times[j].bytes == bytes)
			return p->times[j].s;
	double t = sim_coll_time_s(p->probe, g, p->base.algo[op], op, bytes, 0);
	if (isnan(t))   /* the scenario's algorithm cannot run here: the run says */
		t = sim_coll_time_s(p->probe, g, NULL, op, bytes, 0);
	p->times[j] = (struct probe_time){ .group = g + 1, .op = op, .bytes = bytes, .s = t };
	p->ntimes++;
	return t;
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
	[PAR_PK_SCHEDULE] = "schedule", [PAR_PK_TP_OVERLAP] = "tp_overlap",
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
	case PAR_PK_SCHEDULE: return l->schedule;
	case PAR_PK_TP_OVERLAP: return l->tp > 1 && l->sp && l->tp_overlap;
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
	/* (not a key --set is refused for: it sets the schedule tried beside
	 * ZB-H1) */
	if (k < 0 && !strcmp(key, "parallel.schedule"))
		k = PAR_PK_SCHEDULE;
	/* (nor this: it sets what the plan uses unless a rule names it) */
	if (k < 0 && !strcmp(key, "parallel.tp_overlap"))
		k = PAR_PK_TP_OVERLAP;
	if (k < 0 && strcmp(key, "parallel.strategy") && strcmp(key, "parallel.fsdp.enabled"))
		k = par_plan_key_of_scenario(key);
	if (k < 0)
		return sim_errf(err, errlen, "option %s: unknown key '%s': expected tp, sp, pp, vpp, "
				"cp, ep, dp, zero, micro_batch (mb), recompute, schedule or "
				"tp_overlap", opt, key);
	const char *v = eq + 1;
	*r = (struct par_plan_rule){ .key = (enum par_plan_key)k, .exclude = exclude };
	if (k == PAR_PK_SP || k == PAR_PK_TP_OVERLAP) {
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
	if (k == PAR_PK_SCHEDULE) {
		int i = par_schedule_find(v);
		if (i >= 0) {
			r->value = (uint32_t)i;
			return 0;
		}
		char names[256] = "";
		for (unsigned j = 0; j < par_schedule_count(); j++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 j ? ", " : "", par_schedule(j)->name);
		return sim_errf(err, errlen, "option %s: schedule: expected one of %s, got '%s'", opt,
				names, v);
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
	if (r->key == PAR_PK_SP || r->key == PAR_PK_TP_OVERLAP)
		snprintf(buf, len, "%s=%s", par_plan_key_name(r->key), r->value ? "true" : "false");
	else if (r->key == PAR_PK_RECOMPUTE)
		snprintf(buf, len, "recompute=%s", r->value < 3 ? rc_names[r->value] : "?");
	else if (r->key == PAR_PK_SCHEDULE)
		snprintf(buf, len, "schedule=%s", r->value < par_schedule_count()
						  ? par_schedule(r->value)->name : "?");
	else
		snprintf(buf, len, "%s=%u", par_plan_key_name(r->key), r->value);
}

const char *par_plan_family_name(unsigned i)
{
	static const char *const names[PAR_PLAN_NFAMILIES] = {
		"no pipeline", "pipeline", "interleaved pipeline", "ZeRO-3",
		"replicated parameters", "context parallel", "expert parallel",
		"zero-bubble pipeline", "overlapped TP", "blocking TP",
	};
	return i < PAR_PLAN_NFAMILIES ? names[i] : "?";
}

bool par_plan_in_family(unsigned i, const struct par_candidate *c)
{
	const struct par_layout *l = &c->layout;
	switch (i) {
	case 0: return l->pp == 1;
	case 1: return l->pp > 1 && l->vpp == 1 && !par_schedule(l->schedule)->splits;
	case 2: return l->vpp > 1;
	case 3: return l->zero == 3;
	case 4: return l->zero < 3;
	case 5: return l->cp > 1;
	case 6: return l->ep > 1;
	case 7: return l->pp > 1 && par_schedule(l->schedule)->splits;
	case 8: return l->tp > 1 && l->sp && l->tp_overlap;
	case 9: return l->tp > 1 && !(l->sp && l->tp_overlap);
	default: return false;
	}
}

bool par_plan_can_split(const struct par_model *m, const struct par_training *tr,
			const struct par_candidate *c)
{
	const struct par_layout *l = &c->layout;
	const struct par_dp_strategy *s = par_dp_strategy_of(l);
	uint64_t per = (uint64_t)l->dp * c->micro_batch;
	return l->pp > 1 && l->vpp == 1 && !m->moe.experts && s && (s->flags & PAR_DP_PIPELINE) &&
	       !(s->flags & PAR_DP_SHARDS_PARAMS) && per && tr->global_batch / per >= l->pp;
}

bool par_plan_same_layout(const struct par_candidate *a, const struct par_candidate *b)
{
	for (int k = 0; k < PAR_PK_N; k++)
		if (par_plan_key_value(a, (enum par_plan_key)k) !=
		    par_plan_key_value(b, (enum par_plan_key)k))
			return false;
	return true;
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

/* A message of n bytes between neighbours of a group: NVLink when the
 * group is inside a node, else the network. */
static double hop_s(const struct par_planner *p, double n, int inside)
{
	return inside ? p->cl.nvlink_lat_s + n / p->cl.nvlink_bw_Bps
		      : p->cl.net_lat_s + n / p->cl.net_bw_Bps;
}

/* Whether a group of n consecutive ranks lies inside one NVLink domain. */
static int inside_node(const struct par_planner *p, uint64_t n)
{
	return p->cl.kind != TOPO_IDEAL && n <= p->cl.gpus_per_node;
}

/* A message of n bytes sent beside kernel o (hop_s): with
 * compute.interference, a transfer inside a node runs slower beside it (the
 * send's and the receive's blocks; the engine slows NVLink transfers only). */
static double hop_beside_s(const struct par_planner *p, double n, int inside,
			   const struct par_op *o)
{
	double t = hop_s(p, n, inside);
	if (!p->interference || !inside)
		return t;
	double lat = p->cl.nvlink_lat_s;
	return lat + (t - lat) * par_comm_interference(p->cm, o, 2);
}

/*
 * One attention op under context parallelism, as cp.c runs it, on the CP
 * rank with the most to do (the last, for contiguous blocks). Ring: round
 * k computes its share of a full block while the next K/V block travels,
 * so a round takes the longer of the two (the last round sends nothing).
 * Ulysses: an all-to-all in and one out around attention over the whole
 * sequence for heads / cp, nothing overlapped.
 */
static double cp_attention_s(const struct par_planner *p, const struct par_op *o,
			     const struct par_training *local, uint32_t tp, uint32_t cp, int bwd)
{
	int inside = inside_node(p, (uint64_t)tp * cp);
	const struct par_model *m = &p->m;
	if (p->base.cp_algo == PAR_CP_ULYSSES) {
		double heads = (double)m->heads / tp, kv = (double)m->kv_heads / tp;
		double c = local->seq, bt = local->micro_batch;
		double qkv = 2.0 * bt * c * (heads + 2 * kv) * m->head_dim;
		double out = 2.0 * bt * c * heads * m->head_dim;
		/* pairwise: each rank sends (cp-1)/cp of its buffer */
		double a2a = (cp - 1) * hop_s(p, (qkv + out) / cp, inside);
		return par_compute_time_s(p->cm, o) * cp + a2a;
	}
	struct par_cp_ring sz;
	par_cp_ring_sizes(m, local, tp, bwd, &sz);
	struct par_op r = *o;
	r.bytes = sz.q_bytes + sz.kv_bytes;
	double send = hop_s(p, sz.kv_bytes, inside), t = 0;
	for (uint32_t k = 0; k < cp; k++) {
		double share = par_cp_ring_share(p->base.cp_algo, cp - 1, k), c = 0, sk = send;
		if (share > 0) {
			r.flops = share * sz.full_flops;
			c = par_compute_time_s(p->cm, &r);
			/* The block travels beside the round's attention: with
			 * compute.interference each slows the other. */
			if (p->interference && k + 1 < cp) {
				sk = hop_beside_s(p, sz.kv_bytes, inside, &r);
				c *= par_compute_interference(p->cm, &r, 2);
			}
		}
		t += k + 1 < cp && sk > c ? sk : c;
	}
	return t;
}

/* Sum of kernel times of a list; attention under context parallelism as
 * cp.c runs it (cp_attention_s). */
static double kernels_s(const struct par_planner *p, const struct par_op *ops, size_t n,
			const struct par_training *local, uint32_t tp, uint32_t cp, int moe)
{
	double s = 0;
	for (size_t i = 0; i < n; i++) {
		if (moe && par_kernel_is_mlp(ops[i].kernel))
			continue;
		if (ops[i].cls == PAR_OP_ATTENTION && cp > 1)
			s += cp_attention_s(p, &ops[i], local, tp, cp, ops[i].part != PAR_PART_FWD);
		else
			s += par_compute_time_s(p->cm, &ops[i]);
	}
	return s;
}

/* What a list's kernels lose beside communication holding `blocks` CUDA
 * blocks (par_compute_interference, as the engine slows them). */
static double slowed_s(const struct par_planner *p, const struct par_op *ops, size_t n, int moe,
		       unsigned blocks)
{
	if (!blocks || !p->interference)
		return 0;
	double s = 0;
	for (size_t i = 0; i < n; i++)
		if (!(moe && par_kernel_is_mlp(ops[i].kernel)))
			s += par_compute_time_s(p->cm, &ops[i]) *
			     (par_compute_interference(p->cm, &ops[i], blocks) - 1);
	return s;
}

/* The kernels of an MoE layer's MLP at a load (moe.c), forward or backward. */
static double experts_s(const struct par_planner *p, const struct par_training *local,
			uint32_t tp, uint32_t ep, double load, enum par_phase ph)
{
	struct par_op ops[16];
	double s = 0;
	for (int part = 0; part < 3; part++) {
		size_t n = par_moe_ops(&p->m, local, tp, ep, load, part, ph, ops, ARRAY_SIZE(ops));
		s += kernels_s(p, ops, n, local, tp, 1, 0);
	}
	return s;
}

/*
 * What a kernel's collective adds to it when parallel.tp_overlap pipelines
 * the two (tp.c, SPEC C30): t pieces of the kernel (par_tp_piece, each
 * timed as the GEMM it is) beside t - 1 ring steps of bytes / t to the next
 * TP rank, c + (t-1) max(c, step) less the whole kernel's Tc.
 * With compute.interference the pieces run as the engine runs them: a
 * piece that starts while a step moves is slowed whole by f, the steps
 * beside the pieces by the NVLink factor; the first piece starts alone.
 * The all-gather's steps run back to back and piece k waits for step
 * k - 1: a piece that starts before the ring's end, as the next step
 * begins, runs beside it. The reduce-scatter's pieces run back to back and
 * step k waits for piece k and step k - 1: a piece runs beside the step
 * its predecessor started with it only where the ring is behind. (Which of
 * two ops due at one instant the engine starts first follows the order of
 * the ranks' events, so a piece due as a step starts is slowed on some
 * ranks and not on others: such a tie counts half.)
 */
static double tp_overlap_extra_s(const struct par_planner *p, const struct par_op *o,
				 double bytes, uint32_t tp, int gather)
{
	int inside = inside_node(p, tp);
	struct par_op piece;
	par_tp_piece(o, tp, p->tr.precision, &piece);
	double kernel = par_compute_time_s(p->cm, o), c = par_compute_time_s(p->cm, &piece);
	double step = hop_beside_s(p, bytes / tp, inside, &piece);
	if (!p->interference)
		return par_tp_overlap_s(tp, c * tp, step) - kernel;
	double slow = c * par_compute_interference(p->cm, &piece, 2), at = c, ring = 0;
	double eps = 1e-12 * (kernel + tp * step);
	double tie = (c + slow) / 2;
	if (gather) {
		double end = (tp - 1) * step;   /* the last step's end */
		for (uint32_t k = 1; k < tp; k++) {
			double start = fmax(at, k * step);  /* its chunk in, or the piece before */
			/* beside the ring; as a step begins (the chunk came just
			 * now, and step k follows unless this is the last): a tie */
			int chunk = start <= k * step + eps;
			at = start + (start > end + eps || (chunk && k == tp - 1) ? c
				      : chunk ? tie : slow);
		}
		return at - kernel;
	}
	for (uint32_t k = 1; k < tp; k++) {
		/* piece k: beside step k - 2 if it still moves, else step k - 1
		 * starts with it (a tie) */
		int behind = ring > at + eps;
		ring = fmax(at, ring) + step;   /* step k - 1: piece k - 1's chunk */
		at += behind ? slow : tie;
	}
	return fmax(at, ring) - kernel;
}

/* One op's tensor-parallel collectives (tp.c's rules), each alone on the
 * TP group's links: the step waits for every one; with ov, those
 * parallel.tp_overlap pipelines with the kernel cost what they add to it. */
static double op_tp_s(struct par_planner *p, const struct par_op *o, enum par_phase ph,
		      const struct par_training *local, uint32_t tp, int sp, int ov)
{
	if (tp < 2)
		return 0;
	struct par_layout l = { .tp = tp, .cp = 1, .pp = 1, .dp = 1, .ep = 1 };
	double tokens = (double)local->seq * local->micro_batch, t = 0;
	enum sim_coll_op op[8];
	double bytes[8];
	unsigned k = par_tp_op_colls(o, ph, sp, tokens, p->m.hidden, op, bytes, 8);
	int pipelined = ov && sp && par_tp_overlaps(o);
	for (unsigned j = 0; j < k; j++)
		t += pipelined ? tp_overlap_extra_s(p, o, bytes[j], tp, op[j] == SIM_COLL_ALLGATHER)
			       : coll_s(p, op[j], bytes[j], PROBE_TP, &l);
	return t;
}

/* The tensor-parallel collectives around a list's kernels (op_tp_s). */
static double tp_comm_s(struct par_planner *p, const struct par_op *ops, size_t n,
			enum par_phase ph, const struct par_training *local, uint32_t tp, int sp,
			int ov, int moe)
{
	double t = 0;
	for (size_t i = 0; i < n; i++)
		if (!(moe && par_kernel_is_mlp(ops[i].kernel)))
			t += op_tp_s(p, &ops[i], ph, local, tp, sp, ov);
	return t;
}

/* One op's kernel, as kernels_s times it (attention under context
 * parallelism as cp.c runs it). */
static double op_kernel_s(const struct par_planner *p, const struct par_op *o,
			  const struct par_training *local, uint32_t tp, uint32_t cp)
{
	return o->cls == PAR_OP_ATTENTION && cp > 1
		       ? cp_attention_s(p, o, local, tp, cp, o->part != PAR_PART_FWD)
		       : par_compute_time_s(p->cm, o);
}


/*
 * A dense layer's ZeRO-3 modules and the kernels between them (struct
 * par_dps_fetch): each op's kernel and tensor-parallel collectives, as
 * kernels_s and tp_comm_s count them, given to the module whose begin
 * (dp_shard.c's rule: a forward or recomputed GEMM, a backward's input
 * gradient) last came before it; a layer's ops before its first module to
 * its last, as the next layer's follow it. No modules (f->n 0) where the
 * forward's and backward's do not pair as the builder's fetches do.
 */
static void zero3_modules(struct par_planner *p, const struct par_training *local, uint32_t tp,
			  uint32_t cp, int sp, int ov, struct par_dps_fetch *f)
{
	struct par_op ops[64];
	memset(f, 0, sizeof(*f));
	for (int ph = 0; ph < 2; ph++) {
		enum par_phase phase = ph ? PAR_BWD : PAR_FWD;
		size_t n = par_layer_ops_sp(&p->m, local, tp, sp, phase, ops, ARRAY_SIZE(ops));
		double *seg = ph ? f->bwd : f->fwd, lead = 0;
		unsigned k = 0, max = ph ? ARRAY_SIZE(f->bwd) : ARRAY_SIZE(f->fwd);
		for (size_t i = 0; i < n; i++) {
			const struct par_op *o = &ops[i];
			int begins = o->cls == PAR_OP_GEMM &&
				     (!ph || o->recompute || o->part != PAR_PART_DW);
			if (begins) {
				if (k == max)
					goto none;
				if (!ph)
					f->mod[k] = o->k * o->n;
				else if (!o->recompute)
					f->grads[k] = o->k * o->n;
				seg[k++] = 0;
			}
			double t = op_kernel_s(p, o, local, tp, cp) +
				   op_tp_s(p, o, phase, local, tp, sp, ov);
			if (k)
				seg[k - 1] += t;
			else
				lead += t;
		}
		if (!k)
			goto none;
		seg[k - 1] += lead;
		if (ph)
			f->nb = k;
		else
			f->n = k;
	}
	if (f->nb != f->n && f->nb != 2 * f->n)
		goto none;
	return;
none:
	memset(f, 0, sizeof(*f));
}

/*
 * A layer's kernels as the pipeline's messages find them (struct shape's
 * prof_*): in order, each op's start (its kernel and its tensor-parallel
 * collectives before it, as kernels_s and tp_comm_s count them) and its
 * loss beside one block (par_compute_interference). An MoE layer's
 * experts are left out, as kernels_s leaves them.
 */
static void interference_profile(struct par_planner *p, const struct par_training *local,
				 uint32_t tp, uint32_t cp, int sp, int ov, int moe, struct shape *s)
{
	struct par_op ops[64];
	for (int ph = 0; ph < 2; ph++) {
		enum par_phase phase = ph ? PAR_BWD : PAR_FWD;
		size_t n = par_layer_ops_sp(&p->m, local, tp, sp, phase, ops, ARRAY_SIZE(ops));
		double at = 0;
		unsigned k = 0;
		for (size_t i = 0; i < n; i++) {
			const struct par_op *o = &ops[i];
			if (moe && par_kernel_is_mlp(o->kernel))
				continue;
			int ring = o->cls == PAR_OP_ATTENTION && cp > 1;
			double t = op_kernel_s(p, o, local, tp, cp);
			at += op_tp_s(p, o, phase, local, tp, sp, ov);
			if (k < PAR_PLAN_PROFILE && !ring) {   /* losses summed */
				s->prof_at[ph][k] = at;
				s->prof_loss[ph][k] = (k ? s->prof_loss[ph][k - 1] : 0) +
						      t * (par_compute_interference(p->cm, o, 1) - 1);
				k++;
			}
			at += t;
		}
		s->nprof[ph] = k, s->prof_len[ph] = at;
	}
}

/* The kernel times and activations of one shape, from the cache (by value:
 * the cache moves as it grows). */
static struct shape shape_of(struct par_planner *p, uint32_t tp, uint32_t mb, uint32_t cp,
				    int sp, int ov, enum par_recompute rc, int moe, uint32_t ep,
				    double load, unsigned blocks)
{
	ov = ov && sp && tp > 1;
	for (size_t i = 0; i < p->ncache; i++) {
		const struct shape *c = &p->cache[i];
		if (c->tp == tp && c->mb == mb && c->cp == cp && c->sp == sp && c->ov == ov &&
		    c->rc == rc &&
		    c->moe == moe && c->ep == ep && c->load == load && c->blocks == blocks)
			return *c;
	}
	struct par_training local = p->tr;
	local.micro_batch = mb, local.seq = p->tr.seq / cp, local.recompute = rc;
	struct par_op ops[64];
	struct shape s = { .tp = tp, .mb = mb, .cp = cp, .ep = ep, .sp = (uint8_t)sp, .ov = (uint8_t)ov,
			   .rc = (uint8_t)rc, .moe = (uint8_t)moe, .load = load, .blocks = blocks };
	size_t n = par_layer_ops_sp(&p->m, &local, tp, sp, PAR_FWD, ops, ARRAY_SIZE(ops));
	double efwd = moe ? experts_s(p, &local, tp, ep, load, PAR_FWD) : 0;
	s.fwd = kernels_s(p, ops, n, &local, tp, cp, moe) + efwd;
	s.tp_fwd = tp_comm_s(p, ops, n, PAR_FWD, &local, tp, sp, ov, moe);
	s.slow_fwd = slowed_s(p, ops, n, moe, blocks);
	n = par_layer_ops_sp(&p->m, &local, tp, sp, PAR_BWD, ops, ARRAY_SIZE(ops));
	/* A recomputed MLP reruns the whole MoE forward (builder.c). */
	for (size_t i = 0; moe && i < n; i++)
		if (ops[i].recompute && par_kernel_is_mlp(ops[i].kernel))
			s.moe_recomputed = 1;
	s.bwd = kernels_s(p, ops, n, &local, tp, cp, moe) +
		(moe ? experts_s(p, &local, tp, ep, load, PAR_BWD) : 0) +
		(s.moe_recomputed ? efwd : 0);
	s.tp_bwd = tp_comm_s(p, ops, n, PAR_BWD, &local, tp, sp, ov, moe);
	s.slow_bwd = slowed_s(p, ops, n, moe, blocks);
	for (size_t i = 0; i < n; i++)   /* what a split backward's weight pass runs */
		if (ops[i].part == PAR_PART_DW && !ops[i].recompute &&
		    !(moe && par_kernel_is_mlp(ops[i].kernel)))
			s.wgt += par_compute_time_s(p->cm, &ops[i]);
	double ge = par_grad_bytes(p->tr.precision, p->base.ddp.fp32_grads);
	if (moe) {   /* the MoE block's backward: shared experts, experts, router */
		struct par_op eo[16];
		for (int part = 3; part-- > 0;) {
			size_t k = par_moe_ops(&p->m, &local, tp, ep, 1, part, PAR_BWD, eo,
					       ARRAY_SIZE(eo));
			for (size_t i = 0; i < k; i++) {
				if (!(eo[i].params > 0))
					continue;
				if (eo[i].expert)
					s.expert_grads += ge * eo[i].params;
				else if (s.ngrads < ARRAY_SIZE(s.grads))
					s.grads[s.ngrads++] = ge * eo[i].params;
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		if (ops[i].params > 0 && !(moe && par_kernel_is_mlp(ops[i].kernel)) &&
		    s.ngrads < ARRAY_SIZE(s.grads))
			s.grads[s.ngrads++] = ge * ops[i].params;
	/* The first stage's embedding, the last stage's head and loss. */
	for (int ph = 0; ph < 2; ph++) {
		enum par_phase phase = ph ? PAR_BWD : PAR_FWD;
		n = par_embed_ops(&p->m, &local, tp, phase, ops, ARRAY_SIZE(ops));
		s.embed += kernels_s(p, ops, n, &local, tp, 1, 0) +
			   tp_comm_s(p, ops, n, phase, &local, tp, sp, ov, 0);
		n = par_head_ops(&p->m, &local, tp, phase, ops, ARRAY_SIZE(ops));
		s.head += kernels_s(p, ops, n, &local, tp, 1, 0) +
			  tp_comm_s(p, ops, n, phase, &local, tp, sp, ov, 0);
		if (!ph)
			s.embed_fwd = s.embed, s.head_fwd = s.head;
		for (size_t i = 0; ph && i < n; i++)
			if (ops[i].params > 0 && s.nhead_grads < ARRAY_SIZE(s.head_grads))
				s.head_grads[s.nhead_grads++] = ge * ops[i].params;
		for (size_t i = 0; ph && i < n; i++)
			if (ops[i].part == PAR_PART_DW && !ops[i].recompute)
				s.head_wgt += par_compute_time_s(p->cm, &ops[i]);
	}
	n = par_embed_ops(&p->m, &local, tp, PAR_BWD, ops, ARRAY_SIZE(ops));
	for (size_t i = 0; i < n; i++)
		s.embed_grads += ge * ops[i].params;
	s.act = par_layer_activation_bytes(&p->m, &local, tp, sp);
	s.act_peak = par_layer_activation_peak_bytes(&p->m, &local, tp, sp);
	if (moe) {   /* what passes.c keeps of an MoE layer */
		double kept = par_moe_layer_activation_bytes(&p->m, &local, tp, sp, load);
		if (rc == PAR_RECOMPUTE_FULL)
			s.act_peak = kept;
		else
			s.act = kept;
	}
	double mod[64];
	unsigned nm = par_dps_layer_modules(&p->m, &local, tp, sp, mod, ARRAY_SIZE(mod));
	s.zero3_calls = par_dps_gather_calls(mod, nm, p->m.layers, rc == PAR_RECOMPUTE_FULL,
					     p->base.zero3.prefetch_bucket,
					     p->base.zero3.max_live);
	if (!moe)
		zero3_modules(p, &local, tp, cp, sp, ov, &s.zero3);
	if (p->interference)
		interference_profile(p, &local, tp, cp, sp, ov, moe, &s);
	if (p->ncache == p->capcache) {
		p->capcache = p->capcache ? 2 * p->capcache : 64;
		p->cache = xreallocarray(p->cache, p->capcache, sizeof(*p->cache));
	}
	p->cache[p->ncache++] = s;
	return s;
}

/*
 * A pipeline's phase run action by action (par_schedule_run_s): each
 * virtual stage a chunk's forward f and backward b, the first one's with
 * the embedding's, the last one's with the head's and the loss's. The
 * cost arrays live in the planner (p->vs_cost, grown as needed).
 */
/* par_sched_slow's lost: a pass's kernels that start in its first
 * `window` seconds, layer after layer (the shape's profile). */
struct lost_ctx {
	const struct shape *s;
	double window[2], lost[2];   /* the last answer of each phase */
};

static double pipeline_lost_s(void *ctx, enum par_action_kind kind, uint32_t vs, double window)
{
	struct lost_ctx *x = ctx;
	const struct shape *s = x->s;
	(void)vs;
	int ph = kind != PAR_ACT_FORWARD;
	if (window == x->window[ph])   /* most often a whole message: the same */
		return x->lost[ph];
	unsigned n = s->nprof[ph];
	double len = s->prof_len[ph];
	if (!n || !(len > 0))
		return 0;
	double layers = 0, rest = window;
	if (window >= len)
		layers = floor(window / len), rest = window - layers * len;
	unsigned lo = 0, hi = n;   /* the kernels that start before rest */
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		if (s->prof_at[ph][mid] < rest)
			lo = mid + 1;
		else
			hi = mid;
	}
	x->window[ph] = window;
	return x->lost[ph] = layers * s->prof_loss[ph][n - 1] + (lo ? s->prof_loss[ph][lo - 1] : 0);
}

static double pipeline_run_s(struct par_planner *p, const struct par_schedule_ops *sched,
			     uint32_t pp, uint32_t mbs, uint32_t v, double f, double b, double w,
			     const struct shape *s, double hop, const struct par_sched_slow *dp,
			     double *lost)
{
	size_t V = (size_t)pp * v;
	if (p->capvs < 3 * V) {
		p->capvs = 3 * V;
		p->vs_cost = xreallocarray(p->vs_cost, p->capvs, sizeof(double));
	}
	double *fv = p->vs_cost, *bv = fv + V, *wv = bv + V;
	for (size_t i = 0; i < V; i++)
		fv[i] = f, bv[i] = b, wv[i] = w;
	fv[0] += s->embed_fwd, bv[0] += s->embed - s->embed_fwd;
	fv[V - 1] += s->head_fwd, bv[V - 1] += s->head - s->head_fwd;
	/* a split backward's weight pass: the embedding's whole gradient on the
	 * first, the LM head's dW on the last (passes.c) */
	wv[0] += s->embed - s->embed_fwd, wv[V - 1] += s->head_wgt;
	struct lost_ctx x = { .s = s, .window = { -1, -1 } };
	struct par_sched_slow slow = { .lost = p->interference ? pipeline_lost_s : NULL,
				       .ctx = &x };
	if (dp)
		slow.dp_s = dp->dp_s, slow.dp_rate = dp->dp_rate, slow.dp_hop = dp->dp_hop;
	/* The plans go by with (p, m, v) fixed for runs of candidates: keep
	 * the last one's actions. */
	if (!par_schedule_plan_is(p->sched_plan, sched, pp, mbs, v)) {
		par_schedule_plan_free(p->sched_plan);
		p->sched_plan = par_schedule_plan_new(sched, pp, mbs, v);
	}
	return par_schedule_plan_run_s(p->sched_plan, fv, bv, wv, hop,
				       p->interference || dp ? &slow : NULL, lost);
}

/* Of these, its routed experts': L / pp layers' share. */
static double rank_expert_params(const struct par_planner *p, const struct par_layout *l)
{
	const struct par_model *m = &p->m;
	double layers = 0;
	for (unsigned i = 0; i < m->layers; i++)
		if (par_layer_is_moe(m, i))
			layers += (double)m->moe.experts / l->ep * par_expert_params(m);
	return layers / l->pp / l->tp;
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

/*
 * The gradient buckets of stage 0's rank, chunk by chunk, as the builder
 * feeds them to dp_bucket.c in the step's last backward: a chunk's layers
 * in reverse (the head's tensors first when the chunk is the last virtual
 * stage, the embedding's last when it is the first), a bucket closing at
 * `cap` bytes, the chunk's end closing the open one. An MoE layer's
 * routed experts are reduced apart, layer by layer, over the ranks that
 * hold the same experts (moe_step.c). Cached by (tp, sp, ep, pp, vpp, cap).
 */
static const struct par_dp_chunk *grad_plan_of(struct par_planner *p, const struct par_layout *l,
					       uint32_t vpp, double cap, const struct shape *s,
					       const struct shape *e)
{
	for (size_t i = 0; i < p->ngplans; i++) {
		const struct grad_plan *g = &p->gplans[i];
		if (g->tp == l->tp && g->sp == l->sp && g->ep == l->ep && g->pp == l->pp &&
		    g->vpp == vpp && g->cap == cap)
			return g->chunk;
	}
	struct par_dp_chunk *chunk = xcalloc(vpp, sizeof(*chunk));
	uint32_t V = l->pp * vpp;
	for (uint32_t j = 0; j < vpp; j++) {
		struct par_dp_chunk *c = &chunk[j];
		uint32_t vs = j * l->pp, first = 0, count = 0;
		char err[256];
		if (par_stage_layers(l, p->m.layers, vs, &first, &count, err, sizeof(err)) < 0)
			BUG("%s", err);   /* par_step_derive checked the split */
		double open = 0;
		if (vs == V - 1)
			for (unsigned k = 0; k < s->nhead_grads; k++)
				par_dpb_plan_add(c, &open, cap, s->head_grads[k]);
		for (uint32_t i = first + count; i-- > first;) {
			const struct shape *t = par_layer_is_moe(&p->m, i) ? e : s;
			if (t->expert_grads > 0)
				c->expert_bytes = t->expert_grads, c->nexperts++;
			for (unsigned k = 0; k < t->ngrads; k++)
				par_dpb_plan_add(c, &open, cap, t->grads[k]);
		}
		if (vs == 0)
			par_dpb_plan_add(c, &open, cap, s->embed_grads);
		par_dpb_plan_close(c, &open);
	}
	if (p->ngplans == p->capgplans) {
		p->capgplans = p->capgplans ? 2 * p->capgplans : 16;
		p->gplans = xreallocarray(p->gplans, p->capgplans, sizeof(*p->gplans));
	}
	p->gplans[p->ngplans++] = (struct grad_plan){ .tp = l->tp, .sp = (uint8_t)l->sp,
						      .ep = l->ep, .pp = l->pp, .vpp = vpp,
						      .cap = cap, .chunk = chunk };
	return chunk;
}

/*
 * The routing load an MoE layout runs at (moe.c, as the simulation draws
 * it from the seed): each stage's mean over its MoE layers of the busiest
 * EP rank's load, the largest of the stages (the slowest stage sets the
 * pace). Memory takes it too, on the safe side for a lighter first stage.
 * Cached by (ep, pp, vpp).
 */
static double moe_load_of(struct par_planner *p, const struct par_layout *l, uint32_t vpp)
{
	for (size_t i = 0; i < p->nloads; i++) {
		const struct moe_stage_load *c = &p->loads[i];
		if (c->ep == l->ep && c->pp == l->pp && c->vpp == vpp)
			return c->load;
	}
	double load = 0;
	for (uint32_t st = 0; st < l->pp; st++) {
		double sum = 0;
		unsigned n = 0;
		for (uint32_t j = 0; j < vpp; j++) {
			uint32_t first = 0, count = 0;
			char err[256];
			if (par_stage_layers(l, p->m.layers, j * l->pp + st, &first, &count, err,
					     sizeof(err)) < 0)
				BUG("%s", err);   /* par_step_derive checked the split */
			for (uint32_t i = first; i < first + count; i++) {
				if (!par_layer_is_moe(&p->m, i))
					continue;
				struct par_moe_load ld;
				par_moe_load(&p->m, l->ep, p->seed, i, &ld);
				sum += ld.factor, n++;
			}
		}
		if (n)
			load = fmax(load, sum / n);
	}
	if (load == 0)
		load = 1;
	if (p->nloads == p->caploads) {
		p->caploads = p->caploads ? 2 * p->caploads : 16;
		p->loads = xreallocarray(p->loads, p->caploads, sizeof(*p->loads));
	}
	p->loads[p->nloads++] = (struct moe_stage_load){ .ep = l->ep, .pp = l->pp, .vpp = vpp,
							 .load = load };
	return load;
}

/* Stage 0 of a schedule after each chunk's last backward (cached). */
static const struct sched_tail *sched_tail_of(struct par_planner *p,
					      const struct par_schedule_ops *sched, uint32_t pp,
					      uint32_t m, uint32_t vpp)
{
	for (size_t i = 0; i < p->ntails; i++) {
		const struct sched_tail *t = &p->tails[i];
		if (t->sched == sched && t->pp == pp && t->m == m && t->vpp == vpp)
			return t;
	}
	size_t n = sched->nactions(pp, 0, m, vpp);
	struct par_action *a = xmalloc((n ? n : 1) * sizeof(*a));
	sched->actions(pp, 0, m, vpp, a);
	struct sched_tail t = { .sched = sched, .pp = pp, .m = m, .vpp = vpp,
				.order = xcalloc(vpp, sizeof(uint32_t)),
				.fwd = xcalloc(vpp, sizeof(double)),
				.bwd = xcalloc(vpp, sizeof(double)),
				.inp = xcalloc(vpp, sizeof(double)),
				.wgt = xcalloc(vpp, sizeof(double)) };
	/* Walk back: a chunk's last backward is the first one met. */
	uint8_t *seen = xcalloc(vpp, 1);
	double f = 0, b = 0, in = 0, w = 0;
	uint32_t k = vpp;
	for (size_t i = n; i-- > 0;) {
		const struct par_action *x = &a[i];
		int ends = x->kind == PAR_ACT_BACKWARD || x->kind == PAR_ACT_BACKWARD_WEIGHT;
		if (ends && x->chunk < vpp && !seen[x->chunk] && k > 0) {
			seen[x->chunk] = 1;
			t.order[--k] = x->chunk;
			t.fwd[x->chunk] = f, t.bwd[x->chunk] = b;
			t.inp[x->chunk] = in, t.wgt[x->chunk] = w;
		}
		if (x->kind == PAR_ACT_FORWARD)
			f += 1;
		else if (x->kind == PAR_ACT_BACKWARD)
			b += 1;
		else if (x->kind == PAR_ACT_BACKWARD_INPUT)
			in += 1;
		else
			w += 1;
	}
	for (uint32_t c = 0; k > 0 && c < vpp; c++)   /* a chunk with no backward */
		if (!seen[c])
			t.order[--k] = c;
	free(seen);
	free(a);
	if (p->ntails == p->captails) {
		p->captails = p->captails ? 2 * p->captails : 16;
		p->tails = xreallocarray(p->tails, p->captails, sizeof(*p->tails));
	}
	p->tails[p->ntails] = t;
	return &p->tails[p->ntails++];
}

/* The planner's collective over a layout's data-parallel group, for the
 * strategies' closed forms (par_dp_costs.coll_s). */
struct dp_coll_ctx {
	struct par_planner *p;
	const struct par_layout *l;
};

static double dp_coll_s(void *ctx, enum sim_coll_op op, double bytes)
{
	struct dp_coll_ctx *c = ctx;
	return coll_s(c->p, op, bytes, PROBE_DP, c->l);
}

static double edp_coll_s(void *ctx, enum sim_coll_op op, double bytes)
{
	struct dp_coll_ctx *c = ctx;
	return coll_s(c->p, op, bytes, PROBE_EDP, c->l);
}

/* The estimate of a candidate its step resolved (st). */
static int estimate(struct par_planner *p, struct par_candidate *c, const struct par_step *st)
{
	const struct par_layout *l = &c->layout;
	const struct par_model *m = &p->m;
	int moe = m->moe.experts > 0;
	uint32_t mbs = st->micro_batches, v = st->d.vpp;
	uint32_t per = m->layers / l->pp, D = st->dpn;
	/* The blocks of the data-parallel collectives beside the kernels. */
	unsigned blocks = 0;
	if (D > 1 && p->interference) {
		uint32_t g = probe_group(p, PROBE_DP, l);
		char err[256];
		blocks = 0;
		if (!sim_coll_check(p->probe, g, SIM_COLL_ALLGATHER, p->base.algo[SIM_COLL_ALLGATHER],
				    1 << 20, &blocks, err, sizeof(err)) || !blocks)
			blocks = 1;
	}
	const struct shape sh = shape_of(p, l->tp, c->micro_batch, l->cp, l->sp, l->tp_overlap,
					 c->recompute, 0, 1,
					 1, blocks);
	const struct shape eh = moe ? shape_of(p, l->tp, c->micro_batch, l->cp, l->sp,
					       l->tp_overlap, c->recompute, 1, l->ep, moe_load_of(p, l, v),
					       blocks) : sh;
	const struct shape *s = &sh, *e = &eh;
	double frac = moe ? 1.0 / (m->moe.every ? m->moe.every : 1) : 0;
	double T = (double)p->tr.seq / l->cp * c->micro_batch, act_bytes = 2 * T * m->hidden;
	/* Expert dispatch and combine, forward and backward (moe_step.c), the
	 * forward's again where the backward recomputes it. */
	double a2a = moe && l->ep > 1 ? 2 * coll_s(p, SIM_COLL_ALLTOALL,
						   2 * T * m->moe.top_k * m->hidden, PROBE_EP, l) : 0;
	double fwd = (1 - frac) * (s->fwd + s->tp_fwd) + frac * (e->fwd + e->tp_fwd + a2a);
	double bwd = (1 - frac) * (s->bwd + s->tp_bwd) +
		     frac * (e->bwd + e->tp_bwd + a2a * (e->moe_recomputed ? 2 : 1));
	/* Per micro-batch each chunk of a stage receives an activation and a
	 * gradient (passes.c: the TP rank's share with sequence parallelism),
	 * over NVLink where the neighbouring stages share a node and over the
	 * network where they do not (stages placed tp x cp ranks apart, so a
	 * node boundary falls between one neighbour pair in gpn / (tp cp)). */
	uint32_t gpn = p->cl.kind == TOPO_IDEAL ? 1 : p->cl.gpus_per_node;
	uint64_t span = (uint64_t)l->tp * l->cp;
	double msg = act_bytes / (st->sp ? l->tp : 1), p2p = 0, cross = 0;
	if (l->pp > 1) {
		cross = p->cl.kind == TOPO_IDEAL || span >= gpn ? 1
			: span * l->pp <= gpn ? 0 : (double)span / gpn;
		p2p = 2.0 * v * (cross * hop_s(p, msg, 0) + (1 - cross) * hop_s(p, msg, 1));
	}
	/* The embedding on the first stage, the head and loss on the last:
	 * both on one stage without a pipeline, else the larger sets the pace
	 * of the slowest stage. */
	double edges = l->pp == 1 ? s->embed + s->head : fmax(s->embed, s->head);
	double stage = per * (fwd + bwd) + edges;
	const struct par_schedule_ops *sched = st->schedule;
	struct par_stage_cost cost = stage_cost(stage, per * bwd + edges * 2 / 3);
	cost.wgt_s = per * ((1 - frac) * s->wgt + frac * e->wgt);   /* a split backward's W */
	stage += p2p;

	/* Memory: the model states (the strategy's closed form), the first
	 * stage's micro-batches in flight (the schedule's). */
	double params = rank_params(p, l);
	double grads = par_grad_bytes(p->tr.precision, p->base.ddp.fp32_grads) * params;
	/* The gradients' reduction over DP x CP: an all-reduce, or for the
	 * strategies that shard, its reduce-scatter and all-gather halves. */
	const struct par_dp_strategy *dps = st->strategy;
	double allreduce = dps->flags & PAR_DP_SHARDS_OPTIMIZER
				   ? coll_s(p, SIM_COLL_REDUCESCATTER, grads, PROBE_DP, l) +
					     coll_s(p, SIM_COLL_ALLGATHER, grads, PROBE_DP, l)
				   : coll_s(p, SIM_COLL_ALLREDUCE, grads, PROBE_DP, l);
	struct dp_coll_ctx cx = { .p = p, .l = l };
	struct par_dp_costs dc = {
		.layout = l, .params = params, .dp = D, .precision = p->tr.precision,
		.optimizer = p->tr.optimizer, .micro_batches = mbs,
		.allreduce_s = allreduce, .stage_s = stage,
		/* the pass that completes the gradients: a split one's weight pass */
		.backward_s = sched->splits ? cost.wgt_s : per * bwd,
		.gather_calls = s->zero3_calls,
		.gather_passes = c->recompute == PAR_RECOMPUTE_FULL ? 3 : 2,
		.call_s = coll_s(p, SIM_COLL_ALLGATHER, 0, PROBE_DP, l),
		.coll_s = dp_coll_s, .coll_ctx = &cx,
		.expert_params = moe ? rank_expert_params(p, l) : 0, .expert_dp = D / l->ep,
		.expert_coll_s = edp_coll_s,
	};
	/* A dense model's modules for the strategies that gather by module
	 * (ZeRO-3). */
	struct par_dps_fetch z3;
	if (dps->flags & PAR_DP_SHARDS_PARAMS && s->zero3.n && D > 1) {
		z3 = s->zero3;
		z3.layers = per;
		for (unsigned j = 0; j < z3.n; j++)
			z3.kernels_s += per * z3.fwd[j];
		for (unsigned j = 0; j < z3.nb; j++)
			z3.kernels_s += per * z3.bwd[j];
		z3.stage_s = stage;
		dc.fetch = &z3;
	}
	/* The bucketed strategies' chunks, in the order their last backward
	 * ends, each with the stage's passes after it. */
	double ge = par_grad_bytes(p->tr.precision, p->base.ddp.fp32_grads);
	dc.edge_params = (par_embedding_params(m) + (l->pp == 1 ? par_head_params(m) : 0)) / l->tp;
	if (dps->flags & PAR_DP_SHARDS_PARAMS && D > 1)
		dc.last_reduce_bytes = grad_plan_of(p, l, v, p->base.zero3.reduce_bucket * ge, s,
						    e)[0].last;
	if (!(dps->flags & PAR_DP_SHARDS_PARAMS) && D > 1) {
		const struct par_dp_chunk *g = grad_plan_of(p, l, v, p->base.ddp.bucket_bytes, s, e);
		const struct sched_tail *tl = sched_tail_of(p, sched, l->pp, mbs, v);
		if (p->capchunks < v) {
			p->capchunks = v;
			p->chunks = xreallocarray(p->chunks, v, sizeof(*p->chunks));
			p->beside = xreallocarray(p->beside, v, sizeof(*p->beside));
		}
		for (uint32_t k = 0; k < v; k++) {
			uint32_t j = tl->order[k];
			p->chunks[k] = g[j];
			p->chunks[k].after_s = (tl->fwd[j] * cost.fwd_s + tl->bwd[j] * cost.bwd_s +
						tl->inp[j] * (cost.bwd_s - cost.wgt_s) +
						tl->wgt[j] * cost.wgt_s) / v;
		}
		dc.chunk = p->chunks, dc.nchunks = v;
	}
	struct par_dp_mem dm;
	dps->plan_memory(&dc, &dm);
	double inflight = sched->in_flight(l->pp, 0, mbs, v);
	double act = inflight * per * ((1 - frac) * s->act + frac * e->act) +
		     fmax(s->act_peak - s->act, moe ? e->act_peak - e->act : 0);
	/* A split backward with recomputation: each micro-batch whose input
	 * pass has run holds the recomputed full set until its weight pass
	 * (passes.c). Stage s defers s of them, so as the last stage's input
	 * pass ends it holds p full sets: its s = p - 1 deferred and that one. */
	if (sched->splits && c->recompute != PAR_RECOMPUTE_NONE && l->pp > 1)
		act = fmax(act, per * fmin(l->pp, mbs) * s->act_peak);
	double logits = 4 * T * m->vocab / l->tp;
	c->peak_bytes = dm.states + act + (l->pp == 1 ? logits : 0) + dm.buffers;
	struct par_reserve rv;
	par_memory_reserve(&p->cl, &st->d, moe, c->peak_bytes, &rv);
	if (c->peak_bytes + rv.total > p->capacity)
		return 1 + PAR_DROP_MEMORY;
	/* Time: the pipeline, the exposed DP reduction (the strategy's closed
	 * form), the optimizer on the rank's share. */
	double phase = sched->pipeline_s(l->pp, mbs, v, &cost);
	int beside_run = 0;   /* the run slowed the passes beside the reductions */
	/* With a pipeline only the first stage runs the embedding and only
	 * the last the head: the slowest stage paces the steady state, but
	 * the fill and drain pass each stage once at its own time, so the
	 * bubble is the plain stages' and the other edge's (sum_i t_i +
	 * (m - 1) max_i t_i for 1F1B), not p - 1 slowest stages. */
	double bubble = sched->bubble_s(l->pp, mbs, v, &cost);
	if (l->pp > 1) {
		struct par_stage_cost plain = stage_cost(per * (fwd + bwd), per * bwd);
		plain.wgt_s = cost.wgt_s;
		double b = sched->bubble_s(l->pp, mbs, v, &plain) + s->embed + s->head - edges;
		if (b < bubble)
			phase -= bubble - b, bubble = b;
		/* The closed forms take equal stages, each message in turn. The
		 * schedule's actions run on the virtual stages' own costs (the
		 * embedding on the first, the head and loss on the last: in an
		 * interleaved ring the slowest chunk paces the others) with each
		 * message the mean hop, not waited for by its sender, and the
		 * kernels that start beside a moving message slowed: the phase
		 * as the simulator would run it on uncontended links. */
		double hop = p2p / (2.0 * v);
		/* The reductions that run beside the backward, chunk by chunk
		 * on each stage's stream: the passes beside them slowed at the
		 * backward's average loss, the messages sent meanwhile sharing
		 * the network with them (half its bandwidth). */
		struct par_sched_slow dp = { 0 };
		if (D > 1 && dps->beside_s && dc.nchunks && bwd > 0) {
			int any = 0;
			const struct sched_tail *tl = sched_tail_of(p, sched, l->pp, mbs, v);
			for (uint32_t k = 0; k < dc.nchunks; k++) {
				uint32_t j = tl->order[k];
				p->beside[j] = dps->beside_s(&dc, k);
				any |= p->beside[j] > 0;
			}
			if (any) {
				dp.dp_s = p->beside;
				dp.dp_rate = blocks ? ((1 - frac) * s->slow_bwd +
						       frac * e->slow_bwd) / bwd : 0;
				dp.dp_hop = hop + cross * (hop_s(p, msg, 0) - p->cl.net_lat_s);
			}
		}
		double run = pipeline_run_s(p, sched, l->pp, mbs, v, per * fwd / v, per * bwd / v,
					    cost.wgt_s / v, s, hop, dp.dp_s ? &dp : NULL, NULL);
		double closed = phase + mbs * p2p;
		phase = isnan(run) ? closed : run;
		beside_run = dp.dp_s && !isnan(run);
		dc.stage_s += (phase - closed) / mbs;
	}
	/* Interference: the kernels beside data-parallel communication run
	 * slower, at their average loss, for as long as the communication
	 * runs beside them (its busy time less what is exposed) in the
	 * phases it runs in (ZeRO-3, FSDP: forward and backward; the others:
	 * backward). The slowed kernels give the communication that much more
	 * time to hide in: the exposure is taken again with them. */
	double fb = per * ((1 - frac) * (s->fwd + s->bwd) + frac * (e->fwd + e->bwd));
	double bk = per * ((1 - frac) * s->bwd + frac * e->bwd);
	double lose_fb = per * ((1 - frac) * (s->slow_fwd + s->slow_bwd) +
				frac * (e->slow_fwd + e->slow_bwd));
	double lose_bk = per * ((1 - frac) * s->slow_bwd + frac * e->slow_bwd);
	int sharded = (dps->flags & PAR_DP_SHARDS_PARAMS) != 0;
	double slow = 0, exposed = dps->exposed_s(&dc);
	if (blocks && fb > 0 && !beside_run) {
		double rate = sharded ? lose_fb / fb : lose_bk / bk;
		slow = rate * fmax(0, dps->busy_s(&dc) - exposed);
		/* per micro-batch where every one communicates */
		double each = dps->flags & PAR_DP_REDUCE_EVERY_MB ? slow / mbs : slow;
		dc.stage_s += each;
		dc.backward_s += sharded ? each * (lose_fb > 0 ? lose_bk / lose_fb : 0) : each;
		exposed = dps->exposed_s(&dc);
	}
	/* The optimizer over the rank's share: sharded, the dense parameters
	 * over DP x CP, the routed experts over the ranks holding them. */
	double updated = params;
	if (dps->flags & PAR_DP_SHARDS_OPTIMIZER)
		updated = (params - dc.expert_params) / D +
			  dc.expert_params / (dc.expert_dp ? dc.expert_dp : 1);
	struct par_op opt = { .name = par_kernel_name(PAR_K_ADAM, PAR_PART_FWD),
			      .kernel = PAR_K_ADAM, .cls = PAR_OP_MEMBOUND,
			      .bytes = 28 * updated };
	c->bubble_s = bubble;
	c->exposed_s = exposed;
	c->step_s = phase + exposed + slow + par_compute_time_s(p->cm, &opt);
	return 0;
}

int par_plan_check(struct par_planner *p, const struct par_candidate *c, char *err,
		   size_t errlen)
{
	struct par_training tr = p->tr;
	tr.micro_batch = c->micro_batch, tr.recompute = c->recompute;
	const struct par_train t = {
		.model = &p->m, .training = &tr, .layout = &c->layout, .cluster = &p->cl,
	};
	struct par_step st;
	return par_step_derive(&st, &t, err, errlen) < 0 ? -1 : 0;
}

void par_plan_key_set(struct par_candidate *c, enum par_plan_key k, uint32_t v)
{
	struct par_layout *l = &c->layout;
	switch (k) {
	case PAR_PK_TP: l->tp = v; break;
	case PAR_PK_SP: l->sp = v != 0; break;
	case PAR_PK_PP: l->pp = v; break;
	case PAR_PK_VPP: l->vpp = v; break;
	case PAR_PK_CP: l->cp = v; break;
	case PAR_PK_EP: l->ep = v; break;
	case PAR_PK_DP: l->dp = v; break;
	case PAR_PK_MB: c->micro_batch = v; break;
	case PAR_PK_ZERO: l->zero = v; break;
	case PAR_PK_RECOMPUTE: c->recompute = (enum par_recompute)v; break;
	case PAR_PK_SCHEDULE: l->schedule = v; break;
	case PAR_PK_TP_OVERLAP: l->tp_overlap = v != 0; break;
	case PAR_PK_N: BUG("unknown plan key");
	}
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
	 * scenario's schedule, 1F1B for an interleaved one, and is tried with
	 * ZB-H1 too where it can split its backwards. */
	int inter_i = par_schedule_find("interleaved"), f1b1_i = par_schedule_find("1f1b");
	BUG_ON(inter_i < 0 || f1b1_i < 0);
	int zbh1_i = par_schedule_find("zb-h1");
	BUG_ON(zbh1_i < 0);
	uint32_t inter = (uint32_t)inter_i, f1b1 = (uint32_t)f1b1_i, zbh1 = (uint32_t)zbh1_i;
	/* TP overlap: the scenario's, or both where a rule names it (the
	 * estimate of overlapped layouts beside ZeRO-3's gathers and of
	 * blocking ones does not yet rank the two alike: docs/plan.md). */
	int both_ov = 0;
	for (size_t i = 0; i < p->nrules; i++)
		both_ov |= p->rules[i].key == PAR_PK_TP_OVERLAP;
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
		for (int sp = 0; sp < (tps[a] > 1 ? 2 + both_ov : 1); sp++) {
			/* With flash attention there is no attention core to keep, so
			 * selective recomputation is the same layout as none. */
			if (rc == PAR_RECOMPUTE_SELECTIVE && p->tr.flash_attention)
				continue;
			struct par_candidate k = { .layout = p->base, .micro_batch = mbs[mi],
						   .recompute = (enum par_recompute)rc };
			struct par_layout *l = &k.layout;
			l->tp = tps[a], l->cp = cps[b], l->pp = pps[d], l->vpp = vpps[vi];
			l->dp = dp, l->ep = eps[ei], l->zero = z;
			/* sp 2: sequence parallelism with its collectives
			 * overlapped (parallel.tp_overlap) */
			l->sp = sp > 0;
			l->tp_overlap = sp > 0 && (both_ov ? sp == 2 : p->base.tp_overlap);
			/* the scenario's DP overlap options where the stage has
			 * them (ZeRO-1's reduce-scatters; ZeRO-1 and 2's gathers) */
			l->ddp.overlap_grad_reduce = p->base.ddp.overlap_grad_reduce && z == 1;
			l->ddp.overlap_param_gather = p->base.ddp.overlap_param_gather &&
						      (z == 1 || z == 2);
			l->fsdp.enabled = false, l->strategy = 0;  /* by zero */
			l->schedule = l->vpp > 1 ? inter : p->base.schedule == inter ? f1b1
				      : p->base.schedule;
			/* A schedule that splits the backward where the layout
			 * cannot run it (no pipeline, MoE layers, sharded
			 * parameters, fewer micro-batches than stages): 1F1B. */
			int can_split = par_plan_can_split(&p->m, &p->tr, &k);
			if (par_schedule(l->schedule)->splits && !can_split)
				l->schedule = f1b1;
			fn(ctx, &k);
			/* and the zero-bubble schedule beside it */
			if (can_split && !par_schedule(l->schedule)->splits) {
				l->schedule = zbh1;
				fn(ctx, &k);
			}
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
	for (size_t i = 0; i < n; i++)
		c[i].rank = (uint32_t)i + 1;
	*out = c;
	return n;
}
