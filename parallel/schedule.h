/*
 * schedule.h - pipeline schedules: the order in which one stage runs the
 * forward and backward passes of micro-batches and model chunks, and the
 * schedule's closed forms (SPEC C22, C23, C29).
 *
 * A schedule is a plug-in: one file, parallel/sched_NAME.c, exporting one
 * const struct par_schedule_ops, listed in the registry (schedule.c, whose
 * header says how to add one). Its actions() writes a stage's sequence; the
 * step builder (builder.c, par_b_build) turns each action into the receive,
 * compute and send ops of that chunk (passes.c). The planner (plan.c) takes
 * the bubble and the activations in flight from the closed forms, and the
 * pipeline phase from the actions themselves, run on the stages' own costs
 * (par_schedule_run_s), so the estimate and the simulated step follow one
 * schedule.
 * The key parallel.schedule takes its names from the registry; its value is
 * the schedule's index there (struct par_layout's `schedule`).
 */
#ifndef PAR_SCHEDULE_H
#define PAR_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

/* What an action runs on its micro-batch and chunk. */
enum par_action_kind {
	PAR_ACT_FORWARD,          /* the forward pass                           */
	PAR_ACT_BACKWARD,         /* the backward pass: input and weight gradients */
	PAR_ACT_BACKWARD_INPUT,   /* the input gradients (dX) only, sent on       */
	PAR_ACT_BACKWARD_WEIGHT,  /* the weight gradients (dW) of an earlier
				   * PAR_ACT_BACKWARD_INPUT of the same (mb, chunk) */
	PAR_ACT_NKINDS
};

struct par_action {
	uint8_t kind;       /* enum par_action_kind                  */
	uint32_t mb;        /* micro-batch                           */
	uint32_t chunk;     /* model chunk (0 unless interleaved)    */
};

/*
 * The cost of one micro-batch on one pipeline stage, through all of the
 * stage's chunks, for the closed forms: its forward and its backward
 * (input and weight gradients together), messages included, and of the
 * backward the weight gradients' (the schedules that split it use it).
 */
struct par_stage_cost {
	double fwd_s, bwd_s, wgt_s;
};

/*
 * A schedule over p stages, m micro-batches per replica and v model chunks
 * per stage (v = 1 unless interleaved); s is a stage, 0 <= s < p. Every
 * field is required but `splits`.
 */
struct par_schedule_ops {
	const char *name;         /* the value of parallel.schedule             */
	const char *help;         /* one line, for the key's documentation      */
	/* Its actions split backwards into input- and weight-gradient passes
	 * (par_step_derive refuses what cannot run them: MoE layers, ZeRO-3
	 * and FSDP). */
	int splits;
	/* Can the schedule run p, m, v? 0, or -1 with err naming the key. */
	int (*check)(uint32_t p, uint32_t m, uint32_t v, char *err, size_t errlen);
	/* How many actions stage s runs, and the actions, in order, into out
	 * (nactions() of them). Each (mb, chunk) is run forward once, then
	 * either backward once or backward-input once and later
	 * backward-weight once. */
	size_t (*nactions)(uint32_t p, uint32_t s, uint32_t m, uint32_t v);
	void (*actions)(uint32_t p, uint32_t s, uint32_t m, uint32_t v, struct par_action *out);
	/* Closed forms for p stages of equal cost c, messages inside c:
	 * the bubble (the first stage's idle time in the pipeline phase), the
	 * pipeline phase (the step's start to the first stage's last backward
	 * kernel: its m micro-batches and the bubble), and the micro-batches
	 * whose activations stage s holds at its peak (a chunk's pass counts
	 * 1 / v). */
	double (*bubble_s)(uint32_t p, uint32_t m, uint32_t v, const struct par_stage_cost *c);
	double (*pipeline_s)(uint32_t p, uint32_t m, uint32_t v, const struct par_stage_cost *c);
	double (*in_flight)(uint32_t p, uint32_t s, uint32_t m, uint32_t v);
};

/* The registry (schedule.c): its entries in order, NULL-terminated; entry i
 * is the value i of parallel.schedule. */
extern const struct par_schedule_ops *const par_schedules[];
unsigned par_schedule_count(void);
/* Entry i (BUG when there is none). */
const struct par_schedule_ops *par_schedule(unsigned i);
/* The index of the schedule called name, or -1. */
int par_schedule_find(const char *name);
/* The names, NULL-terminated, in registry order (for the key). */
const char *const *par_schedule_names(void);
/* Entry i's help line (for the key's documentation). */
const char *par_schedule_help(unsigned i);

/*
 * What messages beside compute cost (compute.interference) in
 * par_schedule_run_s: the seconds a pass of `kind` on virtual stage vs
 * loses when communication moves during `window` seconds of it (the
 * engine slows each kernel that starts beside it, for all of its run).
 */
struct par_sched_slow {
	double (*lost)(void *ctx, enum par_action_kind kind, uint32_t vs, double window);
	void *ctx;
	/* The data-parallel reductions beside the backward (dp_s NULL: none):
	 * chunk c's takes dp_s[c] on its stage's one stream, issued as the
	 * chunk's last backward starts (its buckets close during it). A pass
	 * beside it loses dp_rate of the time they share, and a message sent
	 * while it runs moves in dp_hop seconds, not hop (they share links). */
	const double *dp_s;
	double dp_rate, dp_hop;
};

/*
 * The pipeline phase of schedule `s` run action by action rather than by
 * its closed form: p stages, the forward and backward of virtual stage
 * c p + s (stage s's chunk c) f[c p + s] and b[c p + s] seconds (of a
 * split backward w[c p + s] the weight-gradient pass, the rest the input's;
 * w NULL: half each), a message between neighbouring virtual
 * stages `hop` seconds that its sender does not wait for, and with `slow`
 * (NULL: none) the passes beside a moving message (or a data-parallel
 * reduction) slowed. The step's start
 * to the first stage's last action; for equal stages without messages it
 * is pipeline_s's for stage costs v f and v b (tests/unit/test_schedule.c).
 * NAN: the actions cannot all run. *lost_s (NULL: not wanted): what the
 * slowing added, summed over the stages.
 */
double par_schedule_run_s(const struct par_schedule_ops *s, uint32_t p, uint32_t m,
			  uint32_t v, const double *f, const double *b, const double *w, double hop,
			  const struct par_sched_slow *slow, double *lost_s);

/* The same in two steps, for many runs of one (p, m, v): the actions made
 * once (par_schedule_plan_new), then run with each set of costs. */
struct par_sched_plan;
struct par_sched_plan *par_schedule_plan_new(const struct par_schedule_ops *s, uint32_t p,
					     uint32_t m, uint32_t v);
void par_schedule_plan_free(struct par_sched_plan *r);
/* Is r (NULL: no) the plan of s for p, m, v? */
int par_schedule_plan_is(const struct par_sched_plan *r, const struct par_schedule_ops *s,
			 uint32_t p, uint32_t m, uint32_t v);
double par_schedule_plan_run_s(struct par_sched_plan *r, const double *f, const double *b,
			       const double *w, double hop, const struct par_sched_slow *slow, double *lost_s);

/* For the schedules' check: one chunk per stage (parallel.vpp 1). */
int par_sched_check_one_chunk(uint32_t p, uint32_t m, uint32_t v, char *err, size_t errlen);

#endif
