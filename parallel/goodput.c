/*
 * goodput.c - Young/Daly checkpointing and goodput (goodput.h).
 */
#include "parallel/goodput.h"

#include <math.h>
#include <string.h>

double par_goodput_at(const struct par_failures *f, const struct par_goodput *g, double tau)
{
	double M = g->job_mtbf_s, d = g->checkpoint_s, R = f->restart_s;
	return tau / (M * exp(R / M) * expm1((tau + d) / M));
}

void par_goodput_of(const struct par_failures *f, uint32_t gpus, double bytes,
		    struct par_goodput *out)
{
	memset(out, 0, sizeof(*out));
	if (!(f->gpu_mtbf_s > 0) || !gpus || !(f->storage_Bps > 0))
		return;
	double M = f->gpu_mtbf_s / gpus, d = bytes / f->storage_Bps;
	out->job_mtbf_s = M;
	out->checkpoint_bytes = bytes;
	out->checkpoint_s = d;
	out->young_s = sqrt(2 * d * M);
	if (d < 2 * M) {
		double x = d / (2 * M);
		out->interval_s = out->young_s * (1 + sqrt(x) / 3 + x / 9) - d;
	} else {
		out->interval_s = M;
	}
	out->goodput = par_goodput_at(f, out, out->interval_s);
	out->failures = f->run_s / M;
	out->useful_s = out->goodput * f->run_s;
}
