/*
 * memory.c - what a resolved step needs before anything runs: the memory of
 * each stage's busiest rank from its program (model states from the start,
 * SPEC C11, C12, then every memory change in program order), the MoE
 * routing figures, the goodput inputs, and the checks only a built program
 * or its groups show (par_train_plan).
 */
#include "parallel/train-int.h"
#include "parallel/moe.h"

#include <string.h>

/* ---- memory ------------------------------------------------------------------ */

/* scenarios/calibration/h200/memory.csv (tools/measure_memory.py, H200,
 * PyTorch 2.11, CUDA 13.0, NCCL 2.28.9, expandable segments): the context
 * after the first tensor plus the growth at the first bf16 matmul and the
 * first causal attention; a one-rank communicator's growth at its first
 * all-reduce (the buffers NCCL adds per peer and channel need two GPUs to
 * measure and are not counted); the largest slack over five shapes. */
const double par_reserve_context_B = 6.48872e+08 + 6.9206e+07 + 8.38861e+06;
const double par_reserve_nccl_B = 5.85105e+08;
const double par_reserve_slack = 0.0324793;

void par_memory_reserve(const struct topo_config *cl, const struct par_dims *d, bool moe,
			double peak, struct par_reserve *out)
{
	*out = (struct par_reserve){ 0 };
	if (cl->memory_reserve_set) {
		out->total = cl->memory_reserve_B, out->set = true;
		return;
	}
	uint32_t dpn = d->dp * d->cp, ep = d->ep ? d->ep : 1;
	out->communicators = (d->tp > 1) + (d->cp > 1) + (d->pp > 1) + (dpn > 1) +
			     (moe && ep > 1) + (moe && dpn / ep > 1);
	out->context = par_reserve_context_B;
	out->nccl = out->communicators * par_reserve_nccl_B;
	out->slack = par_reserve_slack * peak;
	out->total = out->context + out->nccl + out->slack;
}

void par_b_static_memory(const struct builder *b, double bytes[PAR_MEM_NCATS])
{
	b->dp->memory(b, bytes);
}

/* Walk every memory change in program order: the peak and its breakdown. */
static void memory_peak(const struct par_step *s, const double held[PAR_MEM_NCATS],
			const struct sim_program *prog, struct par_memory *out)
{
	double now[PAR_MEM_NCATS], total = 0;
	memcpy(now, held, sizeof(now));
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
	out->capacity = topo_gpu_find(s->t->cluster->gpu)->mem_bytes;
	par_memory_reserve(s->t->cluster, &s->d, s->t->model->moe.experts > 0, out->peak,
			   &out->reserve);
	out->fits = out->peak + out->reserve.total <= out->capacity;
}

static void report_static(const struct par_step *s, struct par_report *r)
{
	const struct par_train *t = s->t;
	memset(r, 0, sizeof(*r));
	r->dp = s->d.dp;
	r->gpus = s->gpus;
	r->micro_batches = s->micro_batches;
	r->params = par_model_params(t->model);
	r->flops_per_token = par_flops_per_token_causal(t->model, t->training->seq);
	r->strategy = s->strategy->name;
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

int par_train_plan(struct par_step *s, struct par_report *out, char *err, size_t errlen)
{
	const struct par_train *t = s->t;
	report_static(s, out);
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
	for (uint32_t st = 0; st < s->d.pp; st++) {
		double held[PAR_MEM_NCATS];
		struct par_memory m;
		const struct sim_program *prog = par_step_program(s, st, 0, held);
		memory_peak(s, held, prog, &m);
		if (st == 0 || m.peak > out->memory.peak) {
			out->memory = m;
			out->busiest_stage = st;
		}
		if (st == 0 && t->layout->offload.enabled) {
			struct par_states ms;
			par_step_states(s, 0, par_dp_zero_stage(s->strategy), &ms);
			out->offload.saved_bytes = ms.optimizer;
			for (uint32_t i = 0; i < prog->stream_n[STREAM_HOST]; i++)
				out->offload.host_s += sim_ps_to_s(
					prog->ops[prog->stream_ops[STREAM_HOST][i]].dur_ps);
		}
	}
	/* What only the simulation builds is checked where it would run: a
	 * refused program (refused below if it fits), the explicit algorithms
	 * on the groups. */
	if (!out->memory.fits)
		return 0;
	if (s->refused_most > 0)
		return sim_errf(err, errlen, "%s", s->refused);
	return par_check_algorithms(s, err, errlen);
}
