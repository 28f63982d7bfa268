/*
 * sweep.h - the points of a sweep (scenarios/sweep.c): the varied keys and
 * their values (the cartesian product, the last key fastest), each point's
 * --set list, one point simulated as `run` simulates the scenario (its
 * status, reason and sweep figures), and the text and signature that name
 * a sweep in the database (sweeps.vary, sweeps.signature; docs/schema.md).
 * `clustersim sweep` (tools/cmd_sweep.c) parses its options into a struct
 * scn_sweep, runs the points on the worker pool and prints them.
 */
#ifndef SCENARIOS_SWEEP_H
#define SCENARIOS_SWEEP_H

#include <stddef.h>
#include <stdint.h>

#include "parallel/result.h"
#include "scenarios/scenario.h"

#define SCN_SWEEP_MAX_VARY 8
#define SCN_SWEEP_MAX_VALUES 64
#define SCN_SWEEP_MAX_POINTS 100000

/* A varied key and its values. */
struct scn_sweep_vary {
	char key[128];
	char *values[SCN_SWEEP_MAX_VALUES];
	unsigned n;
};

struct scn_sweep {
	struct scn_sweep_vary vary[SCN_SWEEP_MAX_VARY];
	unsigned nvary;
	uint32_t npoints;             /* the product of the value counts    */
	const char **base;            /* KEY=VALUE for every point (not owned) */
	size_t nbase;
};

/*
 * Add one varied key, "KEY=V1,V2,..." ("a..b": the powers of two from a to
 * b), multiplying npoints. 0, or on bad input the message in err and
 * SCN_SWEEP_BAD (the whole item is wrong: "at most 8 keys", "expected
 * KEY=V1,V2,..., got '...'") or SCN_SWEEP_BAD_KEY (about the last key's
 * values: "at most 64 values", a bad range, too many points).
 */
enum { SCN_SWEEP_BAD = -1, SCN_SWEEP_BAD_KEY = -2 };
int scn_sweep_vary(struct scn_sweep *sw, const char *item, char *err, size_t errlen);
/* Free the values (not base). */
void scn_sweep_free(struct scn_sweep *sw);

/* The value of each varied key at a point (out[nvary]). */
void scn_sweep_point_values(const struct scn_sweep *sw, uint32_t point, const char **out);

/* A point's outcome (fixed size: what a worker sends back); a reason holds
 * any scenario error whole. */
enum scn_sweep_status { SCN_SWEEP_OK, SCN_SWEEP_NO_FIT, SCN_SWEEP_INVALID, SCN_SWEEP_FAILED };
extern const char *const scn_sweep_status_names[4];  /* ok no_fit invalid failed */
struct scn_sweep_result {
	uint32_t point;
	int status;                   /* enum scn_sweep_status */
	char reason[SCN_ERRLEN];
	double fig[PAR_RESULT_FIGURES];  /* the sweep_points figures, NAN: none */
};

/* Simulate one point of the scenario at path: every base set, then the
 * point's values. invalid: the scenario or layout is refused (or the clock
 * would pass its end); no_fit: out of memory (figures that need a fit are
 * NAN); failed: the simulation could not finish. */
void scn_sweep_run_point(const char *path, const struct scn_sweep *sw, uint32_t point,
			 struct scn_sweep_result *r);

/* The sweep as text, for people: the scenario, --set and --vary as given
 * (allocated). */
char *scn_sweep_text(const char *path, const struct scn_sweep *sw);
/*
 * The signature that finds a sweep again (allocated): the format, the
 * scenario file's SHA-256 sha (its content, not its path: an edited
 * scenario is a new sweep, a moved one the same), then the base sets and
 * each varied key with its values, each field a netstring and every list
 * preceded by its length. Two sweeps share it only when they run the same
 * points on the same file.
 */
char *scn_sweep_signature(const char *sha, const struct scn_sweep *sw);

#endif
