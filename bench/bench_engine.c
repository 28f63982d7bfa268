/*
 * bench_engine.c - how fast the engine runs: its raw event rate, and a
 * 1,024-rank ring all-reduce of 1 GiB, in events per second and peak memory.
 *
 *   bench_engine [raw|allreduce|all] [--events N]
 *
 * raw        N events (default 20,000,000) through the public engine API
 *            only: K = 1,024 events embedded in structs, each handler
 *            reschedules its own event at now + a pseudo-random delay
 *            (xorshift64, fixed seed) until N events have fired. This is
 *            the "hold" model of event-queue benchmarks: the heap stays at
 *            K entries, every event is one pop and one push.
 * allreduce  coll_bench over 1,024 ranks, ring, 1 GiB (2^30 B), on the
 *            `ideal` preset and on `dgx-h100` (128 nodes x 8 GPUs), in flow
 *            fidelity and in analytic fidelity for comparison. The presets
 *            are the cluster files the CLI uses (scenarios/clusters/), found
 *            as scn_cluster_preset finds them.
 *
 * Each case runs in a forked child so that its peak resident set
 * (getrusage ru_maxrss, a process-wide high-water mark) is its own. Wall
 * time is CLOCK_MONOTONIC around sim_run (raw) or coll_bench_run
 * (all-reduce: planning the collective plus running it; building the
 * topology is not included). Output: one aligned table on stdout; sim_s is
 * the simulated time of the collective, a check that the case is the one
 * intended.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collectives/bench.h"
#include "collectives/coll.h"
#include "scenarios/scenario.h"
#include "sim/sim.h"
#include "topology/topo.h"

#define DEFAULT_EVENTS 20000000ULL
#define RAW_TOKENS 1024u
#define AR_RANKS 1024u
#define AR_BYTES 1073741824.0  /* 1 GiB */

/* ---- timing and memory ------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double peak_rss_mib(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return -1;
	return (double)ru.ru_maxrss / 1024.0;  /* Linux: KiB */
}

#define ROW_FMT "%-28s %10s %10s %13s %13s %10s\n"

static void print_header(void)
{
	printf(ROW_FMT, "case", "events", "wall_s", "events_per_s", "peak_rss_MiB", "sim_s");
}

static void print_row(const char *name, uint64_t events, double wall, double sim_s)
{
	char ev[32], w[32], rate[32], rss[32], st[32];
	snprintf(ev, sizeof(ev), "%" PRIu64, events);
	snprintf(w, sizeof(w), "%.6f", wall);
	if (wall > 0)
		snprintf(rate, sizeof(rate), "%.0f", (double)events / wall);
	else
		snprintf(rate, sizeof(rate), "-");
	snprintf(rss, sizeof(rss), "%.1f", peak_rss_mib());
	if (sim_s >= 0)
		snprintf(st, sizeof(st), "%.6f", sim_s);
	else
		snprintf(st, sizeof(st), "-");
	printf(ROW_FMT, name, ev, w, rate, rss, st);
}

/* ---- raw engine --------------------------------------------------------- */

struct raw_ctx {
	uint64_t rng;        /* xorshift64 state                          */
	uint64_t scheduled;  /* events scheduled so far                   */
	uint64_t target;     /* total events to fire                      */
};

struct raw_token {
	struct sim_event ev;
	struct raw_ctx *ctx;
};

static uint64_t xorshift64(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* 1 ps to 1 us: a spread of the order of link latencies and chunk times. */
static sim_ps raw_delay(struct raw_ctx *c)
{
	return 1 + (sim_ps)(xorshift64(&c->rng) % 1000000u);
}

static void raw_fire(struct sim *sim, struct sim_event *ev)
{
	struct raw_token *t = container_of(ev, struct raw_token, ev);
	struct raw_ctx *c = t->ctx;
	if (c->scheduled < c->target) {
		c->scheduled++;
		sim_schedule(sim, sim_now(sim) + raw_delay(c), &t->ev);
	}
}

/* Never called: the raw benchmark has no links, routes or collectives. */
static void raw_route(void *topo, struct sim *sim, uint32_t src, uint32_t dst,
		      struct sim_route *out)
{
	abort();
}

static uint32_t raw_node_of(void *topo, uint32_t rank) { return rank; }
static uint32_t raw_rails(void *topo) { return 1; }

static void raw_link_name(void *topo, uint32_t tag, char *buf, size_t len)
{
	snprintf(buf, len, "link%u", tag);
}

static const struct sim_topo_ops raw_topo_ops = {
	.route = raw_route,
	.node_of = raw_node_of,
	.rails = raw_rails,
	.link_name = raw_link_name,
};

static int bench_raw(uint64_t nevents)
{
	struct sim_config cfg;
	sim_config_init(&cfg);
	struct sim *sim = sim_new(&cfg, 1, &raw_topo_ops, NULL);
	struct raw_ctx ctx = { .rng = 0x9e3779b97f4a7c15ULL, .scheduled = 0, .target = nevents };
	struct raw_token *tok = calloc(RAW_TOKENS, sizeof(*tok));
	if (!tok) {
		fprintf(stderr, "bench_engine: out of memory\n");
		return -1;
	}
	for (uint32_t i = 0; i < RAW_TOKENS && ctx.scheduled < ctx.target; i++) {
		tok[i] = (struct raw_token){ .ev.fire = raw_fire, .ctx = &ctx };
		ctx.scheduled++;
		sim_schedule(sim, raw_delay(&ctx), &tok[i].ev);
	}
	double t0 = now_s();
	int rc = sim_run(sim);
	double wall = now_s() - t0;
	uint64_t ev = sim_events(sim);
	if (rc < 0 || ev != nevents) {
		fprintf(stderr, "bench_engine: raw: %" PRIu64 " events of %" PRIu64 "%s%s\n",
			ev, nevents, rc < 0 ? ": " : "", rc < 0 ? sim_error(sim) : "");
		rc = -1;
	} else {
		print_row("raw", ev, wall, -1);
	}
	sim_free(sim);
	free(tok);
	return rc;
}

/* ---- all-reduce ---------------------------------------------------------- */

struct ar_case {
	const char *name;
	const char *preset;
	const char *nodes;   /* NULL: the preset's */
	enum sim_fidelity fidelity;
};

static const struct ar_case ar_cases[] = {
	{ "allreduce-ideal-flow", "ideal", NULL, SIM_FIDELITY_FLOW },
	{ "allreduce-ideal-analytic", "ideal", NULL, SIM_FIDELITY_ANALYTIC },
	{ "allreduce-dgx-h100-flow", "dgx-h100", "128", SIM_FIDELITY_FLOW },
	{ "allreduce-dgx-h100-analytic", "dgx-h100", "128", SIM_FIDELITY_ANALYTIC },
};

static int bench_allreduce(const struct ar_case *c)
{
	char err[512];
	struct coll_bench_config cfg = {
		.nranks = AR_RANKS,
		.op = SIM_COLL_ALLREDUCE,
		.algo = &coll_ring,
		.channels = 0,
		.root = 0,
		.fidelity = c->fidelity,
		.chunk_bytes = 0,
	};
	if (scn_cluster_preset(&cfg.cluster, c->preset, err, sizeof(err)) < 0 ||
	    (c->nodes && topo_config_set(&cfg.cluster, "nodes", c->nodes, err, sizeof(err)) < 0)) {
		fprintf(stderr, "bench_engine: %s: %s\n", c->name, err);
		return -1;
	}
	struct coll_bench *b = coll_bench_new(&cfg, err, sizeof(err));
	if (!b) {
		fprintf(stderr, "bench_engine: %s: %s\n", c->name, err);
		return -1;
	}
	struct coll_bench_result res;
	double t0 = now_s();
	int rc = coll_bench_run(b, AR_BYTES, &res, err, sizeof(err));
	double wall = now_s() - t0;
	if (rc < 0)
		fprintf(stderr, "bench_engine: %s: %s\n", c->name, err);
	else
		print_row(c->name, res.events, wall, res.time_s);
	coll_bench_free(b);
	return rc;
}

/* ---- driver -------------------------------------------------------------- */

/*
 * Run one case in a child so that its peak RSS is its own. Returns 0 if the
 * child succeeded.
 */
static int run_forked(int (*fn)(const void *), const void *arg, const char *name)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "bench_engine: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int rc = fn(arg);
		fflush(stdout);
		fflush(stderr);
		_exit(rc < 0 ? 1 : 0);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "bench_engine: waitpid: %s\n", strerror(errno));
			return -1;
		}
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFSIGNALED(status))
		fprintf(stderr, "bench_engine: %s: killed by signal %d\n", name, WTERMSIG(status));
	else
		fprintf(stderr, "bench_engine: %s: failed\n", name);
	return -1;
}

static uint64_t raw_events_arg;

static int raw_thunk(const void *arg)
{
	(void)arg;
	return bench_raw(raw_events_arg);
}

static int allreduce_thunk(const void *arg)
{
	return bench_allreduce(arg);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bench_engine [raw|allreduce|all] [--events N]\n"
		   "  raw        N self-rescheduling events through the engine (default %llu)\n"
		   "  allreduce  ring all-reduce of 1 GiB over %u ranks (ideal, dgx-h100),\n"
		   "             flow and analytic fidelity\n"
		   "  all        both (the default)\n",
		(unsigned long long)DEFAULT_EVENTS, AR_RANKS);
}

static int parse_count(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	if (!*s || *s == '-')
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v == 0)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	int do_raw = 1, do_ar = 1, mode_set = 0;
	uint64_t nevents = DEFAULT_EVENTS;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--events") == 0 || strncmp(a, "--events=", 9) == 0) {
			const char *v = a[8] == '=' ? a + 9 : (i + 1 < argc ? argv[++i] : NULL);
			if (!v || parse_count(v, &nevents) < 0) {
				fprintf(stderr, "bench_engine: --events: expected a positive integer\n");
				return 2;
			}
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (!mode_set && (strcmp(a, "raw") == 0 || strcmp(a, "allreduce") == 0 ||
					 strcmp(a, "all") == 0)) {
			mode_set = 1;
			do_raw = strcmp(a, "allreduce") != 0;
			do_ar = strcmp(a, "raw") != 0;
		} else {
			fprintf(stderr, "bench_engine: unexpected argument '%s'\n", a);
			usage(stderr);
			return 2;
		}
	}
	raw_events_arg = nevents;
	int failed = 0;
	print_header();
	if (do_raw && run_forked(raw_thunk, NULL, "raw") < 0)
		failed = 1;
	for (size_t i = 0; do_ar && i < ARRAY_SIZE(ar_cases); i++)
		if (run_forked(allreduce_thunk, &ar_cases[i], ar_cases[i].name) < 0)
			failed = 1;
	fflush(stdout);
	return failed;
}
