/*
 * host.c - the host thread that issues a rank's ops (compute.host: eager;
 * docs/calibration.md, "The host's cost of a call").
 *
 * The engine asks the host time of each op (sim_set_host): a kernel (a
 * compute op that takes time) costs a PyTorch op's, a collective its
 * torch.distributed call's, from the compute model's host.csv
 * (par_compute_host_s). A send or receive costs an all-reduce's: c10d
 * issues both through the same path, and a one-rank communicator cannot
 * send (the measurement has no row for it). A compute op of no time (a
 * mark) is not a kernel and costs nothing.
 */
#include "parallel/train-int.h"

static double host_cost(void *ctx, const struct sim_op *op)
{
	const struct par_compute_model *cm = ctx;
	static const enum par_host_call of_coll[SIM_COLL_NOPS] = {
		[SIM_COLL_ALLREDUCE] = PAR_HOST_ALLREDUCE,
		[SIM_COLL_REDUCESCATTER] = PAR_HOST_REDUCESCATTER,
		[SIM_COLL_ALLGATHER] = PAR_HOST_ALLGATHER,
		[SIM_COLL_ALLTOALL] = PAR_HOST_ALLTOALL,
		[SIM_COLL_BROADCAST] = PAR_HOST_BROADCAST,
	};
	switch (op->kind) {
	case SIM_OP_COMPUTE:
		return op->dur_ps > 0 ? par_compute_host_s(cm, PAR_HOST_KERNEL) : 0;
	case SIM_OP_COLL:
		return op->coll < SIM_COLL_NOPS ? par_compute_host_s(cm, of_coll[op->coll]) : 0;
	case SIM_OP_SEND:
	case SIM_OP_RECV:
		return par_compute_host_s(cm, PAR_HOST_ALLREDUCE);
	default:
		return 0;
	}
}

void par_host_begin(const struct par_train *t, struct sim *sim)
{
	sim_set_host(sim, host_cost, (void *)t->compute);
}
