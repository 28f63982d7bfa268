/*
 * sweep.c - the points of a sweep (sweep.h): parsing the varied keys,
 * each point's values and --set list, one point simulated as `run` does,
 * and the text and signature naming the sweep.
 */
#include "scenarios/sweep.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/compute.h"
#include "parallel/step.h"
#include "parallel/train.h"
#include "scenarios/train_of.h"
#include "sim/units.h"
#include "sim/util.h"
#include "topology/topo.h"

const char *const scn_sweep_status_names[4] = { "ok", "no_fit", "invalid", "failed" };

/* A refusal: the message in err, and rc. */
static int bad(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int bad(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

/* ---- the varied keys ----------------------------------------------------------- */

/* "4..64" -> 4, 8, 16, 32, 64; anything else is one value. */
static int expand(struct scn_sweep_vary *v, const char *item, char *err, size_t errlen)
{
	const char *dots = strstr(item, "..");
	if (!dots) {
		if (v->n == SCN_SWEEP_MAX_VALUES)
			return bad(err, errlen, SCN_SWEEP_BAD_KEY, "at most %d values",
				   SCN_SWEEP_MAX_VALUES);
		v->values[v->n++] = xstrdup(item);
		return 0;
	}
	char first[32];
	unsigned long long lo = 0, hi = 0;
	snprintf(first, sizeof(first), "%.*s", (int)(dots - item), item);
	if ((size_t)(dots - item) >= sizeof(first) ||
	    sim_whole_parse(first, 1ull << 62, &lo, NULL, 0) < 0 ||
	    sim_whole_parse(dots + 2, 1ull << 62, &hi, NULL, 0) < 0 ||
	    lo == 0 || hi < lo || (lo & (lo - 1)) || (hi & (hi - 1)))
		return bad(err, errlen, SCN_SWEEP_BAD_KEY, "'%s': a range a..b takes powers of "
			   "two, a <= b", item);
	for (unsigned long long x = lo; x <= hi; x *= 2) {
		char buf[32];
		snprintf(buf, sizeof(buf), "%llu", x);
		int rc = expand(v, buf, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

int scn_sweep_vary(struct scn_sweep *sw, const char *kv, char *err, size_t errlen)
{
	const char *eq = strchr(kv, '=');
	if (sw->nvary == SCN_SWEEP_MAX_VARY)
		return bad(err, errlen, SCN_SWEEP_BAD, "at most %d keys", SCN_SWEEP_MAX_VARY);
	if (!sw->nvary)
		sw->npoints = 1;
	struct scn_sweep_vary *v = &sw->vary[sw->nvary++];
	if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof(v->key) || !eq[1])
		return bad(err, errlen, SCN_SWEEP_BAD, "expected KEY=V1,V2,..., got '%s'", kv);
	snprintf(v->key, sizeof(v->key), "%.*s", (int)(eq - kv), kv);
	char *vals = xstrdup(eq + 1), *save = NULL;
	int rc = 0;
	for (char *t = strtok_r(vals, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save))
		rc = expand(v, t, err, errlen);
	free(vals);
	if (rc)
		return rc;
	if (!v->n || (uint64_t)sw->npoints * v->n > SCN_SWEEP_MAX_POINTS)
		return bad(err, errlen, SCN_SWEEP_BAD_KEY, "expected 1 to %d points in all",
			   SCN_SWEEP_MAX_POINTS);
	sw->npoints *= v->n;
	return 0;
}

void scn_sweep_free(struct scn_sweep *sw)
{
	for (unsigned k = 0; k < sw->nvary; k++)
		for (unsigned v = 0; v < sw->vary[k].n; v++)
			free(sw->vary[k].values[v]);
}

/* The value of each varied key at a point (the last key varies fastest). */
void scn_sweep_point_values(const struct scn_sweep *sw, uint32_t point, const char **out)
{
	for (unsigned k = sw->nvary; k-- > 0;) {
		out[k] = sw->vary[k].values[point % sw->vary[k].n];
		point /= sw->vary[k].n;
	}
}

/* ---- one point ------------------------------------------------------------------ */

/* Keep a message as the point's reason, cut to fit. */
static void set_reason(struct scn_sweep_result *r, const char *why)
{
	size_t n = strlen(why);
	if (n >= sizeof(r->reason))
		n = sizeof(r->reason) - 1;
	memcpy(r->reason, why, n);
	r->reason[n] = 0;
}

/* Simulate the scenario with sets applied, as a point: figures and status
 * into r. */
static void simulate_point(const char *path, const char *const *sets, size_t n, struct scn_sweep_result *r)
{
	char err[SCN_ERRLEN];
	struct scn s;
	if (scn_load(&s, path, sets, n, err, sizeof(err)) < 0) {
		r->status = SCN_SWEEP_INVALID;
		set_reason(r, err);
		return;
	}
	struct par_compute_model *cm = par_compute_model_new(
		&s.compute, topo_gpu_find(s.cluster.gpu), s.training.precision, s.datadir, err,
		sizeof(err));
	if (!cm) {
		r->status = SCN_SWEEP_INVALID;
		set_reason(r, err);
		return;
	}
	struct par_train t;
	scn_train_of(&t, &s, cm);
	struct par_report rep;
	struct par_step st;
	int rc;
	if (par_step_resolve(&st, &t, err, sizeof(err)) < 0 ||
	    par_train_plan(&st, &rep, err, sizeof(err)) < 0) {
		r->status = SCN_SWEEP_INVALID;
		set_reason(r, err);
	} else if (!rep.memory.fits) {
		r->status = SCN_SWEEP_NO_FIT;
		snprintf(r->reason, sizeof(r->reason), "out of memory: %.2f GB and %.2f GB "
			 "reserved, of %.2f GB", rep.memory.peak / 1e9,
			 rep.memory.reserve.total / 1e9, rep.memory.capacity / 1e9);
	} else if ((rc = par_train_simulate(&st, &rep, err, sizeof(err))) < 0) {
		r->status = rc == PAR_RUN_CLOCK ? SCN_SWEEP_INVALID : SCN_SWEEP_FAILED;  /* past the clock: refused */
		set_reason(r, err);
	}
	par_step_free(&st);
	par_compute_model_free(cm);
	if (r->status == SCN_SWEEP_INVALID || r->status == SCN_SWEEP_FAILED)
		return;
	par_result_figures(&rep, r->fig);  /* no_fit: what needs a fit is NAN */
}

/* Run one point (sweep.h): every base set, then the point's values (no limit on their
 * number), applied to the scenario. */
void scn_sweep_run_point(const char *path, const struct scn_sweep *sw, uint32_t point,
			 struct scn_sweep_result *r)
{
	const char *vals[SCN_SWEEP_MAX_VARY];
	char *own[SCN_SWEEP_MAX_VARY];
	const char **sets = xcalloc(sw->nbase + sw->nvary, sizeof(char *));
	size_t n = 0;
	memset(r, 0, sizeof(*r));
	r->point = point;
	for (int i = 0; i < PAR_RESULT_FIGURES; i++)
		r->fig[i] = NAN;
	scn_sweep_point_values(sw, point, vals);
	for (size_t i = 0; i < sw->nbase; i++)
		sets[n++] = sw->base[i];
	for (unsigned k = 0; k < sw->nvary; k++)
		sets[n++] = own[k] = xasprintf("%s=%s", sw->vary[k].key, vals[k]);
	simulate_point(path, sets, n, r);
	for (unsigned k = 0; k < sw->nvary; k++)
		free(own[k]);
	free(sets);
}

/* ---- naming the sweep ------------------------------------------------------------ */

/* The vary column of sweeps (sweep.h). */
char *scn_sweep_text(const char *path, const struct scn_sweep *sw)
{
	size_t cap = 4096, n = 0;
	char *s = xmalloc(cap);
	n += (size_t)snprintf(s, cap, "%s", path);
	for (size_t i = 0; i < sw->nbase; i++) {
		while (n + strlen(sw->base[i]) + 8 >= cap)
			s = xrealloc(s, cap *= 2);
		n += (size_t)snprintf(s + n, cap - n, " --set %s", sw->base[i]);
	}
	for (unsigned k = 0; k < sw->nvary; k++)
		for (unsigned v = 0; v < sw->vary[k].n; v++) {
			while (n + strlen(sw->vary[k].key) + strlen(sw->vary[k].values[v]) + 16 >= cap)
				s = xrealloc(s, cap *= 2);
			n += (size_t)snprintf(s + n, cap - n, "%s%s=%s", v ? "," : " --vary ",
					      v ? "" : sw->vary[k].key, sw->vary[k].values[v]);
		}
	return s;
}

/* A growing signature: fields as netstrings. */
struct sig {
	char *s;
	size_t n, cap;
};

/* Append "LEN:BYTES,": a field's length comes before it, so no text in a
 * field (a comma, an '=', a space) can end it or start the next. */
static void sig_field(struct sig *g, const char *field)
{
	size_t len = strlen(field);
	while (g->n + len + 32 >= g->cap)
		g->s = xrealloc(g->s, g->cap = g->cap ? 2 * g->cap : 1024);
	g->n += (size_t)snprintf(g->s + g->n, g->cap - g->n, "%zu:%s,", len, field);
}

static void sig_count(struct sig *g, size_t n)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%zu", n);
	sig_field(g, buf);
}

/* The signature of a sweep (sweep.h). */
char *scn_sweep_signature(const char *sha, const struct scn_sweep *sw)
{
	struct sig g = { 0 };
	sig_field(&g, "clustersim-sweep-2");
	sig_field(&g, sha);
	sig_count(&g, sw->nbase);
	for (size_t i = 0; i < sw->nbase; i++)
		sig_field(&g, sw->base[i]);
	sig_count(&g, sw->nvary);
	for (unsigned k = 0; k < sw->nvary; k++) {
		sig_field(&g, sw->vary[k].key);
		sig_count(&g, sw->vary[k].n);
		for (unsigned v = 0; v < sw->vary[k].n; v++)
			sig_field(&g, sw->vary[k].values[v]);
	}
	return g.s;
}
