/*
 * units.c - parse and print sizes, rates, times and FLOP rates; see units.h.
 *
 * Each kind of quantity has a table of {suffix, multiplier} rows in
 * ascending order; rows marked .print are the ones sim_units_format() picks
 * from. Rates reuse the byte table (and a bit table) under a "/s" or "ps"
 * tail, so adding a byte unit adds its rate too. Parsing is strict on
 * purpose: a scenario that says "128M" or "1000" is a mistake to report, not
 * a guess to make. Nothing here allocates or keeps state.
 */
#include "sim/units.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/util.h"

/* One accepted suffix; .print rows are the ones used when formatting. */
struct unit_row {
	const char *suffix;
	double mult;
	bool print;
};

/* A piece of the caller's text: not NUL-terminated where it ends. */
struct span {
	const char *p;
	size_t n;
};

/* Sizes. Decimal prefixes are powers of 1000, binary ones powers of 2. */
static const struct unit_row bytes_rows[] = {
	{ .suffix = "B",   .mult = 1.0,    .print = true },
	{ .suffix = "KiB", .mult = 0x1p10 },
	{ .suffix = "kB",  .mult = 1e3 },
	{ .suffix = "KB",  .mult = 1e3,    .print = true },
	{ .suffix = "MiB", .mult = 0x1p20 },
	{ .suffix = "MB",  .mult = 1e6,    .print = true },
	{ .suffix = "GiB", .mult = 0x1p30 },
	{ .suffix = "GB",  .mult = 1e9,    .print = true },
	{ .suffix = "TiB", .mult = 0x1p40 },
	{ .suffix = "TB",  .mult = 1e12,   .print = true },
	{ .suffix = "PiB", .mult = 0x1p50 },
	{ .suffix = "PB",  .mult = 1e15,   .print = true },
};

/* Bits, for link rates only ("400Gb/s"): multipliers are in bytes. */
static const struct unit_row bits_rows[] = {
	{ .suffix = "b",    .mult = 1.0 / 8 },
	{ .suffix = "bit",  .mult = 1.0 / 8 },
	{ .suffix = "kb",   .mult = 1e3 / 8 },
	{ .suffix = "Kb",   .mult = 1e3 / 8 },
	{ .suffix = "kbit", .mult = 1e3 / 8 },
	{ .suffix = "Kbit", .mult = 1e3 / 8 },
	{ .suffix = "Mb",   .mult = 1e6 / 8 },
	{ .suffix = "Mbit", .mult = 1e6 / 8 },
	{ .suffix = "Gb",   .mult = 1e9 / 8 },
	{ .suffix = "Gbit", .mult = 1e9 / 8 },
	{ .suffix = "Tb",   .mult = 1e12 / 8 },
	{ .suffix = "Tbit", .mult = 1e12 / 8 },
};

/* Times in seconds; the micro sign is accepted as U+00B5 and U+03BC. */
static const struct unit_row time_rows[] = {
	{ .suffix = "ps",           .mult = 1e-12, .print = true },
	{ .suffix = "ns",           .mult = 1e-9,  .print = true },
	{ .suffix = "us",           .mult = 1e-6,  .print = true },
	{ .suffix = "\xc2\xb5" "s", .mult = 1e-6 },
	{ .suffix = "\xce\xbc" "s", .mult = 1e-6 },
	{ .suffix = "ms",           .mult = 1e-3,  .print = true },
	{ .suffix = "s",            .mult = 1.0,   .print = true },
	{ .suffix = "min",          .mult = 60.0 },
	{ .suffix = "h",            .mult = 3600.0 },
	{ .suffix = "d",            .mult = 86400.0 },
};

/* FLOP rates: "FLOP/s" is printed, "FLOPS" (marketing style) is accepted. */
static const struct unit_row flops_rows[] = {
	{ .suffix = "FLOP/s",  .mult = 1.0,  .print = true },
	{ .suffix = "FLOPS",   .mult = 1.0 },
	{ .suffix = "KFLOP/s", .mult = 1e3,  .print = true },
	{ .suffix = "KFLOPS",  .mult = 1e3 },
	{ .suffix = "MFLOP/s", .mult = 1e6,  .print = true },
	{ .suffix = "MFLOPS",  .mult = 1e6 },
	{ .suffix = "GFLOP/s", .mult = 1e9,  .print = true },
	{ .suffix = "GFLOPS",  .mult = 1e9 },
	{ .suffix = "TFLOP/s", .mult = 1e12, .print = true },
	{ .suffix = "TFLOPS",  .mult = 1e12 },
	{ .suffix = "PFLOP/s", .mult = 1e15, .print = true },
	{ .suffix = "PFLOPS",  .mult = 1e15 },
	{ .suffix = "EFLOP/s", .mult = 1e18, .print = true },
	{ .suffix = "EFLOPS",  .mult = 1e18 },
};

/* Bare prefixes (nccl-tests style "128M") that could mean 1e3^k or 2^10k. */
static const struct ambiguous_row {
	const char *bare, *prefix, *dec, *bin;
} ambiguous_rows[] = {
	{ .bare = "K", .prefix = "K", .dec = "1e3",  .bin = "2^10" },
	{ .bare = "k", .prefix = "K", .dec = "1e3",  .bin = "2^10" },
	{ .bare = "M", .prefix = "M", .dec = "1e6",  .bin = "2^20" },
	{ .bare = "m", .prefix = "M", .dec = "1e6",  .bin = "2^20" },
	{ .bare = "G", .prefix = "G", .dec = "1e9",  .bin = "2^30" },
	{ .bare = "g", .prefix = "G", .dec = "1e9",  .bin = "2^30" },
	{ .bare = "T", .prefix = "T", .dec = "1e12", .bin = "2^40" },
	{ .bare = "P", .prefix = "P", .dec = "1e15", .bin = "2^50" },
};

struct kind_info;
typedef bool unit_lookup_fn(const struct kind_info *k, struct span u,
			    double *mult);

/* How one enum sim_unit is parsed, described and printed. */
struct kind_info {
	const char *noun;		/* "size", for "is a size, not a ..." */
	const char *expect;		/* what sim_units_expect() returns */
	const struct unit_row *rows;	/* ascending; .print rows format */
	size_t nrows;
	const char *tail;		/* appended when printing: "/s" */
	unit_lookup_fn *lookup;
};

static bool span_eq(struct span s, const char *lit)
{
	return strlen(lit) == s.n && memcmp(s.p, lit, s.n) == 0;
}

/* Linear search: the tables have at most 14 rows. */
static bool table_find(const struct unit_row *rows, size_t nrows,
		       struct span u, double *mult)
{
	for (size_t i = 0; i < nrows; i++) {
		if (span_eq(u, rows[i].suffix)) {
			*mult = rows[i].mult;
			return true;
		}
	}
	return false;
}

static bool plain_lookup(const struct kind_info *k, struct span u, double *mult)
{
	return table_find(k->rows, k->nrows, u, mult);
}

/* Strip a "/s" or "ps" tail; false if there is none or nothing before it. */
static bool strip_per_second(struct span u, struct span *base)
{
	if (u.n < 3)
		return false;
	struct span tail = { u.p + u.n - 2, 2 };
	if (!span_eq(tail, "/s") && !span_eq(tail, "ps"))
		return false;
	*base = (struct span){ u.p, u.n - 2 };
	return true;
}

/* A byte or bit unit per second: "GB/s", "GiBps", "Gb/s", "Gbps". */
static bool rate_lookup(const struct kind_info *k, struct span u, double *mult)
{
	struct span base;
	(void)k;
	if (!strip_per_second(u, &base))
		return false;
	return table_find(bytes_rows, ARRAY_SIZE(bytes_rows), base, mult) ||
	       table_find(bits_rows, ARRAY_SIZE(bits_rows), base, mult);
}

static const struct kind_info kinds[] = {
	[SIM_UNIT_BYTES] = {
		.noun = "size",
		.expect = "a size such as 1GB, 256MiB or 0",
		.rows = bytes_rows, .nrows = ARRAY_SIZE(bytes_rows),
		.tail = "", .lookup = plain_lookup,
	},
	[SIM_UNIT_RATE] = {
		.noun = "rate",
		.expect = "a rate such as 50GB/s or 400Gb/s",
		.rows = bytes_rows, .nrows = ARRAY_SIZE(bytes_rows),
		.tail = "/s", .lookup = rate_lookup,
	},
	[SIM_UNIT_TIME] = {
		.noun = "time",
		.expect = "a time such as 10us, 1.5ms, 2h or 0",
		.rows = time_rows, .nrows = ARRAY_SIZE(time_rows),
		.tail = "", .lookup = plain_lookup,
	},
	[SIM_UNIT_FLOPS] = {
		.noun = "FLOP rate",
		.expect = "a FLOP rate such as 989TFLOP/s",
		.rows = flops_rows, .nrows = ARRAY_SIZE(flops_rows),
		.tail = "", .lookup = plain_lookup,
	},
};

/* An out-of-range kind is a caller bug, never user input. */
static const struct kind_info *kind_info(enum sim_unit kind)
{
	if ((size_t)kind >= ARRAY_SIZE(kinds) || !kinds[kind].expect)
		BUG("unknown unit kind %d", (int)kind);
	return &kinds[kind];
}

const char *sim_units_expect(enum sim_unit kind)
{
	return kind_info(kind)->expect;
}

/* Length for "%.*s", which takes an int. */
static int plen(struct span s)
{
	return s.n > 1000 ? 1000 : (int)s.n;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static struct span trim(const char *s)
{
	size_t n = 0;

	while (is_blank(*s))
		s++;
	n = strlen(s);
	while (n > 0 && is_blank(s[n - 1]))
		n--;
	return (struct span){ s, n };
}

static size_t skip_digits(struct span t, size_t i)
{
	while (i < t.n && t.p[i] >= '0' && t.p[i] <= '9')
		i++;
	return i;
}

/*
 * Length of the decimal literal [+|-]digits[.digits][e[+-]digits] at the
 * start of t (a sign only if signed), or 0 if there is none. This is what
 * rules out strtod's hex, "inf" and "nan": strtod must then stop exactly
 * where this scan stops.
 */
static size_t scan_decimal(struct span t, bool signed_ok)
{
	size_t i = (t.n > 0 && (t.p[0] == '+' || (signed_ok && t.p[0] == '-'))) ? 1 : 0;
	size_t start = i, j;
	size_t ndigits;

	i = skip_digits(t, i);
	ndigits = i - start;
	if (i < t.n && t.p[i] == '.') {
		j = skip_digits(t, i + 1);
		ndigits += j - (i + 1);
		i = j;
	}
	if (ndigits == 0)
		return 0;
	if (i < t.n && (t.p[i] == 'e' || t.p[i] == 'E')) {
		j = i + 1;
		if (j < t.n && (t.p[j] == '+' || t.p[j] == '-'))
			j++;
		if (j < t.n && t.p[j] >= '0' && t.p[j] <= '9')
			i = skip_digits(t, j);
	}
	return i;
}

/* Read the number at the start of t into *v; *used is its length. */
static int parse_number(const struct kind_info *k, struct span t, double *v,
			size_t *used, char *err, size_t errlen)
{
	char *end;
	size_t n = 0;

	if (t.p[0] == '-')
		return sim_errf(err, errlen, "\"%.*s\" must not be negative",
			    plen(t), t.p);
	n = scan_decimal(t, false);
	if (n == 0)
		return sim_errf(err, errlen,
			    "\"%.*s\" does not start with a number: expected %s",
			    plen(t), t.p, k->expect);
	errno = 0;
	*v = strtod(t.p, &end);
	if (end != t.p + n)
		return sim_errf(err, errlen,
			    "\"%.*s\" is not a decimal number: expected %s",
			    plen(t), t.p, k->expect);
	if (errno == ERANGE)
		return sim_errf(err, errlen, "\"%.*s\" is out of range",
			    plen(t), t.p);
	*used = n;
	return 0;
}

/* t as a whole decimal literal into *v: 0, or -1 with a message. */
static int plain_number(struct span t, double *v, char *err, size_t errlen)
{
	char buf[64], *end;
	size_t n = scan_decimal(t, true);

	if (t.n == 0)
		return sim_errf(err, errlen, "empty value: expected a decimal number");
	if (n == 0 || n != t.n || n >= sizeof buf)
		return sim_errf(err, errlen, n >= sizeof buf && n == t.n ?
			    "'%.*s' is too long for a number" :
			    "'%.*s' is not a decimal number (digits, a '.' and an exponent "
			    "such as 1e6; no hexadecimal, inf or nan)", plen(t), t.p);
	memcpy(buf, t.p, n);	/* strtod must not read past the span */
	buf[n] = 0;
	errno = 0;
	*v = strtod(buf, &end);
	BUG_ON(end != buf + n);	/* scan_decimal's grammar is a subset of strtod's */
	if ((errno == ERANGE && fabs(*v) > 1) || !isfinite(*v))
		return sim_errf(err, errlen, "'%.*s' is out of range", plen(t), t.p);
	return 0;
}

int sim_number_parse(const char *text, double *out, char *err, size_t errlen)
{
	double v;

	BUG_ON(text == NULL || out == NULL);
	if (plain_number(trim(text), &v, err, errlen) < 0)
		return -1;
	*out = v == 0 ? 0.0 : v;	/* no "-0" */
	return 0;
}

int sim_whole_parse(const char *text, unsigned long long max, unsigned long long *out,
		    char *err, size_t errlen)
{
	struct span t = trim(text);
	double v;

	BUG_ON(text == NULL || out == NULL);
	if (plain_number(t, &v, err, errlen) < 0)
		return -1;
	if (skip_digits(t, 0) == t.n) {	/* plain digits: exact to 64 bits */
		char buf[64];
		memcpy(buf, t.p, t.n);
		buf[t.n] = 0;
		errno = 0;
		unsigned long long n = strtoull(buf, NULL, 10);
		if (errno == ERANGE || n > max)
			return sim_errf(err, errlen, "'%.*s' is above %llu", plen(t), t.p, max);
		*out = n;
		return 0;
	}
	if (v < 0 || v != floor(v))
		return sim_errf(err, errlen, "'%.*s' is not a whole number", plen(t), t.p);
	if (v > 0x1p53 || v > (double)max)
		return sim_errf(err, errlen, "'%.*s' is above %llu", plen(t), t.p,
			    max < (1ull << 53) ? max : 1ull << 53);
	*out = (unsigned long long)v;
	return 0;
}

/*
 * "128M" or "10G/s": say which units the writer may have meant. Returns -1
 * with the message if u is such a bare prefix, 0 (err untouched) if not.
 */
static int ambiguous_error(enum sim_unit kind, struct span u, char *err,
			   size_t errlen)
{
	struct span base = u;

	if (kind == SIM_UNIT_RATE && !strip_per_second(u, &base))
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(ambiguous_rows); i++) {
		const struct ambiguous_row *a = &ambiguous_rows[i];
		if (!span_eq(base, a->bare))
			continue;
		if (kind == SIM_UNIT_BYTES)
			return sim_errf(err, errlen, "ambiguous unit \"%.*s\": "
				    "write %sB (%s bytes) or %siB (%s bytes)",
				    plen(u), u.p, a->prefix, a->dec,
				    a->prefix, a->bin);
		return sim_errf(err, errlen, "ambiguous unit \"%.*s\": write "
			    "%sB/s (%s bytes/s), %siB/s (%s bytes/s) or "
			    "%sb/s (%s bits/s)", plen(u), u.p, a->prefix,
			    a->dec, a->prefix, a->bin, a->prefix, a->dec);
	}
	return 0;
}

/* The unit is not one of this kind's: explain as precisely as we can. */
static int unit_error(enum sim_unit kind, struct span t, struct span u,
		      char *err, size_t errlen)
{
	const struct kind_info *k = kind_info(kind);
	double mult;

	if ((kind == SIM_UNIT_BYTES || kind == SIM_UNIT_RATE) &&
	    ambiguous_error(kind, u, err, errlen))
		return -1;
	if (kind == SIM_UNIT_BYTES &&
	    table_find(bits_rows, ARRAY_SIZE(bits_rows), u, &mult))
		return sim_errf(err, errlen, "\"%.*s\" is in bits, not bytes: "
			    "expected %s", plen(t), t.p, k->expect);
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		if (i != (size_t)kind && kinds[i].lookup(&kinds[i], u, &mult))
			return sim_errf(err, errlen, "\"%.*s\" is a %s, not a %s: "
				    "expected %s", plen(t), t.p, kinds[i].noun,
				    k->noun, k->expect);
	}
	return sim_errf(err, errlen, "unknown unit \"%.*s\" in \"%.*s\": "
		    "expected %s", plen(u), u.p, plen(t), t.p, k->expect);
}

/* Final checks on a value in base units, then store it. */
static int store(enum sim_unit kind, struct span t, double r, double *out,
		 char *err, size_t errlen)
{
	if (!isfinite(r))
		return sim_errf(err, errlen, "\"%.*s\" is out of range",
			    plen(t), t.p);
	if (kind == SIM_UNIT_BYTES && r > SIM_UNITS_MAX_BYTES)
		return sim_errf(err, errlen,
			    "\"%.*s\" is too large (at most 8 PiB)",
			    plen(t), t.p);
	*out = r;
	return 0;
}

int sim_units_parse(enum sim_unit kind, const char *text, double *out,
		    char *err, size_t errlen)
{
	const struct kind_info *k = kind_info(kind);
	struct span t, u;
	double v = 0, mult;
	size_t n = 0;

	BUG_ON(text == NULL || out == NULL);
	t = trim(text);
	if (t.n == 0)
		return sim_errf(err, errlen, "empty value: expected %s", k->expect);
	if (parse_number(k, t, &v, &n, err, errlen))
		return -1;
	u = (struct span){ t.p + n, t.n - n };
	if (u.n > 0 && u.p[0] == ' ')
		u = (struct span){ u.p + 1, u.n - 1 };
	if (u.n == 0 && v == 0)
		return store(kind, t, 0.0, out, err, errlen);
	if (u.n == 0)
		return sim_errf(err, errlen, "\"%.*s\" has no unit: write %s",
			    plen(t), t.p, k->expect);
	if (is_blank(u.p[0]))
		return sim_errf(err, errlen, "\"%.*s\": write at most one space "
			    "between the number and the unit", plen(t), t.p);
	if (!k->lookup(k, u, &mult))
		return unit_error(kind, t, u, err, errlen);
	return store(kind, t, v * mult, out, err, errlen);
}

/*
 * The printable row for v: the largest one not above |v|, the smallest for
 * tiny values, and the base unit (multiplier 1) for 0, NaN and infinities.
 */
static const struct unit_row *print_row(const struct kind_info *k, double v)
{
	const struct unit_row *best = NULL;
	double mag = fabs(v);

	for (size_t i = 0; i < k->nrows; i++) {
		const struct unit_row *r = &k->rows[i];
		if (!r->print)
			continue;
		if (mag == 0 || !isfinite(mag))
			best = r->mult == 1.0 ? r : best;
		else if (!best || mag >= r->mult)
			best = r;
	}
	return best;
}

static const struct unit_row *next_print_row(const struct kind_info *k,
					     const struct unit_row *r)
{
	while (++r < k->rows + k->nrows)
		if (r->print)
			return r;
	return NULL;
}

char *sim_units_format(enum sim_unit kind, double value, char *buf, size_t len)
{
	const struct kind_info *k = kind_info(kind);
	const struct unit_row *r, *next;
	char num[48];

	if (len == 0)
		return buf;
	if (value == 0)
		value = 0.0;	/* no "-0" */
	r = print_row(k, value);
	snprintf(num, sizeof num, "%.3g", value / r->mult);
	/* 999.7 KB rounds to "1e+03": step up a unit, or at the top one
	 * print the integer (hours of simulated time read "7200 s"). */
	if (strchr(num, 'e') && fabs(value) >= r->mult) {
		next = next_print_row(k, r);
		if (next)
			r = next;
		snprintf(num, sizeof num,
			 next || fabs(value / r->mult) >= 1e15 ? "%.3g" : "%.0f",
			 value / r->mult);
	}
	snprintf(buf, len, "%s %s%s", num, r->suffix, k->tail);
	return buf;
}
