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

enum key_type { K_COUNT, K_RATE, K_TIME, K_RATIO, K_GPU, K_TOPOLOGY, K_TEXT, K_FAULTS };

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
	{ "description", K_TEXT, OFF(description), 0, 0, "one line saying what the cluster is" },
	{ "source", K_TEXT, OFF(source), 0, 0, "where the numbers come from" },
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
};

static const char *const key_values[] = {
	[K_COUNT] = "integer", [K_RATE] = "rate", [K_TIME] = "time",
	[K_RATIO] = "ratio", [K_GPU] = "name", [K_TOPOLOGY] = "name", [K_TEXT] = "text",
	[K_FAULTS] = "links",
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

/* A whole positive integer without unit, within [min, max]. */
static int parse_count(const struct key_def *k, const char *v, uint32_t *out,
		       char *err, size_t errlen)
{
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (end == v || *end || errno || n < (long long)k->min || n > (long long)k->max)
		return sim_errf(err, errlen, "cluster.%s: expected a whole number from %.0f to %.0f, "
			    "got '%s'", k->name, k->min, k->max, v);
	*out = (uint32_t)n;
	return 0;
}

static int parse_ratio(const struct key_def *k, const char *v, double *out,
		       char *err, size_t errlen)
{
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	if (end == v || *end || errno || !(x >= k->min && x <= k->max))
		return sim_errf(err, errlen, "cluster.%s: expected a number from %g to %g, got '%s'",
			    k->name, k->min, k->max, v);
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
	case K_TEXT:
		snprintf(base + k->off, k->off == OFF(source) ? sizeof(cfg->source)
							   : sizeof(cfg->description), "%s", value);
		return 0;
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
	default:
		return parse_unit(k, value, (double *)(void *)(base + k->off), err, errlen);
	}
}

/* "nodeN.nicK" or "nodeN.gpuG.nvlink", then "=F" or nothing. */
static int fault_parse(const char *item, struct topo_fault *f, char *err, size_t errlen)
{
	unsigned a, b;
	int used = 0;
	char rest[64] = "";
	*f = (struct topo_fault){ .factor = 0 };
	if (sscanf(item, "node%u.nic%u%n", &a, &b, &used) == 2 && (!item[used] || item[used] == '=')) {
		f->kind = TOPO_FAULT_NIC;
	} else if (sscanf(item, "node%u.gpu%u.nvlink%n", &a, &b, &used) == 2 &&
		   (!item[used] || item[used] == '=')) {
		f->kind = TOPO_FAULT_NVLINK;
	} else {
		return sim_errf(err, errlen, "cluster.faults: '%s': expected nodeN.nicK or "
			    "nodeN.gpuG.nvlink, then =FRACTION for a degraded link (0 < FRACTION "
			    "< 1)", item);
	}
	f->node = a, f->index = b;
	if (item[used] == '=') {
		char *end;
		snprintf(rest, sizeof(rest), "%s", item + used + 1);
		double x = strtod(rest, &end);
		if (end == rest || *end || !(x > 0 && x < 1))
			return sim_errf(err, errlen, "cluster.faults: '%s': expected a fraction of "
				    "the bandwidth above 0 and below 1 after '='", item);
		f->factor = x;
	}
	return 0;
}

int topo_faults_parse(const char *text, struct topo_fault *out, size_t *n, char *err,
		      size_t errlen)
{
	char buf[256], *save = NULL;
	*n = 0;
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
		if (fault_parse(tok, &out[*n], err, errlen) < 0)
			return -1;
		(*n)++;
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
	return 0;
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
		snprintf(buf + n - 1, len - (size_t)n + 1, ",\"faults\":\"%s\",\"description\":\"%s\","
			 "\"source\":\"%s\"}", faults, desc, src);
}
