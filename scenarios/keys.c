/*
 * keys.c - the table of scenario keys: name, kind of value, unit, default,
 * range and help. scn_set() parses one value through it; the defaults, the
 * effective configuration (scn_json) and docs/scenario.md come from it too.
 * Keys under "cluster." belong to topology/cluster.c's table.
 */
#include "scenarios/scenario.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/coll.h"
#include "parallel/dp.h"
#include "parallel/schedule.h"
#include "scenarios/scn-int.h"
#include "sim/units.h"

enum kt {
	KT_COUNT,    /* whole number, no unit                 */
	KT_NUMBER,   /* plain number (ratio, exponent)        */
	KT_BYTES,    /* size with unit                        */
	KT_TIME,     /* time with unit                        */
	KT_RATE,     /* rate with unit                        */
	KT_BOOL,     /* true or false                         */
	KT_ENUM,     /* one of names; stored as int           */
	KT_PRESET,   /* model preset name (read by load.c)    */
	KT_ALGO,     /* collective algorithm name or auto     */
	KT_DP,       /* whole number or auto (0)              */
	KT_EFF,      /* number in (0, 1] or a table name      */
	KT_SEED,     /* whole number, 64 bits                 */
	KT_TEXT,     /* free text (description, source)       */
};

struct key {
	const char *name;
	enum kt type;
	size_t off;                  /* into struct scn                     */
	double min, max;             /* for numbers                         */
	const char *def;             /* default as text, NULL = none        */
	const char *const *names;    /* KT_ENUM: value i is names[i]        */
	const char *help;
};

/*
 * KT_ENUM keys that name a plug-in (names NULL in the key table): their
 * names come from the plug-in's registry, value i being its entry i, so a
 * plug-in added to the registry is a value of the key with nothing to
 * edit here. help (may be NULL): entry i's one-line help, which
 * docs/scenario.md lists after the key's own.
 */
static const struct {
	const char *key;
	const char *const *(*names)(void);   /* NULL-terminated */
	const char *(*help)(unsigned i);
} plugin_keys[] = {
	{ "parallel.schedule", par_schedule_names, par_schedule_help },
	{ "parallel.strategy", par_dp_key_names, par_dp_key_help },
	{ NULL, NULL, NULL },
};

/* k's entry in plugin_keys (the sentinel's when it has none). */
static size_t plugin_key(const struct key *k)
{
	size_t i = 0;
	while (plugin_keys[i].key && strcmp(plugin_keys[i].key, k->name))
		i++;
	return i;
}

/* A KT_ENUM key's names, NULL-terminated. */
static const char *const *key_names(const struct key *k)
{
	size_t pk = plugin_key(k);
	if (!k->names && plugin_keys[pk].key)
		return plugin_keys[pk].names();
	BUG_ON(!k->names);
	return k->names;
}

#define OFF(f) offsetof(struct scn, f)
/* A text key's max: its field's size, the NUL included. */
#define TEXT_MAX(f) sizeof(((struct scn *)0)->f)
#define ALGO_OFF(op) (OFF(parallel.algo) + (op) * sizeof(const struct sim_coll_algo *))

static const char *const activations[] = { "gelu", "swiglu", NULL };
static const char *const norms[] = { "layernorm", "rmsnorm", NULL };
static const char *const precisions[] = { "bf16", "fp16", "fp8", "fp32", NULL };
static const char *const optimizers[] = { "adam", "sgd", NULL };
static const char *const recomputes[] = { "none", "selective", "full", NULL };
static const char *const cp_algos[] = { "ring", "zigzag", "ulysses", NULL };
static const char *const interferences[] = { "none", "measured", "auto", NULL };
static const char *const hosts[] = { "none", "eager", NULL };
static const char *const algo_autos[] = { "nccl", "fastest", NULL };
static const char *const fidelities[] = { "flow", "analytic", NULL };
static const char *const records[] = { "all", "sample", "none", "auto", NULL };
static const char *const symmetries[] = { "none", "dp", NULL };
static const char *const dists[] = { "none", "lognormal", "gamma", NULL };

#define BIG 1e9
static const struct key keys[] = {
	/* model */
	{ "model.preset", KT_PRESET, OFF(model.preset), 0, 0, NULL, NULL,
	  "model preset to start from (scenarios/models/NAME.yaml)" },
	{ "model.description", KT_TEXT, OFF(model.description), 0, TEXT_MAX(model.description), "",
	  NULL, "one line saying what the model is (at most 127 characters)" },
	{ "model.source", KT_TEXT, OFF(model.source), 0, TEXT_MAX(model.source), "", NULL,
	  "where the model's shape comes from (at most 511 characters)" },
	{ "model.layers", KT_COUNT, OFF(model.layers), 1, 100000, NULL, NULL,
	  "transformer layers L" },
	{ "model.hidden", KT_COUNT, OFF(model.hidden), 1, BIG, NULL, NULL, "hidden size h" },
	{ "model.heads", KT_COUNT, OFF(model.heads), 1, 100000, NULL, NULL, "attention heads a" },
	{ "model.kv_heads", KT_COUNT, OFF(model.kv_heads), 0, 100000, "0", NULL,
	  "key/value heads for GQA; 0 = heads (multi-head attention)" },
	{ "model.head_dim", KT_COUNT, OFF(model.head_dim), 0, 100000, "0", NULL,
	  "size of one head; 0 = hidden / heads" },
	{ "model.ffn", KT_COUNT, OFF(model.ffn), 0, BIG, "0", NULL,
	  "MLP width f; 0 = 4 x hidden" },
	{ "model.vocab", KT_COUNT, OFF(model.vocab), 1, BIG, NULL, NULL, "vocabulary size V" },
	{ "model.activation", KT_ENUM, OFF(model.activation), 0, 0, "gelu", activations,
	  "MLP: gelu (two matrices) or swiglu (three)" },
	{ "model.norm", KT_ENUM, OFF(model.norm), 0, 0, "layernorm", norms, "normalisation" },
	{ "model.tied_embeddings", KT_BOOL, OFF(model.tied_embeddings), 0, 0, "false", NULL,
	  "the output layer shares the input embedding's weights" },
	{ "model.moe.experts", KT_COUNT, OFF(model.moe.experts), 0, 100000, "0", NULL,
	  "routed experts per MoE layer; 0 = dense model" },
	{ "model.moe.top_k", KT_COUNT, OFF(model.moe.top_k), 0, 1024, "0", NULL,
	  "experts each token is routed to" },
	{ "model.moe.capacity_factor", KT_NUMBER, OFF(model.moe.capacity_factor), 0, 1000, "0",
	  NULL, "tokens an expert takes, over the uniform share; 0 = no limit" },
	{ "model.moe.every", KT_COUNT, OFF(model.moe.every), 1, 1000, "1", NULL,
	  "an MoE layer every N layers (after the dense ones)" },
	{ "model.moe.expert_ffn", KT_COUNT, OFF(model.moe.expert_ffn), 0, BIG, "0", NULL,
	  "MLP width of one expert; 0 = ffn" },
	{ "model.moe.shared_experts", KT_COUNT, OFF(model.moe.shared_experts), 0, 1024, "0", NULL,
	  "experts every token goes through" },
	{ "model.moe.dense_layers", KT_COUNT, OFF(model.moe.dense_layers), 0, 100000, "0", NULL,
	  "the first N layers stay dense" },
	{ "model.moe.skew", KT_NUMBER, OFF(model.moe.skew), 0, 100, "0", NULL,
	  "routing imbalance, Zipf exponent over experts; 0 = uniform" },
	/* training */
	{ "training.seq", KT_COUNT, OFF(training.seq), 1, BIG, NULL, NULL,
	  "sequence length s, tokens" },
	{ "training.global_batch", KT_COUNT, OFF(training.global_batch), 1, BIG, NULL, NULL,
	  "sequences per step, all replicas together; at most 4096 micro-batches per replica "
	  "(global_batch / dp / micro_batch)" },
	{ "training.micro_batch", KT_COUNT, OFF(training.micro_batch), 1, BIG, "1", NULL,
	  "sequences per micro-batch b" },
	{ "training.precision", KT_ENUM, OFF(training.precision), 0, 0, "bf16", precisions,
	  "precision of matmuls and activations" },
	{ "training.optimizer", KT_ENUM, OFF(training.optimizer), 0, 0, "adam", optimizers,
	  "adam (12 bytes of state per parameter in mixed precision) or sgd" },
	{ "training.recompute", KT_ENUM, OFF(training.recompute), 0, 0, "none", recomputes,
	  "activation recomputation" },
	{ "training.flash_attention", KT_BOOL, OFF(training.flash_attention), 0, 0, "true", NULL,
	  "fused attention kernel (no s x s matrices kept)" },
	/* parallel */
	{ "parallel.tp", KT_COUNT, OFF(parallel.tp), 1, 4096, "1", NULL, "tensor-parallel size" },
	{ "parallel.sp", KT_BOOL, OFF(parallel.sp), 0, 0, "false", NULL,
	  "sequence parallelism with tensor parallelism" },
	{ "parallel.tp_overlap", KT_BOOL, OFF(parallel.tp_overlap), 0, 0, "false", NULL,
	  "split sequence parallelism's all-gathers and reduce-scatters into ring steps "
	  "pipelined with the layer's GEMMs (Megatron --tp-comm-overlap, AsyncTP); needs "
	  "parallel.sp" },
	{ "parallel.pp", KT_COUNT, OFF(parallel.pp), 1, 4096, "1", NULL, "pipeline stages" },
	{ "parallel.vpp", KT_COUNT, OFF(parallel.vpp), 1, 1024, "1", NULL,
	  "model chunks per stage (interleaved schedule)" },
	{ "parallel.first_stage_layers", KT_COUNT, OFF(parallel.first_stage_layers), 0, 100000,
	  "0", NULL, "layers of the first pipeline stage (its first chunk); 0 = an even share" },
	{ "parallel.last_stage_layers", KT_COUNT, OFF(parallel.last_stage_layers), 0, 100000,
	  "0", NULL, "layers of the last pipeline stage (its last chunk); 0 = an even share" },
	{ "parallel.tp_across_nodes", KT_BOOL, OFF(parallel.tp_across_nodes), 0, 0, "false", NULL,
	  "let a tensor-parallel group span NVLink domains (a warning instead of an error)" },
	{ "parallel.schedule", KT_ENUM, OFF(parallel.schedule), 0, 0, "1f1b", NULL,
	  "pipeline schedule" },
	{ "parallel.cp", KT_COUNT, OFF(parallel.cp), 1, 4096, "1", NULL, "context-parallel size" },
	{ "parallel.cp_algo", KT_ENUM, OFF(parallel.cp_algo), 0, 0, "ring", cp_algos,
	  "context parallelism: ring attention, zig-zag ring, or Ulysses all-to-all" },
	{ "parallel.ep", KT_COUNT, OFF(parallel.ep), 1, 65536, "1", NULL, "expert-parallel size" },
	{ "parallel.dp", KT_DP, OFF(parallel.dp), 0, TOPO_MAX_RANKS, "auto", NULL,
	  "data-parallel size, or auto (GPUs / (tp x cp x pp))" },
	{ "parallel.strategy", KT_ENUM, OFF(parallel.strategy), 0, 0, "auto", NULL,
	  "data-parallel strategy; auto: the one its aliases parallel.zero (0 ddp, 1 zero1, "
	  "2 zero2, 3 zero3) and parallel.fsdp.enabled (fsdp) name; an alias set to another "
	  "strategy than the one named here is an error" },
	{ "parallel.zero", KT_COUNT, OFF(parallel.zero), 0, 3, "0", NULL,
	  "ZeRO stage over the data-parallel group (an alias of parallel.strategy: 1 is "
	  "zero1)" },
	{ "parallel.fsdp.enabled", KT_BOOL, OFF(parallel.fsdp.enabled), 0, 0, "false", NULL,
	  "PyTorch FSDP decides the sharding (zero is then ignored; an alias of "
	  "parallel.strategy fsdp)" },
	{ "parallel.fsdp.unit_layers", KT_COUNT, OFF(parallel.fsdp.unit_layers), 1, 100000, "1",
	  NULL, "layers per FSDP unit" },
	{ "parallel.fsdp.prefetch", KT_BOOL, OFF(parallel.fsdp.prefetch), 0, 0, "true", NULL,
	  "gather the next unit while computing this one" },
	{ "parallel.fsdp.reshard", KT_BOOL, OFF(parallel.fsdp.reshard), 0, 0, "true", NULL,
	  "free gathered parameters after forward" },
	{ "parallel.fsdp.hsdp", KT_BOOL, OFF(parallel.fsdp.hsdp), 0, 0, "false", NULL,
	  "shard inside a node, replicate across nodes" },
	{ "parallel.zero3.prefetch_bucket", KT_COUNT, OFF(parallel.zero3.prefetch_bucket), 0,
	  4000000000u, "5e7", NULL,
	  "ZeRO-3: parameter elements of the coming modules all-gathered ahead, in one call "
	  "per module reached (DeepSpeed stage3_prefetch_bucket_size); 0: no prefetch" },
	{ "parallel.zero3.reduce_bucket", KT_COUNT, OFF(parallel.zero3.reduce_bucket), 1,
	  4000000000u, "5e8", NULL,
	  "ZeRO-3: gradient elements per reduce-scatter, across modules and layers (DeepSpeed "
	  "reduce_bucket_size)" },
	{ "parallel.zero3.max_live", KT_COUNT, OFF(parallel.zero3.max_live), 1, 4000000000u,
	  "1e9", NULL,
	  "ZeRO-3: parameter elements gathered and not yet freed, at most, that prefetching "
	  "may reach (DeepSpeed stage3_max_live_parameters)" },
	{ "parallel.zero3.persistence", KT_COUNT, OFF(parallel.zero3.persistence), 0,
	  4000000000u, "1e5", NULL,
	  "ZeRO-3: parameter tensors of fewer elements (norms, biases) are kept whole on every "
	  "GPU, never gathered (DeepSpeed stage3_param_persistence_threshold)" },
	{ "parallel.ddp.bucket", KT_BYTES, OFF(parallel.ddp.bucket_bytes), 1, 1e15, "25MiB", NULL,
	  "gradient bucket size (PyTorch DDP's default 25 MiB); ZeRO-1 and ZeRO-2 all-gather the "
	  "updated parameters in buckets of this size too, at most 100,000 of them per step (a "
	  "layout that fits and would need more is refused)" },
	{ "parallel.ddp.overlap", KT_BOOL, OFF(parallel.ddp.overlap), 0, 0, "true", NULL,
	  "all-reduce each full bucket while backward goes on" },
	{ "parallel.ddp.overlap_param_gather", KT_BOOL, OFF(parallel.ddp.overlap_param_gather), 0,
	  0, "false", NULL,
	  "ZeRO-1/2: all-gather the updated parameters bucket by bucket during the next step's "
	  "forward, and reduce-scatter ZeRO-1's buckets during the last backward (Megatron-Core "
	  "--overlap-param-gather with --overlap-grad-reduce)" },
	{ "parallel.ddp.overlap_grad_reduce", KT_BOOL, OFF(parallel.ddp.overlap_grad_reduce), 0,
	  0, "false", NULL,
	  "ZeRO-1: reduce-scatter each bucket as it fills during the last micro-batch's backward "
	  "instead of after it (Megatron-Core --overlap-grad-reduce; overlap_param_gather implies "
	  "it; DDP's all-reduces: parallel.ddp.overlap)" },
	{ "parallel.ddp.fp32_grads", KT_BOOL, OFF(parallel.ddp.fp32_grads), 0, 0, "false", NULL,
	  "keep and reduce gradients in fp32 with bf16 or fp16 training: 4 bytes per gradient "
	  "(Megatron-LM's default with bf16, --accumulate-allreduce-grads-in-fp32)" },
	{ "parallel.offload.enabled", KT_BOOL, OFF(parallel.offload.enabled), 0, 0, "false", NULL,
	  "keep optimizer states on the CPU and step there (ZeRO-Offload; zero 1 or 2)" },
	{ "parallel.offload.cpu_adam", KT_NUMBER, OFF(parallel.offload.cpu_adam), 1, 1e15, "1e9",
	  NULL, "parameters per second the CPU optimizer of one GPU updates (an assumption: "
	  "measure yours)" },
	{ "parallel.algorithms.allreduce", KT_ALGO, ALGO_OFF(SIM_COLL_ALLREDUCE), 0, 0, "auto",
	  NULL, "all-reduce algorithm: ring, rd, hd, hier or auto" },
	{ "parallel.algorithms.reducescatter", KT_ALGO, ALGO_OFF(SIM_COLL_REDUCESCATTER), 0, 0,
	  "auto", NULL, "reduce-scatter algorithm: ring, rd or auto" },
	{ "parallel.algorithms.allgather", KT_ALGO, ALGO_OFF(SIM_COLL_ALLGATHER), 0, 0, "auto",
	  NULL, "all-gather algorithm: ring, rd or auto" },
	{ "parallel.algorithms.alltoall", KT_ALGO, ALGO_OFF(SIM_COLL_ALLTOALL), 0, 0, "auto",
	  NULL, "all-to-all algorithm: pairwise or auto" },
	{ "parallel.algorithms.auto", KT_ENUM, OFF(parallel.algo_auto), 0, 0, "nccl", algo_autos,
	  "how auto chooses: nccl (as NCCL can: all-gathers and reduce-scatters by ring where a "
	  "node holds two members of the group, else the fastest closed form), or fastest (the "
	  "fastest closed form of every algorithm)" },
	/* compute */
	{ "compute.efficiency", KT_EFF, OFF(compute.efficiency), 0, 1, "h200", NULL,
	  "a flat efficiency in (0, 1] (1 = pure roofline), or a calibration table: "
	  "calibration/NAME/ next to the scenario, else in the data folder" },
	{ "compute.launch_overhead", KT_TIME, OFF(compute.launch_s), 0, 1, "1.1us", NULL,
	  "added to every kernel (measured on H200: 1.1 us per kernel in a CUDA graph)" },
	{ "compute.interference", KT_ENUM, OFF(compute.interference), 0, 0, "auto", interferences,
	  "compute and communication inside a node slowed by each other: none; measured (the "
	  "table's interference.csv, by the CUDA blocks the rank's communication holds); auto "
	  "(measured where the calibration table has interference.csv and the scenario is not "
	  "a jobs list, else none)" },
	{ "compute.host", KT_ENUM, OFF(compute.host), 0, 0, "none", hosts,
	  "who issues each rank's kernels and collectives: none (issued ahead of the GPU, as by "
	  "CUDA graphs: the host never bounds), or eager (one host thread issues them in program "
	  "order, each at the table's measured host cost, host.csv)" },
	/* variability */
	{ "variability.jitter", KT_ENUM, OFF(variability.jitter), 0, 0, "none", dists,
	  "each compute kernel's time times a draw of mean 1: none, lognormal or gamma" },
	{ "variability.jitter_cv", KT_NUMBER, OFF(variability.jitter_cv), 1e-6, 10, "0.05", NULL,
	  "coefficient of variation of the kernel jitter (standard deviation / mean)" },
	{ "variability.gpu", KT_ENUM, OFF(variability.gpu), 0, 0, "none", dists,
	  "each GPU's speed, drawn once: its kernels' times times a draw of mean 1" },
	{ "variability.gpu_cv", KT_NUMBER, OFF(variability.gpu_cv), 1e-6, 10, "0.02", NULL,
	  "coefficient of variation of the GPU speed factors" },
	{ "variability.stragglers", KT_COUNT, OFF(variability.stragglers), 0, 1048576, "0", NULL,
	  "GPUs that run slower than the rest (chosen from sim.seed)" },
	{ "variability.straggler_slowdown", KT_NUMBER, OFF(variability.straggler_slowdown), 1, 100,
	  "1.5", NULL, "how many times longer a straggler's kernels take" },
	/* failures */
	{ "failures.gpu_mtbf", KT_TIME, OFF(failures.gpu_mtbf_s), 0, 1e15, "0", NULL,
	  "mean time between failures of one GPU (its share of node failures included); 0: no "
	  "failures reported" },
	{ "failures.storage_bandwidth", KT_RATE, OFF(failures.storage_Bps), 1, 1e18, "100GB/s", NULL,
	  "aggregate write bandwidth of the checkpoint storage (an assumption: measure yours)" },
	{ "failures.restart", KT_TIME, OFF(failures.restart_s), 0, 1e9, "10min", NULL,
	  "from a failure to training again: detection, rescheduling, loading the checkpoint" },
	{ "failures.run", KT_TIME, OFF(failures.run_s), 1, 1e12, "30d", NULL,
	  "wall-clock length of the run the goodput is reported for" },
	/* sim */
	{ "sim.fidelity", KT_ENUM, OFF(sim.fidelity), 0, 0, "flow", fidelities,
	  "flow (transfers on links, contention) or analytic (closed forms)" },
	{ "sim.steps", KT_COUNT, OFF(sim.steps), 1, 100000, "1", NULL, "training steps to simulate" },
	{ "sim.seed", KT_SEED, OFF(sim.seed), 0, 0, "1", NULL, "seed of every random draw" },
	{ "sim.record", KT_ENUM, OFF(sim.record), 0, 0, "auto", records,
	  "timelines stored with --db: all; sample (every rank's summary, the timelines of one "
	  "pipeline, one TP group and the last rank to finish); none; auto (all up to 1,024 "
	  "GPUs, sample above)" },
	{ "sim.symmetry", KT_ENUM, OFF(sim.symmetry), 0, 0, "none", symmetries,
	  "none: every rank simulated (exact); dp: one data-parallel replica stands for all "
	  "(collectives across replicas costed in closed form; not with MoE)" },
	{ "sim.analytic_sharing", KT_BOOL, OFF(sim.analytic_sharing), 0, 0, "true", NULL,
	  "collectives costed in closed form (analytic fidelity, sim.symmetry dp) share each "
	  "link with the others running on it, re-rated as they start and end; false: each "
	  "alone on its links" },
	{ "sim.chunk", KT_BYTES, OFF(sim.chunk_bytes), 4096, 1e12, "512KiB", NULL,
	  "messages move in chunks of this size, at least 4 KiB (NCCL Simple: 512 KiB); "
	  "in flow fidelity a shared link costs an event per chunk, so small chunks are slow" },
};

_Static_assert(SCN_MAX_MICRO_BATCHES == 4096, "the help of training.global_batch says 4096");
_Static_assert(PAR_MAX_PARAM_GATHERS == 100000, "the help of parallel.ddp.bucket says 100,000");
_Static_assert(TEXT_MAX(model.description) == 128 && TEXT_MAX(model.source) == 512,
	       "the help of model.description and model.source says 127 and 511 characters");

static const char *const kt_value[] = {
	[KT_COUNT] = "integer", [KT_NUMBER] = "number", [KT_BYTES] = "size", [KT_TIME] = "time",
	[KT_RATE] = "rate", [KT_BOOL] = "true/false", [KT_ENUM] = "name", [KT_PRESET] = "name", [KT_ALGO] = "name",
	[KT_DP] = "integer or auto", [KT_EFF] = "number or name", [KT_SEED] = "integer",
	[KT_TEXT] = "text",
};

static const struct key *key_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (!strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

/* A whole number in [min, max] without unit (sim_whole_parse's grammar:
 * decimal, "1e6" allowed, no hexadecimal). */
static int parse_whole(const struct key *k, const char *v, unsigned long long *out,
		       char *err, size_t errlen)
{
	unsigned long long n;
	if (sim_whole_parse(v, ULLONG_MAX, &n, NULL, 0) < 0 ||
	    (k->max > 0 && (n < k->min || n > k->max)))
		return k->max > 0 ? sim_errf(err, errlen, "%s: expected a whole number from %.0f to %.0f, "
					 "got '%s'", k->name, k->min, k->max, v)
				  : sim_errf(err, errlen, "%s: expected a whole number, got '%s'",
					 k->name, v);
	*out = n;
	return 0;
}

/* A plain number in [min, max] (sim_number_parse's decimal grammar). */
static int parse_plain(const struct key *k, const char *v, double *out, char *err, size_t errlen)
{
	double x;
	if (sim_number_parse(v, &x, NULL, 0) < 0 || !(x >= k->min && x <= k->max))
		return sim_errf(err, errlen, "%s: expected a decimal number from %g to %g, got '%s'",
			    k->name, k->min, k->max, v);
	*out = x;
	return 0;
}

static int parse_bool(const struct key *k, const char *v, bool *out, char *err, size_t errlen)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (!strcmp(v, yes[i]))
			return *out = true, 0;
		if (!strcmp(v, no[i]))
			return *out = false, 0;
	}
	return sim_errf(err, errlen, "%s: expected true or false, got '%s'", k->name, v);
}

static int parse_enum(const struct key *k, const char *v, int *out, char *err, size_t errlen)
{
	char list[256] = "";
	const char *const *names = key_names(k);
	for (int i = 0; names[i]; i++) {
		if (!strcmp(v, names[i]))
			return *out = i, 0;
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
			 names[i]);
	}
	return sim_errf(err, errlen, "%s: expected one of %s, got '%s'", k->name, list, v);
}

static int parse_units(const struct key *k, const char *v, double *out, char *err, size_t errlen)
{
	char why[256];
	double x;
	enum sim_unit u = k->type == KT_TIME ? SIM_UNIT_TIME
			  : k->type == KT_RATE ? SIM_UNIT_RATE : SIM_UNIT_BYTES;
	if (sim_units_parse(u, v, &x, why, sizeof(why)) < 0)
		return sim_errf(err, errlen, "%s: %s", k->name, why);
	if (x < k->min || x > k->max)
		return sim_errf(err, errlen, "%s: expected %s from %g to %g, got '%s'", k->name,
			    k->type == KT_TIME ? "a time (s)" : k->type == KT_RATE ? "a rate (bytes/s)"
			    : "a size (bytes)", k->min, k->max, v);
	*out = x;
	return 0;
}

/* compute.efficiency: a flat number in (0, 1], or the name of a table. */
static int parse_eff(struct scn *s, const struct key *k, const char *v, char *err, size_t errlen)
{
	double x;
	if (sim_number_parse(v, &x, NULL, 0) == 0) {
		if (!(x > 0 && x <= 1))
			return sim_errf(err, errlen, "%s: expected a flat efficiency in (0, 1] or a "
				    "calibration table name, got '%s'", k->name, v);
		s->compute.efficiency = x;
		s->compute.table[0] = 0;
		return 0;
	}
	char *end;
	strtod(v, &end);  /* "0x1", "inf": a number in strtod's grammar, not ours */
	if (*v && end != v && !*end)
		return sim_errf(err, errlen, "%s: expected a decimal number in (0, 1] or a "
				"calibration table name, got '%s'", k->name, v);
	if (!*v || strlen(v) >= sizeof(s->compute.table) || strpbrk(v, "/\\. "))
		return sim_errf(err, errlen, "%s: expected a number or a table name, got '%s'", k->name, v);
	s->compute.efficiency = 0;
	snprintf(s->compute.table, sizeof(s->compute.table), "%s", v);
	return 0;
}

/* Parse v into the field of key k. */
static int key_set(struct scn *s, const struct key *k, const char *v, char *err, size_t errlen)
{
	char *f = (char *)s + k->off;
	unsigned long long n;
	switch (k->type) {
	case KT_COUNT:
		if (parse_whole(k, v, &n, err, errlen) < 0)
			return -1;
		*(uint32_t *)(void *)f = (uint32_t)n;
		return 0;
	case KT_SEED:
		if (parse_whole(k, v, &n, err, errlen) < 0)
			return -1;
		*(uint64_t *)(void *)f = n;
		return 0;
	case KT_DP:
		if (!strcmp(v, "auto"))
			return *(uint32_t *)(void *)f = 0, 0;
		if (parse_whole(k, v, &n, err, errlen) < 0 || n == 0)
			return sim_errf(err, errlen, "%s: expected auto or a whole number from 1 to %.0f, "
				    "got '%s'", k->name, k->max, v);
		*(uint32_t *)(void *)f = (uint32_t)n;
		return 0;
	case KT_NUMBER:
		return parse_plain(k, v, (double *)(void *)f, err, errlen);
	case KT_BYTES:
	case KT_TIME:
	case KT_RATE:
		return parse_units(k, v, (double *)(void *)f, err, errlen);
	case KT_BOOL:
		return parse_bool(k, v, (bool *)(void *)f, err, errlen);
	case KT_ENUM: {
		int e;
		if (parse_enum(k, v, &e, err, errlen) < 0)
			return -1;
		memcpy(f, &e, sizeof(e));  /* every enum here is int-sized */
		return 0;
	}
	case KT_PRESET:
		if (!*v || strlen(v) >= sizeof(s->model.preset) || strpbrk(v, "/\\ "))
			return sim_errf(err, errlen, "%s: expected a preset name, got '%s'", k->name, v);
		snprintf(f, sizeof(s->model.preset), "%s", v);
		return 0;
	case KT_ALGO: {
		const struct sim_coll_algo *a = strcmp(v, "auto") ? coll_find(v) : NULL;
		if (strcmp(v, "auto") && !a)
			return sim_errf(err, errlen, "%s: expected auto or one of %s, got '%s'", k->name,
				    coll_names(), v);
		*(const struct sim_coll_algo **)(void *)f = a;
		return 0;
	}
	case KT_EFF:
		return parse_eff(s, k, v, err, errlen);
	case KT_TEXT:
		if (strlen(v) >= (size_t)k->max)
			return sim_errf(err, errlen, "%s: at most %.0f characters, got %zu", k->name,
					k->max - 1, strlen(v));
		snprintf(f, (size_t)k->max, "%s", v);
		return 0;
	}
	BUG("key type %d", k->type);
}

int scn_set(struct scn *s, const char *key, const char *value, char *err, size_t errlen)
{
	if (!strncmp(key, "cluster.", 8))
		return topo_config_set(&s->cluster, key + 8, value, err, errlen);
	const struct key *k = key_find(key);
	if (!k) {
		const char *dot = strchr(key, '.');
		size_t sec = dot ? (size_t)(dot - key) : strlen(key);
		static const char *const sections[] = { "cluster", "model", "training", "parallel",
							"compute", "variability", "failures", "sim" };
		for (size_t i = 0; i < ARRAY_SIZE(sections); i++)
			if (strlen(sections[i]) == sec && !strncmp(key, sections[i], sec))
				return sim_errf(err, errlen, "unknown key %s (see docs/scenario.md for the "
					    "keys of %s)", key, sections[i]);
		return sim_errf(err, errlen, "unknown key %s: expected a key of cluster, model, "
			    "training, parallel, compute or sim", key);
	}
	return key_set(s, k, value, err, errlen);
}

int scn_key_is_known(const char *key)
{
	if (!strncmp(key, "cluster.", 8)) {
		struct topo_config c = { 0 };
		char err[256];
		/* the cluster table knows its keys; an unknown one says so */
		return !strcmp(key + 8, "preset") ||
		       topo_config_set(&c, key + 8, "", err, sizeof(err)) == 0 ||
		       !strstr(err, "unknown key");
	}
	return key_find(key) != NULL || !strcmp(key, "model.preset");
}

int scn_key_known(const char *key)
{
	return scn_key_is_known(key);
}

void scn_defaults(struct scn *s)
{
	char err[256];
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (keys[i].def && key_set(s, &keys[i], keys[i].def, err, sizeof(err)) < 0)
			BUG("default of %s: %s", keys[i].name, err);
}

/* Missing required keys (no default, no preset): 0 or -1 with err. */
int scn_check_required(const struct scn *s, char *err, size_t errlen)
{
	const struct { const char *name; uint32_t v; } req[] = {
		{ "model.layers", s->model.layers }, { "model.hidden", s->model.hidden },
		{ "model.heads", s->model.heads }, { "model.vocab", s->model.vocab },
		{ "training.seq", s->training.seq },
		{ "training.global_batch", s->training.global_batch },
	};
	for (size_t i = 0; i < ARRAY_SIZE(req); i++)
		if (!req[i].v)
			return sim_errf(err, errlen, "%s: required (set it, or name a model.preset)",
				    req[i].name);
	return 0;
}

/* ---- the effective configuration as JSON ------------------------------------ */

/* A quoted JSON string. */
static void json_string(const char *s, char *buf, size_t len)
{
	if (len < 3)
		return;
	buf[0] = '"';
	sim_json_escape(s, buf + 1, len - 2);
	strcat(buf, "\"");
}

static void json_value(const struct scn *s, const struct key *k, char *buf, size_t len)
{
	const char *f = (const char *)s + k->off;
	switch (k->type) {
	case KT_COUNT:
		snprintf(buf, len, "%u", *(const uint32_t *)(const void *)f);
		break;
	case KT_DP:
		snprintf(buf, len, "%u", *(const uint32_t *)(const void *)f);
		break;
	case KT_SEED:
		snprintf(buf, len, "%llu", (unsigned long long)*(const uint64_t *)(const void *)f);
		break;
	case KT_NUMBER:
	case KT_BYTES:
	case KT_TIME:
	case KT_RATE:
		snprintf(buf, len, "%.17g", *(const double *)(const void *)f);
		break;
	case KT_BOOL:
		snprintf(buf, len, "%s", *(const bool *)(const void *)f ? "true" : "false");
		break;
	case KT_ENUM: {
		int e;
		memcpy(&e, f, sizeof(e));
		snprintf(buf, len, "\"%s\"", key_names(k)[e]);
		break;
	}
	case KT_PRESET:
	case KT_TEXT:
		json_string(f, buf, len);
		break;
	case KT_ALGO: {
		const struct sim_coll_algo *a = *(const struct sim_coll_algo *const *)(const void *)f;
		snprintf(buf, len, "\"%s\"", a ? a->name : "auto");
		break;
	}
	case KT_EFF:
		if (s->compute.efficiency > 0)
			snprintf(buf, len, "%.17g", s->compute.efficiency);
		else
			snprintf(buf, len, "\"%s\"", s->compute.table);
		break;
	}
}

char *scn_json(const struct scn *s)
{
	char cluster[4096];
	topo_config_json(&s->cluster, cluster, sizeof(cluster));
	size_t cap = 8192, n = 0;
	char *out = xmalloc(cap);
	n += (size_t)snprintf(out, cap, "{\"cluster\":%s", cluster);
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		char v[1100];
		json_value(s, &keys[i], v, sizeof(v));
		size_t need = strlen(keys[i].name) + strlen(v) + 8;
		if (n + need >= cap)
			out = xrealloc(out, cap *= 2);
		n += (size_t)snprintf(out + n, cap - n, ",\"%s\":%s", keys[i].name, v);
	}
	snprintf(out + n, cap - n, "}");
	return out;
}

/* ---- docs/scenario.md ------------------------------------------------------- */

void scn_keys_markdown(FILE *out)
{
	fprintf(out, "| key | value | default | meaning |\n|---|---|---|---|\n");
	fprintf(out, "| `cluster.preset` | name | required | cluster preset to start from "
		"(scenarios/clusters/NAME.yaml; clustersim presets) |\n");
	for (size_t i = 0; i < topo_key_count(); i++) {
		const char *name, *value, *help;
		topo_key_info(i, &name, &value, &help);
		fprintf(out, "| `cluster.%s` | %s | from the preset | %s |\n", name, value, help);
	}
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		const struct key *k = &keys[i];
		char value[160];
		snprintf(value, sizeof(value), "%s", kt_value[k->type]);
		if (k->type == KT_ENUM) {
			value[0] = 0;
			const char *const *names = key_names(k);
			for (int j = 0; names[j]; j++)
				snprintf(value + strlen(value), sizeof(value) - strlen(value), "%s`%s`",
					 j ? ", " : "", names[j]);
		}
		const char *def = k->def ? (*k->def ? k->def : "empty") :
			 k->type == KT_PRESET ? "none" : "required";
		fprintf(out, "| `%s` | %s | %s | %s", k->name, value, def, k->help);
		size_t pk = plugin_key(k);
		if (!k->names && plugin_keys[pk].help) {
			const char *const *names = key_names(k);
			for (unsigned j = 0; names[j]; j++)
				fprintf(out, "%s`%s`: %s", j ? "; " : ". ", names[j],
					plugin_keys[pk].help(j));
		}
		fprintf(out, " |\n");
	}
}
