/*
 * dp_ddp_after.c - the reference strategy, the smallest whole plug-in:
 * DDP that all-reduces all the gradients in one collective after the
 * backward (replicated parameters and optimizer, no buckets, no overlap;
 * only the last micro-batch reduces). Its step is DDP's with
 * parallel.ddp.overlap false and a bucket larger than the model.
 * Closed forms: the all-reduce of each model chunk after its last
 * backward, less what the stage's compute after it hides; memory: the model states
 * unsharded and one buffer of all the gradients.
 */
#include <math.h>
#include <stdlib.h>

#include "parallel/train-int.h"

static void init(struct builder *b);
static void fini(struct builder *b);
static void memory(const struct builder *b, double *bytes);
static void grads(struct builder *b, double params, uint32_t op);
static void backward_end(struct builder *b, uint32_t last);
static double exposed_s(const struct par_dp_costs *c);
static double busy_s(const struct par_dp_costs *c);
static void plan_memory(const struct par_dp_costs *c, struct par_dp_mem *m);

const struct par_dp_strategy par_dp_ddp_after = {
	.name = "ddp-after",
	.title = "DDP (ddp-after)",
	.help = "reference: DDP with one all-reduce of all the gradients after the backward",
	.flags = PAR_DP_PIPELINE | PAR_DP_MOE,
	.init = init,
	.fini = fini,
	.memory = memory,
	.grads = grads,
	.backward_end = backward_end,
	.exposed_s = exposed_s,
	.plan_memory = plan_memory,
	.busy_s = busy_s,
};

/* Private state: the gradient bytes of this backward so far. */
struct after {
	double bytes;
	unsigned issued;
};

static void init(struct builder *b)
{
	b->dp_state = xcalloc(1, sizeof(struct after));
}

static void fini(struct builder *b)
{
	free(b->dp_state);
	b->dp_state = NULL;
}

static void memory(const struct builder *b, double *bytes)
{
	par_b_states(b, 0, bytes);
	bytes[PAR_MEM_BUFFERS] = b->dpn > 1 ? b->grad_elem * par_b_params(b) : 0;
}

static void grads(struct builder *b, double params, uint32_t op)
{
	(void)op;
	((struct after *)b->dp_state)->bytes += params * b->grad_elem;
}

static void backward_end(struct builder *b, uint32_t last)
{
	struct after *s = b->dp_state;
	char name[64];
	if (s->bytes <= 0)
		return;
	sim_fmt(name, sizeof(name), "ddp-after.grads%u.allreduce", s->issued++);
	b->last_grad_comm = par_b_coll(b, STREAM_GRAD, name, SIM_COLL_ALLREDUCE, SLOT_DP,
				       s->bytes, last);
	par_b_label(b, SIM_PHASE_BWD, 0, NULL);
	s->bytes = 0;
}

/* One all-reduce per chunk after its last backward, on one stream: the
 * time past the last backward; *busy the stream's whole. */
static double reduce(const struct par_dp_costs *c, double *busy)
{
	double end = -INFINITY;
	*busy = 0;
	for (uint32_t j = 0; j < c->nchunks; j++) {
		const struct par_dp_chunk *k = &c->chunk[j];
		double r = k->bytes > 0 ? c->coll_s(c->coll_ctx, SIM_COLL_ALLREDUCE, k->bytes) : 0;
		/* The routed experts' go during the chunk's last backward. */
		*busy += r + par_dpb_plan_experts(c, k, SIM_COLL_ALLREDUCE, &end);
		end = fmax(end, -k->after_s) + r;
	}
	return fmax(0, end);
}

static double exposed_s(const struct par_dp_costs *c)
{
	double busy;
	return reduce(c, &busy);
}

static double busy_s(const struct par_dp_costs *c)
{
	double busy;
	reduce(c, &busy);
	return busy;
}

static void plan_memory(const struct par_dp_costs *c, struct par_dp_mem *m)
{
	struct par_states st;
	par_model_states(c->params, c->precision, c->optimizer, 0, c->dp,
			 c->layout->ddp.fp32_grads, &st);
	m->states = st.weights + st.grads + st.optimizer;
	m->buffers = st.grads;
}
