/*
 * train_of.c - a scenario's training step (train_of.h).
 */
#include "scenarios/train_of.h"

#include "collectives/coll.h"
#include "parallel/train.h"
#include "scenarios/scenario.h"

void scn_train_of(struct par_train *t, const struct scn *s, const struct par_compute_model *cm)
{
	*t = (struct par_train){
		.model = &s->model, .training = &s->training, .layout = &s->parallel,
		.compute = cm, .cluster = &s->cluster, .steps = s->sim.steps, .seed = s->sim.seed,
		.var = &s->variability, .failures = &s->failures,
	};
	sim_config_init(&t->sim);
	t->sim.fidelity = s->sim.fidelity;
	t->sim.chunk_bytes = s->sim.chunk_bytes;
	t->sim.analytic_sharing = s->sim.analytic_sharing;
	t->sim.auto_nccl = s->parallel.algo_auto == 0;
	t->symmetry_dp = s->sim.symmetry == 1;
	t->interference_auto = s->compute.interference == PAR_INTERF_AUTO && cm &&
			       par_compute_has_interference(cm);
	t->interference = s->compute.interference == PAR_INTERF_MEASURED ||
			  t->interference_auto;
	t->host = s->compute.host == PAR_HOST_EAGER;
	t->sim.algos = coll_algos;
}
