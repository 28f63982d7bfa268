/*
 * train-int.h - what the training-step builder (builder.c and its parts) shares with the
 * data-parallel strategies (parallel/dp.h: one file each, dp_NAME.c, listed
 * in dp.c).
 *
 * The builder (builder.c, with tp.c, cp.c, moe_step.c, passes.c,
 * optimizer.c) writes one program that every rank of the step shares. It
 * walks micro-batches, layers and phases and calls the strategy's hooks where
 * a framework would act: before and after each layer (gather or free
 * parameters), whenever a backward op completes gradients, at the end of the
 * backward pass, and for the optimizer step and what follows it.
 */
#ifndef PAR_TRAIN_INT_H
#define PAR_TRAIN_INT_H

#include <gsl/gsl_rng.h>

#include "parallel/dp.h"
#include "parallel/layout.h"
#include "parallel/model.h"
#include "parallel/step.h"
#include "parallel/train.h"

/* Streams of a rank: compute, gradients, parameter gathers, host copies,
 * tensor-parallel collectives (with parallel.tp_overlap their ring steps'
 * sends, and a stream of their receives), the four pipeline directions and
 * ring attention's sends and receives. */
enum {
	STREAM_COMPUTE = SIM_STREAM_COMPUTE, STREAM_GRAD = 1, STREAM_PARAM = 2,
	STREAM_HOST = 3, STREAM_TP = 4, STREAM_SEND_NEXT = 5, STREAM_SEND_PREV = 6,
	STREAM_RECV_PREV = 7, STREAM_RECV_NEXT = 8, STREAM_CP_SEND = 9, STREAM_CP_RECV = 10,
	STREAM_TP_RECV = 11,
};
/* Group slots of a rank: the data-parallel group, for HSDP the shard group
 * (inside a node) and the replica group (across nodes), and the tensor,
 * pipeline and context-parallel groups. SLOT_SHARD_RS has the shard group's
 * members as a group of its own: ZeRO-3's gradient reduce-scatters (grad
 * stream) run concurrently with its parameter all-gathers (param stream),
 * and the engine matches a group's collectives in the order each member
 * issues them, which two streams sharing one group would not keep. */
/* The busiest first: tensor-parallel and data-parallel collectives are most
 * of a step's, and the engine keeps its first SIM_HOT_SLOTS slots hot. */
enum { SLOT_TP = 0, SLOT_DP = 1, SLOT_PP = 2, SLOT_SHARD = 3, SLOT_REPLICA = 4, SLOT_CP = 5,
       SLOT_EP = 6, SLOT_EDP = 7, SLOT_SHARD_RS = 8, NSLOTS = 9 };
/* Send/recv tags: activations forward, gradients backward. The overlapped
 * tensor-parallel ring steps (tp.c) use TAG_ACT: their pairs of ranks (in
 * one TP group) are never a pipeline's or a CP ring's pair. */
enum { TAG_ACT = 0, TAG_GRAD = 1, TAG_KV = 2, TAG_DKV = 3 };

#define NO_OP UINT32_MAX

struct builder {
	const struct par_step *s;    /* the resolved step                  */
	const struct par_train *t;   /* its description (s->t)             */
	const struct par_dp_strategy *dp;
	struct sim_program *prog;
	struct par_op *ops;          /* scratch list from model.c          */
	size_t cap;
	uint32_t nranks, dpn;        /* ranks; data-parallel group size    */
	uint32_t shard;              /* ranks a parameter is sharded over  */
	uint32_t tp, pp, vpp, stage; /* this program's pipeline stage      */
	uint32_t cp, cpi;            /* context-parallel size; this rank's  */
	struct par_training local;   /* the training run as one CP rank sees
				      * it: seq / cp tokens per sequence     */
	int sp;                      /* sequence parallelism               */
	int tp_overlap;              /* SP's collectives pipelined with the
				      * GEMMs (parallel.tp_overlap, tp.c)  */
	double params;               /* parameters this rank holds         */
	unsigned mb, nmb;            /* micro-batch being built; how many  */
	unsigned chunk;              /* model chunk being built            */
	int layer;                   /* layer whose kernels are being
				      * appended, or -1 (their label)      */
	enum sim_phase sub_phase;    /* the phase of the kernel cp.c or
				      * moe_step.c builds in place of the
				      * model's (its label)                */
	int weight_pass;             /* building a split backward's weight pass
				      * (its kernels labelled SIM_PHASE_WEIGHT) */
	int recomputing;             /* moe_step.c's experts of a recomputed
				      * forward are being appended         */
	int reduce;                  /* this micro-batch reduces gradients */
	double grad_elem;            /* bytes per gradient element         */
	/* The ops the next compute op waits for (par_b_wait): a pipeline
	 * receive, tensor- or context-parallel collectives, parameter
	 * gathers. Unbounded: a ring-attention rank whose causal mask idles
	 * it for rounds waits for every block received meanwhile (cp - 2
	 * of them). Grows by doubling; freed with the program built. */
	uint32_t *waits;
	unsigned nwaits, waitcap;
	uint32_t last_compute;       /* the last compute op appended       */
	/* The strategy's private state (its init and fini hooks). */
	void *dp_state;
	uint32_t last_grad_comm;     /* last gradient collective, or NO_OP */
	uint32_t last_param_comm;    /* last parameter collective, or NO_OP */
	int moe_layer;               /* the MoE layer being built, or -1   */
	double expert_grads;         /* its expert gradient bytes so far   */
	double *moe_factor;          /* per layer: routing load (0: unset) */
	double *moe_dropped;         /* per layer: share of tokens dropped */
	/* The strategy's check_program refused the program (refused_most > 0):
	 * what it needs is not built (the step is refused), and why. */
	double refused_most;
	char refused[512];
};

/* Builder helpers for the strategies (builder.c). */
uint32_t par_b_coll(struct builder *b, unsigned stream, const char *name, enum sim_coll_op op,
		    unsigned slot, double bytes, uint32_t after);
double par_b_params(const struct builder *b);       /* Ψ on one rank (all layers) */
double par_b_layer_params(const struct builder *b, int l);  /* -1: embedding + head */
double par_b_expert_params(const struct builder *b);  /* of Ψ, the routed experts' */
double par_b_layer_expert_params(const struct builder *b, int l);
/* This rank's parameters in forward order: fn(ctx, piece, params) for the
 * embedding (piece -1), each layer (its index) and the head (-2). */
void par_b_each_param(const struct builder *b, void (*fn)(void *ctx, int piece, double params),
		      void *ctx);
void par_b_states(const struct builder *b, unsigned zero, double bytes[PAR_MEM_NCATS]);
/* A memory change at this point of the compute stream: a marker op of no
 * duration (it also takes the pending wait). */
void par_b_mem(struct builder *b, const char *name, unsigned cat, double bytes);
/* The next compute op appended waits for op too (NO_OP: nothing). */
void par_b_wait(struct builder *b, uint32_t op);

/* The virtual stage of chunk c of this program's stage (c p + s), and the
 * layers of virtual stage vs. */
uint32_t par_b_vstage(const struct builder *b, unsigned chunk);
void par_b_stage_range(const struct builder *b, uint32_t vs, uint32_t *first, uint32_t *count);
/* "mb3" or "mb3.c1": which micro-batch (and chunk) an op belongs to. */
void par_b_mb_label(const struct builder *b, char *buf, size_t len);
/* Label the op just appended (sim_program_label): phase ph, the kernel it
 * runs (NULL: none) and, when `placed`, where the pass is: the layer being
 * built (b->layer), the micro-batch and (interleaved) chunk. An op is
 * placed when it belongs to one micro-batch (its name then carries the
 * micro-batch, as par_b_mb_label writes it); a gradient bucket is not. */
void par_b_label(struct builder *b, enum sim_phase ph, int placed, const char *kernel);
/* The phase of a kernel of pass ph: a recomputed forward's in a backward. */
enum sim_phase par_b_phase(enum par_phase ph, const struct par_op *o);
/* The compute op just appended waits for what the builder holds for it. */
void par_b_take_waits(struct builder *b);
/* Append model ops (or the first n of the scratch list) to the compute
 * stream with what TP, CP and MoE add around them; the last op's index. */
uint32_t par_b_emit_ops(struct builder *b, const char *where, enum par_phase ph,
			const struct par_op *ops, size_t n);
uint32_t par_b_emit(struct builder *b, const char *where, enum par_phase ph, size_t n);
/* Fill the scratch list from one of model.c's op writers (the layer's
 * kernels with sequence parallelism when it is on). */
typedef size_t (*ops_fn)(const struct par_model *, const struct par_training *, unsigned,
			 enum par_phase, struct par_op *, size_t);
size_t par_b_fetch(struct builder *b, ops_fn fn, enum par_phase ph);
size_t par_b_fetch_layer(struct builder *b, enum par_phase ph);
/* Stage `stage`, CP rank cpi's program of step s (par_step_program
 * keeps it; a caller of these frees it). A program the strategy's
 * check_program refuses leaves out what follows the optimizer step, and
 * b->refused says why. */
struct sim_program *par_b_build(const struct par_step *s, struct builder *b, uint32_t stage,
				uint32_t cpi);
/* par_b_build with the actions of schedule sched (which need not be in
 * the registry: the passes' unit tests build split backwards with it). */
struct par_schedule_ops;
struct sim_program *par_b_build_with(const struct par_step *s, struct builder *b,
				     uint32_t stage, uint32_t cpi,
				     const struct par_schedule_ops *sched);
/* tp.c: the tensor-parallel collectives a kernel needs before (or after) it. */
void par_tp_hook(struct builder *b, const struct par_op *o, enum par_phase ph, int before,
		 const char *where);
/* tp.c: with parallel.tp_overlap, kernel o (named name, labelled lp) in
 * pieces pipelined with its collective's ring steps; 0 (nothing appended)
 * where its collective is not overlapped. */
int par_tp_overlapped(struct builder *b, const struct par_op *o, enum par_phase ph,
		      const char *where, const char *name, enum sim_phase lp);
/* cp.c: an attention kernel under context parallelism (ring or Ulysses). */
void par_cp_attention(struct builder *b, const struct par_op *o, int bwd, const char *where);
/* moe_step.c: the MoE MLP of the layer being built (b->moe_layer), and
 * what the layer keeps for its backward. */
void par_moe_block(struct builder *b, const char *where, int bwd);
double par_moe_activation_bytes(struct builder *b);
/* passes.c: the action of kind `kind` (enum par_action_kind, schedule.h)
 * on micro-batch b->mb through chunk b->chunk (last_action: the stage's
 * last, which ends its pipeline phase). */
void par_pass(struct builder *b, unsigned kind, int last_action);
/* optimizer.c: the optimizer step over this rank's share of the
 * parameters, on the GPU or (offload) the host; its op. */
uint32_t par_b_optimizer_step(struct builder *b);
/* memory.c: the rank's bytes held from the start, by category. */
void par_b_static_memory(const struct builder *b, double bytes[PAR_MEM_NCATS]);

/*
 * One job's step placed on a sim (train.c places one on a sim of its own;
 * jobs.c several on one cluster): its step's programs, one per pipeline
 * stage and CP rank (the step's: they outlive the sim), and its ranks'
 * group slots. The job's rank r is the sim's first + r; r < n, its GPUs
 * (the job's cluster). par_train_plan must have accepted the step.
 */
struct par_placed {
	const struct par_train *t;
	struct par_dims d;
	uint32_t first, n;
	uint32_t *slots;              /* n x NSLOTS group ids                 */
	const struct sim_program **progs;  /* [stage * cp + cp rank]          */
};
/* The groups on sim and the step's programs (built now if they were not
 * yet); the ranks' memory from the start. */
void par_place(struct par_placed *p, struct par_step *s, struct sim *sim, uint32_t first);
/* Start the job's rank r on its step program now. */
void par_place_start(const struct par_placed *p, struct sim *sim, uint32_t r);
void par_place_free(struct par_placed *p);
/* check.c: an explicit parallel.algorithms.* choice must be able to run on
 * every group the layout gives its collectives (0, or -1 with err). */
int par_check_algorithms(struct par_step *s, char *err, size_t errlen);
/* Tokens/s, MFU and HFU of a report from its step_time_s (and gpus,
 * flops_per_token). */
void par_report_rates(const struct par_train *t, struct par_report *r);
/* Sort the steps' times and put their count, extremes and percentiles in r. */
void par_report_steps(double *step_s, uint32_t n, struct par_report *r);

/* Interference (interference.c): the compute model's curves hooked into the
 * sim's engine (sim_set_interference) for a step with t->interference. */
#define PAR_INTERF_MEMO 512
struct par_interf_state {
	const struct par_compute_model *cm;
	double ridge;                 /* FLOP per byte: below, memory-bound   */
	const char *attn[2];          /* the attention kernels' names         */
	/* The factors asked before, by op fields and blocks (direct-mapped:
	 * a step asks for the same few kernels again and again). */
	struct par_interf_memo {
		double flops, bytes, f;
		const char *kernel;
		unsigned blocks;
		uint8_t comm, used;
	} memo[PAR_INTERF_MEMO];
};
void par_interf_begin(struct par_interf_state *s, const struct par_train *t, struct sim *sim);
/* The host (host.c): the compute model's costs per call hooked into the
 * sim's engine (sim_set_host) for a step with t->host. */
void par_host_begin(const struct par_train *t, struct sim *sim);

/* Variability drawn for every rank of a sim (par_var_begin), hooked into
 * its engine until par_var_end. */
struct par_var_state {
	const struct par_variability *v;
	gsl_rng *rng;
	double *gpu;                  /* per rank: speed factor x straggler   */
};
int par_var_active(const struct par_variability *v);  /* NULL: no */
/* A draw of distribution d with mean 1 and coefficient of variation cv. */
double par_draw_mean1(gsl_rng *rng, enum par_dist d, double cv);
/* The stragglers' ranks (the first few) go to r. */
void par_var_begin(struct par_var_state *vr, const struct par_variability *v, uint64_t seed,
		   struct sim *sim, struct par_report *r);
void par_var_end(struct par_var_state *vr, struct sim *sim);  /* zeroed state: nothing */

#endif
