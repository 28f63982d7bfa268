/*
 * memory.c - what a layout needs before anything runs: the checks of what
 * this version builds, the memory of each stage's busiest rank from its
 * program (model states from the start, SPEC C11, C12, then every memory
 * change in program order), the MoE routing figures and the goodput
 * inputs (par_train_plan).
 */
#include "parallel/train-int.h"
#include "parallel/moe.h"

#include <string.h>

/* ---- checks and memory ----------------------------------------------------- */

int par_train_check(const struct par_train *t, char *err, size_t errlen)
{
	const struct par_layout *l = t->layout;
	const struct par_dp_env env = {
		.layout = l, .model = t->model, .cluster = t->cluster, .dp = par_dp_of(t),
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
	if (t->var && t->var->stragglers > (uint32_t)topo_config_gpus(t->cluster))
		return sim_errf(err, errlen, "variability.stragglers: %u stragglers, but the "
				"cluster has %u GPUs", t->var->stragglers, (uint32_t)topo_config_gpus(t->cluster));
	return 0;
}

void par_b_static_memory(const struct builder *b, double bytes[PAR_MEM_NCATS])
{
	b->dp->memory(b, bytes);
}

/* Walk every memory change in program order: the peak and its breakdown. */
static void memory_peak(const struct builder *b, const struct sim_program *prog,
			struct par_memory *out)
{
	double now[PAR_MEM_NCATS], total = 0;
	par_b_static_memory(b, now);
	for (int c = 0; c < PAR_MEM_NCATS; c++)
		total += now[c];
	memcpy(out->bytes, now, sizeof(now));
	out->model_states = now[PAR_MEM_WEIGHTS] + now[PAR_MEM_GRADS] + now[PAR_MEM_OPTIMIZER];
	out->peak = total;
	for (uint32_t i = 0; i < prog->nops; i++) {
		const struct sim_op *op = &prog->ops[i];
		if (op->mem_bytes == 0)
			continue;
		now[op->mem_cat] += op->mem_bytes;
		total += op->mem_bytes;
		if (total > out->peak) {
			out->peak = total;
			memcpy(out->bytes, now, sizeof(now));
		}
	}
	out->capacity = topo_gpu_find(b->t->cluster->gpu)->mem_bytes;
	out->fits = out->peak <= out->capacity;
}

static void report_static(const struct par_train *t, struct par_report *r)
{
	memset(r, 0, sizeof(*r));
	r->dp = par_dp_of(t);
	r->gpus = r->dp * t->layout->tp * t->layout->pp * t->layout->cp;
	r->micro_batches = par_micro_batches(t);
	r->params = par_model_params(t->model);
	r->flops_per_token = par_flops_per_token(t->model, t->training->seq);
	r->strategy = par_dp_strategy_of(t->layout)->name;
}

/* Seconds of the rank's expert kernels (forward and backward) at a load. */
static double expert_time(const struct par_train *t, const struct par_training *local,
			  double factor)
{
	struct par_op ops[16];
	double s = 0;
	for (int ph = 0; ph < 2; ph++) {
		size_t n = par_moe_ops(t->model, local, t->layout->tp, t->layout->ep, factor, 1,
				       (enum par_phase)ph, ops, ARRAY_SIZE(ops));
		for (size_t i = 0; i < n; i++)
			s += par_compute_time_s(t->compute, &ops[i]);
	}
	return s;
}

/* Routing: the mean load of the busiest EP rank, tokens dropped, and what
 * the imbalance adds to a stage's step (the busiest GPU sets the time). */
static void moe_report(const struct par_train *t, struct par_report *r)
{
	const struct par_model *m = t->model;
	if (!m->moe.experts)
		return;
	struct par_training local = *t->training;
	local.seq /= t->layout->cp;
	double f = 0, d = 0, extra = 0, base = expert_time(t, &local, 1);
	unsigned n = 0;
	for (unsigned l = 0; l < m->layers; l++) {
		if (!par_layer_is_moe(m, l))
			continue;
		struct par_moe_load ld;
		par_moe_load(m, t->layout->ep, t->seed, l, &ld);
		f += ld.factor, d += ld.dropped, n++;
		extra += expert_time(t, &local, ld.factor) - base;
	}
	r->moe.imbalance = n ? f / n : 1;
	r->moe.dropped = n ? d / n : 0;
	r->moe.imbalance_s = extra * r->micro_batches / t->layout->pp;
}

int par_train_plan(const struct par_train *t, struct par_report *out, char *err, size_t errlen)
{
	if (par_train_check(t, err, errlen) < 0)
		return -1;
	report_static(t, out);
	moe_report(t, out);
	memset(&out->goodput, 0, sizeof(out->goodput));
	if (t->failures && t->failures->gpu_mtbf_s > 0) {
		/* A checkpoint holds what a restart needs: the weights and the
		 * optimizer states (fp32 master copy included) of the whole model. */
		struct par_states st;
		par_model_states(out->params, t->training->precision, t->training->optimizer, 0, 1,
				 t->layout->ddp.fp32_grads, &st);
		par_goodput_of(t->failures, out->gpus, st.weights + st.optimizer, &out->goodput);
	}
	/* The busiest stage sets the memory: usually the first (1F1B keeps p
	 * micro-batches in flight there, SPEC C23). */
	double gathers = 0;  /* the most of a stage above the limit */
	for (uint32_t s = 0; s < t->layout->pp; s++) {
		struct builder b;
		struct par_memory m;
		struct sim_program *prog = par_b_build(t, &b, s, 0, 0);
		memory_peak(&b, prog, &m);
		if (b.dp->check_program)  /* refused below if it fits */
			b.dp->check_program(&b, &gathers, err, errlen);
		if (s == 0 || m.peak > out->memory.peak) {
			out->memory = m;
			out->busiest_stage = s;
		}
		if (s == 0 && t->layout->offload.enabled) {
			struct par_states st;
			par_model_states(par_b_params(&b), t->training->precision,
					 t->training->optimizer, par_dp_zero_stage(b.dp), b.shard,
					 t->layout->ddp.fp32_grads, &st);
			out->offload.saved_bytes = st.optimizer;
			for (uint32_t i = 0; i < prog->stream_n[STREAM_HOST]; i++)
				out->offload.host_s += sim_ps_to_s(
					prog->ops[prog->stream_ops[STREAM_HOST][i]].dur_ps);
		}
		sim_program_free(prog);
	}
	/* What only the simulation builds is checked where it would run. */
	if (!out->memory.fits)
		return 0;
	return gathers > 0 ? -1 : par_check_algorithms(t, err, errlen);
}
