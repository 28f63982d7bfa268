/*
 * units.h - parse and print quantities with units: sizes, rates, times and
 * FLOP rates, as written in scenarios and on the command line.
 *
 * Conventions (ARCHITECTURE.md): 1 KB = 1e3 B, 1 MB = 1e6 B, 1 GB = 1e9 B,
 * 1 TB = 1e12 B; 1 KiB = 2^10, MiB = 2^20, GiB = 2^30, TiB = 2^40. Rates in
 * bytes per second: "50GB/s", "25 GiB/s", and bits per second: "400Gb/s",
 * "400Gbps" (= 50e9 B/s). Times: ps, ns, us (or µs), ms, s. FLOP rates:
 * "989TFLOP/s", "1.98 PFLOP/s", "19.5TFLOPS". A number without a unit is an
 * error except 0. Ambiguous suffixes ("128M", "1G") are refused with a hint.
 *
 * Parsers return 0 on success and -1 on error, with a message (without the
 * name of the key, which the caller adds) written to err. They never abort.
 */
#ifndef SIM_UNITS_H
#define SIM_UNITS_H

#include <stddef.h>

enum sim_unit {
	SIM_UNIT_BYTES,   /* B, KB..TB, KiB..TiB         -> bytes        */
	SIM_UNIT_RATE,    /* B/s .. TB/s, KiB/s.., Gb/s  -> bytes/second */
	SIM_UNIT_TIME,    /* ps, ns, us, µs, ms, s       -> seconds      */
	SIM_UNIT_FLOPS,   /* FLOP/s, GFLOP/s, TFLOP/s, PFLOP/s (or FLOPS) */
};

/* Largest accepted value of a size: 2^53 bytes (8 PiB), exact in a double. */
#define SIM_UNITS_MAX_BYTES 9007199254740992.0

/*
 * Parse text such as "1GB", "25 MiB", "400Gb/s", "10us", "0" into *out in
 * base units (bytes, bytes/s, seconds, FLOP/s). Leading and trailing blanks
 * are allowed, one space between number and unit is allowed. Negative values,
 * NaN, infinities and values that overflow are errors. Returns 0 or -1.
 */
int sim_units_parse(enum sim_unit kind, const char *text, double *out,
		    char *err, size_t errlen);

/*
 * The one grammar of a plain number, everywhere clustersim reads one
 * (scenario keys, cluster keys, command-line options, calibration tables,
 * nccl-tests logs): a decimal literal [+|-]DIGITS[.DIGITS][e[+|-]DIGITS]
 * (or .DIGITS), with blanks allowed around it. Hexadecimal ("0x10",
 * "0x1p4"), "inf", "nan" and anything after the number are refused, as
 * sim_units_parse() refuses them before a unit. 0, or -1 with a message
 * ("'0x10' is not a decimal number") in err (which may be NULL); *out is
 * unchanged on error.
 */
int sim_number_parse(const char *text, double *out, char *err, size_t errlen);

/*
 * A whole number in the same grammar, at most max: "4096", "1e6" and
 * "2048.0" are whole; "1.5", "-1" are not. Plain digits are read exactly up
 * to UINT64_MAX; other forms must stay within 2^53, where doubles are
 * exact. 0, or -1 with a message in err (may be NULL).
 */
int sim_whole_parse(const char *text, unsigned long long max, unsigned long long *out,
		    char *err, size_t errlen);

/* What the unit kind accepts, for messages: "a size such as 1GB or 256MiB". */
const char *sim_units_expect(enum sim_unit kind);

/*
 * Format a value in base units for people (3 significant digits): bytes as
 * "1 GB", "1.07 GB" or "256 B",
 * rates as "50 GB/s", times as "35.1 ms", FLOP/s as "989 TFLOP/s".
 * Writes at most len bytes to buf and returns buf.
 */
char *sim_units_format(enum sim_unit kind, double value, char *buf, size_t len);

#endif
