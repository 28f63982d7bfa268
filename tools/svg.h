/*
 * svg.h - a stored run's timeline drawn as a Gantt chart in plain SVG, for
 * `clustersim export --svg`: one row per (rank, stream), boxes coloured by
 * phase (forward, backward, recompute, communication, other compute) with
 * their micro-batch numbers, idle time shaded, a time axis and a legend.
 *
 * The caller owns the database reader (sim/store_read.h; the run must be
 * complete) and the output stream; the module keeps nothing between calls. The fields of
 * struct gantt_opts are the options --ranks, --from and --to of `export`,
 * and messages about them name those options. The rank list, the window
 * and UTF-8 checking are shared with the Chrome trace (tools/trace.h).
 */
#ifndef TOOLS_SVG_H
#define TOOLS_SVG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Above this many boxes a chart is slow to view, and callers say so. */
#define GANTT_MAX_BOXES 20000
/* Largest rank number a rank list may name. */
#define GANTT_MAX_RANK 1048575

struct sim_store_read;

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
 * The part of a run that --ranks, --from and --to choose, shared by every
 * exporter of the timeline (the chart here, the trace of tools/trace.c).
 */
struct gantt_window {
	int nranks;         /* runs.ranks                                   */
	int rank_lo;        /* the smallest and largest rank chosen (the    */
	int rank_hi;        /* store skips the others between them)         */
	int64_t end_ps;     /* the run's end: sim_end_ps, else its last op  */
	int64_t from_ps;    /* the window: o's, cut to the run's end        */
	int64_t to_ps;
};

/*
 * Read run's rank count and end, check o against them and fill w.
 * Returns GANTT_OK, GANTT_BADINPUT (no such run, ranks not in the run, an
 * empty window; the message names the option) or GANTT_FAIL, with err.
 */
int gantt_window_of(struct sim_store_read *db, int64_t run, const struct gantt_opts *o,
		    struct gantt_window *w, char *err, size_t errlen);

/*
 * Length of the valid UTF-8 character at s, or 0 for a byte that starts
 * none (also overlong forms, surrogates, U+FFFE, U+FFFF and beyond
 * U+10FFFF): what both XML and JSON text may hold as it is.
 */
size_t gantt_utf8_len(const unsigned char *s);

/*
 * Write the chart of complete run `run` of db to out. Consecutive ops of a
 * row with the same phase, micro-batch and chunk, less than 0.05% of the
 * window apart, are drawn as one box. Returns GANTT_OK (st filled in when
 * not NULL), GANTT_BADINPUT (ranks not in the run, an empty or inverted
 * window, nothing to draw) or GANTT_FAIL, with the message in err. On error
 * part of the chart may have been written.
 */
int gantt_write(struct sim_store_read *db, int64_t run, const struct gantt_opts *o, FILE *out,
		struct gantt_stats *st, char *err, size_t errlen);

#endif
