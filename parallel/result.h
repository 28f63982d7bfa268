/*
 * result.h - the one description of a run's result: every figure of struct
 * par_report (train.h) with its metrics name, its JSON key, its unit and
 * its format, in one const table (result.c). `run --json`, the metrics rows
 * of a stored run, `report` (which puts the metrics rows back into a
 * struct par_report and prints it as `run` does) and the figures of a sweep
 * point all walk that table; none lists the fields again.
 *
 * To add a figure: add its member to struct par_report, fill it in the
 * training step, and add one line to the table in result.c, where it goes
 * in the JSON object. Its metrics row, its JSON key, its round trip through
 * `report` and (flagged as a sweep figure, with its sweep_points column)
 * its sweep column follow; docs/cli.md and docs/schema.md say what it is.
 * The text report (result_text.h) prints the lines a person reads, from
 * the same struct par_report, for `run` and `report` alike.
 */
#ifndef PAR_RESULT_H
#define PAR_RESULT_H

#include <stddef.h>
#include <stdio.h>

#include "parallel/train.h"

/* How a field is held in struct par_report. */
enum par_result_type {
	PAR_RESULT_DOUBLE,
	PAR_RESULT_U32,
	PAR_RESULT_U64,
	PAR_RESULT_BOOL,
	PAR_RESULT_STRING,    /* const char *: JSON only (the strategy)          */
	PAR_RESULT_RANKS,     /* uint32_t[count]: a JSON list, metrics NAME.i    */
	PAR_RESULT_SERIES,    /* double *[count] (NULL: none): metrics NAME.i    */
};

/* The groups a field belongs to (a caller may walk some of them only). */
enum par_result_group {
	PAR_RESULT_G_STEP = 1u << 0,        /* step time, throughput, MFU       */
	PAR_RESULT_G_STEPS = 1u << 1,       /* the spread over sim.steps steps  */
	PAR_RESULT_G_STEP_TIMES = 1u << 2,  /* each step's time (step.i)        */
	PAR_RESULT_G_FAILURES = 1u << 3,    /* checkpointing and goodput        */
	PAR_RESULT_G_STRAGGLERS = 1u << 4,  /* the straggler GPUs               */
	PAR_RESULT_G_MEMORY = 1u << 5,
	PAR_RESULT_G_OPTIONS = 1u << 6,     /* strategy, offload, experts       */
	PAR_RESULT_G_TIME = 1u << 7,        /* where the critical rank's time went */
	PAR_RESULT_G_LAYOUT = 1u << 8,      /* gpus, dp, micro-batches, params  */
	PAR_RESULT_G_ALL = ~0u,
};

enum par_result_flag {
	PAR_RESULT_FITS_ONLY = 1u << 0,  /* JSON: left out when the layout does not
					  * fit; sweep: none                      */
	PAR_RESULT_NULL_UNFIT = 1u << 1, /* JSON: null when it does not fit; sweep:
					  * none                                  */
	PAR_RESULT_NO_JSON = 1u << 2,    /* a metrics row only                    */
	PAR_RESULT_NO_METRIC = 1u << 3,  /* JSON only (events: runs.events; the
					  * strategy: from runs.config)           */
};

struct par_result_field {
	const char *name;        /* the metrics row ("memory.peak"); with
				  * RANKS and SERIES the rows are NAME.0, ... */
	const char *object;      /* the JSON object holding it ("memory"), or
				  * NULL: the top level                       */
	const char *key;         /* its JSON key; NULL: the metrics name      */
	const char *unit;        /* s, B, FLOP, tokens/s, 1 (a count, a share
				  * or a flag), rank                          */
	const char *fmt;         /* printf format of its JSON value, applied
				  * to a double (integers: %.0f)              */
	const char *figure;      /* its sweep_points column, or NULL: not a
				  * figure of a sweep point                   */
	enum par_result_type type;
	size_t offset;           /* in struct par_report                      */
	size_t count_offset;     /* RANKS, SERIES: the uint32_t count (a field
				  * before it in the table)                  */
	size_t max;              /* RANKS: the array's size                   */
	unsigned group;          /* one enum par_result_group                 */
	unsigned flags;          /* enum par_result_flag                      */
	const char *help;
};

/* The fields, in the order of the JSON object. */
extern const struct par_result_field par_result_fields[];
extern const size_t par_result_nfields;

/* The field whose metrics name is name, or NULL. */
const struct par_result_field *par_result_find(const char *name);

/* A scalar field's value as a double (true is 1); a bug for the others. */
double par_result_get(const struct par_report *r, const struct par_result_field *f);
/* Put a scalar field's value back (the reverse of par_result_get). */
void par_result_set(struct par_report *r, const struct par_result_field *f, double v);

/*
 * The report as `run --json` prints it: one object, fields in table order,
 * then "wall_s" (the simulator's own run time, wall_s, "%.6f"), and a line
 * end. events is printed from r->events, the strategy from r->strategy.
 */
void par_result_json(FILE *out, const struct par_report *r, double wall_s);
/* The fields of groups only, at the top level, as "key":value,... with
 * fmt instead of each field's format when fmt is not NULL (a job's
 * "failures" object prints them at %.17g); scalar fields only. */
void par_result_json_fields(FILE *out, const struct par_report *r, unsigned groups,
			    const char *fmt);

/*
 * The report as metrics rows: put(ctx, name, value) for every field of
 * groups that is a metrics row, its name after prefix ("" for a run,
 * "job.NAME." for a job's). RANKS and SERIES give one row per element.
 * Stops at, and returns, the first put that does not return 0.
 */
int par_result_metrics(const struct par_report *r, const char *prefix, unsigned groups,
		       int (*put)(void *ctx, const char *name, double v), void *ctx);

/*
 * The reverse: fill the fields of groups in *r from get(ctx, name) (0 for a
 * row that is absent), names after prefix. The count of a RANKS field is
 * capped at its array's size; a SERIES is allocated (r->step_times: the
 * caller frees it) when its count is not 0 and with_series is set.
 * Fields that are not metrics rows (strategy, events) are left alone.
 */
void par_result_from_metrics(struct par_report *r, const char *prefix, unsigned groups,
			     int with_series, double (*get)(void *ctx, const char *name),
			     void *ctx);

/*
 * The figures of a sweep point (the sweep_points columns, in table order):
 * PAR_RESULT_FIGURES of them. par_result_figures: from a report; the fields
 * that need a layout that fits are NAN when r->memory.fits is false.
 * par_result_from_figures: the reverse (a NAN count reads 0).
 */
#define PAR_RESULT_FIGURES 14
const char *par_result_figure_name(unsigned i);
void par_result_figures(const struct par_report *r, double fig[PAR_RESULT_FIGURES]);
void par_result_from_figures(struct par_report *r, const double fig[PAR_RESULT_FIGURES]);

#endif
