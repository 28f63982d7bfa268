/*
 * topo.h - GPUs and wiring: GPU presets, cluster presets, the cluster
 * configuration and its keys, and the topologies that build links and routes
 * in the engine.
 *
 * A struct topo_config is plain data (a preset, then --set overrides); a
 * struct topo is built from it for one sim and owns the topology's own state
 * (the engine owns the links). Ranks are placed node by node: rank r sits on
 * node r / gpus_per_node at local GPU r % gpus_per_node.
 */
#ifndef TOPO_TOPO_H
#define TOPO_TOPO_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "sim/sim.h"

/* Most ranks one simulation takes. */
#define TOPO_MAX_RANKS (1u << 20)

/* ---- GPUs --------------------------------------------------------------- */

/* A GPU model: dense peak FLOP/s by precision (0: not supported), memory. */
struct topo_gpu {
	const char *name;
	double fp32, tf32, bf16, fp8;   /* FLOP/s, dense (no sparsity)        */
	double hbm_Bps;                 /* memory bandwidth                    */
	double mem_bytes;               /* capacity, as nvidia-smi reports it  */
	const char *source;
};

extern const struct topo_gpu topo_gpus[];
extern const size_t topo_ngpus;
const struct topo_gpu *topo_gpu_find(const char *name);

/* ---- clusters ------------------------------------------------------------ */

/* A failed (factor 0) or degraded link of cluster.faults. */
enum topo_fault_kind { TOPO_FAULT_NIC, TOPO_FAULT_NVLINK };
struct topo_fault {
	enum topo_fault_kind kind;
	uint32_t node, index;      /* NIC or GPU index within the node */
	double factor;             /* 0: failed; else its share of the bandwidth */
};
#define TOPO_MAX_FAULTS 32

/* Parse cluster.faults' text (a link listed twice is an error); 0, or -1
 * with err naming the item. */
int topo_faults_parse(const char *text, struct topo_fault *out, size_t *n, char *err,
		      size_t errlen);


enum topo_kind {
	TOPO_IDEAL,     /* every pair of ranks joined by its own link (α, W)     */
	TOPO_FATTREE,   /* NVLink nodes on a rail-optimised two-level fat tree   */
};

/*
 * A cluster description. For the ideal cluster only network.latency and
 * network.bandwidth matter (each rank is its own node).
 */
struct topo_config {
	char preset[32];
	enum topo_kind kind;
	char gpu[32];
	uint32_t nodes;
	uint32_t gpus_per_node;
	double nvlink_bw_Bps;     /* per GPU, per direction                    */
	double nvlink_lat_s;      /* GPU-to-GPU message latency over NVSwitch  */
	double net_bw_Bps;        /* per NIC, per direction                    */
	double net_lat_s;         /* GPU-to-GPU message latency across nodes   */
	uint32_t nics_per_node;
	double oversub;           /* leaf downlink : uplink bandwidth, >= 1   */
	uint32_t nodes_per_leaf;  /* nodes under one leaf switch of a rail     */
	double hop_lat_s;         /* added per switch hop up to and down from the spine */
	double pcie_bw_Bps;       /* host <-> GPU, per direction               */
	/* cluster.memory_reserve: bytes of each GPU that tensors cannot use
	 * (CUDA context, NCCL, the allocator's slack); when not set (auto),
	 * par_memory_reserve works them out from measurements. */
	bool memory_reserve_set;
	double memory_reserve_B;
	/* Failed and degraded links: "node0.nic3, node1.gpu2.nvlink=0.5" (a
	 * link alone has failed; =F runs it at F of its bandwidth). */
	char faults[256];
	char description[128];    /* what the cluster is, one line             */
	char source[512];         /* where the preset's numbers come from      */
};

/*
 * Set one key ("nodes", "nvlink.bandwidth", "network.latency", ...; the
 * names after "cluster." in a scenario) from text with units. Presets are
 * files of such keys (scenarios/clusters/). 0, or -1 with err naming the key
 * and what was expected; the configuration is unchanged on error.
 */
int topo_config_set(struct topo_config *cfg, const char *key, const char *value,
		    char *err, size_t errlen);

/*
 * Check cluster.faults against the first `nodes` nodes of cfg: every link
 * exists (node below nodes, NIC or GPU within the node), and every GPU keeps
 * a route (no failed NVLink; with several nodes, a working NIC in each).
 * whose starts the message of a node out of range ("the cluster has": the
 * load-time check of topo_config_check; "the run uses": the nodes a
 * topology is built on). 0, or -1 with err.
 */
int topo_faults_check(const struct topo_config *cfg, uint32_t nodes, const char *whose,
		      char *err, size_t errlen);

/* Cross-key checks (positive bandwidths, NICs, known GPU, faults). 0 or -1 with err. */
int topo_config_check(const struct topo_config *cfg, char *err, size_t errlen);
/* GPUs of a node (1 on the ideal cluster, where each rank is a node) and
 * of the whole cluster. */
uint32_t topo_config_gpus_per_node(const struct topo_config *cfg);
uint64_t topo_config_gpus(const struct topo_config *cfg);

/* The key table, for help and docs: name, kind of value ("integer", "rate",
 * "time", "ratio", "name") and meaning of key i < topo_key_count(). */
size_t topo_key_count(void);
void topo_key_info(size_t i, const char **name, const char **value, const char **help);

/* Print the effective configuration as a JSON object (no newline). */
void topo_config_json(const struct topo_config *cfg, char *buf, size_t len);

/* ---- built topologies -------------------------------------------------- */

struct topo;

/*
 * Build the topology for nranks ranks (at most nodes * gpus_per_node; for
 * the ideal cluster, any number up to TOPO_MAX_RANKS) and create its links
 * in sim. The sim must have been made with topo_sim_ops() and this topo:
 * create the topo first with topo_new, then sim_new, then topo_attach.
 */
struct topo *topo_new(const struct topo_config *cfg, uint32_t nranks, char *err, size_t errlen);
void topo_attach(struct topo *t, struct sim *sim);
void topo_free(struct topo *t);
const struct sim_topo_ops *topo_sim_ops(void);

uint32_t topo_node_of(const struct topo *t, uint32_t rank);
uint32_t topo_local_of(const struct topo *t, uint32_t rank);
const struct topo_config *topo_config(const struct topo *t);

#endif
