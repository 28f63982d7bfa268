/*
 * optimizer.c - the optimizer step over the rank's share of the
 * parameters: on the GPU (memory-bound), or with ZeRO-Offload on the host.
 */
#include "parallel/train-int.h"

/* ---- the optimizer step --------------------------------------------------- */

/* Parameters this rank's optimizer updates: where the optimizer is
 * sharded, the dense ones over the shard group, the routed experts over
 * the ranks that hold the same experts (par_step_expert_shard). */
static double step_params(const struct builder *b)
{
	if (!(b->dp->flags & PAR_DP_SHARDS_OPTIMIZER))
		return par_b_params(b);
	double e = par_b_expert_params(b);
	return (par_b_params(b) - e) / b->shard + e / par_step_expert_shard(b->s);
}

/*
 * The update: memory-bound over the rank's parameters. Adam in mixed
 * precision reads the fp32 master, m, v and the gradient and writes the
 * three back and the bf16 weights: 28 bytes per parameter; SGD with
 * momentum 20. Waits for the gradient reduction.
 */
static uint32_t gpu_step(struct builder *b, double params)
{
	const struct par_train *t = b->t;
	double per = t->training->optimizer == PAR_ADAM ? 28 : 20;
	enum par_kernel k = t->training->optimizer == PAR_ADAM ? PAR_K_ADAM : PAR_K_SGD;
	struct par_op op = {
		.name = par_kernel_name(k, PAR_PART_FWD), .kernel = k,
		.cls = PAR_OP_MEMBOUND, .flops = 10 * params, .bytes = per * params,
	};
	sim_ps d = sim_ps_from_s(par_compute_time_s(t->compute, &op));
	uint32_t i = sim_program_compute(b->prog, STREAM_COMPUTE, "optimizer.step", d, op.flops,
					 op.bytes);
	if (b->last_grad_comm != NO_OP)
		sim_program_dep(b->prog, b->last_grad_comm);
	return i;
}

/*
 * ZeRO-Offload: the reduced gradient shard goes to the host over PCIe, the
 * CPU optimizer updates it, the new bf16 parameters come back. Host work
 * runs on its own stream; the GPU waits only where the next collective does.
 */
static uint32_t host_step(struct builder *b, double params)
{
	const struct par_train *t = b->t;
	double pcie = t->cluster->pcie_bw_Bps, bytes = b->grad_elem * params;
	uint32_t d2h = sim_program_compute(b->prog, STREAM_HOST, "offload.grads_to_host",
					   sim_ps_from_s(bytes / pcie), 0, bytes);
	if (b->last_grad_comm != NO_OP)
		sim_program_dep(b->prog, b->last_grad_comm);
	sim_program_compute(b->prog, STREAM_HOST, "offload.cpu_step",
			    sim_ps_from_s(params / t->layout->offload.cpu_adam), 10 * params, 0);
	(void)d2h;
	return sim_program_compute(b->prog, STREAM_HOST, "offload.params_to_gpu",
				   sim_ps_from_s(2 * params / pcie), 0, 2 * params);
}

uint32_t par_b_optimizer_step(struct builder *b)
{
	double params = step_params(b);
	return b->t->layout->offload.enabled ? host_step(b, params) : gpu_step(b, params);
}
