/*
 * goodput.h - failures at scale: how often a job of N GPUs is interrupted,
 * what a checkpoint costs, the checkpoint interval that wastes least
 * (Young 1974, Daly 2006) and the share of a run's wall-clock time that
 * trains (goodput). Closed forms of the scenario section `failures`; no
 * simulation.
 *
 * Failures are independent and exponential: a job of N GPUs whose each
 * GPU fails every m seconds on average is interrupted every M = m / N. A
 * checkpoint writes the model's weights and optimizer states (what a
 * restart needs) at the storage's aggregate bandwidth: δ = C / B. Daly's
 * optimum interval between checkpoints, for δ < 2M:
 *
 *     τ = sqrt(2δM) [1 + sqrt(δ / (2M)) / 3 + δ / (18M)] - δ,   else τ = M
 *
 * (Young's first-order one is sqrt(2δM)), and with a restart of R seconds
 * the expected wall time of T seconds of training is
 *
 *     W = M e^(R/M) (e^((τ + δ)/M) - 1) T / τ,    goodput = T / W.
 */
#ifndef PAR_GOODPUT_H
#define PAR_GOODPUT_H

#include <stdint.h>

/* The scenario's `failures` keys; gpu_mtbf_s = 0 leaves them out. */
struct par_failures {
	double gpu_mtbf_s;        /* mean time between failures of one GPU */
	double storage_Bps;       /* aggregate checkpoint write bandwidth  */
	double restart_s;         /* from a failure to training again      */
	double run_s;             /* wall-clock length of the run          */
};

struct par_goodput {
	double job_mtbf_s;        /* M                                     */
	double checkpoint_bytes;  /* C                                     */
	double checkpoint_s;      /* δ                                     */
	double young_s;           /* sqrt(2δM)                             */
	double interval_s;        /* Daly's τ                              */
	double goodput;           /* T / W at τ                            */
	double failures;          /* expected interruptions in run_s       */
	double useful_s;          /* training time in run_s: goodput x run */
};

/* The figures for `gpus` GPUs and a checkpoint of `bytes`. */
void par_goodput_of(const struct par_failures *f, uint32_t gpus, double bytes,
		    struct par_goodput *out);

/* Goodput at any interval tau (> 0): T / W above. */
double par_goodput_at(const struct par_failures *f, const struct par_goodput *g, double tau);

#endif
