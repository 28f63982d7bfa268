/*
 * step.c - the one check of a training step's layout (step.h): the rules
 * of what this version builds, in the order a user meets them; each error
 * names the key to change.
 */
#include "parallel/step.h"

#include <stdio.h>

#include "parallel/dp.h"
#include "parallel/layout.h"
#include "parallel/schedule.h"
#include "sim/util.h"

static int check_layout(const struct par_model *m, const struct par_training *tr,
			const struct par_layout *p, const struct topo_config *cl, char *warn,
			size_t warnlen, char *err, size_t errlen)
{
	uint64_t have = topo_config_gpus(cl), mp = (uint64_t)p->tp * p->cp * p->pp;
	if (m->heads % p->tp)
		return sim_errf(err, errlen, "parallel.tp: %u does not divide model.heads (%u)", p->tp,
			    m->heads);
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
	if (par_schedule(p->schedule)->check(p->pp, m, v, err, errlen) < 0)
		return -1;
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
