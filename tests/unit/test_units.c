/*
 * test_units.c - unit tests for sim/units.c: every accepted unit of every
 * kind, the errors a scenario writer is likely to hit (no unit, "128M",
 * negative, overflow, garbage) and the formatted output; sim_fmt (sim/util.c),
 * the op names' formatter, against snprintf; picosecond time (sim/util.h)
 * saturating at the clock's end instead of wrapping.
 */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/units.h"
#include "sim/util.h"
#include "tests/checkmain.h"

/* Equal, or within 1e-12 relative: "1.5KB" is 1500 up to rounding. */
static int close_enough(double got, double want)
{
	return got == want || fabs(got - want) <= 1e-12 * fabs(want);
}

/* Parse text as kind; it must succeed with the expected value. */
#define PARSE_OK(kind, text, want) do {					\
	double v_ = -1;							\
	char e_[256] = "";						\
	int rc_ = sim_units_parse((kind), (text), &v_, e_, sizeof e_);	\
	ck_assert_msg(rc_ == 0, "parse(%s, \"%s\") failed: %s",		\
		      #kind, (text), e_);				\
	ck_assert_msg(close_enough(v_, (want)),				\
		      "parse(%s, \"%s\") = %.17g, expected %.17g",	\
		      #kind, (text), v_, (double)(want));		\
} while (0)

/* Parse text as kind; it must fail, leave *out alone, and say needle. */
#define PARSE_FAILS(kind, text, needle) do {				\
	double v_ = 42;							\
	char e_[256] = "";						\
	int rc_ = sim_units_parse((kind), (text), &v_, e_, sizeof e_);	\
	ck_assert_msg(rc_ == -1, "parse(%s, \"%s\") = %d (%.17g), "	\
		      "expected an error", #kind, (text), rc_, v_);	\
	ck_assert_msg(v_ == 42, "parse(%s, \"%s\") wrote %.17g on error", \
		      #kind, (text), v_);				\
	ck_assert_msg(strstr(e_, (needle)) != NULL,			\
		      "parse(%s, \"%s\") said \"%s\", expected \"%s\" in it", \
		      #kind, (text), e_, (needle));			\
} while (0)

/* Format value as kind; the text must be exactly want. */
#define FORMAT_IS(kind, value, want) do {				\
	char b_[64];							\
	const char *r_ = sim_units_format((kind), (value), b_, sizeof b_); \
	ck_assert_msg(r_ == b_, "format did not return its buffer");	\
	ck_assert_msg(strcmp(b_, (want)) == 0,				\
		      "format(%s, %.17g) = \"%s\", expected \"%s\"",	\
		      #kind, (double)(value), b_, (want));		\
} while (0)

struct parse_case {
	const char *text;
	double want;
};

static const struct parse_case bytes_cases[] = {
	{ .text = "1B",   .want = 1 },
	{ .text = "1KB",  .want = 1e3 },
	{ .text = "1kB",  .want = 1e3 },
	{ .text = "1MB",  .want = 1e6 },
	{ .text = "1GB",  .want = 1e9 },
	{ .text = "1TB",  .want = 1e12 },
	{ .text = "1PB",  .want = 1e15 },
	{ .text = "1KiB", .want = 1024.0 },
	{ .text = "1MiB", .want = 1048576.0 },
	{ .text = "1GiB", .want = 1073741824.0 },
	{ .text = "1TiB", .want = 1099511627776.0 },
	{ .text = "1PiB", .want = 1125899906842624.0 },
	{ .text = "256MiB", .want = 256.0 * 1048576 },
	{ .text = "1.5KB",  .want = 1500 },
	{ .text = "0.5B",   .want = 0.5 },
	{ .text = ".5GB",   .want = 5e8 },
	{ .text = "1e3MB",  .want = 1e9 },
	{ .text = "+2GB",   .want = 2e9 },
	{ .text = "8PiB",   .want = SIM_UNITS_MAX_BYTES },
};

static const struct parse_case rate_cases[] = {
	{ .text = "1B/s",    .want = 1 },
	{ .text = "1KB/s",   .want = 1e3 },
	{ .text = "1kB/s",   .want = 1e3 },
	{ .text = "1MB/s",   .want = 1e6 },
	{ .text = "50GB/s",  .want = 5e10 },
	{ .text = "1TB/s",   .want = 1e12 },
	{ .text = "1PB/s",   .want = 1e15 },
	{ .text = "1KiB/s",  .want = 1024.0 },
	{ .text = "1MiB/s",  .want = 1048576.0 },
	{ .text = "25GiB/s", .want = 25 * 1073741824.0 },
	{ .text = "1TiB/s",  .want = 1099511627776.0 },
	{ .text = "1PiB/s",  .want = 1125899906842624.0 },
	{ .text = "50GBps",  .want = 5e10 },
	{ .text = "1GiBps",  .want = 1073741824.0 },
	{ .text = "1Bps",    .want = 1 },
	{ .text = "8b/s",    .want = 1 },
	{ .text = "8Kb/s",   .want = 1e3 },
	{ .text = "8Mb/s",   .want = 1e6 },
	{ .text = "400Gb/s", .want = 5e10 },
	{ .text = "8Tb/s",   .want = 1e12 },
	{ .text = "8Kbps",   .want = 1e3 },
	{ .text = "8Mbps",   .want = 1e6 },
	{ .text = "400Gbps", .want = 5e10 },
	{ .text = "8Tbps",   .want = 1e12 },
	{ .text = "400Gbit/s", .want = 5e10 },
	{ .text = "200 Gb/s",  .want = 2.5e10 },
};

static const struct parse_case time_cases[] = {
	{ .text = "1ps",  .want = 1e-12 },
	{ .text = "1ns",  .want = 1e-9 },
	{ .text = "10us", .want = 1e-5 },
	{ .text = "10\xc2\xb5s", .want = 1e-5 },	/* U+00B5 micro sign */
	{ .text = "10\xce\xbcs", .want = 1e-5 },	/* U+03BC Greek mu */
	{ .text = "1.5ms", .want = 1.5e-3 },
	{ .text = "2s",    .want = 2 },
	{ .text = "35.1 ms", .want = 35.1e-3 },
};

static const struct parse_case flops_cases[] = {
	{ .text = "1FLOP/s",    .want = 1 },
	{ .text = "1KFLOP/s",   .want = 1e3 },
	{ .text = "1MFLOP/s",   .want = 1e6 },
	{ .text = "1GFLOP/s",   .want = 1e9 },
	{ .text = "989TFLOP/s", .want = 989e12 },
	{ .text = "1.98 PFLOP/s", .want = 1.98e15 },
	{ .text = "1EFLOP/s",   .want = 1e18 },
	{ .text = "1FLOPS",     .want = 1 },
	{ .text = "1KFLOPS",    .want = 1e3 },
	{ .text = "1MFLOPS",    .want = 1e6 },
	{ .text = "1GFLOPS",    .want = 1e9 },
	{ .text = "19.5TFLOPS", .want = 19.5e12 },
	{ .text = "1PFLOPS",    .want = 1e15 },
	{ .text = "1EFLOPS",    .want = 1e18 },
};

static void parse_all(enum sim_unit kind, const struct parse_case *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		PARSE_OK(kind, c[i].text, c[i].want);
}

#define PARSE_ALL(kind, cases) \
	parse_all((kind), (cases), sizeof(cases) / sizeof((cases)[0]))

START_TEST(test_bytes_units)
{
	PARSE_ALL(SIM_UNIT_BYTES, bytes_cases);
}
END_TEST

START_TEST(test_rate_units)
{
	PARSE_ALL(SIM_UNIT_RATE, rate_cases);
}
END_TEST

START_TEST(test_time_units)
{
	PARSE_ALL(SIM_UNIT_TIME, time_cases);
}
END_TEST

START_TEST(test_flops_units)
{
	PARSE_ALL(SIM_UNIT_FLOPS, flops_cases);
}
END_TEST

START_TEST(test_zero_without_unit)
{
	for (int k = SIM_UNIT_BYTES; k <= SIM_UNIT_FLOPS; k++) {
		PARSE_OK((enum sim_unit)k, "0", 0);
		PARSE_OK((enum sim_unit)k, "0.0", 0);
		PARSE_OK((enum sim_unit)k, " +0 ", 0);
	}
	PARSE_OK(SIM_UNIT_BYTES, "0GB", 0);
	PARSE_OK(SIM_UNIT_TIME, "0 us", 0);
}
END_TEST

/* Long times (MTBF, restart, run length) read in minutes, hours and days;
 * they print in seconds. */
START_TEST(test_long_times)
{
	PARSE_OK(SIM_UNIT_TIME, "10min", 600);
	PARSE_OK(SIM_UNIT_TIME, "1.5h", 5400);
	PARSE_OK(SIM_UNIT_TIME, "50000 h", 1.8e8);
	PARSE_OK(SIM_UNIT_TIME, "54d", 54 * 86400.0);
	char buf[32];
	ck_assert_str_eq(sim_units_format(SIM_UNIT_TIME, 7200, buf, sizeof(buf)), "7200 s");
}
END_TEST

START_TEST(test_missing_unit)
{
	PARSE_FAILS(SIM_UNIT_BYTES, "1000",
		    "\"1000\" has no unit: write a size such as 1GB, 256MiB");
	PARSE_FAILS(SIM_UNIT_RATE, "50", "\"50\" has no unit: write a rate");
	PARSE_FAILS(SIM_UNIT_TIME, "0.5", "has no unit: write a time");
	PARSE_FAILS(SIM_UNIT_FLOPS, "989e12", "989TFLOP/s");
}
END_TEST

START_TEST(test_ambiguous)
{
	static const char *const bare[] = { "1K", "1k", "1M", "1m", "1G",
					    "1g", "1T" };

	PARSE_FAILS(SIM_UNIT_BYTES, "128M", "ambiguous unit \"M\": "
		    "write MB (1e6 bytes) or MiB (2^20 bytes)");
	PARSE_FAILS(SIM_UNIT_BYTES, "1 g", "write GB (1e9 bytes) or GiB");
	for (size_t i = 0; i < sizeof bare / sizeof bare[0]; i++)
		PARSE_FAILS(SIM_UNIT_BYTES, bare[i], "ambiguous unit");
	PARSE_FAILS(SIM_UNIT_RATE, "10G/s", "ambiguous unit \"G/s\": "
		    "write GB/s (1e9 bytes/s), GiB/s");
	PARSE_FAILS(SIM_UNIT_RATE, "10Gps", "Gb/s (1e9 bits/s)");
}
END_TEST

START_TEST(test_negative)
{
	PARSE_FAILS(SIM_UNIT_BYTES, "-1GB", "\"-1GB\" must not be negative");
	PARSE_FAILS(SIM_UNIT_RATE, " -50GB/s", "must not be negative");
	PARSE_FAILS(SIM_UNIT_TIME, "-0", "must not be negative");
	PARSE_FAILS(SIM_UNIT_FLOPS, "-1TFLOP/s", "must not be negative");
}
END_TEST

START_TEST(test_overflow)
{
	PARSE_FAILS(SIM_UNIT_BYTES, "1e999GB", "\"1e999GB\" is out of range");
	PARSE_FAILS(SIM_UNIT_BYTES, "1e308PB", "out of range");
	PARSE_FAILS(SIM_UNIT_BYTES, "9PiB", "too large (at most 8 PiB)");
	PARSE_FAILS(SIM_UNIT_BYTES, "1e300B", "too large (at most 8 PiB)");
	PARSE_FAILS(SIM_UNIT_RATE, "1e308PB/s", "out of range");
	PARSE_FAILS(SIM_UNIT_TIME, "1e999s", "out of range");
	PARSE_FAILS(SIM_UNIT_FLOPS, "1e300EFLOP/s", "out of range");
	/* Rates, times and FLOP rates have no 8 PiB cap. */
	PARSE_OK(SIM_UNIT_RATE, "1e6PB/s", 1e21);
}
END_TEST

START_TEST(test_garbage)
{
	PARSE_FAILS(SIM_UNIT_BYTES, "", "empty value: expected a size");
	PARSE_FAILS(SIM_UNIT_BYTES, "  \t ", "empty value");
	PARSE_FAILS(SIM_UNIT_BYTES, "GB",
		    "\"GB\" does not start with a number: expected a size");
	PARSE_FAILS(SIM_UNIT_BYTES, "12abc", "unknown unit \"abc\" in "
		    "\"12abc\": expected a size such as 1GB, 256MiB or 0");
	PARSE_FAILS(SIM_UNIT_BYTES, "0x10GB", "is not a decimal number");
	PARSE_FAILS(SIM_UNIT_BYTES, "inf", "does not start with a number");
	PARSE_FAILS(SIM_UNIT_TIME, "nan", "does not start with a number");
	PARSE_FAILS(SIM_UNIT_RATE, "infGB/s", "does not start with a number");
	PARSE_FAILS(SIM_UNIT_BYTES, "1..5GB", "unknown unit \".5GB\"");
	PARSE_FAILS(SIM_UNIT_BYTES, "1GB extra", "unknown unit");
	PARSE_FAILS(SIM_UNIT_BYTES, "++1GB", "does not start with a number");
	PARSE_FAILS(SIM_UNIT_BYTES, "1gb", "unknown unit \"gb\"");
	PARSE_FAILS(SIM_UNIT_TIME, "10m", "unknown unit \"m\"");
	PARSE_FAILS(SIM_UNIT_TIME, "10mins", "expected a time such as 10us");
	PARSE_FAILS(SIM_UNIT_FLOPS, "989T", "expected a FLOP rate");
}
END_TEST

START_TEST(test_spaces)
{
	PARSE_OK(SIM_UNIT_BYTES, " 1GB", 1e9);
	PARSE_OK(SIM_UNIT_BYTES, "1GB ", 1e9);
	PARSE_OK(SIM_UNIT_BYTES, "1 GB", 1e9);
	PARSE_OK(SIM_UNIT_BYTES, "\t 1 GB \t", 1e9);
	PARSE_FAILS(SIM_UNIT_BYTES, "1  GB", "at most one space");
	PARSE_FAILS(SIM_UNIT_BYTES, "1 \tGB", "at most one space");
	PARSE_FAILS(SIM_UNIT_BYTES, "1 G B", "unknown unit \"G B\"");
}
END_TEST

START_TEST(test_bits_vs_bytes)
{
	PARSE_OK(SIM_UNIT_RATE, "400Gb/s", 5e10);
	PARSE_OK(SIM_UNIT_RATE, "400GB/s", 4e11);
	PARSE_FAILS(SIM_UNIT_BYTES, "1Gb", "\"1Gb\" is in bits, not bytes");
	PARSE_FAILS(SIM_UNIT_BYTES, "8b", "in bits");
	PARSE_FAILS(SIM_UNIT_RATE, "1gb/s", "unknown unit \"gb/s\"");
}
END_TEST

START_TEST(test_wrong_kind)
{
	PARSE_FAILS(SIM_UNIT_RATE, "50GB", "\"50GB\" is a size, not a rate: "
		    "expected a rate such as 50GB/s or 400Gb/s");
	PARSE_FAILS(SIM_UNIT_BYTES, "50GB/s", "is a rate, not a size");
	PARSE_FAILS(SIM_UNIT_RATE, "10ps", "is a time, not a rate");
	PARSE_FAILS(SIM_UNIT_TIME, "1GB", "is a size, not a time");
	PARSE_FAILS(SIM_UNIT_RATE, "1TFLOP/s", "is a FLOP rate, not a rate");
}
END_TEST

START_TEST(test_error_buffer)
{
	char small[8];
	double v = 7;

	memset(small, 'x', sizeof small);
	ck_assert_int_eq(sim_units_parse(SIM_UNIT_BYTES, "12abc", &v, small,
					 sizeof small), -1);
	ck_assert_msg(strlen(small) == sizeof small - 1,
		      "message not truncated to fit: \"%s\"", small);
	ck_assert_int_eq(sim_units_parse(SIM_UNIT_BYTES, "1M", &v, NULL, 0),
			 -1);
	ck_assert_msg(v == 7, "value written on error: %g", v);
}
END_TEST

START_TEST(test_expect)
{
	ck_assert_str_eq(sim_units_expect(SIM_UNIT_BYTES),
			 "a size such as 1GB, 256MiB or 0");
	ck_assert_str_eq(sim_units_expect(SIM_UNIT_RATE),
			 "a rate such as 50GB/s or 400Gb/s");
	ck_assert_str_eq(sim_units_expect(SIM_UNIT_TIME),
			 "a time such as 10us, 1.5ms, 2h or 0");
	ck_assert_str_eq(sim_units_expect(SIM_UNIT_FLOPS),
			 "a FLOP rate such as 989TFLOP/s");
}
END_TEST

START_TEST(test_format_bytes)
{
	FORMAT_IS(SIM_UNIT_BYTES, 1e9, "1 GB");
	FORMAT_IS(SIM_UNIT_BYTES, 1073741824.0, "1.07 GB");
	FORMAT_IS(SIM_UNIT_BYTES, 256, "256 B");
	FORMAT_IS(SIM_UNIT_BYTES, 0, "0 B");
	FORMAT_IS(SIM_UNIT_BYTES, -0.0, "0 B");
	FORMAT_IS(SIM_UNIT_BYTES, 0.5, "0.5 B");
	FORMAT_IS(SIM_UNIT_BYTES, 1500, "1.5 KB");
	FORMAT_IS(SIM_UNIT_BYTES, 999999, "1 MB");	/* not "1e+03 KB" */
	FORMAT_IS(SIM_UNIT_BYTES, 2.5e12, "2.5 TB");
	FORMAT_IS(SIM_UNIT_BYTES, SIM_UNITS_MAX_BYTES, "9.01 PB");
	FORMAT_IS(SIM_UNIT_BYTES, -1500, "-1.5 KB");
}
END_TEST

START_TEST(test_format_rate_time_flops)
{
	FORMAT_IS(SIM_UNIT_RATE, 5e10, "50 GB/s");
	FORMAT_IS(SIM_UNIT_RATE, 25 * 1073741824.0, "26.8 GB/s");
	FORMAT_IS(SIM_UNIT_TIME, 0.0351, "35.1 ms");
	FORMAT_IS(SIM_UNIT_TIME, 1e-12, "1 ps");
	FORMAT_IS(SIM_UNIT_TIME, 2.5e-9, "2.5 ns");
	FORMAT_IS(SIM_UNIT_TIME, 1e-6, "1 us");
	FORMAT_IS(SIM_UNIT_TIME, 999.9999e-9, "1 us");
	FORMAT_IS(SIM_UNIT_TIME, 2, "2 s");
	FORMAT_IS(SIM_UNIT_TIME, 7200, "7200 s");
	FORMAT_IS(SIM_UNIT_TIME, 0, "0 s");
	FORMAT_IS(SIM_UNIT_FLOPS, 989e12, "989 TFLOP/s");
	FORMAT_IS(SIM_UNIT_FLOPS, 1.98e15, "1.98 PFLOP/s");
	FORMAT_IS(SIM_UNIT_FLOPS, 19.5e12, "19.5 TFLOP/s");
}
END_TEST

START_TEST(test_format_small_buffer)
{
	char buf[8];

	memset(buf, 'x', sizeof buf);
	sim_units_format(SIM_UNIT_BYTES, 1e9, buf, 4);
	ck_assert_str_eq(buf, "1 G");
	ck_assert_msg(buf[4] == 'x', "wrote past len: '%c'", buf[4]);
	ck_assert_msg(sim_units_format(SIM_UNIT_TIME, 1, buf, 0) == buf,
		      "len 0 must return buf");
	ck_assert_str_eq(buf, "1 G");
}
END_TEST

/* sim_fmt writes what snprintf writes, cut the same way, and returns the
 * same length. */
START_TEST(test_sim_fmt)
{
	char a[64], b[64];
	int na, nb;
	volatile size_t cut[] = { 8, 1, 0 };  /* not known to the compiler */

#define FMT_SAME(len, ...) do { \
		memset(a, 'x', sizeof a); \
		memset(b, 'x', sizeof b); \
		na = sim_fmt(a, len, __VA_ARGS__); \
		nb = snprintf(b, len, __VA_ARGS__); \
		ck_assert_int_eq(na, nb); \
		ck_assert_mem_eq(a, b, sizeof a); \
	} while (0)
	FMT_SAME(sizeof a, "%s.%s.%s.%s%s", "L12", "mb3.c1", "bwd", "re.", "attn.core");
	FMT_SAME(sizeof a, "tp.L%u.mb%u.%d.%d%%", 0u, 4294967295u, -7, INT_MIN);
	FMT_SAME(sizeof a, "%s", "");
	FMT_SAME(cut[0], "dp.bucket%u.%s", 123u, "reducescatter");
	FMT_SAME(cut[1], "mb%u", 5u);
	FMT_SAME(cut[2], "mb%u", 5u);
#undef FMT_SAME
}
END_TEST

/* What format prints, parse reads back (to 3 significant digits). */
START_TEST(test_round_trip)
{
	static const struct {
		enum sim_unit kind;
		double v;
	} cases[] = {
		{ SIM_UNIT_BYTES, 123456789 }, { SIM_UNIT_BYTES, 3 },
		{ SIM_UNIT_RATE, 5e10 },       { SIM_UNIT_RATE, 12.5e6 },
		{ SIM_UNIT_TIME, 4.2e-7 },     { SIM_UNIT_TIME, 3600 },
		{ SIM_UNIT_FLOPS, 312e12 },    { SIM_UNIT_FLOPS, 4e18 },
	};
	char buf[64], err[256];
	double back;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		sim_units_format(cases[i].kind, cases[i].v, buf, sizeof buf);
		ck_assert_msg(sim_units_parse(cases[i].kind, buf, &back, err,
					      sizeof err) == 0,
			      "\"%s\" does not parse: %s", buf, err);
		ck_assert_msg(fabs(back - cases[i].v) <= 5e-3 * cases[i].v,
			      "%.17g -> \"%s\" -> %.17g", cases[i].v, buf, back);
	}
}
END_TEST

/* ---- the one number grammar: sim_number_parse, sim_whole_parse ---------- */

START_TEST(test_number_grammar)
{
	static const struct { const char *text; double want; } good[] = {
		{ "0", 0 }, { "16", 16 }, { "0.5", 0.5 }, { ".5", 0.5 }, { "5.", 5 },
		{ "1e6", 1e6 }, { "1.5E-3", 1.5e-3 }, { "+2", 2 }, { "-1.25", -1.25 },
		{ " 3 ", 3 }, { "-0", 0 },
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		double v = -42;
		char err[256] = "";
		ck_assert_msg(sim_number_parse(good[i].text, &v, err, sizeof(err)) == 0,
			      "'%s' refused: %s", good[i].text, err);
		ck_assert_msg(v == good[i].want && !signbit(v) == !(good[i].want < 0),
			      "'%s' = %.17g, expected %.17g", good[i].text, v, good[i].want);
	}
	/* strtod's extras are not numbers here: hexadecimal (with a binary
	 * exponent), infinities, NaN, trailing text, an exponent without digits. */
	static const char *const bad[] = {
		"0x10", "0x1p4", "0X1P-2", "inf", "-inf", "infinity", "nan", "NaN", "nan(1)",
		"1e", "1e+", "e5", ".", "", " ", "1.5x", "1 2", "--1", "1e400", "1,5", "0b1",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		double v = 42;
		char err[256] = "";
		ck_assert_msg(sim_number_parse(bad[i], &v, err, sizeof(err)) == -1,
			      "'%s' accepted as %.17g", bad[i], v);
		ck_assert_msg(v == 42, "'%s' wrote %.17g on error", bad[i], v);
		ck_assert_msg(*err, "'%s': no message", bad[i]);
	}
	double v;
	char err[256];
	ck_assert_int_eq(sim_number_parse("0x10", &v, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "'0x10' is not a decimal number"), "%s", err);
	ck_assert_int_eq(sim_number_parse("1e400", &v, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "out of range"), "%s", err);
	ck_assert_int_eq(sim_number_parse("0x10", &v, NULL, 0), -1);  /* err may be NULL */
}
END_TEST

START_TEST(test_whole_grammar)
{
	static const struct { const char *text; unsigned long long want; } good[] = {
		{ "0", 0 }, { "4096", 4096 }, { "1e6", 1000000 }, { "2048.0", 2048 },
		{ "+8", 8 }, { "18446744073709551615", ULLONG_MAX },
		{ "9007199254740992", 9007199254740992ull }, { "1e15", 1000000000000000ull },
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		unsigned long long n = 42;
		char err[256] = "";
		ck_assert_msg(sim_whole_parse(good[i].text, ULLONG_MAX, &n, err, sizeof(err)) == 0,
			      "'%s' refused: %s", good[i].text, err);
		ck_assert_msg(n == good[i].want, "'%s' = %llu, expected %llu", good[i].text, n,
			      good[i].want);
	}
	static const char *const bad[] = {
		"1.5", "-1", "-0.5", "0x8", "inf", "nan", "eight", "1e20", "18446744073709551616",
		"2e-1", "", "8 GPUs",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unsigned long long n = 42;
		char err[256] = "";
		ck_assert_msg(sim_whole_parse(bad[i], ULLONG_MAX, &n, err, sizeof(err)) == -1,
			      "'%s' accepted as %llu", bad[i], n);
		ck_assert_msg(n == 42, "'%s' wrote %llu on error", bad[i], n);
	}
	unsigned long long n;
	char err[256];
	ck_assert_int_eq(sim_whole_parse("4097", 4096, &n, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "above 4096"), "%s", err);
	ck_assert_int_eq(sim_whole_parse("5e3", 4096, &n, err, sizeof(err)), -1);
	ck_assert_int_eq(sim_whole_parse("4096", 4096, &n, err, sizeof(err)), 0);
	ck_assert_int_eq(sim_whole_parse("1.5", 10, &n, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "'1.5' is not a whole number"), "%s", err);
}
END_TEST

/* Seconds to picoseconds and sums of times saturate at SIM_PS_MAX (about
 * 106.75 days): nothing past it wraps to a negative time. */
START_TEST(test_ps_saturate)
{
	ck_assert_int_eq(sim_ps_from_s(1.5), 1500000000000LL);
	ck_assert_int_eq(sim_ps_from_s(-2e-12), -2);
	ck_assert_int_eq(sim_ps_from_s(9e6), 9000000000000000000LL);   /* 104 days */
	ck_assert_int_eq(sim_ps_from_s(1e7), SIM_PS_MAX);             /* 116 days */
	ck_assert_int_eq(sim_ps_from_s(1e300), SIM_PS_MAX);
	ck_assert_int_eq(sim_ps_from_s(INFINITY), SIM_PS_MAX);
	ck_assert_int_eq(sim_ps_from_s(-INFINITY), -SIM_PS_MAX);
	/* The last double below 2^63 fits; 2^63 itself does not. */
	ck_assert_int_eq(sim_ps_round(0x1p63 - 1024), INT64_MAX - 1023);
	ck_assert_int_eq(sim_ps_round(0x1p63), SIM_PS_MAX);
	ck_assert_int_eq(sim_ps_add(SIM_PS_MAX - 5, 5), SIM_PS_MAX);
	ck_assert_int_eq(sim_ps_add(SIM_PS_MAX - 5, 6), SIM_PS_MAX);
	ck_assert_int_eq(sim_ps_add(SIM_PS_MAX, SIM_PS_MAX), SIM_PS_MAX);
	ck_assert_int_eq(sim_ps_add(-SIM_PS_MAX, -SIM_PS_MAX), -SIM_PS_MAX);
	ck_assert_int_eq(sim_ps_add(40, 2), 42);
	ck_assert_int_eq(sim_ps_scale(SIM_PS_MAX / 2, 3), SIM_PS_MAX);
	ck_assert_int_eq(sim_ps_scale(1000, 0.5), 500);
	ck_assert_int_eq(sim_ps_scale(1000, 1e-300), 0);
	ck_assert(SIM_PS_MAX_DAYS > 106.75 && SIM_PS_MAX_DAYS < 106.76);
}
END_TEST

static Suite *units_suite(void)
{
	Suite *s = suite_create("units");
	TCase *parse = tcase_create("parse");
	TCase *format = tcase_create("format");

	tcase_add_test(parse, test_bytes_units);
	tcase_add_test(parse, test_rate_units);
	tcase_add_test(parse, test_time_units);
	tcase_add_test(parse, test_flops_units);
	tcase_add_test(parse, test_zero_without_unit);
	tcase_add_test(parse, test_long_times);
	tcase_add_test(parse, test_missing_unit);
	tcase_add_test(parse, test_ambiguous);
	tcase_add_test(parse, test_negative);
	tcase_add_test(parse, test_overflow);
	tcase_add_test(parse, test_garbage);
	tcase_add_test(parse, test_spaces);
	tcase_add_test(parse, test_bits_vs_bytes);
	tcase_add_test(parse, test_wrong_kind);
	tcase_add_test(parse, test_error_buffer);
	tcase_add_test(parse, test_expect);
	tcase_add_test(parse, test_number_grammar);
	tcase_add_test(parse, test_whole_grammar);
	tcase_add_test(format, test_format_bytes);
	tcase_add_test(format, test_format_rate_time_flops);
	tcase_add_test(format, test_format_small_buffer);
	tcase_add_test(format, test_round_trip);
	tcase_add_test(format, test_sim_fmt);
	tcase_add_test(format, test_ps_saturate);
	suite_add_tcase(s, parse);
	suite_add_tcase(s, format);
	return s;
}

int main(void)
{
	return check_run(units_suite());
}
