/*
 * result.c - the table of a run's result figures and the walkers over it:
 * to JSON, to metrics rows, from metrics rows back into a struct par_report,
 * and to and from a sweep point's figures (result.h).
 */
#include "parallel/result.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sim/util.h"

#define AT(member) offsetof(struct par_report, member)

/* A scalar field: metrics name, JSON object, key (NULL: the name), unit,
 * format, sweep column, type, member, group, flags, help. */
#define F(n_, obj_, key_, unit_, fmt_, fig_, type_, member_, group_, flags_, help_)	\
	{ .name = n_, .object = obj_, .key = key_, .unit = unit_, .fmt = fmt_,		\
	  .figure = fig_, .type = PAR_RESULT_##type_, .offset = AT(member_),		\
	  .group = PAR_RESULT_G_##group_, .flags = flags_, .help = help_ }
/* A list: its elements' metrics rows NAME.0, ..., their count in member
 * count_ (a field before it), at most max_. */
#define LIST(n_, key_, unit_, type_, member_, count_, max_, group_, flags_, help_)	\
	{ .name = n_, .key = key_, .unit = unit_, .type = PAR_RESULT_##type_,		\
	  .offset = AT(member_), .count_offset = AT(count_), .max = max_,		\
	  .group = PAR_RESULT_G_##group_, .flags = flags_, .help = help_ }

enum { FITS = PAR_RESULT_FITS_ONLY, NULLS = PAR_RESULT_NULL_UNFIT, NOJ = PAR_RESULT_NO_JSON,
       NOM = PAR_RESULT_NO_METRIC };

/*
 * Every figure of a run, in the order of the JSON object. A new figure is
 * one line here (after its member in struct par_report): it is then a key
 * of `run --json` and of `report --json`, a metrics row that `report` reads
 * back, and with a sweep column a figure of every sweep point (that column
 * must also be one of sweep_points in sim/store.c, in this order).
 */
const struct par_result_field par_result_fields[] = {
	F("step_time_s", NULL, NULL, "s", "%.9g", "step_time_s", DOUBLE, step_time_s, STEP,
	  NULLS, "one step, averaged over the steps"),
	F("tokens_per_s", NULL, NULL, "tokens/s", "%.9g", "tokens_per_s", DOUBLE, tokens_per_s,
	  STEP, NULLS, "tokens trained per second"),
	F("mfu", NULL, NULL, "1", "%.6g", "mfu", DOUBLE, mfu, STEP, NULLS,
	  "model FLOPs utilisation, the causal mask counted (flops_per_token)"),
	F("hfu", NULL, NULL, "1", "%.6g", "hfu", DOUBLE, hfu, STEP, NULLS,
	  "hardware FLOPs utilisation (recomputation counted, the causal mask too)"),
	F("steps", NULL, NULL, "1", NULL, NULL, U32, steps, STEPS, FITS, "steps simulated"),
	F("step_time_p50_s", NULL, NULL, "s", "%.9g", NULL, DOUBLE, step_p50_s, STEPS, FITS,
	  "median step"),
	F("step_time_p90_s", NULL, NULL, "s", "%.9g", NULL, DOUBLE, step_p90_s, STEPS, FITS,
	  "90th percentile step"),
	F("step_time_p99_s", NULL, NULL, "s", "%.9g", NULL, DOUBLE, step_p99_s, STEPS, FITS,
	  "99th percentile step"),
	F("step_time_min_s", NULL, NULL, "s", "%.9g", NULL, DOUBLE, step_min_s, STEPS, FITS,
	  "shortest step"),
	F("step_time_max_s", NULL, NULL, "s", "%.9g", NULL, DOUBLE, step_max_s, STEPS, FITS,
	  "longest step"),
	LIST("step", NULL, "s", SERIES, step_times, steps, 0, STEP_TIMES, NOJ,
	     "each step's time, in order (stored with --db)"),
	F("failures.job_mtbf_s", "failures", "job_mtbf_s", "s", "%.9g", NULL, DOUBLE,
	  goodput.job_mtbf_s, FAILURES, 0, "mean time between failures of the job"),
	F("failures.checkpoint_bytes", "failures", "checkpoint_bytes", "B", "%.17g", NULL,
	  DOUBLE, goodput.checkpoint_bytes, FAILURES, 0, "one checkpoint"),
	F("failures.checkpoint_s", "failures", "checkpoint_s", "s", "%.9g", NULL, DOUBLE,
	  goodput.checkpoint_s, FAILURES, 0, "writing one checkpoint"),
	F("failures.young_s", "failures", "young_s", "s", "%.9g", NULL, DOUBLE, goodput.young_s,
	  FAILURES, 0, "Young's checkpoint interval"),
	F("failures.interval_s", "failures", "interval_s", "s", "%.9g", NULL, DOUBLE,
	  goodput.interval_s, FAILURES, 0, "Daly's checkpoint interval"),
	F("failures.goodput", "failures", "goodput", "1", "%.9g", NULL, DOUBLE, goodput.goodput,
	  FAILURES, 0, "share of the run spent on useful training"),
	F("failures.interruptions", "failures", "interruptions", "1", "%.9g", NULL, DOUBLE,
	  goodput.failures, FAILURES, 0, "expected interruptions over the run"),
	F("failures.useful_s", "failures", "useful_s", "s", "%.9g", NULL, DOUBLE,
	  goodput.useful_s, FAILURES, 0, "training time over the run"),
	F("stragglers.n", NULL, NULL, "1", NULL, NULL, U32, nstragglers, STRAGGLERS, NOJ,
	  "straggler GPUs listed"),
	LIST("straggler", "stragglers", "rank", RANKS, stragglers, nstragglers,
	     ARRAY_SIZE(((struct par_report *)0)->stragglers), STRAGGLERS, 0,
	     "the straggler GPUs, the first few by rank"),
	F("memory.weights", "memory", "weights", "B", "%.17g", NULL, DOUBLE,
	  memory.bytes[PAR_MEM_WEIGHTS], MEMORY, 0, "weights at the peak"),
	F("memory.grads", "memory", "grads", "B", "%.17g", NULL, DOUBLE,
	  memory.bytes[PAR_MEM_GRADS], MEMORY, 0, "gradients at the peak"),
	F("memory.optimizer", "memory", "optimizer", "B", "%.17g", NULL, DOUBLE,
	  memory.bytes[PAR_MEM_OPTIMIZER], MEMORY, 0, "optimizer states at the peak"),
	F("memory.activations", "memory", "activations", "B", "%.17g", NULL, DOUBLE,
	  memory.bytes[PAR_MEM_ACTIVATIONS], MEMORY, 0, "activations at the peak"),
	F("memory.logits", "memory", "logits", "B", "%.17g", NULL, DOUBLE,
	  memory.bytes[PAR_MEM_LOGITS], MEMORY, 0, "logits at the peak"),
	F("memory.buffers", "memory", "buffers", "B", "%.17g", NULL, DOUBLE,
	  memory.bytes[PAR_MEM_BUFFERS], MEMORY, 0, "communication buffers at the peak"),
	F("memory.model_states", "memory", "model_states", "B", "%.17g", NULL, DOUBLE,
	  memory.model_states, MEMORY, 0, "weights, gradients and optimizer states held from "
	  "the start"),
	F("memory.peak", "memory", "peak", "B", "%.17g", "peak_bytes", DOUBLE, memory.peak,
	  MEMORY, 0, "peak of the busiest GPU"),
	F("memory.capacity", "memory", "capacity", "B", "%.17g", "capacity_bytes", DOUBLE,
	  memory.capacity, MEMORY, 0, "memory of one GPU"),
	F("memory.reserve", "memory", "reserve", "B", "%.17g", NULL, DOUBLE,
	  memory.reserve.total, MEMORY, 0, "memory beyond the tensors: CUDA context, NCCL, the "
	  "allocator's slack (cluster.memory_reserve)"),
	F("memory.fits", "memory", "fits", "1", NULL, "fits", BOOL, memory.fits, MEMORY, 0,
	  "the peak and the reserve fit in the GPU"),
	F("strategy", NULL, NULL, "", NULL, NULL, STRING, strategy, OPTIONS, NOM,
	  "data-parallel strategy: ddp, zero1, zero2, zero3, fsdp"),
	F("offload.saved_bytes", "offload", "saved_bytes", "B", "%.17g", NULL, DOUBLE,
	  offload.saved_bytes, OPTIONS, 0, "optimizer states moved to the CPU"),
	F("offload.host_s", "offload", "host_s", "s", "%.9g", NULL, DOUBLE, offload.host_s,
	  OPTIONS, 0, "PCIe copies and the CPU step, per step"),
	F("moe.imbalance", "moe", "imbalance", "1", "%.9g", NULL, DOUBLE, moe.imbalance, OPTIONS,
	  0, "the busiest expert-parallel GPU's load over the even share"),
	F("moe.dropped", "moe", "dropped", "1", "%.9g", NULL, DOUBLE, moe.dropped, OPTIONS, 0,
	  "share of routed tokens dropped over capacity"),
	F("moe.imbalance_s", "moe", "imbalance_s", "s", "%.9g", NULL, DOUBLE, moe.imbalance_s,
	  OPTIONS, 0, "expert time the imbalance adds per step"),
	F("compute_s", "breakdown", NULL, "s", "%.9g", "compute_s", DOUBLE, breakdown.compute_s,
	  TIME, FITS, "critical rank: compute"),
	F("exposed_comm_s", "breakdown", NULL, "s", "%.9g", "exposed_comm_s", DOUBLE,
	  breakdown.exposed_comm_s, TIME, FITS, "critical rank: communication not hidden"),
	F("bubble_s", "breakdown", NULL, "s", "%.9g", "bubble_s", DOUBLE, breakdown.bubble_s,
	  TIME, FITS, "critical rank: pipeline bubble"),
	F("idle_s", "breakdown", NULL, "s", "%.9g", "idle_s", DOUBLE, breakdown.idle_s, TIME,
	  FITS, "critical rank: idle"),
	F("interference_s", "breakdown", NULL, "s", "%.9g", NULL, DOUBLE,
	  breakdown.interference_s, TIME, FITS,
	  "critical rank: of compute_s, the time communication beside it added "
	  "(compute.interference)"),
	F("pipeline_s", NULL, NULL, "s", "%.9g", NULL, DOUBLE, pipeline_s, TIME, FITS,
	  "critical rank: first forward to last backward"),
	F("critical_rank", NULL, NULL, "rank", NULL, NULL, U32, critical_rank, TIME, FITS,
	  "the rank that finishes last"),
	F("events", NULL, NULL, "1", NULL, NULL, U64, events, TIME, FITS | NOM,
	  "events simulated (stored as runs.events)"),
	F("busiest_stage", NULL, NULL, "1", NULL, NULL, U32, busiest_stage, TIME, NOJ,
	  "the pipeline stage whose memory peak is reported"),
	F("gpus", NULL, NULL, "1", NULL, "gpus", U32, gpus, LAYOUT, 0, "GPUs of the run"),
	F("dp", NULL, NULL, "1", NULL, "dp", U32, dp, LAYOUT, 0, "data-parallel degree"),
	F("micro_batches", NULL, NULL, "1", NULL, "micro_batches", U32, micro_batches, LAYOUT,
	  0, "micro-batches per replica and step"),
	F("params", NULL, NULL, "1", "%.17g", NULL, DOUBLE, params, LAYOUT, 0,
	  "model parameters"),
	F("flops_per_token", NULL, NULL, "FLOP", "%.17g", NULL, DOUBLE, flops_per_token, LAYOUT,
	  0, "model FLOPs per token, 6 params + 6 layers attention-width seq: SPEC C15 with "
	  "the causal mask counted"),
};
const size_t par_result_nfields = ARRAY_SIZE(par_result_fields);

const struct par_result_field *par_result_find(const char *name)
{
	for (size_t i = 0; i < par_result_nfields; i++)
		if (!strcmp(par_result_fields[i].name, name))
			return &par_result_fields[i];
	return NULL;
}

static void *member(const struct par_report *r, size_t offset)
{
	return (char *)r + offset;
}

double par_result_get(const struct par_report *r, const struct par_result_field *f)
{
	void *p = member(r, f->offset);
	switch (f->type) {
	case PAR_RESULT_DOUBLE: return *(const double *)p;
	case PAR_RESULT_U32: return *(const uint32_t *)p;
	case PAR_RESULT_U64: return (double)*(const uint64_t *)p;
	case PAR_RESULT_BOOL: return *(const bool *)p;
	default: BUG("par_result_get: %s is not a number", f->name);
	}
}

void par_result_set(struct par_report *r, const struct par_result_field *f, double v)
{
	void *p = member(r, f->offset);
	switch (f->type) {
	case PAR_RESULT_DOUBLE: *(double *)p = v; break;
	case PAR_RESULT_U32: *(uint32_t *)p = (uint32_t)v; break;
	case PAR_RESULT_U64: *(uint64_t *)p = (uint64_t)v; break;
	case PAR_RESULT_BOOL: *(bool *)p = v != 0; break;
	default: BUG("par_result_set: %s is not a number", f->name);
	}
}

static int scalar(const struct par_result_field *f)
{
	return f->type != PAR_RESULT_STRING && f->type != PAR_RESULT_RANKS &&
	       f->type != PAR_RESULT_SERIES;
}

static uint32_t count_of(const struct par_report *r, const struct par_result_field *f)
{
	return *(const uint32_t *)member(r, f->count_offset);
}

/* A scalar's JSON value: integers and flags exactly, the rest in fmt. */
static void json_scalar(FILE *out, const struct par_report *r, const struct par_result_field *f,
			const char *fmt)
{
	const void *p = member(r, f->offset);
	if (f->type == PAR_RESULT_BOOL)
		fputs(*(const bool *)p ? "true" : "false", out);
	else if (!fmt && f->type == PAR_RESULT_U32)
		fprintf(out, "%u", (unsigned)*(const uint32_t *)p);
	else if (!fmt && f->type == PAR_RESULT_U64)
		fprintf(out, "%llu", (unsigned long long)*(const uint64_t *)p);
	else
		fprintf(out, fmt, par_result_get(r, f));
}

static void json_value(FILE *out, const struct par_report *r, const struct par_result_field *f)
{
	if (f->type == PAR_RESULT_STRING) {
		/* The strategy names are plain words: no escaping needed. */
		const char *s = *(const char *const *)member(r, f->offset);
		fprintf(out, "\"%s\"", s ? s : "");
	} else if (f->type == PAR_RESULT_RANKS) {
		const uint32_t *v = member(r, f->offset);
		uint32_t n = count_of(r, f);
		putc('[', out);
		for (uint32_t i = 0; i < n && i < f->max; i++)
			fprintf(out, "%s%u", i ? "," : "", (unsigned)v[i]);
		putc(']', out);
	} else if (!r->memory.fits && (f->flags & PAR_RESULT_NULL_UNFIT)) {
		fputs("null", out);
	} else {
		json_scalar(out, r, f, f->fmt);
	}
}

static int same_object(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

void par_result_json(FILE *out, const struct par_report *r, double wall_s)
{
	const char *obj = NULL;
	int top = 0, in = 0;  /* items so far at the top level, in obj */
	putc('{', out);
	for (size_t i = 0; i < par_result_nfields; i++) {
		const struct par_result_field *f = &par_result_fields[i];
		if ((f->flags & PAR_RESULT_NO_JSON) ||
		    (!r->memory.fits && (f->flags & PAR_RESULT_FITS_ONLY)))
			continue;
		if (!same_object(obj, f->object)) {
			if (obj)
				putc('}', out);
			obj = f->object;
			if (obj) {
				fprintf(out, "%s\"%s\":{", top++ ? "," : "", obj);
				in = 0;
			}
		}
		int *n = obj ? &in : &top;
		fprintf(out, "%s\"%s\":", (*n)++ ? "," : "", f->key ? f->key : f->name);
		json_value(out, r, f);
	}
	if (obj)
		putc('}', out);
	fprintf(out, "%s\"wall_s\":%.6f}\n", top ? "," : "", wall_s);
}

void par_result_json_fields(FILE *out, const struct par_report *r, unsigned groups,
			    const char *fmt)
{
	int n = 0;
	for (size_t i = 0; i < par_result_nfields; i++) {
		const struct par_result_field *f = &par_result_fields[i];
		if (!(f->group & groups) || (f->flags & PAR_RESULT_NO_JSON) || !scalar(f))
			continue;
		fprintf(out, "%s\"%s\":", n++ ? "," : "", f->key ? f->key : f->name);
		json_scalar(out, r, f, fmt ? fmt : f->fmt);
	}
}

int par_result_metrics(const struct par_report *r, const char *prefix, unsigned groups,
		       int (*put)(void *ctx, const char *name, double v), void *ctx)
{
	char name[160];
	for (size_t i = 0; i < par_result_nfields; i++) {
		const struct par_result_field *f = &par_result_fields[i];
		if (!(f->group & groups) || (f->flags & PAR_RESULT_NO_METRIC))
			continue;
		int rc = 0;
		if (scalar(f)) {
			snprintf(name, sizeof(name), "%s%s", prefix, f->name);
			rc = put(ctx, name, par_result_get(r, f));
		} else if (f->type == PAR_RESULT_RANKS) {
			const uint32_t *v = member(r, f->offset);
			for (uint32_t k = 0; !rc && k < count_of(r, f) && k < f->max; k++) {
				snprintf(name, sizeof(name), "%s%s.%u", prefix, f->name, (unsigned)k);
				rc = put(ctx, name, v[k]);
			}
		} else if (f->type == PAR_RESULT_SERIES) {
			const double *v = *(double *const *)member(r, f->offset);
			for (uint32_t k = 0; !rc && v && k < count_of(r, f); k++) {
				snprintf(name, sizeof(name), "%s%s.%u", prefix, f->name, (unsigned)k);
				rc = put(ctx, name, v[k]);
			}
		}
		if (rc)
			return rc;
	}
	return 0;
}

void par_result_from_metrics(struct par_report *r, const char *prefix, unsigned groups,
			     int with_series, double (*get)(void *ctx, const char *name),
			     void *ctx)
{
	char name[160];
	for (size_t i = 0; i < par_result_nfields; i++) {
		const struct par_result_field *f = &par_result_fields[i];
		if (!(f->group & groups) || (f->flags & PAR_RESULT_NO_METRIC))
			continue;
		if (scalar(f)) {
			snprintf(name, sizeof(name), "%s%s", prefix, f->name);
			par_result_set(r, f, get(ctx, name));
		} else if (f->type == PAR_RESULT_RANKS) {
			uint32_t *v = member(r, f->offset), *n = member(r, f->count_offset);
			if (*n > f->max)
				*n = (uint32_t)f->max;
			for (uint32_t k = 0; k < *n; k++) {
				snprintf(name, sizeof(name), "%s%s.%u", prefix, f->name, (unsigned)k);
				v[k] = (uint32_t)get(ctx, name);
			}
		} else if (f->type == PAR_RESULT_SERIES && with_series) {
			double **v = member(r, f->offset);
			uint32_t n = count_of(r, f);
			*v = n ? xcalloc(n, sizeof(double)) : NULL;
			for (uint32_t k = 0; k < n; k++) {
				snprintf(name, sizeof(name), "%s%s.%u", prefix, f->name, (unsigned)k);
				(*v)[k] = get(ctx, name);
			}
		}
	}
}

/* ---- the figures of a sweep point ------------------------------------------- */

/* The i-th field that is a figure. */
static const struct par_result_field *figure(unsigned i)
{
	for (size_t k = 0, n = 0; k < par_result_nfields; k++)
		if (par_result_fields[k].figure && n++ == i)
			return &par_result_fields[k];
	BUG("sweep figure %u: the table has fewer than %d", i, PAR_RESULT_FIGURES);
}

const char *par_result_figure_name(unsigned i)
{
	return figure(i)->figure;
}

void par_result_figures(const struct par_report *r, double fig[PAR_RESULT_FIGURES])
{
	for (unsigned i = 0; i < PAR_RESULT_FIGURES; i++) {
		const struct par_result_field *f = figure(i);
		int needs_fit = f->flags & (PAR_RESULT_FITS_ONLY | PAR_RESULT_NULL_UNFIT);
		fig[i] = !r->memory.fits && needs_fit ? NAN : par_result_get(r, f);
	}
}

void par_result_from_figures(struct par_report *r, const double fig[PAR_RESULT_FIGURES])
{
	for (unsigned i = 0; i < PAR_RESULT_FIGURES; i++) {
		const struct par_result_field *f = figure(i);
		par_result_set(r, f, isnan(fig[i]) && f->type != PAR_RESULT_DOUBLE ? 0 : fig[i]);
	}
}
