/*
 * step.c - a training step resolved (step.h): the one check of its layout,
 * the rules of what this version builds in the order a user meets them,
 * each error naming the key to change; then everything the layout
 * derives, once, and its stage programs, each built on first use.
 */
#include "parallel/step.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/dp.h"
#include "parallel/layout.h"
#include "parallel/model.h"
#include "parallel/schedule.h"
#include "parallel/train-int.h"
#include "sim/util.h"

static int check_layout(const struct par_model *m, const struct par_training *tr,
			const struct par_layout *p, const struct topo_config *cl, char *warn,
			size_t warnlen, char *err, size_t errlen)
{
	uint64_t have = topo_config_gpus(cl), mp = (uint64_t)p->tp * p->cp * p->pp;
	if (m->heads % p->tp)
		return sim_errf(err, errlen, "parallel.tp: %u does not divide model.heads (%u)", p->tp,
			    m->heads);
	if (p->tp_overlap && p->tp > 1 && !p->sp)
		return sim_errf(err, errlen, "parallel.tp_overlap: pipelines sequence parallelism's "
				"all-gathers and reduce-scatters with the GEMMs (Megatron's "
				"--tp-comm-overlap needs --sequence-parallel too): set "
				"parallel.sp: true");
	if (m->kv_heads % p->tp && p->tp % m->kv_heads)
		return sim_errf(err, errlen, "parallel.tp: %u and model.kv_heads (%u): one must "
			    "divide the other", p->tp, m->kv_heads);
	if (cl->kind != TOPO_IDEAL && (p->tp > cl->gpus_per_node ||
					       cl->gpus_per_node % p->tp)) {
		char why[256];
		snprintf(why, sizeof(why), "parallel.tp: groups of %u do not fit the NVLink domains "
			 "of %u GPUs (cluster.gpus_per_node)", p->tp, cl->gpus_per_node);
		if (!p->tp_across_nodes)
			return sim_errf(err, errlen, "%s; set parallel.tp_across_nodes: true to "
					"allow it", why);
		if (warn)
			snprintf(warn, warnlen, "%s: tensor parallelism crosses the network", why);
	}
	if (have > TOPO_MAX_RANKS)
		return sim_errf(err, errlen, "cluster: %llu GPUs, at most %u",
			    (unsigned long long)have, TOPO_MAX_RANKS);
	if (!p->dp && (mp > have || have % mp))
		return sim_errf(err, errlen, "parallel.dp: auto needs tp x cp x pp (%llu) to divide the "
			    "cluster's %llu GPUs", (unsigned long long)mp, (unsigned long long)have);
	uint64_t dp = p->dp ? p->dp : have / mp;
	if (dp * mp != have)
		return sim_errf(err, errlen, "parallel: dp x tp x pp x cp = %llu x %u x %u x %u = %llu, "
			    "expected the cluster's %llu GPUs (cluster.nodes x "
			    "cluster.gpus_per_node)", (unsigned long long)dp, p->tp, p->pp, p->cp,
			    (unsigned long long)(dp * mp), (unsigned long long)have);
	if (p->vpp > 1 && (p->pp < 2 || (int)p->schedule != par_schedule_find("interleaved")))
		return sim_errf(err, errlen, "parallel.vpp: %u model chunks per stage need "
			    "parallel.pp >= 2 and parallel.schedule: interleaved", p->vpp);
	if (p->pp > m->layers)
		return sim_errf(err, errlen, "parallel.pp: %u stages for %u layers", p->pp, m->layers);
	if (p->cp > 1 && p->cp_algo == PAR_CP_ULYSSES &&
	    (m->kv_heads < p->tp || (m->kv_heads / p->tp) % p->cp))
		return sim_errf(err, errlen, "parallel.cp: Ulysses splits the %u key/value heads of "
				"each tensor-parallel rank (model.kv_heads %u / parallel.tp %u) over "
				"the CP ranks: %u does not divide them; use cp_algo ring or zigzag",
				m->kv_heads >= p->tp ? m->kv_heads / p->tp : 0, m->kv_heads, p->tp,
				p->cp);
	if (p->cp > 1 && p->cp_algo == PAR_CP_ZIGZAG && tr->seq % (2 * p->cp))
		return sim_errf(err, errlen, "parallel.cp: zig-zag cuts training.seq (%u) into "
				"2 x %u chunks: expected a multiple of %u", tr->seq, p->cp,
				2 * p->cp);
	if (tr->seq % p->cp)
		return sim_errf(err, errlen, "parallel.cp: %u does not divide training.seq (%u)", p->cp,
			    tr->seq);
	if (m->moe.experts && m->moe.experts % p->ep)
		return sim_errf(err, errlen, "parallel.ep: %u does not divide model.moe.experts (%u)",
			    p->ep, m->moe.experts);
	if ((dp * p->cp) % p->ep)
		return sim_errf(err, errlen, "parallel.ep: %u does not divide dp x cp (%llu)", p->ep,
			    (unsigned long long)(dp * p->cp));
	return 0;
}

/* Pipeline: layers split over (virtual) stages, the schedule's constraints;
 * strategies that do not combine with a pipeline. */
static int check_pipeline(const struct par_model *model, const struct par_layout *p, uint32_t m,
			  char *err, size_t errlen)
{
	uint32_t first, count, v = p->vpp ? p->vpp : 1;
	for (uint32_t vs = 0; vs < p->pp * v; vs++)
		if (par_stage_layers(p, model->layers, vs, &first, &count, err, errlen) < 0)
			return -1;
	const struct par_schedule_ops *sched = par_schedule(p->schedule);
	if (sched->check(p->pp, m, v, err, errlen) < 0)
		return -1;
	/* A split backward runs a layer's dX and dW apart (passes.c): not
	 * modelled for an MoE block, run as one unit, nor for the strategies
	 * that gather parameters around one backward. */
	if (sched->splits && model->moe.experts)
		return sim_errf(err, errlen, "parallel.schedule: %s splits each backward into its "
				"input and weight gradients, which is not modelled for mixture-of-"
				"experts layers (model.moe.experts %u): use 1f1b or interleaved",
				sched->name, model->moe.experts);
	const struct par_dp_strategy *dps = par_dp_strategy_of(p);
	if (sched->splits && dps && (dps->flags & PAR_DP_SHARDS_PARAMS))
		return sim_errf(err, errlen, "parallel.schedule: %s splits each backward into its "
				"input and weight gradients, which is not modelled for %s (it "
				"gathers the parameters around one backward): use ddp or zero1, or "
				"parallel.schedule 1f1b", sched->name, dps->title);
	return par_dp_check_layout(p, err, errlen);  /* what the strategy cannot run */
}

static int check_batch(const struct par_model *model, const struct par_training *t,
		       const struct par_layout *l, const struct topo_config *cl, char *err,
		       size_t errlen)
{
	uint64_t mp = (uint64_t)l->tp * l->cp * l->pp;
	uint32_t dp = l->dp ? l->dp : (uint32_t)(topo_config_gpus(cl) / mp);
	if (t->global_batch % dp)
		return sim_errf(err, errlen, "training.global_batch: %u sequences do not split over "
			    "%u data-parallel replicas", t->global_batch, dp);
	uint32_t per = t->global_batch / dp;
	if (per % t->micro_batch)
		return sim_errf(err, errlen, "training.micro_batch: %u does not divide the %u sequences "
			    "of each replica (global_batch / dp)", t->micro_batch, per);
	/* Each micro-batch is ops in every program: memory and time grow with
	 * their count, so it is bounded. */
	if (per / t->micro_batch > PAR_MAX_MICRO_BATCHES)
		return sim_errf(err, errlen, "training.global_batch: %u sequences over %u replicas "
				"of micro-batches of %u are %u micro-batches per replica: at most %u "
				"(raise training.micro_batch or the data-parallel size)",
				t->global_batch, dp, t->micro_batch, per / t->micro_batch,
				PAR_MAX_MICRO_BATCHES);
	return check_pipeline(model, l, per / t->micro_batch, err, errlen);
}

int par_layout_check(const struct par_model *m, const struct par_training *tr,
		     const struct par_layout *l, const struct topo_config *cl, char *warn,
		     size_t warnlen, char *err, size_t errlen)
{
	if (check_layout(m, tr, l, cl, warn, warnlen, err, errlen) < 0)
		return -1;
	return check_batch(m, tr, l, cl, err, errlen);
}

/* What the step cannot run beyond its layout's own rules: the
 * data-parallel strategy's checks with the model and cluster, expert
 * parallelism without experts, sim.symmetry and variability. */
static int check_train(const struct par_train *t, uint32_t dp, char *err, size_t errlen)
{
	const struct par_layout *l = t->layout;
	const struct par_dp_env env = {
		.layout = l, .model = t->model, .cluster = t->cluster, .dp = dp,
	};
	if (par_dp_check(&env, err, errlen) < 0)  /* what the strategy cannot run */
		return -1;
	if (t->symmetry_dp && t->model->moe.experts)
		return sim_errf(err, errlen, "sim.symmetry: dp needs data-parallel replicas that "
				"behave alike, and a mixture of experts routes each replica's tokens "
				"differently (expert groups span replicas); use sim.symmetry none");
	if (l->ep > 1 && !t->model->moe.experts)
		return sim_errf(err, errlen, "parallel.ep: expert parallelism needs an MoE model "
				"(model.moe.experts)");
	if (t->var && t->symmetry_dp && (t->var->jitter || t->var->gpu || t->var->stragglers))
		return sim_errf(err, errlen, "sim.symmetry: dp needs data-parallel replicas that "
				"behave alike, and variability draws every GPU's own times; use "
				"sim.symmetry none");
	if (t->host && t->compute && !par_compute_has_host(t->compute))
		return sim_errf(err, errlen, "compute.host: eager needs a calibration table with "
				"host.csv (compute.efficiency names one; the h200 table has it); use "
				"none");
	if (t->interference && t->compute && !par_compute_has_interference(t->compute))
		return sim_errf(err, errlen, "compute.interference: measured needs a calibration "
				"table with interference.csv (compute.efficiency names one; the h200 "
				"table has it); use none");
	if (t->var && t->var->stragglers > (uint32_t)topo_config_gpus(t->cluster))
		return sim_errf(err, errlen, "variability.stragglers: %u stragglers, but the "
				"cluster has %u GPUs", t->var->stragglers, (uint32_t)topo_config_gpus(t->cluster));
	return 0;
}

double par_step_layer_params(const struct par_step *s, int l)
{
	const struct par_model *m = s->t->model;
	if (l < 0)
		return (par_embedding_params(m) + par_head_params(m)) / s->d.tp;
	if (!par_layer_is_moe(m, (unsigned)l))
		return par_layer_params(m) / s->d.tp;
	/* An MoE layer: the rank holds experts / ep of the routed experts. */
	double ep = s->t->layout->ep ? s->t->layout->ep : 1, e = par_expert_params(m);
	return (par_moe_layer_params(m) - m->moe.experts * e * (1 - 1 / ep)) / s->d.tp;
}

double par_step_layer_expert_params(const struct par_step *s, int l)
{
	const struct par_model *m = s->t->model;
	if (l < 0 || !par_layer_is_moe(m, (unsigned)l))
		return 0;
	double ep = s->t->layout->ep ? s->t->layout->ep : 1;
	return m->moe.experts / ep * par_expert_params(m) / s->d.tp;
}

uint32_t par_step_expert_shard(const struct par_step *s)
{
	uint32_t ep = s->d.ep ? s->d.ep : 1;
	return s->shard >= ep ? s->shard / ep : 1;
}

void par_step_states(const struct par_step *s, uint32_t stage, unsigned zero,
		     struct par_states *out)
{
	const struct par_training *tr = s->t->training;
	par_moe_model_states(s->stage_params[stage], s->stage_expert_params[stage], tr->precision,
			     tr->optimizer, zero, s->shard, par_step_expert_shard(s),
			     s->t->layout->ddp.fp32_grads, out);
}

/*
 * A rank of stage `stage`'s parameters in forward order, piece by piece:
 * per model chunk, the embedding (-1) on the first virtual stage, the
 * chunk's layers, the head (-2) on the last (with tied embeddings and a
 * pipeline, the last stage keeps its own copy of the embedding, as Megatron
 * does).
 */
void par_step_each_param(const struct par_step *s, uint32_t stage,
			 void (*fn)(void *ctx, int piece, double params), void *ctx)
{
	const struct par_model *m = s->t->model;
	uint32_t V = s->d.pp * s->d.vpp;
	for (unsigned c = 0; c < s->d.vpp; c++) {
		uint32_t vs = c * s->d.pp + stage;
		uint32_t first = s->layer_first[vs], count = s->layer_count[vs];
		if (vs == 0)
			fn(ctx, -1, par_embedding_params(m) / s->d.tp);
		for (uint32_t l = first; l < first + count; l++)
			fn(ctx, (int)l, par_step_layer_params(s, (int)l));
		if (vs == V - 1)
			fn(ctx, -2, (par_head_params(m) + (m->tied_embeddings && V > 1
							    ? par_embedding_params(m) : 0)) / s->d.tp);
	}
}

struct stage_sum {
	const struct par_step *s;
	double params, experts;
};

static void add_params(void *ctx, int piece, double params)
{
	struct stage_sum *a = ctx;
	a->params += params;
	a->experts += par_step_layer_expert_params(a->s, piece);
}

int par_step_derive(struct par_step *s, const struct par_train *t, char *err, size_t errlen)
{
	const struct par_layout *l = t->layout;
	memset(s, 0, sizeof(*s));
	if (par_layout_check(t->model, t->training, l, t->cluster, NULL, 0, err, errlen) < 0)
		return -1;
	struct par_dims d;
	par_dims_of(l, (uint32_t)topo_config_gpus(t->cluster), &d);
	if (check_train(t, d.dp, err, errlen) < 0)
		return -1;
	s->t = t;
	s->d = d;
	s->gpus = d.dp * d.tp * d.cp * d.pp;
	s->dpn = d.dp * d.cp;
	s->micro_batches = t->training->global_batch / d.dp / t->training->micro_batch;
	s->sp = l->sp && l->tp > 1;
	s->tp_overlap = s->sp && l->tp_overlap;
	s->schedule = par_schedule(l->schedule);
	s->strategy = par_dp_strategy_of(l);
	s->shard = s->strategy->shard ? s->strategy->shard(l, t->cluster, s->dpn) : s->dpn;
	return 0;
}

int par_step_resolve(struct par_step *s, const struct par_train *t, char *err, size_t errlen)
{
	if (par_step_derive(s, t, err, errlen) < 0)
		return -1;
	const struct par_layout *l = t->layout;
	const struct par_dims d = s->d;
	uint32_t V = d.pp * d.vpp;
	s->layer_first = xmalloc(V * sizeof(uint32_t));
	s->layer_count = xmalloc(V * sizeof(uint32_t));
	for (uint32_t vs = 0; vs < V; vs++)
		if (par_stage_layers(l, t->model->layers, vs, &s->layer_first[vs],
				     &s->layer_count[vs], err, errlen) < 0)
			BUG("%s", err);  /* par_layout_check checked the split */
	s->stage_params = xcalloc(d.pp, sizeof(double));
	s->stage_expert_params = xcalloc(d.pp, sizeof(double));
	for (uint32_t st = 0; st < d.pp; st++) {
		struct stage_sum a = { .s = s };
		par_step_each_param(s, st, add_params, &a);
		s->stage_params[st] = a.params, s->stage_expert_params[st] = a.experts;
	}
	s->progs = xcalloc((size_t)d.pp * d.cp, sizeof(*s->progs));
	s->held = xcalloc((size_t)d.pp * d.cp, sizeof(*s->held));
	return 0;
}

const struct sim_program *par_step_program(struct par_step *s, uint32_t stage, uint32_t cpi,
					   double held[PAR_MEM_NCATS])
{
	BUG_ON(stage >= s->d.pp || cpi >= s->d.cp);
	size_t i = (size_t)stage * s->d.cp + cpi;
	if (!s->progs[i]) {
		struct builder b;
		s->progs[i] = par_b_build(s, &b, stage, cpi);
		par_b_static_memory(&b, s->held[i]);
		if (b.refused_most > s->refused_most) {
			s->refused_most = b.refused_most;
			snprintf(s->refused, sizeof(s->refused), "%s", b.refused);
		}
	}
	if (held)
		memcpy(held, s->held[i], sizeof(s->held[i]));
	return s->progs[i];
}

void par_step_free(struct par_step *s)
{
	for (size_t i = 0; s->progs && i < (size_t)s->d.pp * s->d.cp; i++)
		sim_program_free(s->progs[i]);
	free(s->progs);
	free(s->held);
	free(s->layer_first);
	free(s->layer_count);
	free(s->stage_params);
	free(s->stage_expert_params);
	memset(s, 0, sizeof(*s));
}
