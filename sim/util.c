/* util.c - checked allocation and BUG(); see util.h. */
#include "sim/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sim_ps sim_ps_from_s(double s)
{
	return (sim_ps)llround(s * (double)SIM_PS_PER_S);
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

void *xgrow_zeroed(void *p, uint32_t *cap, uint32_t i, size_t n, uint32_t first)
{
	if (i < *cap)
		return p;
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
