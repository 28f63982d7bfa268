/*
 * config.h - what a scenario says about the model, the training run, the
 * parallel layout and the compute model, as plain data.
 *
 * scenarios/ fills these from YAML (with defaults, presets and --set
 * overrides) and validates them; parallel/ reads them. All sizes are in
 * bytes, times in seconds, rates in bytes or FLOP per second.
 */
#ifndef PAR_CONFIG_H
#define PAR_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/sim.h"

enum par_activation { PAR_GELU, PAR_SWIGLU };
enum par_norm { PAR_LAYERNORM, PAR_RMSNORM };
enum par_precision { PAR_BF16, PAR_FP16, PAR_FP8, PAR_FP32 };
enum par_optimizer { PAR_ADAM, PAR_SGD };
enum par_recompute { PAR_RECOMPUTE_NONE, PAR_RECOMPUTE_SELECTIVE, PAR_RECOMPUTE_FULL };
enum par_cp_algo { PAR_CP_RING, PAR_CP_ZIGZAG, PAR_CP_ULYSSES };

/* Mixture of experts; experts = 0 means a dense model. */
struct par_moe {
	uint32_t experts;         /* routed experts per MoE layer              */
	uint32_t top_k;
	double capacity_factor;   /* 0: no capacity limit                      */
	uint32_t every;           /* an MoE layer every `every` layers         */
	uint32_t expert_ffn;      /* hidden width of one expert                */
	uint32_t shared_experts;
	uint32_t dense_layers;    /* the first layers stay dense               */
	double skew;              /* routing imbalance (Zipf exponent), 0 = uniform */
};

struct par_model {
	char preset[64];
	char description[128];    /* what the model is, one line                */
	char source[512];         /* where its shape comes from                 */
	uint32_t layers;
	uint32_t hidden;          /* h                                          */
	uint32_t heads;           /* a                                          */
	uint32_t kv_heads;        /* n_kv (GQA); = heads for multi-head         */
	uint32_t head_dim;        /* d_h; 0 = hidden / heads                    */
	uint32_t ffn;             /* MLP width f (4h for GPT)                   */
	uint32_t vocab;           /* V                                          */
	enum par_activation activation;
	enum par_norm norm;
	bool tied_embeddings;
	struct par_moe moe;
};

struct par_training {
	uint32_t seq;             /* s, tokens per sequence                     */
	uint32_t global_batch;    /* sequences per step                         */
	uint32_t micro_batch;     /* b, sequences per micro-batch               */
	enum par_precision precision;
	enum par_optimizer optimizer;
	enum par_recompute recompute;
	bool flash_attention;
};

struct par_fsdp {
	bool enabled;
	uint32_t unit_layers;     /* layers per wrapping unit                   */
	bool prefetch;
	bool reshard;             /* reshard after forward                      */
	bool hsdp;                /* shard in a node, replicate across nodes    */
};

/* The most parameter all-gathers ZeRO-1/2 issue after a step (2 x the
 * parameters of a GPU / parallel.ddp.bucket: nothing else bounds them, the
 * bucket may be 1 B); a layout that fits in memory and needs more is
 * refused at load (par_train_plan). The help of parallel.ddp.bucket says it. */
#define PAR_MAX_PARAM_GATHERS 100000

struct par_ddp {
	double bucket_bytes;      /* PyTorch's default: 25 MiB                  */
	bool overlap;             /* all-reduce buckets during backward         */
	/* ZeRO-1/2: all-gather the updated parameters during the next step's
	 * forward (Megatron-Core --overlap-param-gather, which also overlaps
	 * ZeRO-1's gradient reduce-scatters with the last backward). */
	bool overlap_param_gather;
	/* ZeRO-1: reduce-scatter each bucket as it fills during the last
	 * micro-batch's backward (Megatron-Core --overlap-grad-reduce; implied
	 * by overlap_param_gather, as Megatron requires it with that). */
	bool overlap_grad_reduce;
	/* Keep and reduce gradients in fp32 with a 16-bit precision (Megatron's
	 * --accumulate-allreduce-grads-in-fp32, its default with bf16). */
	bool fp32_grads;
};

/* DeepSpeed ZeRO-3's granularity (its config keys, in elements). */
struct par_zero3 {
	uint32_t prefetch_bucket; /* stage3_prefetch_bucket_size: elements of the
				   * coming modules gathered ahead (5e7)      */
	uint32_t reduce_bucket;   /* reduce_bucket_size: gradient elements per
				   * reduce-scatter (5e8)                     */
	uint32_t persistence;     /* stage3_param_persistence_threshold: tensors
				   * of fewer elements are never sharded (1e5) */
	uint32_t max_live;        /* stage3_max_live_parameters: elements
				   * gathered at once, at most (1e9)          */
};

/* Optimizer states on the CPU (ZeRO-Offload). */
struct par_offload {
	bool enabled;
	double cpu_adam;          /* parameters the CPU optimizer updates per second */
};

struct par_layout {
	uint32_t tp, pp, vpp, cp, ep;
	uint32_t dp;              /* 0 = auto: GPUs / (tp * pp * cp)           */
	uint32_t first_stage_layers;  /* 0 = an even share                     */
	uint32_t last_stage_layers;   /* 0 = an even share                     */
	bool tp_across_nodes;     /* allow TP groups to span NVLink domains     */
	bool sp;                  /* sequence parallelism with tp               */
	bool tp_overlap;          /* SP's all-gathers and reduce-scatters in
				   * ring steps pipelined with the GEMMs
				   * (Megatron --tp-comm-overlap; SPEC C30)   */
	uint32_t schedule;        /* pipeline schedule: its index in the registry
				   * of parallel/schedule.h (par_schedule)   */
	enum par_cp_algo cp_algo;
	uint32_t zero;            /* 0-3                                        */
	struct par_fsdp fsdp;
	struct par_zero3 zero3;
	struct par_ddp ddp;
	struct par_offload offload;
	/* parallel.strategy: 0 = auto (the one parallel.zero and
	 * parallel.fsdp.enabled name), i = entry i - 1 of par_dp_strategies
	 * (parallel/dp.h; the load sets the aliases to agree with it). Code
	 * that changes zero or fsdp.enabled of a layout sets it to 0. */
	int strategy;
	/* Algorithm per collective op; NULL = auto. */
	const struct sim_coll_algo *algo[SIM_COLL_NOPS];
	int algo_auto;            /* parallel.algorithms.auto: 0 nccl, 1 fastest */
};

/* A distribution of mean 1 for variability: none, lognormal or gamma. */
enum par_dist { PAR_DIST_NONE, PAR_DIST_LOGNORMAL, PAR_DIST_GAMMA };

/*
 * Variability of compute times (scenario section `variability`), drawn with
 * GSL from sim.seed: every kernel's time is multiplied by its GPU's speed
 * factor (drawn once per GPU; stragglers are slower still) and by a jitter
 * draw of its own.
 */
struct par_variability {
	enum par_dist jitter;        /* per kernel                                */
	double jitter_cv;            /* its coefficient of variation              */
	enum par_dist gpu;           /* per GPU, once                             */
	double gpu_cv;
	uint32_t stragglers;         /* GPUs, chosen from the seed                */
	double straggler_slowdown;   /* their kernels take this many times longer */
};

/* compute.interference: how compute and communication slow each other. */
enum par_interference {
	PAR_INTERF_NONE,          /* not at all                                 */
	PAR_INTERF_MEASURED,      /* the table's interference.csv               */
	PAR_INTERF_AUTO,          /* measured where the table has it, else none */
};

/* compute.host: who issues the kernels and collectives. */
enum par_host {
	PAR_HOST_NONE,            /* issued ahead: the host never bounds        */
	PAR_HOST_EAGER,           /* one thread, each call at the table's cost  */
};

struct par_compute {
	double efficiency;        /* > 0: flat efficiency; 0: use `table`       */
	char table[64];           /* calibration table name ("h200")            */
	double launch_s;          /* per kernel                                 */
	int interference;         /* enum par_interference                      */
	int host;                 /* enum par_host                              */
};

/* Bytes of one element of a precision. */
double par_precision_bytes(enum par_precision p);

#endif
