/*
 * svg.c - the Gantt chart of a stored run (see svg.h).
 *
 * Two passes over the run's ops, both by the store module
 * (sim/store_read.h). The first finds the rows to
 * draw, the (rank, stream) pairs with ops in the window, so that the
 * picture's height is known before anything is written. The second reads
 * each rank's ops by stream and in time order, and merges runs of alike ops
 * into boxes as it goes: only the rows are held in memory, never the ops or
 * the boxes, so a chart of a million ops costs reading them, no more.
 *
 * Geometry: time t maps to x = PLOT_X + (t - from) * scale; rows are
 * stacked top to bottom, grouped by rank, each row drawn in a <g> moved to
 * its place. Every string that comes from the database goes through
 * xml_text(), which escapes markup and replaces what XML cannot hold.
 */
#include "tools/svg.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sim/store_read.h"
#include "sim/units.h"
#include "sim/util.h"
#include "tools/trace.h"

/* Layout in pixels. */
enum {
	WIDTH = 1200,         /* the whole picture                          */
	PLOT_X = 132,         /* left edge of the time axis                 */
	PLOT_W = 1040,        /* length of the time axis                    */
	HEAD_H = 104,         /* title, command, legend, upper axis labels  */
	FOOT_H = 34,          /* lower axis labels and margin               */
	ROW_H_COMPUTE = 18,   /* a compute row                              */
	ROW_H_OTHER = 12,     /* a communication or host row                */
	ROW_GAP = 3,          /* between rows of one rank                   */
	RANK_GAP = 9,         /* between ranks                              */
	TITLE_CHARS = 150,    /* longer commands are cut with an ellipsis   */
	NAME_LEN = 96,        /* op names kept for tooltips                 */
	THIN_PX = 3,          /* boxes thinner than this may absorb others  */
};

/* Phases, the colour classes of boxes, in legend order. */
enum phase { PH_FWD, PH_BWD, PH_RE, PH_COMM, PH_OTHER, PH_WGT, PH_N };

static const struct {
	const char *css;      /* class of the box                        */
	const char *fill;     /* its colour                              */
	const char *label;    /* the legend's words                      */
	int light_text;       /* white text on it (dark fill)            */
} phases[PH_N] = {
	[PH_FWD] = { .css = "f", .fill = "#9ecae1", .label = "forward" },
	[PH_BWD] = { .css = "b", .fill = "#3182bd", .label = "backward", .light_text = 1 },
	[PH_RE] = { .css = "r", .fill = "#6baed6", .label = "recompute" },
	[PH_COMM] = { .css = "m", .fill = "#41b6c4", .label = "communication" },
	[PH_OTHER] = { .css = "o", .fill = "#bdbdbd", .label = "optimizer / other compute" },
	/* a split backward's weight pass (zero-bubble schedules): in the
	 * legend only where the run has one */
	[PH_WGT] = { .css = "w", .fill = "#08519c", .label = "backward: weight gradients",
		     .light_text = 1 },
};
#define IDLE_FILL "#e9d8f5"

/* What an op's label says about it: its phase, micro-batch and chunk. */
struct opkey {
	enum phase ph;
	int mb, chunk;        /* -1 when it has none */
};

/* Ops merged into one box. */
struct box {
	struct opkey k;
	int64_t start_ps, end_ps;
	size_t n;             /* ops in the box */
	char first[NAME_LEN], last[NAME_LEN];
};

/* One (rank, stream) row and where it goes. */
struct row {
	int rank, stream;
	int64_t first_ps, last_ps;    /* its ops' extent in the window */
	char hint[24];                /* what all its ops are ("tp", "pp send") */
	int mixed;                    /* they are not all alike       */
	int y, h;                     /* top edge and height, px      */
};

/* The time axis: tick spacing and the unit its labels are written in. */
struct axis {
	double step_ps;       /* between ticks                        */
	double unit_ps;       /* 1 ns, us, ms or s                    */
	const char *unit;
	int decimals;         /* of a tick label in that unit         */
};

/* Everything one chart needs: the run, the window, the rows, the output. */
struct gantt {
	struct sim_store_read *db;
	int64_t run;
	const struct gantt_opts *o;
	FILE *out;
	char *err;
	size_t errlen;
	char *command;                /* runs.command, may be NULL    */
	int nranks;                   /* runs.ranks                   */
	int64_t from_ps, to_ps;       /* the window                   */
	struct sim_store_window win;  /* the same, for the store      */
	double scale;                 /* px per ps                    */
	int64_t gap_ps;               /* closer ops of a kind merge   */
	struct axis ax;
	struct row *rows;
	size_t nrows;
	int height;
	size_t boxes;
	int weight_pass;              /* the run has split backwards  */
};

/* ---- rank lists ------------------------------------------------------------------ */

/* Read a rank number at *p (blanks around it allowed); -1 if there is none. */
static long rank_number(const char **p)
{
	const char *s = *p;
	long v = 0;
	while (*s == ' ')
		s++;
	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++)
		if ((v = v * 10 + (*s - '0')) > GANTT_MAX_RANK)
			return -1;
	while (*s == ' ')
		s++;
	*p = s;
	return v;
}

/* Mark the ranks of "A" or "A-B" at *p in sel (NULL: only check). */
static int rank_range(const char **p, unsigned char *sel, long *max)
{
	long a = rank_number(p), b = a;
	if (a >= 0 && **p == '-') {
		(*p)++;
		b = rank_number(p);
	}
	if (a < 0 || b < a)
		return -1;
	for (long k = a; sel && k <= b; k++)
		sel[k] = 1;
	if (b > *max)
		*max = b;
	return 0;
}

/* Walk the comma-separated list, marking ranks in sel; -1 on bad syntax. */
static int rank_list(const char *text, unsigned char *sel, long *max)
{
	const char *p = text;
	*max = -1;
	for (;;) {
		if (rank_range(&p, sel, max) < 0)
			return -1;
		if (*p == 0)
			return 0;
		if (*p++ != ',')
			return -1;
	}
}

int gantt_ranks_parse(const char *text, int **ranks, size_t *n, char *err, size_t errlen)
{
	long max;
	if (rank_list(text, NULL, &max) < 0) {
		sim_errf(err, errlen, "expected ranks from 0 to %d such as 0-7,16,24-31, got '%s'",
			 GANTT_MAX_RANK, text);
		return GANTT_BADINPUT;
	}
	/* Two passes: check and find the largest, then mark a map that big. */
	unsigned char *sel = xcalloc((size_t)max + 1, 1);
	rank_list(text, sel, &max);
	*ranks = xmalloc(((size_t)max + 1) * sizeof(int));
	*n = 0;
	for (long k = 0; k <= max; k++)
		if (sel[k])
			(*ranks)[(*n)++] = (int)k;
	free(sel);
	return GANTT_OK;
}

/* ---- what an op is --------------------------------------------------------------- */

/* An op's box class from its kind and label (sim_store_op: the store
 * derives the labels of runs written before them from their names). */
static struct opkey op_key(const struct sim_store_op *op)
{
	static const enum phase by_phase[SIM_PHASE_N] = {
		[SIM_PHASE_NONE] = PH_OTHER, [SIM_PHASE_FWD] = PH_FWD,
		[SIM_PHASE_BWD] = PH_BWD, [SIM_PHASE_RECOMPUTE] = PH_RE,
		[SIM_PHASE_WEIGHT] = PH_WGT,
	};
	int compute = op->kind && !strcmp(op->kind, "compute");
	return (struct opkey){
		.ph = !compute ? PH_COMM : (unsigned)op->phase < SIM_PHASE_N ? by_phase[op->phase]
									    : PH_OTHER,
		.mb = op->mb, .chunk = op->chunk,
	};
}

/* ---- XML text ---------------------------------------------------------------------- */

size_t gantt_utf8_len(const unsigned char *s)
{
	size_t n = s[0] < 0x80 ? 1 : s[0] < 0xc2 ? 0 : s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3
		 : s[0] < 0xf5 ? 4 : 0;
	for (size_t i = 1; i < n; i++)  /* stops at the NUL: it is no continuation */
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
		       (s[0] == 0xef && s[1] == 0xbf && s[2] >= 0xbe)))
		return 0;  /* overlong, surrogate, U+FFFE/U+FFFF */
	if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
		return 0;  /* overlong, beyond U+10FFFF */
	return n;
}

/*
 * Write s as XML character data: markup escaped, control characters and
 * invalid UTF-8 as '?', cut after maxch characters with an ellipsis.
 */
static void xml_text(FILE *f, const char *s, size_t maxch)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	for (size_t ch = 0; *p; ch++) {
		if (ch == maxch) {
			fputs("\u2026", f);
			return;
		}
		size_t n = gantt_utf8_len(p);
		if (*p == '&' || *p == '<' || *p == '>')
			fputs(*p == '&' ? "&amp;" : *p == '<' ? "&lt;" : "&gt;", f);
		else if (n == 0 || (*p < 0x20 && *p != '\t' && *p != '\n'))
			fputc('?', f);
		else
			fwrite(p, 1, n, f);
		p += n ? n : 1;
	}
}

/* ---- the time axis --------------------------------------------------------------- */

/* Ticks 1, 2 or 5 x 10^k apart, about ten of them; the unit from the span. */
static void axis_init(struct axis *ax, double span_ps)
{
	static const struct { double ps; const char *name; } units[] = {
		{ 1e12, "s" }, { 1e9, "ms" }, { 1e6, "\u00b5s" }, { 1e3, "ns" }, { 1, "ps" },
	};
	double raw = span_ps / 10, mag = pow(10, floor(log10(raw))), norm = raw / mag;
	ax->step_ps = (norm < 1.5 ? 1 : norm < 3.5 ? 2 : norm < 7.5 ? 5 : 10) * mag;
	size_t u = 0;
	while (u + 1 < ARRAY_SIZE(units) && span_ps < units[u].ps)
		u++;
	ax->unit_ps = units[u].ps;
	ax->unit = units[u].name;
	double step = ax->step_ps / ax->unit_ps;
	ax->decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
}

/* Time t in the axis unit with `extra` more decimals, zeros trimmed: "12.5 ms". */
static char *fmt_time(const struct axis *ax, double t_ps, int extra, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%.*f", ax->decimals + extra, t_ps / ax->unit_ps);
	if (strchr(buf, '.')) {
		while (n > 0 && buf[n - 1] == '0')
			buf[--n] = 0;
		if (n > 0 && buf[n - 1] == '.')
			buf[--n] = 0;
	}
	if (!strcmp(buf, "-0"))
		strcpy(buf, "0");
	snprintf(buf + n, len - (size_t)n, " %s", ax->unit);
	return buf;
}

static double px(const struct gantt *g, int64_t t_ps)
{
	return PLOT_X + (double)(t_ps - g->from_ps) * g->scale;
}

/* The ticks in the window: tick k is at time k * step, *first <= k <= *last. */
static void ticks(const struct gantt *g, double *first, double *last)
{
	*first = ceil((double)g->from_ps / g->ax.step_ps);
	*last = floor(((double)g->to_ps + 0.5) / g->ax.step_ps);
}

static double tick_x(const struct gantt *g, double k)
{
	return px(g, (int64_t)llround(k * g->ax.step_ps));
}

/* Tick labels above (or below) the rows, with tick marks and a base line. */
static void write_axis(struct gantt *g, int y, int above)
{
	FILE *f = g->out;
	double first, last;
	char lab[48];
	ticks(g, &first, &last);
	fprintf(f, "<path class=\"ax\" d=\"M%d %dh%d", PLOT_X, y, PLOT_W);
	for (double k = first; k <= last; k++)
		fprintf(f, "M%.1f %dv%d", tick_x(g, k), y, above ? -4 : 4);
	fputs("\"/>\n", f);
	for (double k = first; k <= last; k++)
		fprintf(f, "<text class=\"tk\" x=\"%.1f\" y=\"%d\">%s</text>\n", tick_x(g, k),
			y + (above ? -7 : 15), fmt_time(&g->ax, k * g->ax.step_ps, 0, lab, sizeof(lab)));
}

/* Light vertical lines at the ticks, behind the rows. */
static void write_grid(struct gantt *g, int y0, int y1)
{
	double first, last;
	ticks(g, &first, &last);
	fputs("<path class=\"gr\" d=\"", g->out);
	for (double k = first; k <= last; k++)
		fprintf(g->out, "M%.1f %dV%d", tick_x(g, k), y0, y1);
	fputs("\"/>\n", g->out);
}

/* ---- the run and its rows ---------------------------------------------------------- */

/* Store a message for bad input and return GANTT_BADINPUT. */
__attribute__((format(printf, 2, 3)))
static int bad_input(struct gantt *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(g->err, g->errlen, fmt, ap);
	va_end(ap);
	return GANTT_BADINPUT;
}

static int db_fail(struct gantt *g)
{
	sim_errf(g->err, g->errlen, "reading the database: %s", sim_store_read_error(g->db));
	return GANTT_FAIL;
}

/*
 * The run's rank count and end (its duration); GANTT_BADINPUT if none.
 * Here and below, sim_errf()'s -1 is GANTT_BADINPUT (checked at compile time).
 */
_Static_assert(GANTT_BADINPUT == -1, "sim_errf() returns GANTT_BADINPUT");
static int run_extent(struct sim_store_read *db, int64_t run, struct gantt_window *w,
		      char *err, size_t errlen)
{
	int rc = sim_store_read_extent(db, run, &w->nranks, &w->end_ps);
	if (rc == 1)
		return sim_errf(err, errlen, "option --run: no run %lld", (long long)run);
	if (rc != SIM_STORE_READ_OK) {
		sim_errf(err, errlen, "reading the database: %s", sim_store_read_error(db));
		return GANTT_FAIL;
	}
	return GANTT_OK;
}

int gantt_window_of(struct sim_store_read *db, int64_t run, const struct gantt_opts *o,
		    struct gantt_window *w, char *err, size_t errlen)
{
	char a[48], b[48];
	int rc = run_extent(db, run, w, err, errlen);
	if (rc != GANTT_OK)
		return rc;
	int some = o->ranks && o->nranks;
	w->rank_lo = some ? o->ranks[0] : 0;
	w->rank_hi = some ? o->ranks[o->nranks - 1] : INT32_MAX;
	if (some && w->rank_hi >= w->nranks)
		return sim_errf(err, errlen, "option --ranks: rank %d is not in run %lld, which has "
				"ranks 0-%d", w->rank_hi, (long long)run, w->nranks - 1);
	w->from_ps = o->from_ps;
	w->to_ps = o->to_ps > 0 && o->to_ps < w->end_ps ? o->to_ps : w->end_ps;
	if (w->from_ps >= w->end_ps)
		return sim_errf(err, errlen, "option --from: %s is not before the end of run %lld (%s)",
				sim_units_format(SIM_UNIT_TIME, sim_ps_to_s(w->from_ps), a, sizeof(a)),
				(long long)run,
				sim_units_format(SIM_UNIT_TIME, sim_ps_to_s(w->end_ps), b, sizeof(b)));
	if (w->to_ps <= w->from_ps)
		return sim_errf(err, errlen, "option --to: must be after --from");
	return GANTT_OK;
}

/* The run's command (NULL if not recorded), for the title. */
static int load_command(struct gantt *g)
{
	struct sim_store_run_row row;
	int rc = sim_store_read_run(g->db, g->run, &row);
	g->command = row.command;
	row.command = NULL;
	sim_store_run_row_free(&row);
	return rc == SIM_STORE_READ_OK ? GANTT_OK : db_fail(g);
}

/* The window and run from the options, and the scale and axis they give. */
static int set_window(struct gantt *g)
{
	struct gantt_window w;
	int rc = gantt_window_of(g->db, g->run, g->o, &w, g->err, g->errlen);
	if (rc != GANTT_OK)
		return rc;
	g->nranks = w.nranks;
	g->from_ps = w.from_ps;
	g->to_ps = w.to_ps;
	g->win = (struct sim_store_window){ .run = g->run, .ranks = g->o->ranks,
					    .nranks = g->o->nranks, .from_ps = g->from_ps,
					    .to_ps = g->to_ps };
	g->scale = PLOT_W / (double)(g->to_ps - g->from_ps);
	g->gap_ps = (g->to_ps - g->from_ps) / 2000;  /* 0.05% of the window */
	axis_init(&g->ax, (double)(g->to_ps - g->from_ps));
	return load_command(g);
}

/*
 * The rows: (rank, stream) pairs with ops of non-zero length in the window.
 * O(ops of the chosen ranks' span): one grouped scan of the index, fine
 * next to drawing them.
 */
static void add_row(void *ctx, const struct sim_store_stream *s)
{
	struct gantt *g = ctx;
	g->rows = xreallocarray(g->rows, g->nrows + 1, sizeof(*g->rows));
	g->rows[g->nrows++] = (struct row){ .rank = s->rank, .stream = s->stream,
					    .first_ps = s->first_ps, .last_ps = s->last_ps };
}

static int load_rows(struct gantt *g)
{
	int rc = sim_store_read_streams(g->db, &g->win, SIM_STORE_SPAN, add_row, g);
	return rc == SIM_STORE_READ_OK ? GANTT_OK : db_fail(g);
}

/* Place the rows: heights by stream, gaps within and between ranks. */
static void layout(struct gantt *g)
{
	int y = HEAD_H;
	for (size_t i = 0; i < g->nrows; i++) {
		struct row *r = &g->rows[i];
		if (i > 0)
			y += r->rank != r[-1].rank ? RANK_GAP : ROW_GAP;
		r->y = y;
		r->h = r->stream == 0 ? ROW_H_COMPUTE : ROW_H_OTHER;
		y += r->h;
	}
	g->height = y + FOOT_H;
}

/* ---- the picture ------------------------------------------------------------------- */

static void write_style(FILE *f)
{
	fputs("<style>\n"
	      "text{font-family:'DejaVu Sans',Verdana,Arial,sans-serif;fill:#333}\n"
	      ".ti{font-size:16px;font-weight:bold;fill:#222}\n"
	      ".cm{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:11px;fill:#666}\n"
	      ".lg{font-size:11px}\n.tk{font-size:10px;fill:#555;text-anchor:middle}\n"
	      ".rk{font-size:11px;font-weight:bold;fill:#222}\n"
	      ".sn{font-size:9px;fill:#888;text-anchor:end}\n"
	      ".n1,.n2{text-anchor:middle;fill:#08306b}\n.n1{font-size:10px}\n"
	      ".n2{font-size:8.5px}\n.wt{fill:#fff}\n"
	      ".ax{stroke:#999;fill:none}\n.gr{stroke:#ececec;fill:none}\n"
	      ".bd{fill:#f6f6f6}\n"
	      "rect.s{stroke:#fff;stroke-width:.6}\n", f);
	for (int p = 0; p < PH_N; p++)
		fprintf(f, ".%s{fill:%s}\n", phases[p].css, phases[p].fill);
	fputs(".id{fill:" IDLE_FILL "}\n</style>\n", f);
}

/* Title, the command that made the run, and the legend. */
static void write_head(struct gantt *g)
{
	FILE *f = g->out;
	char a[48], b[48];
	int drawn = 0;
	for (size_t i = 0; i < g->nrows; i++)
		drawn += i == 0 || g->rows[i].rank != g->rows[i - 1].rank;
	fprintf(f, "<text class=\"ti\" x=\"16\" y=\"26\">Run %lld: %d of %d ranks, %s to %s</text>\n",
		(long long)g->run, drawn, g->nranks,
		fmt_time(&g->ax, (double)g->from_ps, 2, a, sizeof(a)),
		fmt_time(&g->ax, (double)g->to_ps, 2, b, sizeof(b)));
	fputs("<text class=\"cm\" x=\"16\" y=\"45\">", f);
	xml_text(f, g->command ? g->command : "(command not recorded)", TITLE_CHARS);
	fputs("</text>\n", f);
	int x = 16;
	for (int p = 0; p <= PH_N; p++) {  /* the phases, then idle */
		if (p == PH_WGT && !g->weight_pass)
			continue;
		const char *css = p < PH_N ? phases[p].css : "id";
		const char *label = p < PH_N ? phases[p].label : "idle (compute stream)";
		fprintf(f, "<rect class=\"%s\" x=\"%d\" y=\"58\" width=\"22\" height=\"12\"/>"
			"<text class=\"lg\" x=\"%d\" y=\"68\">%s</text>\n", css, x, x + 27, label);
		x += 27 + (int)(strlen(label) * 6.3) + 18;
	}
}

/* Tinted bands under every other rank, before (under) the grid and boxes. */
static void write_bands(struct gantt *g)
{
	for (size_t i = 0, j, band = 0; i < g->nrows; i = j, band++) {
		for (j = i + 1; j < g->nrows && g->rows[j].rank == g->rows[i].rank; j++)
			;
		if (band % 2)
			fprintf(g->out, "<rect class=\"bd\" x=\"0\" y=\"%d\" width=\"%d\" "
				"height=\"%d\"/>\n", g->rows[i].y - RANK_GAP / 2, WIDTH,
				g->rows[j - 1].y + g->rows[j - 1].h - g->rows[i].y + RANK_GAP);
	}
}

/*
 * Rank and stream labels, once the rows are drawn (trace.h names the
 * streams): a stream without a name whose ops are all alike says what they
 * are ("stream 12 · expert send"), except on a rank's first row, where the
 * rank's label leaves no room.
 */
static void write_labels(struct gantt *g)
{
	FILE *f = g->out;
	char buf[32];
	for (size_t i = 0; i < g->nrows; i++) {
		const struct row *r = &g->rows[i];
		int first = i == 0 || r->rank != r[-1].rank;
		if (first)
			fprintf(f, "<text class=\"rk\" x=\"12\" y=\"%d\">rank %d</text>\n",
				r->y + r->h / 2 + 4, r->rank);
		const char *name = trace_stream_name(r->stream, buf, sizeof(buf));
		fprintf(f, "<text class=\"sn\" x=\"%d\" y=\"%d\">%s", PLOT_X - 6,
			r->y + r->h / 2 + 3, name);
		if (name == buf && !first && r->hint[0] && !r->mixed) {
			fputs(" \u00b7 ", f);
			xml_text(f, r->hint, sizeof(r->hint));
		}
		fputs("</text>\n", f);
	}
}

/* Note what the row's ops have in common: the name's first word, and the
 * direction of a send or receive. */
static void row_hint(struct row *r, const char *kind, const char *name)
{
	char h[sizeof(r->hint)];
	const char *dir = !strcmp(kind, "send") ? " send" : !strcmp(kind, "recv") ? " recv" : "";
	size_t n = strcspn(name, ".");
	snprintf(h, sizeof(h), "%.*s%s", n > 12 ? 12 : (int)n, name, dir);
	if (!r->hint[0] && !r->mixed)
		memcpy(r->hint, h, sizeof(h));
	else if (strcmp(r->hint, h))
		r->mixed = 1;
}

/* Whether text of len characters in font size fs fits in w px. */
static int fits(size_t len, double fs, double w)
{
	return len * fs * 0.62 + 4 <= w;
}

/*
 * The text drawn on a box w px wide, or "" when none fits: the micro-batch
 * ("3", or "3.1" with a chunk); else the op's name when it is alone, else
 * the name's first word ("optimizer", "offload").
 */
static void box_label(const struct box *b, double fs, double w, char *buf, size_t len)
{
	if (b->k.mb >= 0 && b->k.chunk >= 0)
		snprintf(buf, len, "%d.%d", b->k.mb, b->k.chunk);
	else if (b->k.mb >= 0)
		snprintf(buf, len, "%d", b->k.mb);
	else if (b->n == 1 && fits(strlen(b->first), fs, w))
		snprintf(buf, len, "%s", b->first);
	else
		snprintf(buf, len, "%.*s", (int)strcspn(b->first, "."), b->first);
	if (!fits(strlen(buf), fs, w))
		buf[0] = 0;
}

/* The tooltip: the ops' names, count, start, end and length. */
static void box_title(struct gantt *g, const struct box *b)
{
	FILE *f = g->out;
	char t0[48], t1[48], d[48];
	fputs("<title>", f);
	xml_text(f, b->first, NAME_LEN);
	if (b->n > 1) {
		fputs(" \u2026 ", f);
		xml_text(f, b->last, NAME_LEN);
		fprintf(f, " (%zu ops)", b->n);
	}
	fprintf(f, "\n%s \u2013 %s (%s)</title>", fmt_time(&g->ax, (double)b->start_ps, 2, t0,
							     sizeof(t0)),
		fmt_time(&g->ax, (double)b->end_ps, 2, t1, sizeof(t1)),
		fmt_time(&g->ax, (double)(b->end_ps - b->start_ps), 2, d, sizeof(d)));
}

/* Draw one box of a row (coordinates relative to the row's top). */
static void box_emit(struct gantt *g, const struct row *r, const struct box *b)
{
	FILE *f = g->out;
	double x0 = px(g, b->start_ps > g->from_ps ? b->start_ps : g->from_ps);
	double x1 = px(g, b->end_ps < g->to_ps ? b->end_ps : g->to_ps);
	double w = x1 - x0 < 0.5 ? 0.5 : x1 - x0;
	/* Wide boxes get a thin white edge so that neighbours stay apart. */
	fprintf(f, "<rect class=\"%s%s\" x=\"%.2f\" width=\"%.2f\" height=\"%d\">",
		phases[b->k.ph].css, w >= 4 ? " s" : "", x0, w, r->h);
	box_title(g, b);
	fputs("</rect>\n", f);
	char lab[NAME_LEN];
	double fs = r->h >= ROW_H_COMPUTE ? 10 : 8.5;
	box_label(b, fs, w, lab, sizeof(lab));
	if (lab[0]) {
		fprintf(f, "<text class=\"%s%s\" x=\"%.2f\" y=\"%.1f\">", fs < 10 ? "n2" : "n1",
			phases[b->k.ph].light_text ? " wt" : "", x0 + w / 2, r->h / 2 + fs * 0.36);
		xml_text(f, lab, NAME_LEN);
		fputs("</text>\n", f);
	}
	g->boxes++;
}

/*
 * Whether an op of key k starting at s_ps joins the open box: same phase,
 * micro-batch and chunk, a gap under 0.05% of the window. Communication and
 * other ops without a micro-batch (DDP buckets, benchmark sizes, offload
 * steps) are told apart by name only, so they join only a box still too
 * thin to see on its own.
 */
static int box_joins(const struct gantt *g, const struct box *b, struct opkey k, int64_t s_ps)
{
	if (!b->n || b->k.ph != k.ph || b->k.mb != k.mb || b->k.chunk != k.chunk ||
	    s_ps - b->end_ps >= g->gap_ps)
		return 0;
	int by_name = k.mb < 0 && (k.ph == PH_COMM || k.ph == PH_OTHER);
	return !by_name || (double)(b->end_ps - b->start_ps) * g->scale < THIN_PX;
}

/* Add op (key k, name, times) to the open box, or close it and open another. */
static void box_add(struct gantt *g, const struct row *r, struct box *b, struct opkey k,
		    const char *name, int64_t s, int64_t e)
{
	int same = box_joins(g, b, k, s);
	if (b->n && !same)
		box_emit(g, r, b);
	if (!same) {
		b->k = k;
		b->start_ps = s;
		b->n = 0;
		snprintf(b->first, sizeof(b->first), "%s", name);
	}
	b->end_ps = e > b->end_ps || !b->n ? e : b->end_ps;
	b->n++;
	snprintf(b->last, sizeof(b->last), "%s", name);
}

/* Idle shading of a compute row: the rank's busy span, under the boxes. */
static void write_idle(struct gantt *g, size_t i)
{
	const struct row *r = &g->rows[i];
	int64_t first = r->first_ps, last = r->last_ps;
	for (size_t j = i; j > 0 && g->rows[j - 1].rank == r->rank; j--)
		first = g->rows[j - 1].first_ps < first ? g->rows[j - 1].first_ps : first;
	for (size_t j = i + 1; j < g->nrows && g->rows[j].rank == r->rank; j++) {
		first = g->rows[j].first_ps < first ? g->rows[j].first_ps : first;
		last = g->rows[j].last_ps > last ? g->rows[j].last_ps : last;
	}
	first = first > g->from_ps ? first : g->from_ps;
	last = last < g->to_ps ? last : g->to_ps;
	fprintf(g->out, "<rect class=\"id\" x=\"%.2f\" width=\"%.2f\" height=\"%d\"/>\n",
		px(g, first), px(g, last) - px(g, first), r->h);
}

/* Start drawing row i: its group, and idle shading under a compute row. */
static void row_open(struct gantt *g, size_t i)
{
	fprintf(g->out, "<g transform=\"translate(0 %d)\">\n", g->rows[i].y);
	if (g->rows[i].stream == 0)
		write_idle(g, i);
}

/* Finish row i: draw the box still open. */
static void row_close(struct gantt *g, size_t i, struct box *b)
{
	if (b->n)
		box_emit(g, &g->rows[i], b);
	b->n = 0;
	fputs("</g>\n", g->out);
}

/*
 * The rows of one rank, rows[i] to rows[j - 1] (ascending streams): its ops
 * by stream, then in time order (SIM_STORE_BY_STREAM), merged into boxes
 * on the way. O(the rank's ops up to the window's end).
 */
static int write_rank(struct gantt *g, struct sim_store_ops *q, size_t i, size_t j)
{
	sim_store_ops_rank(q, g->rows[i].rank);
	struct box b = { .n = 0 };
	struct sim_store_op op;
	size_t k = i;
	int rc;
	row_open(g, k);
	while ((rc = sim_store_ops_next(q, &op)) == 1) {
		if (op.stream != g->rows[k].stream) {  /* the next row: the first pass saw it */
			row_close(g, k, &b);
			while (k + 1 < j && g->rows[k].stream != op.stream)
				k++;
			BUG_ON(g->rows[k].stream != op.stream);
			row_open(g, k);
		}
		const char *kind = op.kind ? op.kind : "";
		const char *name = op.name ? op.name : "";
		row_hint(&g->rows[k], kind, name);
		box_add(g, &g->rows[k], &b, op_key(&op), name, op.start_ps, op.end_ps);
	}
	row_close(g, k, &b);
	return rc == 0 ? GANTT_OK : db_fail(g);
}

static int write_rows(struct gantt *g)
{
	struct sim_store_ops *q = sim_store_ops_open(g->db, &g->win, SIM_STORE_BY_STREAM);
	if (!q)
		return db_fail(g);
	int rc = GANTT_OK;
	for (size_t i = 0, j; i < g->nrows && rc == GANTT_OK; i = j) {
		for (j = i + 1; j < g->nrows && g->rows[j].rank == g->rows[i].rank; j++)
			;
		rc = write_rank(g, q, i, j);
	}
	sim_store_ops_close(q);
	return rc;
}

/* The whole document, once the rows are known. */
static int write_chart(struct gantt *g)
{
	FILE *f = g->out;
	int bottom = g->height - FOOT_H;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
		"width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", WIDTH, g->height, WIDTH,
		g->height);
	write_style(f);
	fprintf(f, "<rect fill=\"#fff\" width=\"%d\" height=\"%d\"/>\n", WIDTH, g->height);
	write_head(g);
	write_bands(g);
	write_grid(g, HEAD_H - 4, bottom + 4);
	write_axis(g, HEAD_H - 4, 1);
	int rc = write_rows(g);
	write_labels(g);
	write_axis(g, bottom + 4, 0);
	fputs("</svg>\n", f);
	return rc;
}

int gantt_write(struct sim_store_read *db, int64_t run, const struct gantt_opts *o, FILE *out,
		struct gantt_stats *st, char *err, size_t errlen)
{
	struct gantt g = { .db = db, .run = run, .o = o, .out = out, .err = err, .errlen = errlen };
	char a[48], b[48];
	int rc = set_window(&g);
	if (rc == GANTT_OK)
		rc = load_rows(&g);
	if (rc == GANTT_OK && g.nrows == 0)
		rc = bad_input(&g, "nothing to draw: run %lld stored no ops of the chosen ranks from "
			       "%s to %s (see --record of clustersim run)", (long long)run,
			       fmt_time(&g.ax, (double)g.from_ps, 2, a, sizeof(a)),
			       fmt_time(&g.ax, (double)g.to_ps, 2, b, sizeof(b)));
	if (rc == GANTT_OK) {
		int w = sim_store_read_has_phase(db, run, SIM_PHASE_WEIGHT);
		if (w < 0)
			rc = db_fail(&g);
		g.weight_pass = w > 0;
	}
	if (rc == GANTT_OK) {
		layout(&g);
		rc = write_chart(&g);
	}
	if (rc == GANTT_OK && (fflush(out) != 0 || ferror(out))) {
		sim_errf(err, errlen, "error writing the chart: %s", strerror(errno));
		rc = GANTT_FAIL;
	}
	if (st)
		*st = (struct gantt_stats){ .rows = g.nrows, .boxes = g.boxes };
	free(g.rows);
	free(g.command);
	return rc;
}
