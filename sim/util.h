/*
 * util.h - the few helpers every layer uses: checked allocation, broken
 * invariants, picosecond time.
 *
 * Out of memory is not recoverable in a batch tool: the x*alloc wrappers print
 * a message and abort (as tmux's xmalloc.c). BUG() is for broken invariants
 * only, never for bad user input, which is reported through an error string
 * and a return code.
 */
#ifndef SIM_UTIL_H
#define SIM_UTIL_H

#include <stddef.h>
#include <stdint.h>

/*
 * Simulated time: an integer count of picoseconds. Its range ends at
 * SIM_PS_MAX (2^63 - 1 ps, about 106.75 days): every conversion into it and
 * every sum of times below saturates there instead of overflowing, and the
 * engine fails a run that would schedule an event at SIM_PS_MAX (sim.h,
 * sim_failed_clock), so that no input, however extreme, wraps the clock.
 */
typedef int64_t sim_ps;

#define SIM_PS_PER_S 1000000000000LL
#define SIM_PS_MAX INT64_MAX
/* SIM_PS_MAX in days, for messages. */
#define SIM_PS_MAX_DAYS ((double)SIM_PS_MAX / SIM_PS_PER_S / 86400)

/* Picoseconds (double) to sim_ps, rounded to nearest; saturates at
 * -SIM_PS_MAX and SIM_PS_MAX (infinities included). NaN is a BUG. */
sim_ps sim_ps_round(double ps);
/* Seconds (double) to picoseconds, rounded to nearest, saturating. */
sim_ps sim_ps_from_s(double s);
/* a + b, saturating at -SIM_PS_MAX and SIM_PS_MAX. */
static inline sim_ps sim_ps_add(sim_ps a, sim_ps b)
{
	sim_ps s;
	if (__builtin_add_overflow(a, b, &s))
		return a > 0 ? SIM_PS_MAX : -SIM_PS_MAX;
	return s;
}
/* d times f (f >= 0), rounded, saturating. */
static inline sim_ps sim_ps_scale(sim_ps d, double f)
{
	return sim_ps_round((double)d * f);
}
/* Picoseconds to seconds. */
static inline double sim_ps_to_s(sim_ps t) { return (double)t / (double)SIM_PS_PER_S; }

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t n);
/* Zeroed memory for count elements of size n (a multiple of align, a power
 * of two), aligned to align bytes; freed with free(). */
void *xcalloc_aligned(size_t count, size_t n, size_t align);
void *xrealloc(void *p, size_t n);
/* Grow-by-doubling realloc of an array of count elements of size n. */
void *xreallocarray(void *p, size_t count, size_t n);
/* Grow the array p of *cap elements of size n (doubling from first) until
 * index i fits; new elements are zeroed. Returns the array. Inline where i
 * already fits (most calls, some on the event loop's path). */
void *xgrow_zeroed_slow(void *p, uint32_t *cap, uint32_t i, size_t n, uint32_t first);
static inline void *xgrow_zeroed(void *p, uint32_t *cap, uint32_t i, size_t n, uint32_t first)
{
	return i < *cap ? p : xgrow_zeroed_slow(p, cap, i, n, first);
}
char *xstrdup(const char *s);
/* snprintf for %s, %u, %d and %% only, several times faster: the names of a
 * program's ops (hundreds of thousands at scale). The format attribute
 * checks the arguments' types, not the conversions: any other (%zu, %02u,
 * %x, ...) is a BUG when it runs. */
int sim_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* snprintf into a new string. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Write a message for bad input to err (when there is room) and return -1,
 * for `return sim_errf(err, errlen, "...")` in every parser.
 */
int sim_errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Copy text into out as the body of a JSON string: quotes and backslashes
 * escaped, control characters dropped, cut to fit len. */
void sim_json_escape(const char *s, char *out, size_t len);

/* Report a broken invariant with file and line, then abort. */
#define BUG(...) sim_bug(__FILE__, __LINE__, __VA_ARGS__)
#define BUG_ON(cond) do { if (cond) BUG("%s", #cond); } while (0)
_Noreturn void sim_bug(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#endif
