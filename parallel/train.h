/*
 * train.h - one training step: build every rank's program from the model,
 * the layout and the compute model, run it on the engine, and report step
 * time, MFU, memory and where the time went.
 *
 * The caller owns the configuration, the topology and the compute model;
 * par_train_run builds its own sim and frees it before returning, after the
 * recorder (if any) has seen every op and memory change.
 */
#ifndef PAR_TRAIN_H
#define PAR_TRAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "parallel/compute.h"
#include "parallel/config.h"
#include "parallel/layout.h"
#include "parallel/goodput.h"
#include "sim/sim.h"
#include "topology/topo.h"

/* Memory categories of a rank (sim memory categories). */
enum par_mem {
	PAR_MEM_WEIGHTS,
	PAR_MEM_GRADS,
	PAR_MEM_OPTIMIZER,
	PAR_MEM_ACTIVATIONS,
	PAR_MEM_LOGITS,
	PAR_MEM_BUFFERS,
	PAR_MEM_NCATS
};
const char *par_mem_name(enum par_mem c);
/* "none", "lognormal" or "gamma", as the scenario names it. */
const char *par_dist_name(enum par_dist d);

/* Everything one step needs. */
struct par_train {
	const struct par_model *model;
	const struct par_training *training;
	const struct par_layout *layout;
	const struct par_compute_model *compute;
	const struct topo_config *cluster;
	struct sim_config sim;            /* fidelity, chunk, algorithms     */
	uint32_t steps;                   /* steps to simulate (>= 1)        */
	bool symmetry_dp;                 /* simulate data-parallel replica 0
					   * only (sim_rank_absent the rest) */
	uint64_t seed;                    /* random draws (MoE routing,
					   * variability)                    */
	bool interference;                /* compute.interference measured:
					   * compute and communication slowed
					   * by each other (the compute model's
					   * curves, sim_set_interference)    */
	bool host;                        /* compute.host eager: one host
					   * thread issues the ops at the
					   * table's costs (sim_set_host)     */
	bool interference_auto;           /* ... because auto found the curves
					   * (a jobs list then runs without)  */
	const struct par_variability *var;  /* compute-time randomness, or
					   * NULL: none                      */
	const struct par_failures *failures;  /* checkpointing and goodput, or
					   * NULL: not reported              */
	bool keep_steps;                  /* fill par_report.step_times      */
	const struct sim_recorder_ops *rec;
	void *rec_ctx;
	/* Called once the steps have run, before the sim is freed (to store
	 * ranks and link totals); may be NULL. Returns 0 or -1 with err. */
	int (*finish)(void *ctx, struct sim *sim, struct topo *topo, char *err, size_t errlen);
};

/* What a GPU's memory holds beyond the tensors (cluster.memory_reserve). */
struct par_reserve {
	double context;                   /* CUDA context, library workspaces */
	double nccl;                      /* the communicators' device state */
	unsigned communicators;           /* the rank's groups of 2 or more  */
	double slack;                     /* the caching allocator's, at the
					   * peak                            */
	double total;                     /* the sum, or the key's bytes     */
	bool set;                         /* total is cluster.memory_reserve's */
};

/*
 * The reserve of a rank of layout d (experts: moe) whose tensors peak at
 * `peak` bytes: cluster.memory_reserve where set, else the measurements of
 * scenarios/calibration/h200/memory.csv (tools/measure_memory.py): the CUDA
 * context with cuBLAS's and attention's workspaces, one communicator's
 * device state for each group of two or more ranks the rank belongs to
 * (TP, CP, PP, DP x CP, EP and expert DP), and the caching allocator's slack
 * at the peak (expandable segments, as Megatron-LM's and TorchTitan's
 * recipes run) as a share of the peak.
 */
void par_memory_reserve(const struct topo_config *cl, const struct par_dims *d, bool moe,
			double peak, struct par_reserve *out);
/* The measurements par_memory_reserve uses (for the test that pins them
 * to the table). */
extern const double par_reserve_context_B, par_reserve_nccl_B, par_reserve_slack;

struct par_memory {
	double bytes[PAR_MEM_NCATS];      /* at the peak of the busiest rank */
	double model_states;              /* weights + grads + optimizer held
					   * throughout (sharded by ZeRO/FSDP) */
	double peak;
	double capacity;
	struct par_reserve reserve;       /* beyond the tensors: fits means
					   * peak + reserve.total <= capacity */
	bool fits;
};

/* Exposed communication by kind, from the streams it ran on. */
enum par_comm_kind {
	PAR_COMM_TP,      /* tensor-parallel collectives and expert all-to-alls */
	PAR_COMM_DP,      /* gradient reductions and parameter gathers           */
	PAR_COMM_PP,      /* pipeline sends and receives                         */
	PAR_COMM_CP,      /* context-parallel K/V exchanges and all-to-alls       */
	PAR_COMM_HOST,    /* host copies (offload)                               */
	PAR_COMM_NKINDS
};
const char *par_comm_kind_name(enum par_comm_kind k);

struct par_report {
	const char *strategy;             /* ddp, zero1, zero2, zero3, fsdp  */
	uint32_t gpus, dp, micro_batches;
	double step_time_s;               /* per step, averaged over steps   */
	double tokens_per_s;
	double flops_per_token;           /* 6Ψ + 6 L h s: SPEC C15 with the
					   * causal mask counted            */
	double mfu, hfu;
	double params;
	struct par_memory memory;
	struct {                          /* the critical rank, per step     */
		double compute_s, exposed_comm_s, bubble_s, idle_s;
		double interference_s;    /* of compute_s: added by the
					   * communication beside it
					   * (compute.interference)  */
		double exposed_by[PAR_COMM_NKINDS];  /* exposed_comm_s by
					   * kind: they sum to it    */
	} breakdown;
	struct {                          /* mixture of experts              */
		double imbalance;         /* busiest EP rank's load / even, mean over layers */
		double dropped;           /* share of routed tokens dropped  */
		double imbalance_s;       /* expert time the imbalance adds per step */
	} moe;
	struct {                          /* ZeRO-Offload, when enabled      */
		double saved_bytes;       /* optimizer states off the GPU    */
		double host_s;            /* PCIe copies and the CPU step    */
	} offload;
	uint32_t critical_rank;
	uint32_t busiest_stage;           /* the stage whose peak is reported */
	double pipeline_s;                /* critical rank: step start to its
					   * last backward kernel            */
	uint64_t events;
	sim_ps sim_end_ps;
	/* Over the steps (sim.steps): each step's time, from its start to the
	 * last rank's end; percentiles by GSL (linear interpolation). */
	uint32_t steps;
	double step_min_s, step_p50_s, step_p90_s, step_p99_s, step_max_s;
	double *step_times;               /* with keep_steps: each step's time,
					   * in order (malloc'd: the caller
					   * frees it); else NULL            */
	/* Failures at scale (failures.gpu_mtbf > 0; else all zero). */
	struct par_goodput goodput;
	/* Straggler GPUs (variability.stragglers), the first few by rank. */
	uint32_t stragglers[8];
	uint32_t nstragglers;
};

/* A training step resolved from a struct par_train (step.h). */
struct par_step;

/*
 * Work out the memory of one rank of a resolved step (par_step_resolve)
 * from its programs without running anything: a layout that does not fit
 * is reported (memory.fits false, 0) before any event. Then what only the
 * built programs or their groups show: a program its strategy refuses,
 * explicit algorithms that cannot run on a group. 0, or -1 with err.
 */
int par_train_plan(struct par_step *s, struct par_report *out, char *err, size_t errlen);

/* Resolve, plan, run and report (a step that does not fit runs too, with
 * memory.fits false). 0, or -1 with err (a
 * layout refused, or a run that could not finish), or PAR_RUN_CLOCK with
 * err: it could not finish because a time passed the simulated clock's
 * range (sim_failed_clock), which the tools report as bad input (exit 2). */
int par_train_run(const struct par_train *t, struct par_report *out, char *err, size_t errlen);
#define PAR_RUN_CLOCK (-2)

/* Run a planned step: out holds what par_train_plan(s, out)
 * filled in, and is completed by the run, on the step's programs. */
int par_train_simulate(struct par_step *s, struct par_report *out, char *err, size_t errlen);

#endif
