/*
 * fuzz_valid.c - libFuzzer target for the simulation on valid scenarios.
 * The fuzzer's bytes are read as decisions, not as text: a cluster preset
 * and its size, then a layout that splits the GPUs (tp dividing the heads
 * and fitting a node, cp dividing the sequence, pp and virtual stages that
 * the layers split over, ep dividing the experts and dp x cp, a batch that
 * splits into micro-batches), a model preset or shape that the layout fits,
 * one of DDP, ZeRO 1-3, FSDP, HSDP or optimizer offload, a pipeline
 * schedule (zb-h1 among them), collective algorithms, fidelity, sim.symmetry and
 * sim.analytic_sharing, ZeRO-3's buckets, interference, the host, variability,
 * faults, failures, several jobs, and now and then an extreme value still
 * inside its key's range (1 B/s, latencies of 1e9 s, efficiency 1e-12,
 * jitter_cv 10). About one decision in sixteen breaks a rule on purpose
 * (a split that does not divide, a node past the cluster), which the
 * loader must refuse. The scenario is written as YAML and run in-process
 * by `clustersim run` (tools/cmd_run.c, tools/run_jobs.c), as a user runs
 * it, with --json and now and then --db.
 *
 * The property: run returns 0, 2 (refused) or 3 (does not fit). Exit 1 (a
 * step that could not finish, e.g. sim.c's "deadlock: rank R cannot finish
 * op"), a non-finite figure ("nan", "inf") in a report of exit 0, BUG(), a
 * sanitizer report and a timeout are crashes.
 *
 * Sizes are bounded so that one input takes milliseconds: at most 32 GPUs
 * in flow fidelity and 64 in analytic (one GB200 rack of 72; jobs may leave
 * a node spare), a few layers per virtual stage, at most 8 micro-batches
 * per replica (16 interleaved, or in one draw of eight that is longer) and
 * 4 steps; the values that only scale times (rates, latencies, efficiency,
 * sequence) take their extremes.
 *
 * Run by tools/fuzz.sh. To see the scenario of an input and run's messages:
 *   FUZZ_PRINT=1 build-fuzz/fuzz_valid build-fuzz/crash-...
 * prints its YAML and command line to stderr (save the YAML as s.yaml and
 * `clustersim run s.yaml` reproduces it).
 */
#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "sim/util.h"
#include "tools/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_GPUS_FLOW 32
#define MAX_GPUS_ANALYTIC 64

/* ---- decisions from the input ------------------------------------------------- */

struct in {
	const uint8_t *p;
	size_t n;
};

/* A number in [0, n): one byte for n <= 256, two above; 0 once the input
 * is spent, so that every list below starts with its plain choice. */
static unsigned take(struct in *in, unsigned n)
{
	unsigned v = 0;
	if (n <= 1)
		return 0;
	for (unsigned i = 0; i < (n > 256 ? 2u : 1u) && in->n; i++, in->p++, in->n--)
		v = v << 8 | *in->p;
	return v % n;
}

/* True one time in k (k >= 2); false once the input is spent. */
static int one_in(struct in *in, unsigned k)
{
	return take(in, k) == 1;
}

#define PICK(in, list) ((list)[take((in), ARRAY_SIZE(list))])

/* One of the divisors of n for which ok(d, ctx) holds (all of them if none
 * does); each equally likely. */
static unsigned divisor(struct in *in, unsigned n, int (*ok)(unsigned, const void *),
			const void *ctx)
{
	unsigned d[64], nd = 0, all[64], na = 0;
	for (unsigned i = 1; i <= n && na < ARRAY_SIZE(all); i++)
		if (n % i == 0) {
			all[na++] = i;
			if (!ok || ok(i, ctx))
				d[nd++] = i;
		}
	return nd ? d[take(in, nd)] : all[take(in, na)];
}

/* ---- the scenario as YAML ------------------------------------------------------ */

/*
 * kv(y, "cluster.network.bandwidth", ...) opens the mappings cluster and
 * network where the previous key left them closed, then writes the leaf:
 * a section's keys are drawn together, so no mapping opens twice. Inside
 * a job (lead "    ") the first line opens the list item.
 */
struct yaml {
	char *buf;
	size_t len, cap;
	const char *lead;
	int item;
	char open[4][24];
	int depth;
};

static void y_vprintf(struct yaml *y, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (y->len + (size_t)n + 1 > y->cap) {
		y->cap = (y->len + (size_t)n + 1) * 2;
		y->buf = xrealloc(y->buf, y->cap);
	}
	vsnprintf(y->buf + y->len, y->cap - y->len, fmt, ap);
	y->len += (size_t)n;
}

static void y_printf(struct yaml *y, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void y_printf(struct yaml *y, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	y_vprintf(y, fmt, ap);
	va_end(ap);
}

static void y_indent(struct yaml *y, int level)
{
	y_printf(y, "%s%*s", y->item ? "  - " : y->lead, 2 * level, "");
	y->item = 0;
}

static void kv(struct yaml *y, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void kv(struct yaml *y, const char *key, const char *fmt, ...)
{
	char part[4][24];
	int n = 0;
	for (const char *k = key; n < 4; n++) {
		size_t len = strcspn(k, ".");
		snprintf(part[n], sizeof(part[n]), "%.*s", (int)len, k);
		if (!k[len]) {
			n++;
			break;
		}
		k += len + 1;
	}
	int same = 0;
	while (same < y->depth && same < n - 1 && !strcmp(y->open[same], part[same]))
		same++;
	for (int i = same; i < n - 1; i++) {
		y_indent(y, i);
		y_printf(y, "%s:\n", part[i]);
		memcpy(y->open[i], part[i], sizeof(part[i]));
	}
	y->depth = n - 1;
	y_indent(y, n - 1);
	y_printf(y, "%s: ", part[n - 1]);
	va_list ap;
	va_start(ap, fmt);
	y_vprintf(y, fmt, ap);
	va_end(ap);
	y_printf(y, "\n");
}

/* ---- what is drawn ------------------------------------------------------------- */

static const char *const rates[] = {
	"50GB/s", "400Gb/s", "450GB/s", "1B/s", "1KB/s", "1MB/s", "1GB/s", "3.2Tb/s", "1PB/s",
	"1e18B/s",
};
static const char *const times[] = {
	"5us", "1us", "0", "1ps", "1ns", "10us", "1ms", "1s", "1000s", "1e6s", "1e9s",
};

struct cluster {
	const char *preset;
	int ideal, flow;
	unsigned max;        /* GPUs at most */
	unsigned gpn;        /* GPUs per node (1 on the ideal cluster) */
	unsigned nodes, nics;
};

/* One job's layout, drawn before its model so that the model fits it. */
struct layout {
	unsigned gpus, tp, cp, pp, vpp, dp, ep, experts;
	int ulysses, zigzag, interleaved;
};

struct fit {
	unsigned gpn, heads_of;
};

static int fits_node(unsigned d, const void *ctx)
{
	return ((const struct fit *)ctx)->gpn % d == 0;
}

static int at_most_8(unsigned d, const void *ctx)
{
	(void)ctx;
	return d <= 8;
}

static int divides(unsigned d, const void *ctx)
{
	return *(const unsigned *)ctx % d == 0;
}

/* The cluster's preset and node size, before its nodes are counted. */
static void draw_shape(struct in *in, struct cluster *c)
{
	static const char *const presets[] = {
		"dgx-h100", "ideal", "dgx-a100", "dgx-h200", "gb200-nvl72", "dgx-a100-nccl",
		"dgx-h100-nccl", "dgx-h200-nccl",
	};
	static const unsigned gpns[] = { 8, 2, 4, 1, 3, 6 };
	c->preset = PICK(in, presets);
	c->max = c->flow ? MAX_GPUS_FLOW : MAX_GPUS_ANALYTIC;
	c->ideal = !strcmp(c->preset, "ideal");
	c->gpn = c->ideal ? 1 : PICK(in, gpns);
	if (!c->ideal && !c->flow && !strcmp(c->preset, "gb200-nvl72") && one_in(in, 2))
		c->gpn = 72, c->max = 72;  /* the preset's own rack, one node */
}

/* The cluster section, of c->nodes nodes. */
static void write_cluster(struct in *in, struct yaml *y, struct cluster *c)
{
	static const char *const gpus[] = { "H100-SXM-80GB", "A100-SXM-80GB", "H200-SXM-141GB", "B200" };
	static const char *const oversub[] = { "1", "2", "1.5", "1e6" };
	const char *preset = c->preset;
	c->nics = c->gpn;
	kv(y, "cluster.preset", "%s", preset);
	kv(y, "cluster.nodes", "%u", c->nodes);
	if (!c->ideal)
		kv(y, "cluster.gpus_per_node", "%u", c->gpn);
	if (one_in(in, 6))
		kv(y, "cluster.gpu", "%s", PICK(in, gpus));
	if (one_in(in, 4)) {
		kv(y, "cluster.nvlink.bandwidth", "%s", PICK(in, rates));
		kv(y, "cluster.nvlink.latency", "%s", PICK(in, times));
	}
	if (!c->ideal) {
		/* the preset's NICs, one per GPU, or fewer; now and then too many */
		if (one_in(in, 3))
			c->nics = 1 + take(in, c->gpn + one_in(in, 16));
		kv(y, "cluster.network.nics_per_node", "%u", c->nics);
	}
	if (one_in(in, 3)) {
		kv(y, "cluster.network.bandwidth", "%s", PICK(in, rates));
		kv(y, "cluster.network.latency", "%s", PICK(in, times));
		if (one_in(in, 3))
			kv(y, "cluster.network.oversubscription", "%s", PICK(in, oversub));
		if (one_in(in, 3))
			kv(y, "cluster.network.nodes_per_leaf", "%u", 1 + take(in, c->nodes + 1));
		if (one_in(in, 3))
			kv(y, "cluster.network.hop_latency", "%s", PICK(in, times));
	}
	if (one_in(in, 8))
		kv(y, "cluster.pcie.bandwidth", "%s", PICK(in, rates));
	if (!c->ideal && one_in(in, 5)) {
		/* failed and degraded links; now and then one past the hardware */
		static const char *const factors[] = { "", "=0.5", "=0.01", "=1e-9", "=0.999999",
						       "=1e-300" };
		char list[256] = "";
		size_t len = 0;
		int all_nics = c->nics > 1 && one_in(in, 8);  /* every NIC of node 0 */
		unsigned n = all_nics ? c->nics : 1 + take(in, 3);
		for (unsigned i = 0; i < n && len < sizeof(list) - 48; i++) {
			unsigned node = all_nics ? 0 : take(in, c->nodes + one_in(in, 16));
			if (all_nics || !one_in(in, 3))
				len += (size_t)snprintf(list + len, sizeof(list) - len, "%snode%u.nic%u%s",
							i ? "," : "", node, all_nics ? i :
							take(in, c->nics + one_in(in, 16)),
							all_nics ? "" : PICK(in, factors));
			else
				len += (size_t)snprintf(list + len, sizeof(list) - len,
							"%snode%u.gpu%u.nvlink%s", i ? "," : "", node,
							take(in, c->gpn + one_in(in, 16)),
							PICK(in, factors));
		}
		kv(y, "cluster.faults", "%s", list);
	}
}

/* Split gpus over tp, cp, pp and dp; one time in sixteen a size that need
 * not divide anything. */
static void draw_layout(struct in *in, const struct cluster *c, struct layout *l)
{
	static const unsigned experts[] = { 8, 2, 4, 16, 64, 1, 256 };
	struct fit f = { .gpn = c->gpn };
	l->experts = one_in(in, 4) ? PICK(in, experts) : 0;
	l->tp = divisor(in, l->gpus, c->ideal || one_in(in, 16) ? NULL : fits_node, &f);
	l->cp = one_in(in, 2) ? divisor(in, l->gpus / l->tp, NULL, NULL) : 1;
	l->pp = one_in(in, 2) ? divisor(in, l->gpus / l->tp / l->cp, at_most_8, NULL) : 1;
	if (one_in(in, 16)) {
		l->tp = 1 + take(in, 8);
		l->cp = 1 + take(in, 4);
		l->pp = 1 + take(in, 4);
	}
	unsigned mp = l->tp * l->cp * l->pp;
	l->dp = l->gpus % mp ? 1 : l->gpus / mp;
	l->ulysses = l->zigzag = l->interleaved = 0;
	l->vpp = 1;
	unsigned dpcp = l->dp * l->cp;
	l->ep = l->experts ? divisor(in, dpcp, divides, &l->experts) : 1;
	if (!l->experts && one_in(in, 32))
		l->ep = 2;
}

/* The parallel section of a layout. */
static void write_parallel(struct in *in, struct yaml *y, const struct cluster *c,
			   struct layout *l, unsigned layers)
{
	static const char *const buckets[] = { "25MiB", "1MiB", "4KiB", "1GB", "1e15B", "1B" };
	static const char *const cpu_adam[] = { "1e9", "1", "1e6", "1e15" };
	static const char *const allreduce[] = { "auto", "ring", "rd", "hd", "hier" };
	static const char *const rsag[] = { "auto", "ring", "rd" };
	static const char *const a2a[] = { "auto", "pairwise" };
	kv(y, "parallel.tp", "%u", l->tp);
	if (l->tp > 1 && one_in(in, 2)) {
		kv(y, "parallel.sp", "true");
		if (one_in(in, 2))
			kv(y, "parallel.tp_overlap", "true");
	}
	if (!c->ideal && (c->gpn % l->tp || l->tp > c->gpn) && !one_in(in, 4))
		kv(y, "parallel.tp_across_nodes", "true");
	if (l->cp > 1) {
		kv(y, "parallel.cp", "%u", l->cp);
		kv(y, "parallel.cp_algo", "%s", l->ulysses ? "ulysses" : l->zigzag ? "zigzag" : "ring");
	}
	if (l->pp > 1 || one_in(in, 16)) {
		kv(y, "parallel.pp", "%u", l->pp);
		/* zb-h1 is refused with fewer micro-batches than stages, MoE
		 * layers, ZeRO-3 and FSDP: exit 2, which is allowed */
		kv(y, "parallel.schedule", "%s", l->interleaved ? "interleaved" :
		   one_in(in, 3) ? "zb-h1" : one_in(in, 2) ? "gpipe" : "1f1b");
		if (l->vpp > 1)
			kv(y, "parallel.vpp", "%u", l->vpp);
	}
	switch (take(in, 3)) {
	case 1:
		kv(y, "parallel.dp", "auto");
		break;
	case 2:
		kv(y, "parallel.dp", "%u", l->dp + one_in(in, 16));
		break;
	}
	if (l->ep > 1)
		kv(y, "parallel.ep", "%u", l->ep);
	/* the data-parallel strategy; with a pipeline or experts mostly one
	 * that combines with it */
	enum { DDP, ZERO1, ZERO2, ZERO3, FSDP, HSDP, OFFLOAD, NSTRAT } st = take(in, NSTRAT);
	if ((l->pp > 1 || l->experts) && st != ZERO1 && st != OFFLOAD && !one_in(in, 8))
		st = DDP;
	int zero = st == ZERO1 || st == OFFLOAD ? 1 + (st == OFFLOAD && one_in(in, 2))
		   : st == ZERO2 ? 2 : st == ZERO3 ? 3 : st >= FSDP ? (int)take(in, 4) : 0;
	if (zero)
		kv(y, "parallel.zero", "%d", zero);
	if (st == FSDP || st == HSDP) {
		kv(y, "parallel.fsdp.enabled", "true");
		if (one_in(in, 2))
			kv(y, "parallel.fsdp.unit_layers", "%u", 1 + take(in, layers + 1));
		if (one_in(in, 3))
			kv(y, "parallel.fsdp.prefetch", "false");
		if (one_in(in, 3))
			kv(y, "parallel.fsdp.reshard", "false");
		if (st == HSDP)
			kv(y, "parallel.fsdp.hsdp", "true");
	}
	if (zero == 3 && st == ZERO3) {  /* DeepSpeed's granularity, its limits too */
		static const char *const prefetch[] = { "0", "1", "1e6", "5e7", "4e9" };
		static const char *const reduce[] = { "1", "1e5", "5e8", "4e9" };
		static const char *const live[] = { "1", "1e7", "1e9", "4e9" };
		static const char *const persist[] = { "0", "1e5", "4e9" };
		if (one_in(in, 3))
			kv(y, "parallel.zero3.prefetch_bucket", "%s", PICK(in, prefetch));
		if (one_in(in, 3))
			kv(y, "parallel.zero3.reduce_bucket", "%s", PICK(in, reduce));
		if (one_in(in, 3))
			kv(y, "parallel.zero3.max_live", "%s", PICK(in, live));
		if (one_in(in, 3))
			kv(y, "parallel.zero3.persistence", "%s", PICK(in, persist));
	}
	if (one_in(in, 4))
		kv(y, "parallel.ddp.bucket", "%s", PICK(in, buckets));
	if (one_in(in, 6))
		kv(y, "parallel.ddp.overlap", "false");
	if ((zero == 1 || zero == 2) && st != FSDP && st != HSDP && one_in(in, 3))
		kv(y, "parallel.ddp.overlap_param_gather", "true");
	if (zero == 1 && st != FSDP && st != HSDP && one_in(in, 3))
		kv(y, "parallel.ddp.overlap_grad_reduce", "true");
	if (one_in(in, 4))
		kv(y, "parallel.ddp.fp32_grads", "true");
	if (st == OFFLOAD) {
		kv(y, "parallel.offload.enabled", "true");
		if (one_in(in, 2))
			kv(y, "parallel.offload.cpu_adam", "%s", PICK(in, cpu_adam));
	}
	if (one_in(in, 4)) {
		kv(y, "parallel.algorithms.allreduce", "%s", PICK(in, allreduce));
		kv(y, "parallel.algorithms.reducescatter", "%s", PICK(in, rsag));
		kv(y, "parallel.algorithms.allgather", "%s", PICK(in, rsag));
		kv(y, "parallel.algorithms.alltoall", "%s", PICK(in, a2a));
		if (one_in(in, 2))
			kv(y, "parallel.algorithms.auto", "%s", one_in(in, 2) ? "nccl" : "fastest");
	}
}

/* A job's model, training, parallel and compute sections for l->gpus GPUs. */
static void draw_job(struct in *in, struct yaml *y, const struct cluster *c, struct layout *l)
{
	static const struct { const char *name; unsigned heads, kv; } presets[] = {
		{ "llama3-8b", 32, 8 }, { "gpt3-1.3b", 16, 16 }, { "mixtral-8x7b", 32, 8 },
		{ "gpt3-6.7b", 32, 32 }, { "gpt3-13b", 40, 40 }, { "llama3-70b", 64, 8 },
		{ "gpt3-175b", 96, 96 }, { "llama3-405b", 128, 8 }, { "deepseek-v3", 128, 128 },
	};
	static const unsigned head_dims[] = { 64, 128, 16, 8, 1, 256 };
	static const unsigned vocabs[] = { 32000, 512, 50257, 128256, 1 };
	static const unsigned seqs[] = { 2048, 4096, 1024, 128, 8192, 32768, 131072, 1, 3,
					 1000000, 1000000000 };
	static const unsigned mbs[] = { 1, 2, 1, 4, 3, 8, 24 };
	static const char *const capacity[] = { "0", "1", "1.25", "2", "0.5", "0.01", "1000" };
	static const char *const skew[] = { "0", "0.5", "1", "2", "100" };
	static const char *const precisions[] = { "bf16", "fp16", "fp8", "fp32" };
	static const char *const recompute[] = { "none", "selective", "full" };
	static const char *const effs[] = { "0.5", "1", "h200", "0.01", "1e-6", "1e-12" };
	static const char *const launch[] = { "0", "1.1us", "1ps", "1ms", "1s" };
	draw_layout(in, c, l);
	if (l->cp > 1) {
		unsigned a = take(in, 3);
		l->ulysses = a == 2, l->zigzag = a == 1;
	}
	if (l->pp > 1 && one_in(in, 3)) {
		l->interleaved = 1;
		l->vpp = 1 + take(in, 3);
	}
	/* layers: an even share per virtual stage, maybe a different first
	 * and last stage; one time in sixteen any number. One draw in eight
	 * is longer (up to 16 layers a stage without a pipeline, 16
	 * micro-batches): a failure that one kernel in a thousand draws
	 * (gamma jitter at cv 10 drawing 0) needs thousands of kernels. */
	int longer = one_in(in, 8);
	unsigned v = l->pp * l->vpp, first = 0, last = 0, layers;
	if (v > 1 && one_in(in, 5))
		first = 1 + take(in, 3);
	if (v > 1 && one_in(in, 5))
		last = 1 + take(in, 3);
	unsigned fixed = (first > 0) + (last > 0);
	unsigned each = longer && v <= 2 ? 4 + take(in, 13) : 1 + take(in, v > 8 ? 2 : 3);
	layers = first + last + (fixed == v ? 0 : (v - fixed) * each);
	if (one_in(in, 16))
		layers = 1 + take(in, 16);

	/* the model: a preset cut to these layers, or a shape of its own */
	if (one_in(in, 3)) {
		/* mostly one whose heads (and kv heads) the layout's tp divides */
		unsigned k = take(in, ARRAY_SIZE(presets));
		for (unsigned i = 0; i < ARRAY_SIZE(presets) && (presets[k].heads % l->tp ||
		     (presets[k].kv % l->tp && l->tp % presets[k].kv)) && !one_in(in, 8); i++)
			k = (k + 1) % ARRAY_SIZE(presets);
		const char *p = presets[k].name;
		kv(y, "model.preset", "%s", p);
		if (!one_in(in, 8))
			kv(y, "model.layers", "%u", layers);
		if (one_in(in, 4))
			kv(y, "model.vocab", "%u", one_in(in, 16) ? 1000000000 : PICK(in, vocabs));
		if (l->experts && !strcmp(p, "llama3-8b"))  /* an MoE of llama's shape */
			kv(y, "model.moe.experts", "%u", l->experts), kv(y, "model.moe.top_k", "1");
		if (!strcmp(p, "mixtral-8x7b") || !strcmp(p, "deepseek-v3"))
			l->experts = !strcmp(p, "mixtral-8x7b") ? 8 : 256;
	} else {
		/* heads that tp divides, kv heads that Ulysses' cp divides */
		unsigned kvh = l->tp * (l->ulysses ? l->cp : 1) * (1 + take(in, 2));
		if (one_in(in, 4))
			kvh = 1;  /* GQA with fewer kv heads than tp */
		unsigned heads = kvh * (1 + take(in, 4));
		if (heads % l->tp)
			heads *= l->tp;
		if (one_in(in, 16))
			heads = 1 + take(in, 128);
		unsigned hd = PICK(in, head_dims), hidden = heads * hd;
		kv(y, "model.layers", "%u", layers);
		if (one_in(in, 8)) {
			static const unsigned odd[] = { 1, 7, 1000, 65536 };
			hidden = PICK(in, odd);
			if (one_in(in, 2))
				kv(y, "model.head_dim", "%u", hd);
		}
		kv(y, "model.hidden", "%u", hidden);
		kv(y, "model.heads", "%u", heads);
		if (kvh != heads || one_in(in, 4))
			kv(y, "model.kv_heads", "%u", kvh);
		if (one_in(in, 2))
			kv(y, "model.ffn", "%u", hidden * (1 + take(in, 4)));
		kv(y, "model.vocab", "%u", one_in(in, 16) ? 1000000000 : PICK(in, vocabs));
		if (one_in(in, 2))
			kv(y, "model.activation", "swiglu");
		if (one_in(in, 2))
			kv(y, "model.norm", "rmsnorm");
		if (one_in(in, 2))
			kv(y, "model.tied_embeddings", "true");
		if (l->experts) {
			kv(y, "model.moe.experts", "%u", l->experts);
			kv(y, "model.moe.top_k", "%u", 1 + take(in, l->experts < 8 ? l->experts + one_in(in, 16)
							     : 8));
			if (one_in(in, 2))
				kv(y, "model.moe.capacity_factor", "%s", PICK(in, capacity));
			if (one_in(in, 3))
				kv(y, "model.moe.every", "%u", 1 + take(in, 3));
			if (one_in(in, 3))
				kv(y, "model.moe.expert_ffn", "%u", hidden * (1 + take(in, 2)));
			if (one_in(in, 3))
				kv(y, "model.moe.shared_experts", "%u", take(in, 3));
			if (one_in(in, 3))
				kv(y, "model.moe.dense_layers", "%u", take(in, layers + 1));
			if (one_in(in, 2))
				kv(y, "model.moe.skew", "%s", PICK(in, skew));
		}
	}

	/* training: a sequence cp (zig-zag: 2 cp) divides, a batch that
	 * splits into micro-batches (interleaved: a multiple of pp) */
	unsigned seq = PICK(in, seqs), cut = l->zigzag ? 2 * l->cp : l->cp;
	if (!one_in(in, 16))
		seq = seq < cut ? cut : seq / cut * cut;
	unsigned mb = PICK(in, mbs);
	unsigned m = l->interleaved ? l->pp * (1 + take(in, 2)) : 1 + take(in, longer ? 16 : 8);
	unsigned gb = one_in(in, 16) ? 1 + take(in, 64) : l->dp * m * mb;
	kv(y, "training.seq", "%u", seq);
	kv(y, "training.global_batch", "%u", gb);
	kv(y, "training.micro_batch", "%u", mb);
	if (one_in(in, 3))
		kv(y, "training.precision", "%s", PICK(in, precisions));
	if (one_in(in, 4))
		kv(y, "training.optimizer", "sgd");
	if (one_in(in, 3))
		kv(y, "training.recompute", "%s", PICK(in, recompute));
	if (one_in(in, 6))
		kv(y, "training.flash_attention", "false");

	write_parallel(in, y, c, l, layers);
	if (first)
		kv(y, "parallel.first_stage_layers", "%u", first);
	if (last)
		kv(y, "parallel.last_stage_layers", "%u", last);

	if (one_in(in, 3))  /* h100: a table that does not exist */
		kv(y, "compute.efficiency", "%s", one_in(in, 16) ? "h100" : PICK(in, effs));
	if (one_in(in, 4))
		kv(y, "compute.launch_overhead", "%s", PICK(in, launch));
	if (one_in(in, 4)) {  /* measured with a flat efficiency: refused (exit 2) */
		static const char *const interf[] = { "none", "measured", "auto" };
		kv(y, "compute.interference", "%s", PICK(in, interf));
	}
	if (one_in(in, 6))  /* eager with a flat efficiency or in a jobs list: refused */
		kv(y, "compute.host", "%s", one_in(in, 4) ? "none" : "eager");
}

/* The sections of the whole cluster: variability, failures, sim. */
static void draw_run(struct in *in, struct yaml *y, const struct cluster *c, unsigned gpus,
		     int jobs)
{
	static const char *const dists[] = { "lognormal", "gamma", "none" };
	static const char *const cvs[] = { "0.05", "0.5", "1e-6", "1", "2", "5", "10" };
	static const char *const slow[] = { "1.5", "1", "2", "10", "100" };
	static const char *const mtbf[] = { "1000d", "1h", "1s", "1ps", "1e15s", "0" };
	static const char *const storage[] = { "100GB/s", "1B/s", "1e18B/s" };
	static const char *const restart[] = { "10min", "0", "1e9s" };
	static const char *const run[] = { "30d", "1s", "1e12s" };
	static const char *const chunks[] = { "512KiB", "64KiB", "4KiB", "1GB", "1e12B" };
	static const char *const records[] = { "auto", "all", "sample", "none" };
	if (one_in(in, 3)) {
		kv(y, "variability.jitter", "%s", PICK(in, dists));
		kv(y, "variability.jitter_cv", "%s", PICK(in, cvs));
		if (one_in(in, 2)) {
			kv(y, "variability.gpu", "%s", PICK(in, dists));
			kv(y, "variability.gpu_cv", "%s", PICK(in, cvs));
		}
		if (one_in(in, 2)) {
			kv(y, "variability.stragglers", "%u", take(in, gpus + 1 + one_in(in, 16)));
			kv(y, "variability.straggler_slowdown", "%s", PICK(in, slow));
		}
	}
	if (one_in(in, 4)) {
		kv(y, "failures.gpu_mtbf", "%s", PICK(in, mtbf));
		if (one_in(in, 2))
			kv(y, "failures.storage_bandwidth", "%s", PICK(in, storage));
		if (one_in(in, 2))
			kv(y, "failures.restart", "%s", PICK(in, restart));
		if (one_in(in, 2))
			kv(y, "failures.run", "%s", PICK(in, run));
	}
	kv(y, "sim.fidelity", "%s", c->flow ? "flow" : "analytic");
	kv(y, "sim.steps", "%u", one_in(in, 8) ? 1 + take(in, 4) : 1);
	if (one_in(in, 2))
		kv(y, "sim.seed", "%llu", one_in(in, 8) ? 18446744073709551615ull
			: (unsigned long long)take(in, 65536));
	if (one_in(in, 4))
		kv(y, "sim.record", "%s", PICK(in, records));
	if (!jobs && one_in(in, 4))
		kv(y, "sim.symmetry", "dp");
	if (one_in(in, 6))
		kv(y, "sim.analytic_sharing", "false");
	/* A flow run's events grow as bytes / chunk where links are shared (the
	 * key's help says so): under the sanitizers 4 KiB chunks on a large
	 * model take minutes, and 64 KiB ones too can pass the 30 s an input
	 * may take (a 3-layer model of hidden 49,152 on 24 GPUs with ZeRO-3:
	 * 136 M events, 53 s), so chunks below the default are drawn in
	 * analytic fidelity only. */
	if (one_in(in, 6)) {
		const char *ch = PICK(in, chunks);
		kv(y, "sim.chunk", "%s", c->flow && (!strcmp(ch, "4KiB") || !strcmp(ch, "64KiB"))
						 ? "512KiB" : ch);
	}
}

/* A one-job scenario, or (one time in eight) a cluster shared by 2 or 3
 * jobs, each on its own nodes and its own layout. */
static void draw(struct in *in, struct yaml *y)
{
	struct cluster c = { .flow = !one_in(in, 3) };
	int njobs = one_in(in, 8) ? 2 + (int)take(in, 2) : 0;
	if (njobs)
		c.flow = !one_in(in, 16);  /* jobs share links in flow fidelity only */
	struct layout l = { 0 };
	draw_shape(in, &c);
	if (!njobs) {
		c.nodes = 1 + take(in, c.max / c.gpn);
		write_cluster(in, y, &c);
		l.gpus = c.nodes * c.gpn;
		draw_job(in, y, &c, &l);
		draw_run(in, y, &c, l.gpus, 0);
		return;
	}
	unsigned nodes[3], total = 0, per = c.max / c.gpn / (unsigned)njobs;
	for (int j = 0; j < njobs; j++)
		total += nodes[j] = 1 + take(in, per ? per : 1);
	c.nodes = total + take(in, 2);  /* maybe a node no job uses */
	write_cluster(in, y, &c);
	draw_run(in, y, &c, total * c.gpn, 1);
	y->depth = 0;
	y_printf(y, "jobs:\n");
	static const char *const starts[] = { "0", "1us", "1ms", "1s", "1d" };
	unsigned next = 0;
	for (int j = 0; j < njobs; j++) {
		y->lead = "    ", y->item = 1, y->depth = 0;
		kv(y, "name", "j%d", j);
		kv(y, "nodes", "%u", nodes[j]);
		if (one_in(in, 4))
			kv(y, "first_node", "%u", one_in(in, 4) ? take(in, total + 1) : next);
		if (one_in(in, 4))
			kv(y, "start", "%s", PICK(in, starts));
		next += nodes[j];
		struct layout jl = { .gpus = nodes[j] * c.gpn };
		draw_job(in, y, &c, &jl);
	}
	y->lead = "";
}

/* ---- the run -------------------------------------------------------------------- */

struct tally {
	unsigned long long n, rc[4];
};
static struct tally tally;

static void print_tally(void)
{
	fprintf(stderr, "fuzz_valid: %llu scenarios: %llu ran (exit 0), %llu refused (exit 2), "
		"%llu did not fit (exit 3)\n", tally.n, tally.rc[0], tally.rc[2], tally.rc[3]);
}

/* A word "nan" or "inf" in the report. */
static int non_finite(const char *out)
{
	for (const char *p = out; *p; p++) {
		if (strncasecmp(p, "nan", 3) && strncasecmp(p, "inf", 3))
			continue;
		int before = p > out && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
		int after = isalnum((unsigned char)p[3]) || p[3] == '_';
		if (!before && !after)
			return 1;
	}
	return 0;
}

static char dir[64], path[96], db[96];

static void remove_dir(void)
{
	unlink(path);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int print = getenv("FUZZ_PRINT") != NULL;
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/fuzz_valid.XXXXXX");
		if (!mkdtemp(dir))
			abort();
		snprintf(path, sizeof(path), "%s/s.yaml", dir);
		snprintf(db, sizeof(db), "%s/s.db", dir);
		atexit(remove_dir);
		atexit(print_tally);
	}
	struct in in = { data, size };
	struct yaml y = { .lead = "" };
	draw(&in, &y);
	int json = one_in(&in, 2), use_db = one_in(&in, 16);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(y.buf, 1, y.len, f) != y.len || fclose(f))
		abort();
	char *argv[4] = { path };
	int argc = 1;
	if (json)
		argv[argc++] = "--json";
	if (use_db)
		argv[argc++] = "--db", argv[argc++] = db;
	if (print)
		fprintf(stderr, "--- scenario (clustersim run s.yaml%s%s)\n%s---\n",
			json ? " --json" : "", use_db ? " --db s.db" : "", y.buf);

	/* run's report and messages go to memory, its messages shown on failure */
	char *out = NULL, *msg = NULL;
	size_t outlen = 0, msglen = 0;
	FILE *real_out = stdout, *real_err = stderr;
	stdout = open_memstream(&out, &outlen);
	if (!print)
		stderr = open_memstream(&msg, &msglen);
	struct cli_args a;
	int rc = cli_parse(&cli_cmd_run, argc, argv, &a);
	a.line = "clustersim run s.yaml";
	if (rc == CLI_OK)
		rc = cli_cmd_run.run(&a);
	for (size_t i = 0; i < ARRAY_SIZE(a.list); i++)
		free(a.list[i]);
	fclose(stdout);
	stdout = real_out;
	if (!print) {
		fclose(stderr);
		stderr = real_err;
	}
	if (use_db) {
		unlink(db);
		char side[128];
		snprintf(side, sizeof(side), "%s-wal", db), unlink(side);
		snprintf(side, sizeof(side), "%s-shm", db), unlink(side);
	}
	tally.n++;
	if (rc >= 0 && rc < 4)
		tally.rc[rc]++;
	int bad = rc != CLI_OK && rc != CLI_BADINPUT && rc != CLI_NOFIT;
	int nonfinite = rc == CLI_OK && non_finite(out);
	if (print)
		fprintf(stderr, "%s--- exit %d\n", out, rc);
	if (bad || nonfinite) {
		fprintf(stderr, "fuzz_valid: clustersim run exited %d%s\n%s%s%s%s",
			rc, nonfinite ? " with a non-finite figure in its report" : "",
			msg ? msg : "", nonfinite ? out : "", print ? "" : "--- scenario\n",
			print ? "" : y.buf);
		abort();
	}
	free(out);
	free(msg);
	free(y.buf);
	return 0;
}
