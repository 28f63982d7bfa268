/*
 * plot.h - a line chart in plain SVG, for `clustersim plot`: one line per
 * series over a numeric axis (linear, or logarithmic when the values span a
 * factor of 16 or more) or over named categories, nice ticks and gridlines,
 * titles, a legend; points that have no value (a layout that did not fit, an
 * invalid one) are marked by crosses on the x axis instead of on the line.
 *
 * The caller owns every string and array in struct plot and keeps them alive
 * during plot_write(); the module keeps nothing between calls.
 */
#ifndef TOOLS_PLOT_H
#define TOOLS_PLOT_H

#include <stddef.h>
#include <stdio.h>

/* One point of a line; ok == 0: no value, drawn as a cross on the x axis. */
struct plot_point {
	double x;             /* the value, or the index of its category */
	double y;
	int ok;
	const char *tip;      /* tooltip text, or NULL                   */
};

/* A line: its legend label and its points, ascending in x. */
struct plot_line {
	const char *label;
	const struct plot_point *pts;
	size_t n;
};

/* What the x axis holds. */
enum plot_xkind {
	PLOT_X_NUMBER,        /* plain numbers                            */
	PLOT_X_BYTES,         /* values in base units of enum sim_unit,   */
	PLOT_X_TIME,          /* labelled with sim_units_format()         */
	PLOT_X_RATE,
	PLOT_X_CATEGORY,      /* cats[x], evenly spaced                   */
};

struct plot {
	const char *title;        /* first line, bold                         */
	const char *command;      /* second line, monospace, cut to fit       */
	const char *note;         /* third line (fixed values), or NULL       */
	enum plot_xkind xkind;
	const char *const *cats;  /* PLOT_X_CATEGORY: names of the positions  */
	size_t ncats;
	const char *xtitle;       /* " (log scale)" is added when it is       */
	const char *ytitle;
	const char *legend_title; /* above the legend's entries, or NULL      */
	const struct plot_line *lines;
	size_t nlines;
	const char *bad_label;    /* the legend's words for crosses, or NULL  */
};

/* Write the chart to out; 0, or -1 if writing failed. */
int plot_write(const struct plot *p, FILE *out);

#endif
