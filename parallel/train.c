/*
 * train.c - one training step: resolve it (step.c), plan it (memory.c),
 * place it on a sim (place.c: groups and the programs builder.c writes),
 * run the steps one after another with variability (variability.c) and
 * report step time, MFU and where the critical rank's time went.
 *
 * The step's program of each pipeline stage is shared by the stage's
 * tensor-, context- and data-parallel ranks. builder.c builds it from the
 * schedule's actions (schedule.c): passes.c writes each forward and
 * backward pass, tp.c, cp.c and moe_step.c add tensor-, context- and
 * expert-parallel communication around the model's kernels (model.c,
 * timed by compute.c), the data-parallel strategy (dp_bucket.c: DDP,
 * ZeRO-1, ZeRO-2; dp_shard.c: ZeRO-3, FSDP, HSDP) adds its own through
 * hooks (train-int.h), and optimizer.c the optimizer step.
 */
#include "parallel/train-int.h"
#include "parallel/layout.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const mem_names[PAR_MEM_NCATS] = {
	[PAR_MEM_WEIGHTS] = "weights", [PAR_MEM_GRADS] = "grads",
	[PAR_MEM_OPTIMIZER] = "optimizer", [PAR_MEM_ACTIVATIONS] = "activations",
	[PAR_MEM_LOGITS] = "logits", [PAR_MEM_BUFFERS] = "buffers",
};

const char *par_mem_name(enum par_mem c)
{
	return (unsigned)c < PAR_MEM_NCATS ? mem_names[c] : "?";
}

const char *par_comm_kind_name(enum par_comm_kind k)
{
	static const char *const names[PAR_COMM_NKINDS] = {
		[PAR_COMM_TP] = "tensor/expert parallel", [PAR_COMM_DP] = "data parallel",
		[PAR_COMM_PP] = "pipeline", [PAR_COMM_CP] = "context parallel",
		[PAR_COMM_HOST] = "host copies",
	};
	return (unsigned)k < PAR_COMM_NKINDS ? names[k] : "?";
}

/* The kind of communication a stream carries (train-int.h's streams). */
static enum par_comm_kind stream_kind(unsigned stream)
{
	switch (stream) {
	case STREAM_TP: case STREAM_TP_RECV: return PAR_COMM_TP;
	case STREAM_GRAD: case STREAM_PARAM: return PAR_COMM_DP;
	case STREAM_CP_SEND: case STREAM_CP_RECV: return PAR_COMM_CP;
	case STREAM_HOST: return PAR_COMM_HOST;
	default: return PAR_COMM_PP;
	}
}

/* ---- running ------------------------------------------------------------------------ */

void par_report_rates(const struct par_train *t, struct par_report *r)
{
	double tokens = (double)t->training->global_batch * t->training->seq;
	double peak = par_compute_peak(t->compute);
	r->tokens_per_s = tokens / r->step_time_s;
	r->mfu = r->tokens_per_s * r->flops_per_token / (r->gpus * peak);
	r->hfu = r->tokens_per_s * par_hw_flops_per_token_causal(t->model, t->training) /
		 (r->gpus * peak);
}

/* Totals of every rank when the last step started, for the bubble. */
struct step_marks {
	sim_ps t0;
	sim_ps *compute, *exposed;
};

static void report_run(const struct par_train *t, struct sim *sim, sim_ps total,
		       const struct step_marks *last, struct par_report *r)
{
	uint32_t n = sim_nranks(sim), crit = 0;
	for (uint32_t i = 1; i < n; i++)
		if (sim_rank_end(sim, i) > sim_rank_end(sim, crit))
			crit = i;
	const struct sim_rank_stats *st = sim_rank_stats(sim, crit);
	double steps = t->steps ? t->steps : 1;
	r->critical_rank = crit;
	r->sim_end_ps = sim_now(sim);
	r->events = sim_events(sim);
	r->step_time_s = sim_ps_to_s(total) / steps;
	par_report_rates(t, r);
	r->breakdown.compute_s = sim_ps_to_s(st->compute_ps) / steps;
	r->breakdown.exposed_comm_s = sim_ps_to_s(st->exposed_comm_ps) / steps;
	r->breakdown.interference_s = sim_ps_to_s(st->interference_ps) / steps;
	const sim_ps *by = sim_rank_exposed_by_stream(sim, crit);
	for (unsigned k = 0; by && k < SIM_MAX_STREAMS; k++)
		if (k != SIM_STREAM_COMPUTE)
			r->breakdown.exposed_by[stream_kind(k)] += sim_ps_to_s(by[k]) / steps;
	/* The bubble: the critical rank's idle time from the start of the (last)
	 * step to its last backward kernel, the pipeline phase (SPEC C22). */
	if (t->layout->pp > 1 && st->mark_ps > last->t0) {
		sim_ps phase = st->mark_ps - last->t0;
		sim_ps busy = (st->mark_compute_ps - last->compute[crit]) +
			      (st->mark_exposed_ps - last->exposed[crit]);
		r->pipeline_s = sim_ps_to_s(phase);
		r->breakdown.bubble_s = sim_ps_to_s(phase - busy);
	}
	/* What is left; under a picosecond (the engine's tick) is rounding. */
	double idle = r->step_time_s - r->breakdown.compute_s - r->breakdown.exposed_comm_s -
		      r->breakdown.bubble_s;
	r->breakdown.idle_s = idle < 1e-12 ? 0 : idle;
	double peak_mem = 0;
	for (uint32_t i = 0; i < n; i++)
		if (sim_rank_stats(sim, i)->mem_peak > peak_mem) {
			peak_mem = sim_rank_stats(sim, i)->mem_peak;
			for (int c = 0; c < PAR_MEM_NCATS; c++)
				r->memory.bytes[c] = sim_rank_stats(sim, i)->mem_at_peak[c];
		}
	r->memory.peak = peak_mem;
	struct par_dims d;
	par_dims_of(t->layout, n, &d);
	par_memory_reserve(t->cluster, &d, t->model->moe.experts > 0, peak_mem, &r->memory.reserve);
	r->memory.fits = r->memory.peak + r->memory.reserve.total <= r->memory.capacity;
}

/* Percentiles of the steps' times (each step from its start to its end). */
void par_report_steps(double *step_s, uint32_t n, struct par_report *r)
{
	gsl_sort(step_s, 1, n);
	r->steps = n;
	r->step_min_s = step_s[0];
	r->step_max_s = step_s[n - 1];
	r->step_p50_s = gsl_stats_quantile_from_sorted_data(step_s, 1, n, 0.50);
	r->step_p90_s = gsl_stats_quantile_from_sorted_data(step_s, 1, n, 0.90);
	r->step_p99_s = gsl_stats_quantile_from_sorted_data(step_s, 1, n, 0.99);
}

/* Run the steps one after another (each starts when the last ended); each
 * step's time into step_s. */
static int run_steps(const struct par_train *t, struct sim *sim, const struct par_placed *p,
		     sim_ps *end, struct step_marks *last, double *step_s)
{
	uint32_t n = p->n;
	int rc = 0;
	/* Replica 0 stands for the others: all are marked absent before any
	 * rank starts, since a rank may join a collective as it starts (a
	 * sharded strategy's first gather) and the group's present members
	 * decide whether it has all joined. */
	for (uint32_t r = 0; t->symmetry_dp && r < n; r++) {
		struct par_coords c;
		par_coords_of(&p->d, r, &c);
		if (c.dp != 0)
			sim_rank_absent(sim, r);
	}
	for (uint32_t s = 0; s < (t->steps ? t->steps : 1) && rc == 0; s++) {
		last->t0 = sim_now(sim);
		for (uint32_t r = 0; r < n; r++) {
			if (!sim_rank_present(sim, r))
				continue;
			last->compute[r] = sim_rank_stats(sim, r)->compute_ps;
			last->exposed[r] = sim_rank_stats(sim, r)->exposed_comm_ps;
			par_place_start(p, sim, r);
		}
		rc = sim_run(sim);
		for (uint32_t r = 0; r < n; r++)
			if (sim_rank_end(sim, r) > *end)
				*end = sim_rank_end(sim, r);
		step_s[s] = sim_ps_to_s(*end - last->t0);
	}
	return rc;
}

int par_train_run(const struct par_train *t, struct par_report *out, char *err, size_t errlen)
{
	struct par_step s;
	int rc = par_step_resolve(&s, t, err, errlen);
	if (rc == 0)
		rc = par_train_plan(&s, out, err, errlen);
	if (rc == 0)
		rc = par_train_simulate(&s, out, err, errlen);
	par_step_free(&s);
	return rc;
}

int par_train_simulate(struct par_step *s, struct par_report *out, char *err, size_t errlen)
{
	const struct par_train *t = s->t;
	uint32_t n = out->gpus;
	struct topo *topo = topo_new(t->cluster, n, err, errlen);
	if (!topo)
		return -1;
	struct sim *sim = sim_new(&t->sim, n, topo_sim_ops(), topo);
	topo_attach(topo, sim);
	sim_track_exposed_by_stream(sim);
	if (t->rec)
		sim_set_recorder(sim, t->rec, t->rec_ctx);
	struct par_placed p;
	par_place(&p, s, sim, 0);
	struct step_marks last = {
		.compute = xcalloc(n, sizeof(sim_ps)), .exposed = xcalloc(n, sizeof(sim_ps)),
	};
	struct par_var_state vr = { 0 };
	if (par_var_active(t->var))
		par_var_begin(&vr, t->var, t->seed, sim, out);
	struct par_interf_state is;
	if (t->interference)
		par_interf_begin(&is, t, sim);
	if (t->host)
		par_host_begin(t, sim);
	uint32_t nsteps = t->steps ? t->steps : 1;
	double *step_s = xcalloc(nsteps, sizeof(double));
	sim_ps t0 = sim_now(sim), end = t0;
	int rc = run_steps(t, sim, &p, &end, &last, step_s);
	if (rc < 0) {
		snprintf(err, errlen, "%s", sim_error(sim));
		if (sim_failed_clock(sim))
			rc = PAR_RUN_CLOCK;
	} else {
		report_run(t, sim, end - t0, &last, out);
		out->step_times = NULL;
		if (t->keep_steps) {
			out->step_times = xmalloc(nsteps * sizeof(double));
			memcpy(out->step_times, step_s, nsteps * sizeof(double));
		}
		par_report_steps(step_s, nsteps, out);
	}
	free(step_s);
	par_var_end(&vr, sim);
	if (rc == 0 && t->finish)
		rc = t->finish(t->rec_ctx, sim, topo, err, errlen);
	par_place_free(&p);
	free(last.compute);
	free(last.exposed);
	sim_free(sim);
	topo_free(topo);
	return rc;
}

