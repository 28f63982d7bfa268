/*
 * svg.h - a stored run's timeline drawn as a Gantt chart in plain SVG, for
 * `clustersim export --svg`: one row per (rank, stream), boxes coloured by
 * phase (forward, backward, recompute, communication, other compute) with
 * their micro-batch numbers, idle time shaded, a time axis and a legend.
 *
 * The caller owns the database connection (the run must be complete) and
 * the output stream; the module keeps nothing between calls. The fields of
 * struct gantt_opts are the options --ranks, --from and --to of `export`,
 * and messages about them name those options.
 */
#ifndef TOOLS_SVG_H
#define TOOLS_SVG_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Above this many boxes a chart is slow to view, and callers say so. */
#define GANTT_MAX_BOXES 20000
/* Largest rank number a rank list may name. */
#define GANTT_MAX_RANK 1048575

/* What to draw. Zero-initialised: every rank, the whole run. */
struct gantt_opts {
	const int *ranks;   /* ranks to draw, ascending, no repeats; NULL: all  */
	size_t nranks;
	int64_t from_ps;    /* start of the window, >= 0                       */
	int64_t to_ps;      /* end of the window; 0 or less: the end of the run */
};

/* What was drawn, for the caller's report. */
struct gantt_stats {
	size_t rows;        /* (rank, stream) rows   */
	size_t boxes;       /* boxes after merging   */
};

/* Results: bad input is the user's (exit 2), failure the database's or the
 * output's (exit 1). */
enum { GANTT_OK = 0, GANTT_BADINPUT = -1, GANTT_FAIL = -2 };

/*
 * Parse a rank list such as "0-7,16,24-31" into a new array of ascending,
 * distinct ranks (*ranks, caller frees; *n entries). Returns GANTT_OK, or
 * GANTT_BADINPUT with a message (without the option's name) in err.
 */
int gantt_ranks_parse(const char *text, int **ranks, size_t *n, char *err, size_t errlen);

/*
 * Write the chart of complete run `run` of db to out. Consecutive ops of a
 * row with the same phase, micro-batch and chunk, less than 0.05% of the
 * window apart, are drawn as one box. Returns GANTT_OK (st filled in when
 * not NULL), GANTT_BADINPUT (ranks not in the run, an empty or inverted
 * window, nothing to draw) or GANTT_FAIL, with the message in err. On error
 * part of the chart may have been written.
 */
int gantt_write(sqlite3 *db, int64_t run, const struct gantt_opts *o, FILE *out,
		struct gantt_stats *st, char *err, size_t errlen);

#endif
