/*
 * variability.c - compute-time randomness: every GPU's speed factor and
 * the stragglers drawn once from sim.seed, every kernel's jitter, hooked
 * into the engine (GSL distributions).
 */
#include "parallel/train-int.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>

/* ---- variability ---------------------------------------------------------------------- */

const char *par_dist_name(enum par_dist d)
{
	static const char *const names[] = { "none", "lognormal", "gamma" };
	return (unsigned)d < ARRAY_SIZE(names) ? names[d] : "?";
}

/* A draw of mean 1 and coefficient of variation cv (GSL). */
double par_draw_mean1(gsl_rng *rng, enum par_dist d, double cv)
{
	if (d == PAR_DIST_LOGNORMAL) {
		double s2 = log1p(cv * cv);  /* mean exp(mu + s2/2) = 1 */
		return gsl_ran_lognormal(rng, -s2 / 2, sqrt(s2));
	}
	if (d == PAR_DIST_GAMMA) {
		double k = 1 / (cv * cv);    /* shape k, scale 1/k: mean 1 */
		double x = gsl_ran_gamma(rng, k, 1 / k);
		/* Below shape 1, GSL draws Gamma(1 + k) U^(1/k), which underflows
		 * to 0 (or a subnormal) for a small U: at cv 10 (k = 0.01), one
		 * draw in 1,256. The true draw is then below DBL_MIN, and any
		 * factor under 1e-19 makes every kernel (at most 2^63 ps) round
		 * to 0 ps, so DBL_MIN stands for it exactly, and the draw stays
		 * positive as the engine's scale must be. */
		return x > DBL_MIN ? x : DBL_MIN;
	}
	return 1;
}

int par_var_active(const struct par_variability *v)
{
	return v && (v->jitter || v->gpu || v->stragglers);
}

/* The engine's compute scale: the kernel's jitter (the GPU's factor is the
 * rank's speed). */
static double var_scale(void *ctx, uint32_t rank, const struct sim_op *op)
{
	struct par_var_state *vr = ctx;
	(void)rank, (void)op;
	return par_draw_mean1(vr->rng, vr->v->jitter, vr->v->jitter_cv);
}

/*
 * Draw every GPU's factor, then the stragglers (from the same generator,
 * seeded by sim.seed, so a scenario and seed give the same GPUs), and hook
 * them into the engine as the ranks' speeds, the jitter as its compute
 * scale. The stragglers' ranks go to the report.
 */
void par_var_begin(struct par_var_state *vr, const struct par_variability *v, uint64_t seed,
		   struct sim *sim, struct par_report *r)
{
	uint32_t n = sim_nranks(sim);
	vr->v = v;
	vr->rng = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(vr->rng, (unsigned long)seed);
	vr->gpu = xmalloc(n * sizeof(double));
	for (uint32_t i = 0; i < n; i++)
		vr->gpu[i] = par_draw_mean1(vr->rng, v->gpu, v->gpu_cv);
	r->nstragglers = 0;
	if (v->stragglers) {
		uint32_t k = v->stragglers, *all = xmalloc(n * sizeof(uint32_t));
		uint32_t *pick = xmalloc(k * sizeof(uint32_t));
		for (uint32_t i = 0; i < n; i++)
			all[i] = i;
		gsl_ran_choose(vr->rng, pick, k, all, n, sizeof(uint32_t));  /* in rank order */
		for (uint32_t i = 0; i < k; i++) {
			vr->gpu[pick[i]] *= v->straggler_slowdown;
			if (i < ARRAY_SIZE(r->stragglers))
				r->stragglers[r->nstragglers++] = pick[i];
		}
		free(all);
		free(pick);
	}
	sim_set_rank_speed(sim, vr->gpu);
	if (v->jitter)
		sim_set_compute_scale(sim, var_scale, vr);
}

void par_var_end(struct par_var_state *vr, struct sim *sim)
{
	sim_set_rank_speed(sim, NULL);
	sim_set_compute_scale(sim, NULL, NULL);
	if (vr->rng)
		gsl_rng_free(vr->rng);
	free(vr->gpu);
}
