/*
 * nccl.c - reading nccl-tests logs and fitting the ring's α and B to them
 * (nccl.h).
 */
#include "collectives/nccl.h"

#include <ctype.h>
#include <errno.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/units.h"
#include "sim/util.h"

/* ---- ops ----------------------------------------------------------------------- */

/* Each test, the engine's collective it measures (whose name, "allreduce",
 * also names the test) and one more spelling. */
static const struct {
	enum nccl_op op;
	enum sim_coll_op sim;
	const char *test, *alias;
} ops[] = {
	{ NCCL_OP_ALLREDUCE, SIM_COLL_ALLREDUCE, "all_reduce_perf", "all_reduce" },
	{ NCCL_OP_ALLGATHER, SIM_COLL_ALLGATHER, "all_gather_perf", "all_gather" },
	{ NCCL_OP_REDUCESCATTER, SIM_COLL_REDUCESCATTER, "reduce_scatter_perf", "reduce_scatter" },
	{ NCCL_OP_ALLTOALL, SIM_COLL_ALLTOALL, "alltoall_perf", "all_to_all" },
};

enum nccl_op nccl_op_from_name(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++)
		if (!strcmp(name, ops[i].test) || !strcmp(name, sim_coll_op_name(ops[i].sim)) ||
		    !strcmp(name, ops[i].alias))
			return ops[i].op;
	return NCCL_OP_NONE;
}

enum sim_coll_op nccl_op_sim(enum nccl_op op)
{
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++)
		if (ops[i].op == op)
			return ops[i].sim;
	BUG("no engine collective for nccl op %d", (int)op);
}

const char *nccl_op_test(enum nccl_op op)
{
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++)
		if (ops[i].op == op)
			return ops[i].test;
	return "unknown";
}

const char *nccl_op_coll(enum nccl_op op)
{
	return op == NCCL_OP_NONE ? "unknown" : sim_coll_op_name(nccl_op_sim(op));
}

/* The op a file name says: the first test name found in it. */
static enum nccl_op op_in_name(const char *name)
{
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++)
		if (strstr(base, ops[i].alias) || strstr(base, sim_coll_op_name(ops[i].sim)))
			return ops[i].op;
	return NCCL_OP_NONE;
}

double nccl_busbw_factor(enum nccl_op op, uint32_t n)
{
	BUG_ON(n == 0);
	return sim_coll_busbw_factor(nccl_op_sim(op), n);
}

uint32_t nccl_ring_steps(enum nccl_op op, uint32_t n)
{
	BUG_ON(n == 0);
	return op == NCCL_OP_ALLREDUCE ? 2 * (n - 1) : n - 1;
}

double nccl_ring_time_s(enum nccl_op op, uint32_t n, double bytes, double alpha_s, double bw_Bps)
{
	return nccl_ring_steps(op, n) * alpha_s + bytes * nccl_busbw_factor(op, n) / bw_Bps;
}

/* ---- reading ------------------------------------------------------------------------ */

#define MAX_TOKENS 32

/* Split a line (not NUL-terminated) into at most MAX_TOKENS words in buf. */
static int tokenize(const char *line, size_t len, char *buf, size_t cap, char **tok)
{
	int n = 0;
	size_t o = 0;
	for (size_t i = 0; i < len;) {
		while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
			i++;
		if (i == len)
			break;
		if (n == MAX_TOKENS || o + 1 >= cap)
			return -1;
		tok[n++] = buf + o;
		while (i < len && line[i] != ' ' && line[i] != '\t' && line[i] != '\r' &&
		       o + 1 < cap)
			buf[o++] = line[i++];
		buf[o++] = '\0';
	}
	return n;
}

/* The table's column positions, from its header line. */
struct columns {
	int n;                     /* tokens of a row                 */
	int size, time[2], busbw[2];
};

static int header_columns(char **tok, int n, struct columns *c)
{
	*c = (struct columns){ .n = n, .size = -1, .time = { -1, -1 }, .busbw = { -1, -1 } };
	int times = 0, bws = 0;
	for (int i = 0; i < n; i++) {
		if (!strcmp(tok[i], "size") && c->size < 0)
			c->size = i;
		else if (!strcmp(tok[i], "time") && times < 2)
			c->time[times++] = i;
		else if (!strcmp(tok[i], "busbw") && bws < 2)
			c->busbw[bws++] = i;
	}
	return c->size == 0 && times >= 1 ? 0 : -1;
}

/* A non-negative number, or "N/A" (0). */
static int number(const char *s, double *out)
{
	if (!strcmp(s, "N/A")) {
		*out = 0;
		return 0;
	}
	double v;
	if (sim_number_parse(s, &v, NULL, 0) < 0 || v < 0)
		return -1;
	*out = v;
	return 0;
}

/* Does the line's first word read as a number (a row of the table)? */
static int starts_with_number(const char *line, size_t len)
{
	char word[64];
	size_t i = 0, k = 0;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	while (i < len && line[i] != ' ' && line[i] != '\t' && line[i] != '\r' &&
	       k + 1 < sizeof(word))
		word[k++] = line[i++];
	word[k] = '\0';
	double v;
	return k > 0 && sim_number_parse(word, &v, NULL, 0) == 0;
}

static int is_integer(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* Count a "#  Rank  3 Group  0 Pid 123 on HOST device ..." line. */
static void rank_line(struct nccl_log *log, char **tok, int n, char ***hosts)
{
	if (n < 3 || strcmp(tok[0], "#") || strcmp(tok[1], "Rank") || !is_integer(tok[2]))
		return;
	log->ranks++;
	for (int i = 3; i + 1 < n; i++)
		if (!strcmp(tok[i], "on")) {
			for (uint32_t h = 0; h < log->hosts; h++)
				if (!strcmp((*hosts)[h], tok[i + 1]))
					return;
			*hosts = xreallocarray(*hosts, log->hosts + 1, sizeof(**hosts));
			(*hosts)[log->hosts++] = xstrdup(tok[i + 1]);
			return;
		}
}

static int parse_row(struct nccl_log *log, const struct columns *c, char **tok, int lineno,
		     size_t *cap, char *err, size_t errlen)
{
	struct nccl_row r = { .line = lineno };
	unsigned long long bytes;
	if (sim_whole_parse(tok[c->size], 1ull << 53, &bytes, NULL, 0) < 0)
		return sim_errf(err, errlen, "%s:%d: size: expected a whole number of bytes, got "
				"'%s'", log->name, lineno, tok[c->size]);
	r.bytes = (double)bytes;
	for (int k = 0; k < 2; k++) {
		if (c->time[k] < 0)
			continue;
		double us, bw = 0;
		if (number(tok[c->time[k]], &us) < 0 || (us == 0 && strcmp(tok[c->time[k]], "N/A")))
			return sim_errf(err, errlen, "%s:%d: %s time: expected a positive number "
					"of microseconds or N/A, got '%s'", log->name, lineno,
					k ? "in-place" : "out-of-place", tok[c->time[k]]);
		if (c->busbw[k] >= 0 && number(tok[c->busbw[k]], &bw) < 0)
			return sim_errf(err, errlen, "%s:%d: busbw: expected a number of GB/s or "
					"N/A, got '%s'", log->name, lineno, tok[c->busbw[k]]);
		r.time_s[k] = us * 1e-6;
		r.busbw_Bps[k] = bw * 1e9;
	}
	if (log->nrows && r.bytes <= log->rows[log->nrows - 1].bytes)
		return sim_errf(err, errlen, "%s:%d: size %.0f after %.0f: expected sizes that "
				"grow (one table per log)", log->name, lineno, r.bytes,
				log->rows[log->nrows - 1].bytes);
	if (log->nrows == *cap) {
		*cap = *cap ? 2 * *cap : 32;
		log->rows = xreallocarray(log->rows, *cap, sizeof(*log->rows));
	}
	log->rows[log->nrows++] = r;
	return 0;
}

int nccl_log_parse(struct nccl_log *log, const char *name, const char *buf, size_t len,
		   char *err, size_t errlen)
{
	*log = (struct nccl_log){ .name = xstrdup(name) };
	struct columns col = { 0 };
	int have_cols = 0, lineno = 0, rc = 0;
	size_t cap = 0;
	char **hosts = NULL;
	char words[1024], *tok[MAX_TOKENS];

	for (size_t at = 0; at < len && rc == 0;) {
		const char *line = buf + at, *nl = memchr(line, '\n', len - at);
		size_t n = nl ? (size_t)(nl - line) : len - at;
		at += n + 1;
		lineno++;
		if (memchr(line, '\0', n)) {
			rc = sim_errf(err, errlen, "%s:%d: a NUL byte: expected the text of an "
				      "nccl-tests log", name, lineno);
			break;
		}
		int nt = tokenize(line, n, words, sizeof(words), tok);
		if (nt < 0 && have_cols && starts_with_number(line, n)) {
			rc = sim_errf(err, errlen, "%s:%d: a row of more than %d words or %zu "
				      "characters: expected %d columns, as in the table's header",
				      name, lineno, MAX_TOKENS, sizeof(words) - 1, col.n);
			break;
		}
		if (nt <= 0)
			continue;  /* blank, or too long to be a header */
		if (tok[0][0] == '#') {
			/* "#  size ..." is the column line; "#size" also reads. */
			if (!strcmp(tok[0], "#") && nt > 1)
				rank_line(log, tok, nt, &hosts);
			const char *const starting = "Collective test starting:";
			const char *s = memmem(line, n, starting, strlen(starting));
			if (s) {
				char test[64] = "";
				size_t off = (size_t)(s - line) + strlen(starting), k = 0;
				while (off < n && line[off] == ' ')
					off++;
				while (off < n && k + 1 < sizeof(test) && line[off] != ' ' &&
				       line[off] != '\r')
					test[k++] = line[off++];
				test[k] = '\0';
				log->op = nccl_op_from_name(test);
			}
			char **h = tok;
			int hn = nt;
			if (!strcmp(tok[0], "#"))
				h++, hn--;
			else
				h[0]++;  /* "#size" */
			struct columns c;
			if (hn > 0 && header_columns(h, hn, &c) == 0) {
				if (log->nrows) {
					rc = sim_errf(err, errlen, "%s:%d: a second table: expected "
						      "one table per log", name, lineno);
					break;
				}
				col = c;
				have_cols = 1;
			}
			continue;
		}
		/* A row starts with its size: a number, or a word that starts
		 * with a digit in a line of the header's width (a malformed size,
		 * an error below). NCCL INFO/WARN lines (host:pid:tid ...) and
		 * notes before the table are skipped. */
		if (!have_cols || !(starts_with_number(line, n) ||
				    (isdigit((unsigned char)tok[0][0]) && nt == col.n)))
			continue;
		if (nt != col.n) {
			rc = sim_errf(err, errlen, "%s:%d: %d columns: expected %d, as in the "
				      "table's header", name, lineno, nt, col.n);
			break;
		}
		rc = parse_row(log, &col, tok, lineno, &cap, err, errlen);
	}
	if (rc == 0 && !log->nrows)
		rc = sim_errf(err, errlen, "%s: no nccl-tests table: expected a header line "
			      "'#  size  count  type ... time  algbw  busbw ...' and rows under it",
			      name);
	if (rc == 0 && log->op == NCCL_OP_NONE)
		log->op = op_in_name(name);
	for (uint32_t h = 0; h < log->hosts; h++)
		free(hosts[h]);
	free(hosts);
	if (rc < 0)
		nccl_log_free(log);
	return rc;
}

int nccl_log_read(struct nccl_log *log, const char *path, char *err, size_t errlen)
{
	*log = (struct nccl_log){ 0 };
	FILE *f = fopen(path, "rb");
	if (!f)
		return sim_errf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
	size_t cap = 1 << 16, len = 0;
	char *buf = xmalloc(cap);
	for (size_t got; (got = fread(buf + len, 1, cap - len, f)) > 0;) {
		len += got;
		if (len == cap) {
			if (cap >= (size_t)1 << 30)
				break;
			buf = xrealloc(buf, cap *= 2);
		}
	}
	int bad = ferror(f) || len == cap;
	fclose(f);
	int rc;
	if (bad)
		rc = sim_errf(err, errlen, "%s: cannot read (an error, or over 1 GiB)", path);
	else if (len == 0)
		rc = sim_errf(err, errlen, "%s: empty file: expected an nccl-tests log", path);
	else
		rc = nccl_log_parse(log, path, buf, len, err, errlen);
	free(buf);
	return rc;
}

void nccl_log_free(struct nccl_log *log)
{
	free(log->name);
	free(log->rows);
	*log = (struct nccl_log){ 0 };
}

/* ---- fitting ------------------------------------------------------------------------ */

static int in_range(const struct nccl_point *p, double lo, double hi)
{
	return p->bytes >= lo && p->bytes <= hi && p->time_s > 0;
}

/* Median and worst |t_fit / t - 1| of the points in range. */
static void residuals(const struct nccl_point *p, size_t n, double lo, double hi,
		      struct nccl_fit *fit)
{
	double *e = xmalloc((n ? n : 1) * sizeof(double));
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (in_range(&p[i], lo, hi))
			e[k++] = fabs(nccl_ring_time_s(p[i].op, p[i].n, p[i].bytes, fit->alpha_s,
						       fit->bw_Bps) / p[i].time_s - 1);
	gsl_sort(e, 1, k);
	fit->median_err = k ? gsl_stats_median_from_sorted_data(e, 1, k) : 0;
	fit->worst_err = k ? e[k - 1] : 0;
	free(e);
}

int nccl_fit(const struct nccl_point *p, size_t n, double lo, double hi, struct nccl_fit *fit,
	     char *err, size_t errlen)
{
	*fit = (struct nccl_fit){ 0 };
	size_t m = 0;
	double first = -1;
	int sizes = 0;
	for (size_t i = 0; i < n; i++)
		if (in_range(&p[i], lo, hi)) {
			m++;
			if (first < 0)
				first = p[i].bytes;
			else if (p[i].bytes != first)
				sizes = 2;
		}
	if (m < 2 || sizes < 2)
		return sim_errf(err, errlen, "%zu measured size%s between %.0f and %.0f bytes: a "
				"fit of latency and bandwidth needs at least two sizes", m,
				m == 1 ? "" : "s", lo, hi);

	gsl_error_handler_t *old = gsl_set_error_handler_off();
	gsl_matrix *X = gsl_matrix_alloc(m, 2), *cov = gsl_matrix_alloc(2, 2);
	gsl_vector *y = gsl_vector_alloc(m), *w = gsl_vector_alloc(m), *c = gsl_vector_alloc(2);
	gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(m, 2);
	double chisq = 0;
	int rc = 0;
	for (int pass = 0; pass < 2; pass++) {
		/* Pass 0 fits α and 1/B; pass 1 refits 1/B alone when α < 0. */
		size_t k = 0;
		for (size_t i = 0; i < n; i++) {
			if (!in_range(&p[i], lo, hi))
				continue;
			gsl_matrix_set(X, k, 0, pass ? 0 : nccl_ring_steps(p[i].op, p[i].n));
			gsl_matrix_set(X, k, 1, p[i].bytes * nccl_busbw_factor(p[i].op, p[i].n));
			gsl_vector_set(y, k, p[i].time_s);
			gsl_vector_set(w, k, 1 / (p[i].time_s * p[i].time_s));
			k++;
		}
		int st;
		if (pass == 0) {
			st = gsl_multifit_wlinear(X, w, y, c, cov, &chisq, ws);
		} else {
			/* One parameter: b = Σ w x y / Σ w x². */
			double sxy = 0, sxx = 0;
			for (size_t i = 0; i < m; i++) {
				double x = gsl_matrix_get(X, i, 1), wi = gsl_vector_get(w, i);
				sxy += wi * x * gsl_vector_get(y, i);
				sxx += wi * x * x;
			}
			st = sxx > 0 ? GSL_SUCCESS : GSL_EDOM;
			gsl_vector_set(c, 0, 0);
			gsl_vector_set(c, 1, st ? 0 : sxy / sxx);
			chisq = 0;
			for (size_t i = 0; i < m; i++) {
				double r = gsl_vector_get(y, i) - gsl_vector_get(c, 1) *
					   gsl_matrix_get(X, i, 1);
				chisq += gsl_vector_get(w, i) * r * r;
			}
			gsl_matrix_set_zero(cov);
			if (!st)
				gsl_matrix_set(cov, 1, 1, 1 / sxx);
		}
		if (st || !(gsl_vector_get(c, 1) > 0)) {
			rc = sim_errf(err, errlen, "the sizes between %.0f and %.0f bytes give no "
				      "positive bandwidth (times do not grow with size)", lo, hi);
			break;
		}
		if (pass == 0 && gsl_vector_get(c, 0) < 0) {
			fit->alpha_fixed = 1;
			continue;
		}
		/* Standard errors: the covariance of unit weights scaled by the
		 * residual variance (the weights are relative, not variances). */
		size_t dof = m > 2 ? m - (pass ? 1 : 2) : 1;
		double s2 = chisq / (double)dof, b = gsl_vector_get(c, 1);
		fit->alpha_s = gsl_vector_get(c, 0);
		fit->bw_Bps = 1 / b;
		fit->alpha_sd_s = pass ? 0 : sqrt(gsl_matrix_get(cov, 0, 0) * s2);
		fit->bw_sd_Bps = sqrt(gsl_matrix_get(cov, 1, 1) * s2) / (b * b);
		fit->used = m;
		break;
	}
	gsl_multifit_linear_free(ws);
	gsl_vector_free(c);
	gsl_vector_free(w);
	gsl_vector_free(y);
	gsl_matrix_free(cov);
	gsl_matrix_free(X);
	gsl_set_error_handler(old);
	if (rc == 0)
		residuals(p, n, lo, hi, fit);
	return rc;
}

void nccl_fit_range(const struct nccl_point *p, size_t n, double *lo, double *hi)
{
	double peak = 0, big = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i].time_s <= 0)
			continue;
		double bus = p[i].bytes * nccl_busbw_factor(p[i].op, p[i].n) / p[i].time_s;
		peak = fmax(peak, bus);
		big = fmax(big, p[i].bytes);
	}
	/* The smallest size above every point that falls short of half the peak. */
	double below = -1;
	for (size_t i = 0; i < n; i++) {
		if (p[i].time_s <= 0)
			continue;
		double bus = p[i].bytes * nccl_busbw_factor(p[i].op, p[i].n) / p[i].time_s;
		if (bus < 0.5 * peak)
			below = fmax(below, p[i].bytes);
	}
	double first = big;
	for (size_t i = 0; i < n; i++)
		if (p[i].time_s > 0 && p[i].bytes > below && p[i].bytes < first)
			first = p[i].bytes;
	*lo = first;
	*hi = big;
}
