/*
 * result_text.c - the text form of a run's result (result_text.h): the
 * report's lines of one training step, and the text and JSON of a run of
 * several jobs, written to a FILE *.
 */
#include "parallel/result_text.h"

#include <string.h>

#include "parallel/goodput.h"
#include "parallel/jobs.h"
#include "parallel/result.h"
#include "sim/store.h"

/* ---- one training step ----------------------------------------------------------- */

void par_result_text(FILE *out, const struct par_result_setting *s, const struct par_report *r)
{
	fprintf(out, "  model       %s%s%.2f B parameters, %u layers, hidden %u\n", s->preset,
	       s->preset[0] ? ": " : "", r->params / 1e9, s->layers, s->hidden);
	fprintf(out, "  cluster     %u x %s (%s), %s fidelity%s\n", r->gpus, s->gpu, s->cluster,
	       s->fidelity, s->symmetry_dp ? ", data-parallel replica 0 simulated for all "
	       "(sim.symmetry dp)" : "");
	fprintf(out, "  layout      dp %u (%s), tp %u, pp %u, cp %u; %u micro-batch%s of %u x %u "
	       "tokens per replica\n", r->dp, r->strategy, s->tp, s->pp, s->cp, r->micro_batches,
	       r->micro_batches == 1 ? "" : "es", s->micro_batch, s->seq);
	const struct par_memory *mem = &r->memory;
	/* The model states are what the rank holds from the start; the
	 * breakdown is taken at the peak (with ZeRO-3 and FSDP gathered
	 * parameters and unsharded gradients on top): two different moments. */
	fprintf(out, "  memory      peak %.2f GB of %.2f GB per GPU with %.2f GB reserved: %s; model "
	       "states %.2f GB held from the start\n             at the peak: ", mem->peak / 1e9,
	       mem->capacity / 1e9, mem->reserve.total / 1e9, mem->fits ? "fits" : "OUT OF MEMORY",
	       mem->model_states / 1e9);
	for (int c = 0; c < PAR_MEM_NCATS; c++)
		fprintf(out, "%s%s %.2f GB", c ? ", " : "", par_mem_name(c), mem->bytes[c] / 1e9);
	fprintf(out, "\n");

	if (s->experts)
		fprintf(out, "  experts     %u experts, top %u, EP %u: the busiest GPU routes %.3fx the even "
		       "share (%.1f %% of tokens dropped over capacity), adding %.6f s per step\n",
		       s->experts, s->top_k, s->ep, r->moe.imbalance, 100 * r->moe.dropped,
		       r->moe.imbalance_s);
	if (s->offload)
		fprintf(out, "  offload     %.2f GB of optimizer states on the CPU; PCIe copies and the CPU "
		       "step take %.6f s per step\n", r->offload.saved_bytes / 1e9, r->offload.host_s);
	if (!mem->fits)
		return;
	/* FLOPs with the causal mask counted (flops_per_token): say so. */
	fprintf(out, "  step time   %.6f s   tokens/s %.0f   MFU %.4f   HFU %.4f (causal FLOPs)\n",
	       r->step_time_s, r->tokens_per_s, r->mfu, r->hfu);
	if (r->steps > 1)
		fprintf(out, "  steps       %u: p50 %.6f s, p90 %.6f s, p99 %.6f s (min %.6f, max "
			"%.6f)\n", r->steps, r->step_p50_s, r->step_p90_s, r->step_p99_s,
			r->step_min_s, r->step_max_s);
	par_result_variability(out, s, r->stragglers, r->nstragglers);
	par_result_failures(out, "  failures    ", &r->goodput, r->gpus);
	fprintf(out, "  rank %-6u compute %.6f s, exposed communication %.6f s, bubble %.6f s, "
	       "idle %.6f s\n", r->critical_rank, r->breakdown.compute_s,
	       r->breakdown.exposed_comm_s, r->breakdown.bubble_s, r->breakdown.idle_s);
	if (r->breakdown.interference_s > 0)
		fprintf(out, "  interference %.6f s of the compute: communication beside it "
			"(compute.interference)\n", r->breakdown.interference_s);
	if (s->pp > 1)
		fprintf(out, "  pipeline    bubble %.4f of the pipeline phase (%.6f s, first forward to "
		       "last backward of rank %u); memory peaks on stage %u\n",
		       r->pipeline_s > 0 ? r->breakdown.bubble_s / r->pipeline_s : 0, r->pipeline_s,
		       r->critical_rank, r->busiest_stage);
}

void par_result_variability(FILE *out, const struct par_result_setting *s,
			    const uint32_t *ranks, unsigned nranks)
{
	const char *jitter = s->jitter, *gpu = s->gpu_speed;
	unsigned stragglers = s->stragglers;
	int jit = strcmp(jitter, "none") != 0, spread = strcmp(gpu, "none") != 0;
	if (!jit && !spread && !stragglers)
		return;
	fprintf(out, "  variability kernel jitter %s", jitter);
	if (jit)
		fprintf(out, " (cv %g)", s->jitter_cv);
	fprintf(out, ", GPU speed %s", gpu);
	if (spread)
		fprintf(out, " (cv %g)", s->gpu_cv);
	if (stragglers) {
		fprintf(out, ", %u straggler%s %gx slower (rank", stragglers, stragglers == 1 ? "" : "s",
		       s->straggler_slowdown);
		for (unsigned i = 0; i < nranks; i++)
			fprintf(out, "%s %u", i ? "," : "", ranks[i]);
		fprintf(out, "%s)", stragglers > nranks ? ", ..." : "");
	}
	fprintf(out, "; seed %llu\n", s->seed);
}

void par_result_failures(FILE *out, const char *label, const struct par_goodput *g,
			 unsigned gpus)
{
	double goodput = g->goodput, useful_s = g->useful_s;
	if (!(g->job_mtbf_s > 0))
		return;
	fprintf(out, "%sjob MTBF %.2f h over %u GPUs; checkpoint %.1f GB in %.1f s, every "
	       "%.0f s (Daly; Young %.0f s): goodput %.4f, %.1f interruptions and %.2f days of "
	       "training in %.1f days\n", label, g->job_mtbf_s / 3600, gpus, g->checkpoint_bytes / 1e9,
	       g->checkpoint_s, g->interval_s, g->young_s, goodput, g->failures, useful_s / 86400,
	       useful_s / (goodput > 0 ? goodput : 1) / 86400);
}

/* ---- a run of several jobs ------------------------------------------------------- */

void par_jobs_text(FILE *out, const struct par_jobs_view *v)
{
	const char *unit = v->ideal ? "GPUs" : "nodes";
	fprintf(out, "  cluster     %u x %s (%s), %s fidelity; %zu job%s, timed until each has %u "
	       "step%s\n", v->gpus, v->gpu, v->preset, v->fidelity, v->n, v->n == 1 ? "" : "s",
	       v->steps, v->steps == 1 ? "" : "s");
	for (size_t i = 0; i < v->n; i++) {
		const struct sim_store_job_row *j = &v->job[i];
		const struct sim_store_job_steps *al = &j->alone, *sh = &j->shared;
		char where[64];
		if (j->nodes == 1)
			snprintf(where, sizeof(where), "%.*s %u", (int)strlen(unit) - 1, unit,
				 j->first_node);
		else
			snprintf(where, sizeof(where), "%s %u-%u", unit, j->first_node,
				 j->first_node + j->nodes - 1);
		fprintf(out, "  job %-7s %s (ranks %u-%u): %s%s%.2f B parameters; dp %u (%s), tp %u, "
		       "pp %u, cp %u\n", j->name, where, j->first_rank, j->first_rank + j->gpus - 1,
		       j->model, j->model[0] ? ", " : "", j->params / 1e9, j->dp, j->strategy, j->tp,
		       j->pp, j->cp);
		if (j->start_s > 0)
			fprintf(out, "              starts at %.6f s\n", j->start_s);
		fprintf(out, "              memory peak %.2f GB of %.2f GB per GPU: %s\n",
		       j->peak_bytes / 1e9, j->capacity_bytes / 1e9,
		       j->fits ? "fits" : "OUT OF MEMORY");
		if (!j->fits)
			continue;
		fprintf(out, "              step alone %.6f s, shared %.6f s (%+.2f %%); shared: tokens/s "
		       "%.0f, MFU %.4f\n", al->step_time_s, sh->step_time_s,
		       100 * (sh->step_time_s / al->step_time_s - 1), sh->tokens_per_s, sh->mfu);
		if (sh->steps > 1)
			fprintf(out, "              steps %u / %u: p50 %.6f / %.6f s, p99 %.6f / %.6f s "
			       "(alone / shared)\n", al->steps, sh->steps, al->p50_s, sh->p50_s,
			       al->p99_s, sh->p99_s);
		par_result_failures(out, "              failures: ", &v->goodput[i], j->gpus);
	}
	if (!v->nlinks) {
		fprintf(out, "  links       no link carries more than one job's traffic\n");
		return;
	}
	fprintf(out, "  links       %zu carry more than one job's traffic (bytes per step, each job "
	       "alone)%s\n", v->nlinks, v->nlinks > PAR_JOBS_TEXT_LINKS ? "; the busiest:" : ":");
	for (size_t l = 0; l < v->nlinks && l < PAR_JOBS_TEXT_LINKS; l++) {
		const struct par_link_share *ls = &v->links[l];
		fprintf(out, "              %-24s %7.1f GB/s:", ls->name, ls->bw_Bps / 1e9);
		for (size_t i = 0, k = 0; i < v->n; i++)
			if (ls->bytes[i] > 0)
				fprintf(out, "%s %s %.3f GB", k++ ? "," : "", v->job[i].name,
				       ls->bytes[i] / 1e9);
		fprintf(out, "\n");
	}
}

static void steps_json(FILE *out, const struct sim_store_job_steps *s)
{
	fprintf(out, "{\"steps\":%u,\"step_time_s\":%.9g,\"step_time_p50_s\":%.9g,"
	       "\"step_time_p90_s\":%.9g,\"step_time_p99_s\":%.9g,\"tokens_per_s\":%.9g,"
	       "\"mfu\":%.6g}", s->steps, s->step_time_s, s->p50_s, s->p90_s, s->p99_s,
	       s->tokens_per_s, s->mfu);
}

void par_jobs_json(FILE *out, const struct par_jobs_view *v)
{
	fprintf(out, "{\"jobs\":[");
	for (size_t i = 0; i < v->n; i++) {
		const struct sim_store_job_row *j = &v->job[i];
		fprintf(out, "%s{\"name\":\"%s\",\"model\":\"%s\",\"first_node\":%u,\"nodes\":%u,"
		       "\"first_rank\":%u,\"gpus\":%u,\"start_s\":%.9g,\"dp\":%u,\"tp\":%u,"
		       "\"pp\":%u,\"cp\":%u,\"strategy\":\"%s\",\"params\":%.17g,\"memory\":{"
		       "\"peak\":%.17g,\"capacity\":%.17g,\"fits\":%s}", i ? "," : "", j->name,
		       j->model, j->first_node, j->nodes, j->first_rank, j->gpus, j->start_s, j->dp,
		       j->tp, j->pp, j->cp,
		       j->strategy, j->params, j->peak_bytes, j->capacity_bytes,
		       j->fits ? "true" : "false");
		if (v->goodput[i].job_mtbf_s > 0) {
			const struct par_report g = { .goodput = v->goodput[i] };
			fprintf(out, ",\"failures\":{");
			par_result_json_fields(out, &g, PAR_RESULT_G_FAILURES, "%.17g");
			fprintf(out, "}");
		}
		if (j->fits) {
			fprintf(out, ",\"alone\":");
			steps_json(out, &j->alone);
			fprintf(out, ",\"shared\":");
			steps_json(out, &j->shared);
			fprintf(out, ",\"slowdown\":%.9g", j->shared.step_time_s / j->alone.step_time_s);
		}
		fprintf(out, "}");
	}
	fprintf(out, "],\"shared_links\":[");
	for (size_t l = 0; l < v->nlinks; l++) {
		fprintf(out, "%s{\"link\":\"%s\",\"bw_Bps\":%.17g,\"bytes\":{", l ? "," : "",
		       v->links[l].name, v->links[l].bw_Bps);
		for (size_t i = 0, k = 0; i < v->n; i++)
			if (v->links[l].bytes[i] > 0)
				fprintf(out, "%s\"%s\":%.17g", k++ ? "," : "", v->job[i].name,
				       v->links[l].bytes[i]);
		fprintf(out, "}}");
	}
	fprintf(out, "],\"stragglers\":[");
	for (unsigned i = 0; i < v->nstragglers; i++)
		fprintf(out, "%s%u", i ? "," : "", v->stragglers[i]);
	fprintf(out, "],\"events\":%llu,\"wall_s\":%.6f}\n", v->events, v->wall_s);
}
