/*
 * cluster.c - the cluster keys, from one declarative table: the preset
 * files (scenarios/clusters/NAME.yaml), `--set cluster.KEY=VALUE`, help and the
 * stored effective configuration all go through it. Presets are YAML files
 * read by scenarios/; this layer only knows the keys.
 */
#include "topology/topo.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/units.h"

/* ---- keys ------------------------------------------------------------------- */

enum key_type { K_COUNT, K_RATE, K_TIME, K_RATIO, K_GPU, K_TOPOLOGY, K_TEXT, K_FAULTS,
		K_RESERVE };

struct key_def {
	const char *name;
	enum key_type type;
	size_t off;
	double min, max;
	const char *help;
};

#define OFF(f) offsetof(struct topo_config, f)

static const struct key_def keys[] = {
	{ "topology", K_TOPOLOGY, OFF(kind), 0, 0,
	  "ideal (a link per rank pair) or fattree (NVLink nodes on a rail-optimised fat tree)" },
	{ "description", K_TEXT, OFF(description), 0, 0, "one line saying what the cluster is (at most 127 characters)" },
	{ "source", K_TEXT, OFF(source), 0, 0, "where the numbers come from (at most 511 characters)" },
	{ "gpu", K_GPU, OFF(gpu), 0, 0, "GPU preset of every rank" },
	{ "nodes", K_COUNT, OFF(nodes), 1, TOPO_MAX_RANKS, "number of nodes" },
	{ "gpus_per_node", K_COUNT, OFF(gpus_per_node), 1, 1024,
	  "GPUs in one node (one NVLink domain)" },
	{ "nvlink.bandwidth", K_RATE, OFF(nvlink_bw_Bps), 0, 0,
	  "NVLink bandwidth per GPU and direction" },
	{ "nvlink.latency", K_TIME, OFF(nvlink_lat_s), 0, 0,
	  "latency of one message between two GPUs of a node" },
	{ "network.bandwidth", K_RATE, OFF(net_bw_Bps), 0, 0,
	  "bandwidth of one NIC per direction (ideal: of each pair's link)" },
	{ "network.latency", K_TIME, OFF(net_lat_s), 0, 0,
	  "latency of one message between GPUs of two nodes (ideal: of each link)" },
	{ "network.nics_per_node", K_COUNT, OFF(nics_per_node), 1, 1024,
	  "NICs per node, one rail each; GPU i uses NIC i * nics / gpus" },
	{ "network.oversubscription", K_RATIO, OFF(oversub), 1, 1e6,
	  "leaf switch downlink to uplink bandwidth ratio (1 = full bisection)" },
	{ "network.nodes_per_leaf", K_COUNT, OFF(nodes_per_leaf), 1, TOPO_MAX_RANKS,
	  "nodes under one leaf switch of a rail" },
	{ "network.hop_latency", K_TIME, OFF(hop_lat_s), 0, 0,
	  "latency added per switch hop when a route crosses the spine" },
	{ "faults", K_FAULTS, OFF(faults), 0, 0,
	  "failed and degraded links (fattree): node0.nic3 has failed, node1.gpu2.nvlink=0.5 "
	  "runs at half its bandwidth; comma-separated. Traffic of a failed NIC goes over "
	  "NVLink to another NIC of its node (NCCL's PXN)" },
	{ "pcie.bandwidth", K_RATE, OFF(pcie_bw_Bps), 0, 0,
	  "host to GPU bandwidth per direction" },
	{ "memory_reserve", K_RESERVE, OFF(memory_reserve_B), 0, 0,
	  "bytes of each GPU's memory that tensors cannot use, or auto: the CUDA context, NCCL's "
	  "communicators and the allocator's slack as measured on the H200 "
	  "(docs/calibration.md, \"Memory beyond the tensors\")" },
};

_Static_assert(sizeof(((struct topo_config *)0)->description) == 128 &&
	       sizeof(((struct topo_config *)0)->source) == 512,
	       "the help of cluster.description and cluster.source says 127 and 511 characters");

static const char *const key_values[] = {
	[K_COUNT] = "integer", [K_RATE] = "rate", [K_TIME] = "time",
	[K_RATIO] = "ratio", [K_GPU] = "name", [K_TOPOLOGY] = "name", [K_TEXT] = "text",
	[K_FAULTS] = "links", [K_RESERVE] = "bytes or auto",
};

size_t topo_key_count(void)
{
	return ARRAY_SIZE(keys);
}

void topo_key_info(size_t i, const char **name, const char **value, const char **help)
{
	BUG_ON(i >= ARRAY_SIZE(keys));
	*name = keys[i].name;
	*value = key_values[keys[i].type];
	*help = keys[i].help;
}

static const struct key_def *key_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

/* A whole positive integer without unit, within [min, max] (decimal:
 * sim_whole_parse's grammar). */
static int parse_count(const struct key_def *k, const char *v, uint32_t *out,
		       char *err, size_t errlen)
{
	unsigned long long n;
	if (sim_whole_parse(v, (unsigned long long)k->max, &n, NULL, 0) < 0 || n < k->min)
		return sim_errf(err, errlen, "cluster.%s: expected a whole number from %.0f to %.0f, "
			    "got '%s'", k->name, k->min, k->max, v);
	*out = (uint32_t)n;
	return 0;
}

static int parse_ratio(const struct key_def *k, const char *v, double *out,
		       char *err, size_t errlen)
{
	double x;
	if (sim_number_parse(v, &x, NULL, 0) < 0 || !(x >= k->min && x <= k->max))
		return sim_errf(err, errlen, "cluster.%s: expected a decimal number from %g to %g, "
			    "got '%s'", k->name, k->min, k->max, v);
	*out = x;
	return 0;
}

static int parse_unit(const struct key_def *k, const char *v, double *out,
		      char *err, size_t errlen)
{
	char why[256];
	double x;
	enum sim_unit u = k->type == K_RATE ? SIM_UNIT_RATE : SIM_UNIT_TIME;
	if (sim_units_parse(u, v, &x, why, sizeof(why)) < 0)
		return sim_errf(err, errlen, "cluster.%s: %s", k->name, why);
	if (k->type == K_RATE && !(x > 0))
		return sim_errf(err, errlen, "cluster.%s: expected a rate above 0, got '%s'",
			    k->name, v);
	*out = x;  /* only a valid value changes the configuration */
	return 0;
}

int topo_config_set(struct topo_config *cfg, const char *key, const char *value,
		    char *err, size_t errlen)
{
	const struct key_def *k = key_find(key);
	char *base = (char *)cfg;
	if (!k) {
		int n = snprintf(err, errlen, "unknown key cluster.%s: expected one of", key);
		for (size_t i = 0; i < ARRAY_SIZE(keys) && n > 0 && (size_t)n < errlen; i++)
			n += snprintf(err + n, errlen - (size_t)n, "%s %s", i ? "," : "",
				      keys[i].name);
		return -1;
	}
	switch (k->type) {
	case K_TOPOLOGY:
		if (strcmp(value, "ideal") && strcmp(value, "fattree"))
			return sim_errf(err, errlen, "cluster.topology: expected ideal or fattree, got '%s'",
				    value);
		cfg->kind = strcmp(value, "ideal") ? TOPO_FATTREE : TOPO_IDEAL;
		return 0;
	case K_TEXT: {
		size_t cap = k->off == OFF(source) ? sizeof(cfg->source) : sizeof(cfg->description);
		if (strlen(value) >= cap)
			return sim_errf(err, errlen, "cluster.%s: at most %zu characters, got %zu",
					k->name, cap - 1, strlen(value));
		snprintf(base + k->off, cap, "%s", value);
		return 0;
	}
	case K_FAULTS: {
		struct topo_fault f[TOPO_MAX_FAULTS];
		size_t n;
		if (strlen(value) >= sizeof(cfg->faults))
			return sim_errf(err, errlen, "cluster.faults: at most %zu characters",
				    sizeof(cfg->faults) - 1);
		if (topo_faults_parse(value, f, &n, err, errlen) < 0)
			return -1;
		snprintf(cfg->faults, sizeof(cfg->faults), "%s", value);
		return 0;
	}
	case K_GPU:
		if (!topo_gpu_find(value))
			return sim_errf(err, errlen, "cluster.gpu: unknown GPU '%s': expected one of "
				    "A100-SXM-80GB, H100-SXM-80GB, H200-SXM-141GB, B200", value);
		snprintf(cfg->gpu, sizeof(cfg->gpu), "%s", value);
		return 0;
	case K_COUNT:
		return parse_count(k, value, (uint32_t *)(void *)(base + k->off), err, errlen);
	case K_RATIO:
		return parse_ratio(k, value, (double *)(void *)(base + k->off), err, errlen);
	case K_RESERVE: {
		if (!strcmp(value, "auto")) {
			cfg->memory_reserve_set = false, cfg->memory_reserve_B = 0;
			return 0;
		}
		char why[256];
		double x;
		if (sim_units_parse(SIM_UNIT_BYTES, value, &x, why, sizeof(why)) < 0)
			return sim_errf(err, errlen, "cluster.%s: expected auto or bytes (e.g. 4GB): "
					"%s", k->name, why);
		if (!(x >= 0))
			return sim_errf(err, errlen, "cluster.%s: expected 0 bytes or more, got '%s'",
					k->name, value);
		cfg->memory_reserve_set = true, cfg->memory_reserve_B = x;
		return 0;
	}
	default:
		return parse_unit(k, value, (double *)(void *)(base + k->off), err, errlen);
	}
}

/* The decimal index after word at *p ("node12"): advances *p; 0 or -1. */
static int index_after(const char **p, const char *word, uint32_t *out)
{
	size_t n = strlen(word), d = 0;
	unsigned long long v;
	char digits[16];
	if (strncmp(*p, word, n))
		return -1;
	while ((*p)[n + d] >= '0' && (*p)[n + d] <= '9' && d + 1 < sizeof(digits))
		digits[d] = (*p)[n + d], d++;
	digits[d] = 0;
	if (!d || ((*p)[n + d] >= '0' && (*p)[n + d] <= '9') ||
	    sim_whole_parse(digits, UINT32_MAX, &v, NULL, 0) < 0)
		return -1;
	*out = (uint32_t)v;
	*p += n + d;
	return 0;
}

/* "nodeN.nicK" or "nodeN.gpuG.nvlink", then "=F" or nothing. */
static int fault_parse(const char *item, struct topo_fault *f, char *err, size_t errlen)
{
	const char *p = item;
	*f = (struct topo_fault){ .factor = 0 };
	if (index_after(&p, "node", &f->node) == 0 && index_after(&p, ".nic", &f->index) == 0 &&
	    (!*p || *p == '=')) {
		f->kind = TOPO_FAULT_NIC;
	} else if (p = item, index_after(&p, "node", &f->node) == 0 &&
		   index_after(&p, ".gpu", &f->index) == 0 && !strncmp(p, ".nvlink", 7) &&
		   (!p[7] || p[7] == '=')) {
		f->kind = TOPO_FAULT_NVLINK;
		p += 7;
	} else {
		return sim_errf(err, errlen, "cluster.faults: '%s': expected nodeN.nicK or "
			    "nodeN.gpuG.nvlink, then =FRACTION for a degraded link (0 < FRACTION "
			    "< 1)", item);
	}
	if (*p == '=') {
		double x;
		if (sim_number_parse(p + 1, &x, NULL, 0) < 0 || !(x > 0 && x < 1))
			return sim_errf(err, errlen, "cluster.faults: '%s': expected a decimal "
				    "fraction of the bandwidth above 0 and below 1 after '='", item);
		f->factor = x;
	}
	return 0;
}

static const char *fault_kind(const struct topo_fault *f)
{
	return f->kind == TOPO_FAULT_NIC ? "nic" : "gpu";
}

/* "node3.nic2" or "node3.gpu1.nvlink", for messages. */
static const char *fault_name(const struct topo_fault *f, char *buf, size_t len)
{
	snprintf(buf, len, "node%u.%s%u%s", f->node, fault_kind(f), f->index,
		 f->kind == TOPO_FAULT_NVLINK ? ".nvlink" : "");
	return buf;
}

/*
 * A link may be listed once: "node0.nic1, node0.nic1=0.5" says two things
 * of one link. O(n^2) over at most TOPO_MAX_FAULTS items.
 */
static int fault_twice(const struct topo_fault *f, size_t n, char *err, size_t errlen)
{
	char name[64];
	for (size_t i = 0; i < n; i++)
		if (f[i].kind == f[n].kind && f[i].node == f[n].node && f[i].index == f[n].index)
			return sim_errf(err, errlen, "cluster.faults: %s is listed twice: expected "
				    "each link once (failed, or =FRACTION)",
				    fault_name(&f[n], name, sizeof(name)));
	return 0;
}

int topo_faults_parse(const char *text, struct topo_fault *out, size_t *n, char *err,
		      size_t errlen)
{
	char buf[256], *save = NULL;
	*n = 0;
	if (strlen(text) >= sizeof(buf))
		return sim_errf(err, errlen, "cluster.faults: at most %zu characters",
			    sizeof(buf) - 1);
	snprintf(buf, sizeof(buf), "%s", text);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		for (char *e = tok + strlen(tok); e > tok && e[-1] == ' ';)
			*--e = 0;
		if (!*tok)
			continue;
		if (*n == TOPO_MAX_FAULTS)
			return sim_errf(err, errlen, "cluster.faults: at most %d links", TOPO_MAX_FAULTS);
		if (fault_parse(tok, &out[*n], err, errlen) < 0 ||
		    fault_twice(out, *n, err, errlen) < 0)
			return -1;
		(*n)++;
	}
	return 0;
}

int topo_faults_check(const struct topo_config *cfg, uint32_t nodes, const char *whose,
		      char *err, size_t errlen)
{
	struct topo_fault f[TOPO_MAX_FAULTS];
	size_t n;
	if (topo_faults_parse(cfg->faults, f, &n, err, errlen) < 0)
		return -1;
	uint32_t gpn = cfg->gpus_per_node, nics = cfg->nics_per_node;
	char name[64];
	for (size_t i = 0; i < n; i++) {
		int nic = f[i].kind == TOPO_FAULT_NIC;
		uint32_t per = nic ? nics : gpn;
		if (f[i].node >= nodes)
			return sim_errf(err, errlen, "cluster.faults: %s: %s %u node%s (node0 to "
				    "node%u)", fault_name(&f[i], name, sizeof(name)), whose, nodes,
				    nodes == 1 ? "" : "s", nodes - 1);
		if (f[i].index >= per)
			return sim_errf(err, errlen, "cluster.faults: %s: a node has %u %s (%s0 to "
				    "%s%u; cluster.%s)", fault_name(&f[i], name, sizeof(name)),
				    per, nic ? "NICs" : "GPUs", fault_kind(&f[i]),
				    fault_kind(&f[i]), per - 1,
				    nic ? "network.nics_per_node" : "gpus_per_node");
		if (!nic && f[i].factor == 0)
			return sim_errf(err, errlen, "cluster.faults: node%u.gpu%u.nvlink has failed: "
				    "NVLink is that GPU's only link, so it has no route to the "
				    "others (degrade it with =FRACTION, or leave the GPU out)",
				    f[i].node, f[i].index);
	}
	/* A node with no working NIC has no route to the others. */
	for (size_t i = 0; nodes > 1 && i < n; i++) {
		uint32_t down = 0;
		for (size_t j = 0; j < n; j++)
			down += f[j].kind == TOPO_FAULT_NIC && f[j].node == f[i].node &&
				f[j].factor == 0;
		if (f[i].kind == TOPO_FAULT_NIC && down == nics)
			return sim_errf(err, errlen, "cluster.faults: every NIC of node%u has failed: it "
				    "has no route to the other nodes", f[i].node);
	}
	return 0;
}

uint32_t topo_config_gpus_per_node(const struct topo_config *cfg)
{
	return cfg->kind == TOPO_IDEAL ? 1 : cfg->gpus_per_node;
}

uint64_t topo_config_gpus(const struct topo_config *cfg)
{
	return (uint64_t)cfg->nodes * topo_config_gpus_per_node(cfg);
}

int topo_config_check(const struct topo_config *cfg, char *err, size_t errlen)
{
	if (!topo_gpu_find(cfg->gpu))
		return sim_errf(err, errlen, "cluster.gpu: unknown GPU '%s'", cfg->gpu);
	if (!(cfg->net_bw_Bps > 0))
		return sim_errf(err, errlen, "cluster.network.bandwidth: expected a rate above 0");
	if (cfg->kind == TOPO_IDEAL) {
		if (cfg->faults[0])
			return sim_errf(err, errlen, "cluster.faults: the ideal cluster has no NICs or "
				    "NVLink to fail (use topology fattree)");
		return 0;
	}
	if (!(cfg->nvlink_bw_Bps > 0))
		return sim_errf(err, errlen, "cluster.nvlink.bandwidth: expected a rate above 0");
	if (cfg->nics_per_node > cfg->gpus_per_node)
		return sim_errf(err, errlen, "cluster.network.nics_per_node: %u NICs for %u GPUs "
			    "per node: expected at most one NIC per GPU", cfg->nics_per_node,
			    cfg->gpus_per_node);
	return topo_faults_check(cfg, cfg->nodes, "the cluster has", err, errlen);
}

void topo_config_json(const struct topo_config *c, char *buf, size_t len)
{
	char desc[300], src[1100];
	sim_json_escape(c->description, desc, sizeof(desc));
	sim_json_escape(c->source, src, sizeof(src));
	int n = snprintf(buf, len,
		 "{\"preset\":\"%s\",\"topology\":\"%s\",\"gpu\":\"%s\",\"nodes\":%u,\"gpus_per_node\":%u,"
		 "\"nvlink\":{\"bandwidth_Bps\":%.17g,\"latency_s\":%.17g},"
		 "\"network\":{\"bandwidth_Bps\":%.17g,\"latency_s\":%.17g,\"nics_per_node\":%u,"
		 "\"oversubscription\":%.17g,\"nodes_per_leaf\":%u,\"hop_latency_s\":%.17g},"
		 "\"pcie\":{\"bandwidth_Bps\":%.17g}}",
		 c->preset, c->kind == TOPO_IDEAL ? "ideal" : "fattree", c->gpu, c->nodes, c->gpus_per_node, c->nvlink_bw_Bps,
		 c->nvlink_lat_s, c->net_bw_Bps, c->net_lat_s, c->nics_per_node, c->oversub,
		 c->nodes_per_leaf, c->hop_lat_s, c->pcie_bw_Bps);
	char faults[300];
	sim_json_escape(c->faults, faults, sizeof(faults));
	if (n > 1 && (size_t)n < len)  /* reopen the object for the text keys */
		n += snprintf(buf + n - 1, len - (size_t)n + 1, ",\"faults\":\"%s\",\"description\":\"%s\","
			 "\"source\":\"%s\"}", faults, desc, src) - 1;
	if (n > 1 && (size_t)n < len) {  /* and the reserve: bytes, or "auto" */
		if (c->memory_reserve_set)
			snprintf(buf + n - 1, len - (size_t)n + 1, ",\"memory_reserve\":%.17g}",
				 c->memory_reserve_B);
		else
			snprintf(buf + n - 1, len - (size_t)n + 1, ",\"memory_reserve\":\"auto\"}");
	}
}
