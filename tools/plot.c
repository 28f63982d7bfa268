/*
 * plot.c - a line chart in plain SVG (see plot.h).
 *
 * Geometry: the plot area spans [left, right] x [top, bottom] px; the x
 * domain [x0, x1] is in axis units (the value, its log10 on a log axis, or
 * the category index) and the y domain [y0, y1] in the figure's units, both
 * a little wider than the data so that no marker sits on the frame. The
 * legend stands right of the plot area, as wide as its longest label. The
 * drawing order is the painting order: grid, axes, lines, markers, crosses.
 * Every caller string goes through put_text(), which escapes markup.
 */
#include "tools/plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/units.h"
#include "sim/util.h"
#include "tools/svg.h"

/* Layout in pixels. */
enum {
	WIDTH = 960,
	LEFT = 86,            /* left edge of the plot area                 */
	TOP = 92,             /* title lines above                          */
	PLOT_H = 420,         /* height of the plot area                    */
	FOOT = 62,            /* tick labels and x title below              */
	CAT_CHARS = 28,       /* longer category names are cut              */
	LEGEND_CHARS = 36,    /* longer legend labels are cut               */
	ROW = 20,             /* between legend entries                     */
	CROSS = 4,            /* half the size of a cross                   */
};
#define CHAR_W 6.4            /* average width of a 11 px character     */
#define MONO_W 6.7            /* width of an 11 px monospace character  */

/*
 * Okabe & Ito's colourblind-safe palette, the yellow last (it is faint on
 * white); past eight lines the colours repeat with dashes, and the marker
 * shapes cycle too, so that lines differ in more than colour.
 */
static const char *const palette[] = {
	"#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#000000", "#F0E442",
};
static const char *const dashes[] = { "", "7 4", "2 3" };
enum shape { SH_CIRCLE, SH_SQUARE, SH_UP, SH_DIAMOND, SH_DOWN, SH_N };

/* The chart being written: the input, the geometry and the domains. */
struct chart {
	const struct plot *p;
	FILE *f;
	int height;
	double right, bottom;         /* of the plot area; left, top fixed  */
	int legend_w;
	int xlog;                     /* x domain in log10 of the value     */
	double x0, x1, y0, y1;        /* the domains                        */
	double ystep;                 /* between y ticks                    */
	int rotate;                   /* x tick labels slanted              */
	size_t label_ch;              /* longest x tick label, characters   */
};

/* ---- text ------------------------------------------------------------------------ */

/*
 * Write s as SVG text or attribute content: the five XML specials as
 * entities, control bytes and invalid UTF-8 (gantt_utf8_len()) as '?', at
 * most maxch characters, a cut marked by an ellipsis.
 */
static void put_text(FILE *f, const char *s, size_t maxch)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t ch = 0; p && *p; ch++) {
		size_t len = gantt_utf8_len(p);
		if (ch == maxch) {
			fputs("\u2026", f);
			break;
		}
		switch (*p) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			if (len == 0 || *p < 0x20)
				fputc('?', f);
			else
				fwrite(p, 1, len, f);
		}
		p += len ? len : 1;
	}
}

/* Characters of a UTF-8 string (for widths), counting bad bytes as one. */
static size_t text_chars(const char *s)
{
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)s; p && *p; n++) {
		size_t len = gantt_utf8_len(p);
		p += len ? len : 1;
	}
	return n;
}

/* ---- numbers and ticks ------------------------------------------------------------ */

/* The 1, 2 or 5 x 10^k nearest to raw (on a log scale, roughly). */
static double nice_step(double raw)
{
	double mag = pow(10, floor(log10(raw))), norm = raw / mag;
	return (norm < 1.4 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
}

/*
 * A tick value as a short label: on an axis reaching big, thousands and
 * millions as k, M, G, with as many decimals as the step between ticks
 * needs ("0.45", "820k", "1.5M").
 */
static char *fmt_tick(double v, double step, double big, char *buf, size_t len)
{
	double div = big >= 1e9 ? 1e9 : big >= 1e6 ? 1e6 : big >= 1e4 ? 1e3 : 1;
	const char *sfx = div == 1e9 ? "G" : div == 1e6 ? "M" : div == 1e3 ? "k" : "";
	double s = step / div;
	int dec = s >= 1 ? 0 : (int)ceil(-log10(s) - 1e-9);
	snprintf(buf, len, "%.*f%s", dec, fabs(v) < step * 1e-9 ? 0.0 : v / div, sfx);
	return buf;
}

/* An x value as its tick label: with its unit, or as a plain number. */
static char *fmt_x(const struct chart *c, double v, double step, char *buf, size_t len)
{
	static const enum sim_unit units[] = {
		[PLOT_X_BYTES] = SIM_UNIT_BYTES, [PLOT_X_TIME] = SIM_UNIT_TIME,
		[PLOT_X_RATE] = SIM_UNIT_RATE,
	};
	if (c->p->xkind == PLOT_X_NUMBER && c->xlog)
		snprintf(buf, len, "%g", v);
	else if (c->p->xkind == PLOT_X_NUMBER)
		fmt_tick(v, step, fmax(fabs(c->x0), fabs(c->x1)), buf, len);
	else
		sim_units_format(units[c->p->xkind], v, buf, len);
	return buf;
}

/* ---- domains ---------------------------------------------------------------------- */

/* The extent of the points' x (every point) or y (ok points); 0 if none. */
static int extent(const struct plot *p, int want_y, double *lo, double *hi)
{
	int any = 0;
	for (size_t i = 0; i < p->nlines; i++)
		for (size_t k = 0; k < p->lines[i].n; k++) {
			const struct plot_point *q = &p->lines[i].pts[k];
			double v = want_y ? q->y : q->x;
			if ((want_y && !q->ok) || !isfinite(v))
				continue;
			*lo = any && *lo < v ? *lo : v;
			*hi = any && *hi > v ? *hi : v;
			any = 1;
		}
	return any;
}

/* The x domain: categories with half a slot each side, numbers 4% wider. */
static void set_xdomain(struct chart *c)
{
	double lo = 0, hi = 0;
	if (c->p->xkind == PLOT_X_CATEGORY) {
		c->x0 = -0.5;
		c->x1 = (double)c->p->ncats - 0.5;
		return;
	}
	extent(c->p, 0, &lo, &hi);
	c->xlog = lo > 0 && hi / lo >= 16;
	if (c->xlog) {
		lo = log10(lo);
		hi = log10(hi);
	}
	double pad = hi > lo ? (hi - lo) * 0.04 : lo != 0 ? fabs(lo) * 0.5 : 1;
	c->x0 = lo - pad;
	c->x1 = hi + pad;
}

/* The y domain: the ok points' extent, 6% wider, not below 0 if they are not. */
static void set_ydomain(struct chart *c)
{
	double lo = 0, hi = 1;
	extent(c->p, 1, &lo, &hi);
	double span = hi - lo;
	if (span <= 0)
		span = lo != 0 ? fabs(lo) * 0.2 : 1;
	c->y0 = lo - span * 0.06;
	c->y1 = hi + span * 0.06;
	if (lo >= 0 && c->y0 < 0)
		c->y0 = 0;
	c->ystep = nice_step((c->y1 - c->y0) / 6);
}

static double x_px(const struct chart *c, double x)
{
	double v = c->xlog ? log10(x) : x;
	return LEFT + (v - c->x0) / (c->x1 - c->x0) * (c->right - LEFT);
}

static double y_px(const struct chart *c, double y)
{
	return c->bottom - (y - c->y0) / (c->y1 - c->y0) * PLOT_H;
}

/* ---- x ticks ------------------------------------------------------------------------ */

/* Whether every x is the smallest times a power of two (a sweep of a..b). */
static int powers_of_two(const struct plot *p, double lo)
{
	for (size_t i = 0; i < p->nlines; i++)
		for (size_t k = 0; k < p->lines[i].n; k++) {
			double e = log2(p->lines[i].pts[k].x / lo);
			if (fabs(e - round(e)) > 1e-9)
				return 0;
		}
	return 1;
}

/*
 * Ticks of a log axis into t (at most max): the values' own powers of two
 * when they are such a series, else 1, 2, 5 x 10^k over at most three
 * decades and 10^k beyond. Returns the count.
 */
static size_t log_ticks(const struct chart *c, double *t, size_t max)
{
	double lo = 0, hi = 0;
	size_t n = 0;
	extent(c->p, 0, &lo, &hi);
	if (powers_of_two(c->p, lo)) {
		int k = (int)round(log2(hi / lo)), stride = k / 9 + 1;
		for (int e = 0; e <= k && n < max; e += stride)
			t[n++] = lo * pow(2, e);
		return n;
	}
	static const double mult[] = { 1, 2, 5 };
	int few = c->x1 - c->x0 <= 3;
	for (double d = floor(c->x0); d <= ceil(c->x1); d++)
		for (size_t m = 0; m < (few ? ARRAY_SIZE(mult) : 1); m++) {
			double v = mult[m] * pow(10, d);
			if (log10(v) >= c->x0 && log10(v) <= c->x1 && n < max)
				t[n++] = v;
		}
	return n;
}

/* Whether every x is a whole number (a count: ticks need no fractions). */
static int whole_numbers(const struct plot *p)
{
	for (size_t i = 0; i < p->nlines; i++)
		for (size_t k = 0; k < p->lines[i].n; k++)
			if (p->lines[i].pts[k].x != floor(p->lines[i].pts[k].x))
				return 0;
	return 1;
}

/* Ticks of the x axis into t, their spacing in *step (linear axes). */
static size_t x_ticks(const struct chart *c, double *t, size_t max, double *step)
{
	size_t n = 0;
	*step = 1;
	if (c->p->xkind == PLOT_X_CATEGORY) {
		for (size_t i = 0; i < c->p->ncats && n < max; i++)
			t[n++] = (double)i;
		return n;
	}
	if (c->xlog)
		return log_ticks(c, t, max);
	*step = nice_step((c->x1 - c->x0) / 8);
	if (*step < 1 && whole_numbers(c->p))  /* no 1.5 GPUs between 1 and 2 */
		*step = 1;
	for (double k = ceil(c->x0 / *step); k * *step <= c->x1 && n < max; k++)
		t[n++] = k * *step;
	return n;
}

/* ---- layout ------------------------------------------------------------------------- */

/* The legend's width from its longest label. */
static int legend_width(const struct plot *p)
{
	size_t ch = p->legend_title ? text_chars(p->legend_title) : 0;
	for (size_t i = 0; i < p->nlines; i++)
		if (text_chars(p->lines[i].label) > ch)
			ch = text_chars(p->lines[i].label);
	if (p->bad_label && text_chars(p->bad_label) > ch)
		ch = text_chars(p->bad_label);
	ch = ch < LEGEND_CHARS ? ch : LEGEND_CHARS;
	int w = 44 + (int)(ch * CHAR_W);
	return w < 110 ? 110 : w;
}

/* Category names slant when they do not fit their slots side by side. */
static void layout(struct chart *c)
{
	const struct plot *p = c->p;
	c->legend_w = legend_width(p);
	c->right = WIDTH - c->legend_w - 36;
	c->bottom = TOP + PLOT_H;
	for (size_t i = 0; p->xkind == PLOT_X_CATEGORY && i < p->ncats; i++) {
		size_t ch = text_chars(p->cats[i]);
		c->label_ch = ch > c->label_ch ? ch : c->label_ch;
	}
	c->label_ch = c->label_ch < CAT_CHARS ? c->label_ch : CAT_CHARS;
	double slot = p->ncats ? (c->right - LEFT) / (double)p->ncats : 0;
	c->rotate = p->xkind == PLOT_X_CATEGORY && c->label_ch * CHAR_W > slot - 8;
	/* A label slanted by 35 degrees drops by sin(35) of its length. */
	c->height = (int)c->bottom + FOOT + (c->rotate ? (int)(c->label_ch * CHAR_W * 0.57) : 0);
}

/* ---- the picture --------------------------------------------------------------------- */

static void write_style(FILE *f)
{
	fputs("<style>\n"
	      "text{font-family:'DejaVu Sans',Verdana,Arial,sans-serif;font-size:11px;fill:#333}\n"
	      "text.title{font-size:16px;font-weight:bold;fill:#222}\n"
	      "text.cmd{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;fill:#666}\n"
	      "text.note{fill:#555}\ntext.axt{font-size:12px;fill:#222;text-anchor:middle}\n"
	      "text.xt{text-anchor:middle;fill:#555}\ntext.xr{text-anchor:end;fill:#555}\n"
	      "text.yt{text-anchor:end;fill:#555}\ntext.lgh{font-weight:bold}\n"
	      ".grid{stroke:#e6e6e6;stroke-width:1}\n.frame{stroke:#888;fill:none}\n"
	      ".ln{fill:none;stroke-width:2;stroke-linejoin:round}\n"
	      ".mk{stroke:#fff;stroke-width:1}\n.bad{stroke-width:2;fill:none}\n"
	      "</style>\n", f);
}

/* Title, command and note, left-aligned above the plot area. */
static void write_titles(const struct chart *c)
{
	FILE *f = c->f;
	fputs("<text class=\"title\" x=\"16\" y=\"28\">", f);
	put_text(f, c->p->title, (size_t)((WIDTH - 32) / 9.5));
	fputs("</text>\n<text class=\"cmd\" x=\"16\" y=\"48\">", f);
	put_text(f, c->p->command, (size_t)((WIDTH - 32) / MONO_W));
	fputs("</text>\n", f);
	if (c->p->note) {
		fputs("<text class=\"note\" x=\"16\" y=\"66\">", f);
		put_text(f, c->p->note, (size_t)((WIDTH - 32) / CHAR_W));
		fputs("</text>\n", f);
	}
}

/* Horizontal gridlines with their labels, then the y axis title. */
static void write_yaxis(const struct chart *c)
{
	FILE *f = c->f;
	char buf[48];
	for (double k = ceil(c->y0 / c->ystep); k * c->ystep <= c->y1 + c->ystep * 1e-9; k++) {
		double v = k * c->ystep, y = y_px(c, v);
		fprintf(f, "<line class=\"grid\" x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
			"<text class=\"yt\" x=\"%d\" y=\"%.1f\">%s</text>\n", LEFT, c->right, y, y,
			LEFT - 6, y + 4, fmt_tick(v, c->ystep, fmax(fabs(c->y0), fabs(c->y1)), buf,
					  sizeof(buf)));
	}
	fprintf(f, "<text class=\"axt\" transform=\"translate(22 %.1f) rotate(-90)\">",
		c->bottom - PLOT_H / 2.0);
	put_text(f, c->p->ytitle, 80);
	fputs("</text>\n", f);
}

/* One x tick: its gridline and its label, upright or slanted. */
static void write_xtick(const struct chart *c, double v, double step)
{
	FILE *f = c->f;
	char buf[64];
	double x = x_px(c, v);
	const char *label = c->p->xkind == PLOT_X_CATEGORY ? c->p->cats[(size_t)v]
							    : fmt_x(c, v, step, buf, sizeof(buf));
	fprintf(f, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%.1f\"/>", x, x,
		TOP, c->bottom);
	if (c->rotate)
		fprintf(f, "<text class=\"xr\" transform=\"translate(%.1f %.1f) rotate(-35)\">",
			x + 3, c->bottom + 14);
	else
		fprintf(f, "<text class=\"xt\" x=\"%.1f\" y=\"%.1f\">", x, c->bottom + 17);
	put_text(f, label, CAT_CHARS);
	fputs("</text>\n", f);
}

/* Vertical gridlines with their labels, then the x axis title. */
static void write_xaxis(const struct chart *c)
{
	double t[64], step;
	size_t n = x_ticks(c, t, ARRAY_SIZE(t), &step);
	for (size_t i = 0; i < n; i++)
		write_xtick(c, t[i], step);
	fprintf(c->f, "<text class=\"axt\" x=\"%.1f\" y=\"%d\">", (LEFT + c->right) / 2,
		c->height - 14);
	put_text(c->f, c->p->xtitle, 80);
	fputs(c->xlog ? " (log scale)</text>\n" : "</text>\n", c->f);
}

/* The stroke attributes of line i: its colour and, past the palette, dashes. */
static void line_stroke(FILE *f, size_t i)
{
	size_t np = ARRAY_SIZE(palette);
	fprintf(f, " stroke=\"%s\"", palette[i % np]);
	if ((i / np) % ARRAY_SIZE(dashes))
		fprintf(f, " stroke-dasharray=\"%s\"", dashes[(i / np) % ARRAY_SIZE(dashes)]);
}

/* Open the element of a marker of shape s at (x, y); returns its tag. */
static const char *marker_open(FILE *f, enum shape s, double x, double y)
{
	double r = 5.2, d = s == SH_DOWN ? -1 : 1;  /* a triangle's tip up or down */
	if (s == SH_CIRCLE) {
		fprintf(f, "<circle class=\"mk\" cx=\"%.1f\" cy=\"%.1f\" r=\"4.2\"", x, y);
		return "circle";
	}
	if (s == SH_SQUARE) {
		fprintf(f, "<rect class=\"mk\" x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\"",
			x - 4, y - 4);
		return "rect";
	}
	if (s == SH_DIAMOND)
		fprintf(f, "<polygon class=\"mk\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\"",
			x, y - r, x + r, y, x, y + r, x - r, y);
	else
		fprintf(f, "<polygon class=\"mk\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"", x,
			y - r * d, x + r * 0.9, y + r * 0.6 * d, x - r * 0.9, y + r * 0.6 * d);
	return "polygon";
}

/* A tooltip, the first child of the element just opened. */
static void write_tip(FILE *f, const char *tip)
{
	if (!tip)
		return;
	fputs("<title>", f);
	put_text(f, tip, 400);
	fputs("</title>", f);
}

/* A marker of line i's shape and colour at (x, y), with its tooltip. */
static void write_marker(FILE *f, size_t i, double x, double y, const char *tip)
{
	const char *tag = marker_open(f, (enum shape)(i % SH_N), x, y);
	fprintf(f, " fill=\"%s\">", palette[i % ARRAY_SIZE(palette)]);
	write_tip(f, tip);
	fprintf(f, "</%s>\n", tag);
}

/*
 * Line i as one path through its ok points in order; a point without a
 * value breaks the line there (M starts a new piece), so that nothing is
 * drawn across it. No path when the line has no ok point.
 */
static void write_line(const struct chart *c, size_t i)
{
	const struct plot_line *l = &c->p->lines[i];
	int pen = 0, any = 0;
	for (size_t k = 0; k < l->n; k++) {
		if (!l->pts[k].ok) {
			pen = 0;
			continue;
		}
		if (!any)
			fputs("<path class=\"ln\" d=\"", c->f);
		fprintf(c->f, "%s%.1f %.1f ", pen ? "L" : "M", x_px(c, l->pts[k].x),
			y_px(c, l->pts[k].y));
		pen = any = 1;
	}
	if (!any)
		return;
	fputs("\"", c->f);
	line_stroke(c->f, i);
	fputs("/>\n", c->f);
}

/* A cross of line i's colour at (x, y), for a point without a value. */
static void write_cross(FILE *f, size_t i, double x, double y, const char *tip)
{
	fprintf(f, "<path class=\"bad\" d=\"M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f\" "
		"stroke=\"%s\">", x - CROSS, y - CROSS, x + CROSS, y + CROSS, x - CROSS, y + CROSS,
		x + CROSS, y - CROSS, i == (size_t)-1 ? "#555" : palette[i % ARRAY_SIZE(palette)]);
	write_tip(f, tip);
	fputs("</path>\n", f);
}

/*
 * Crosses on the x axis for every point without a value; crosses at the
 * same place stack upwards, one per line. O(bad points^2) in the worst
 * case, which a sweep's few dozen values keep small.
 */
static void write_crosses(const struct chart *c)
{
	size_t nbad = 0, ndone = 0;
	for (size_t i = 0; i < c->p->nlines; i++)
		for (size_t k = 0; k < c->p->lines[i].n; k++)
			nbad += !c->p->lines[i].pts[k].ok;
	double *done = xcalloc(nbad ? nbad : 1, sizeof(double));
	for (size_t i = 0; i < c->p->nlines; i++)
		for (size_t k = 0; k < c->p->lines[i].n; k++) {
			const struct plot_point *q = &c->p->lines[i].pts[k];
			if (q->ok)
				continue;
			double x = x_px(c, q->x);
			int below = 0;
			for (size_t j = 0; j < ndone; j++)
				below += fabs(done[j] - x) < 1;
			done[ndone++] = x;
			write_cross(c->f, i, x, c->bottom - below * (2 * CROSS + 3), q->tip);
		}
	free(done);
}

/* The legend: heading, a sample of each line, and the crosses' meaning. */
static void write_legend(const struct chart *c)
{
	FILE *f = c->f;
	double x = c->right + 24, y = TOP + 4;
	if (c->p->legend_title) {
		fprintf(f, "<text class=\"lgh\" x=\"%.1f\" y=\"%.1f\">", x, y + 4);
		put_text(f, c->p->legend_title, LEGEND_CHARS);
		fputs("</text>\n", f);
		y += ROW;
	}
	for (size_t i = 0; i < c->p->nlines; i++, y += ROW) {
		fprintf(f, "<path class=\"ln\" d=\"M%.1f %.1f h26\"", x, y);
		line_stroke(f, i);
		fputs("/>\n", f);
		write_marker(f, i, x + 13, y, NULL);
		fprintf(f, "<text class=\"lg\" x=\"%.1f\" y=\"%.1f\">", x + 34, y + 4);
		put_text(f, c->p->lines[i].label, LEGEND_CHARS);
		fputs("</text>\n", f);
	}
	if (!c->p->bad_label)
		return;
	write_cross(f, (size_t)-1, x + 13, y, NULL);
	fprintf(f, "<text class=\"lg\" x=\"%.1f\" y=\"%.1f\">", x + 34, y + 4);
	put_text(f, c->p->bad_label, LEGEND_CHARS);
	fputs("</text>\n", f);
}

int plot_write(const struct plot *p, FILE *out)
{
	struct chart c = { .p = p, .f = out };
	layout(&c);
	set_xdomain(&c);
	set_ydomain(&c);
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/"
		"2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", WIDTH, c.height,
		WIDTH, c.height);
	write_style(out);
	fprintf(out, "<rect fill=\"#fff\" width=\"%d\" height=\"%d\"/>\n", WIDTH, c.height);
	write_titles(&c);
	write_yaxis(&c);
	write_xaxis(&c);
	fprintf(out, "<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\"/>\n",
		LEFT, TOP, c.right - LEFT, PLOT_H);
	for (size_t i = 0; i < p->nlines; i++)
		write_line(&c, i);
	for (size_t i = 0; i < p->nlines; i++)
		for (size_t k = 0; k < p->lines[i].n; k++)
			if (p->lines[i].pts[k].ok)
				write_marker(out, i, x_px(&c, p->lines[i].pts[k].x),
					     y_px(&c, p->lines[i].pts[k].y), p->lines[i].pts[k].tip);
	write_crosses(&c);
	write_legend(&c);
	fputs("</svg>\n", out);
	return fflush(out) != 0 || ferror(out) ? -1 : 0;
}
