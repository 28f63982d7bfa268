/* util.c - checked allocation and BUG(); see util.h. */
#include "sim/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sim_ps sim_ps_round(double ps)
{
	BUG_ON(isnan(ps));
	/* 0x1p63 is the first double past SIM_PS_MAX; the one below it is
	 * 2^63 - 1024, which llround takes exactly. */
	if (ps >= 0x1p63)
		return SIM_PS_MAX;
	if (ps <= -0x1p63)
		return -SIM_PS_MAX;
	return (sim_ps)llround(ps);
}

sim_ps sim_ps_from_s(double s)
{
	return sim_ps_round(s * (double)SIM_PS_PER_S);
}

static _Noreturn void oom(size_t n)
{
	fprintf(stderr, "clustersim: out of memory (allocating %zu bytes)\n", n);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *xcalloc(size_t count, size_t n)
{
	void *p = calloc(count ? count : 1, n ? n : 1);
	if (!p)
		oom(count * n);
	return p;
}

void *xcalloc_aligned(size_t count, size_t n, size_t align)
{
	size_t bytes = (count ? count : 1) * (n ? n : align);
	BUG_ON(bytes / (count ? count : 1) != (n ? n : align) || bytes % align);
	void *p = aligned_alloc(align, bytes);
	if (!p)
		oom(bytes);
	return memset(p, 0, bytes);
}

void *xgrow_zeroed_slow(void *p, uint32_t *cap, uint32_t i, size_t n, uint32_t first)
{
	uint32_t c = *cap ? *cap : first;
	while (c <= i)
		c *= 2;
	p = xreallocarray(p, c, n);
	memset((char *)p + (size_t)*cap * n, 0, (size_t)(c - *cap) * n);
	*cap = c;
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom(n);
	return q;
}

void *xreallocarray(void *p, size_t count, size_t n)
{
	if (n && count > SIZE_MAX / n)
		oom(SIZE_MAX);
	return xrealloc(p, count * n);
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xmalloc(n), s, n);
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		oom(strlen(fmt));
	return s;
}

/* Append c to buf (room for len - 1 characters), counting it in *n. */
static void fmt_put(char *buf, size_t len, size_t *n, char c)
{
	if (*n + 1 < len)
		buf[*n] = c;
	(*n)++;
}

int sim_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	size_t n = 0;
	va_start(ap, fmt);
	for (const char *f = fmt; *f; f++) {
		if (*f != '%') {
			fmt_put(buf, len, &n, *f);
			continue;
		}
		char digits[12];
		int nd = 0;
		long long v;
		switch (*++f) {
		case 's':
			for (const char *a = va_arg(ap, const char *); *a; a++)
				fmt_put(buf, len, &n, *a);
			continue;
		case 'u':
			v = va_arg(ap, unsigned);
			break;
		case 'd':
			v = va_arg(ap, int);
			if (v < 0) {
				fmt_put(buf, len, &n, '-');
				v = -v;
			}
			break;
		case '%':
			fmt_put(buf, len, &n, '%');
			continue;
		default:
			BUG("sim_fmt: conversion %%%c in \"%s\"", *f, fmt);
		}
		do
			digits[nd++] = (char)('0' + v % 10);
		while ((v /= 10) != 0);
		while (nd)
			fmt_put(buf, len, &n, digits[--nd]);
	}
	va_end(ap);
	if (len)
		buf[n < len ? n : len - 1] = '\0';
	return (int)n;
}

int sim_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (!err || errlen == 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

void sim_json_escape(const char *s, char *out, size_t len)
{
	size_t n = 0;
	if (len == 0)
		return;
	for (; *s && n + 3 < len; s++) {
		if (*s == '"' || *s == '\\')
			out[n++] = '\\';
		if ((unsigned char)*s >= 0x20)
			out[n++] = *s;
	}
	out[n] = 0;
}

void sim_bug(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "BUG at %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}
