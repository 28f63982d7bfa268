/*
 * dp_shard.c - the machinery of data parallelism with sharded parameters,
 * shared by DeepSpeed ZeRO-3 (dp_zero3.c) and PyTorch FSDP (dp_fsdp.c: full
 * shard, and HSDP); each chooses its policy (struct dp_shard_policy,
 * dp-int.h) in its init hook.
 *
 * The model is cut into units: FSDP wraps parallel.fsdp.unit_layers layers
 * per unit, ZeRO-3 one layer; the embedding and the head form the root unit,
 * gathered at the start of the forward and kept to the end of the backward.
 * For every micro-batch, each unit:
 *   forward   all-gathers its parameters before its first op (with prefetch,
 *             the next unit's gather is issued when this unit starts, so it
 *             overlaps this unit's compute; without, compute waits for
 *             every gather) and frees them after its last op when resharding;
 *   backward  gathers them again (only if they were freed; prefetched one
 *             unit ahead), holds the unit's full gradients, reduce-scatters
 *             them after its last op and frees parameters and gradients.
 * HSDP shards over the GPUs of a node and replicates across nodes: after the
 * reduce-scatter inside the node, the shard is all-reduced across nodes.
 * Communication per step (SPEC C18): 3Ψ, all-gather twice and reduce-scatter
 * once (2Ψ without resharding). Memory (SPEC C12): (2 + 2 + 12)Ψ/N, plus the
 * gathered units (SPEC C19).
 */
#include <stdio.h>
#include <stdlib.h>

#include "parallel/dp-int.h"

/* Parameters gathered and computed in bf16 (FSDP mixed precision). */
#define PARAM_BYTES 2.0

/* The strategy's shard state (b->dp_state). */
struct dp_shard {
	struct dp_shard_policy p;
	uint32_t *gather;            /* per phase and unit: its gather issued
				      * ahead, or NO_OP                     */
	unsigned units;
};

static struct dp_shard *state(const struct builder *b)
{
	BUG_ON(!b->dp_state);
	return b->dp_state;
}

void par_dps_init(struct builder *b, const struct dp_shard_policy *p)
{
	struct dp_shard *s = xcalloc(1, sizeof(*s));
	s->p = *p;
	BUG_ON(s->p.unit_layers < 1);
	b->dp_state = s;
}

void par_dps_fini(struct builder *b)
{
	struct dp_shard *s = b->dp_state;
	if (s) {
		free(s->gather);
		free(s);
	}
	b->dp_state = NULL;
}

static unsigned unit_layers(const struct builder *b)
{
	return state(b)->p.unit_layers;
}

static int prefetch(const struct builder *b)
{
	return state(b)->p.prefetch;
}

static int reshard(const struct builder *b)
{
	return state(b)->p.reshard;
}

/* Units: index u covers layers [u*k, (u+1)*k); the root unit is -1. */
static int unit_of(const struct builder *b, int l)
{
	return l < 0 ? -1 : l / (int)unit_layers(b);
}

static int unit_count(const struct builder *b)
{
	unsigned k = unit_layers(b), L = b->t->model->layers;
	return (int)((L + k - 1) / k);
}

static double unit_params(const struct builder *b, int u)
{
	if (u < 0)
		return par_b_layer_params(b, -1);
	unsigned k = unit_layers(b), L = b->t->model->layers, first = (unsigned)u * k;
	double p = 0;
	for (unsigned l = first; l < first + k && l < L; l++)
		p += par_b_layer_params(b, (int)l);
	return p;
}

static int first_layer(const struct builder *b, int l, enum par_phase ph)
{
	int k = (int)unit_layers(b), L = (int)b->t->model->layers;
	return ph == PAR_FWD ? l % k == 0 : (l % k == k - 1 || l == L - 1);
}

static int last_layer(const struct builder *b, int l, enum par_phase ph)
{
	return first_layer(b, l, ph == PAR_FWD ? PAR_BWD : PAR_FWD);
}

/*
 * All-gather unit u's parameters; it may start once op `after` is done
 * (NO_OP: at once). The gathered parameters count from its completion.
 */
static uint32_t gather(struct builder *b, int u, enum par_phase ph, uint32_t after)
{
	char name[64];
	sim_fmt(name, sizeof(name), "%s.unit%d.mb%u.%s.allgather", b->dp->name, u, b->mb,
		ph == PAR_FWD ? "fwd" : "bwd");
	double bytes = PARAM_BYTES * unit_params(b, u);
	uint32_t i = par_b_coll(b, STREAM_PARAM, name, SIM_COLL_ALLGATHER, SLOT_SHARD, bytes, after);
	par_b_label(b, ph == PAR_FWD ? SIM_PHASE_FWD : SIM_PHASE_BWD, 1, NULL);
	sim_program_mem(b->prog, PAR_MEM_WEIGHTS, bytes * (b->shard - 1) / b->shard);
	b->last_param_comm = i;
	return i;
}

/* The slot of the gather issued ahead for unit u in phase ph. */
static uint32_t *ahead(struct builder *b, int u, enum par_phase ph)
{
	struct dp_shard *s = state(b);
	if (!s->gather) {
		s->units = (unsigned)unit_count(b);
		s->gather = xmalloc(2 * (s->units + 1) * sizeof(uint32_t));
	}
	return &s->gather[(ph == PAR_FWD ? 0 : s->units + 1) + (unsigned)(u + 1)];
}

/* Before a unit's first op: take its prefetched gather, or gather now. */
static void unit_begin(struct builder *b, int u, enum par_phase ph)
{
	uint32_t *mine = ahead(b, u, ph);
	par_b_wait(b, *mine != NO_OP ? *mine : gather(b, u, ph, b->last_compute));
	*mine = NO_OP;
}

/*
 * Prefetch: issue the next unit's gather as this unit starts (after the
 * previous unit's last op), so it overlaps this unit's compute; one ahead.
 */
static void prefetch_next(struct builder *b, int u, enum par_phase ph)
{
	int n = unit_count(b);
	int next = ph == PAR_FWD ? u + 1 : (u < 0 ? n - 1 : u - 1);
	if (next < 0 || next >= n || (ph == PAR_BWD && !reshard(b)))
		return;
	uint32_t *slot = ahead(b, next, ph);
	if (*slot == NO_OP)
		*slot = gather(b, next, ph, b->last_compute);
}

void par_dps_layer_begin(struct builder *b, int l, enum par_phase ph)
{
	int u = unit_of(b, l);
	if (l >= 0 && !first_layer(b, l, ph))
		return;
	if (l < 0 && ph == PAR_FWD) {           /* a micro-batch starts */
		struct dp_shard *s = state(b);
		ahead(b, 0, PAR_FWD);
		for (unsigned i = 0; i < 2 * (s->units + 1); i++)
			s->gather[i] = NO_OP;
	}
	/* In backward the root, and every unit without resharding, is still
	 * gathered from the forward. */
	if (!(ph == PAR_BWD && (u < 0 || !reshard(b))))
		unit_begin(b, u, ph);
	if (prefetch(b))
		prefetch_next(b, u, ph);
	if (ph == PAR_BWD && b->reduce)
		par_b_mem(b, "unit.grads", PAR_MEM_GRADS, b->grad_elem * unit_params(b, u));
}

/* Free a unit's gathered parameters (keep this rank's shard). */
static void unit_free(struct builder *b, int u)
{
	double bytes = PARAM_BYTES * unit_params(b, u);
	par_b_mem(b, "unit.free_params", PAR_MEM_WEIGHTS, -bytes * (b->shard - 1) / b->shard);
}

/* After a unit's backward: reduce-scatter its gradients (and, for HSDP,
 * all-reduce the shard across nodes); free them and the parameters. */
static void unit_reduce(struct builder *b, int u)
{
	char name[64];
	double grads = b->grad_elem * unit_params(b, u);
	uint32_t after = b->last_compute;
	sim_fmt(name, sizeof(name), "%s.unit%d.mb%u.reducescatter", b->dp->name, u, b->mb);
	b->last_grad_comm = par_b_coll(b, STREAM_GRAD, name, SIM_COLL_REDUCESCATTER,
				       SLOT_SHARD_RS, grads, after);
	par_b_label(b, SIM_PHASE_BWD, 1, NULL);
	sim_program_mem(b->prog, PAR_MEM_GRADS, -grads);
	if (b->shard < b->dpn) {
		sim_fmt(name, sizeof(name), "%s.unit%d.mb%u.replicas.allreduce", b->dp->name, u,
			b->mb);
		b->last_grad_comm = par_b_coll(b, STREAM_GRAD, name, SIM_COLL_ALLREDUCE,
					       SLOT_REPLICA, grads / b->shard, NO_OP);
		par_b_label(b, SIM_PHASE_BWD, 1, NULL);
	}
}

void par_dps_layer_end(struct builder *b, int l, enum par_phase ph)
{
	int u = unit_of(b, l);
	if (l >= 0 && !last_layer(b, l, ph))
		return;
	if (ph == PAR_FWD) {
		if (u >= 0 && reshard(b))
			unit_free(b, u);
		return;
	}
	if (b->reduce)
		unit_reduce(b, u);
	unit_free(b, u);
}

void par_dps_memory(const struct builder *b, double *bytes)
{
	par_b_states(b, 3, bytes);
}
