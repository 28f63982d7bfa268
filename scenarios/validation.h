/*
 * validation.h - the published cases of scenarios/validation/ and how close
 * the simulator comes to them: what `clustersim validate` runs and the page
 * docs/validation.md it writes (scenarios/validation.c).
 *
 * cases.csv lists training runs (TFLOP/s per GPU, counted with the paper's
 * own FLOP formula; iteration time) and memory figures; collectives.csv
 * lists nccl-tests sweeps (a log) and single all-reduce figures. val_read
 * reads both, val_run_case and val_run_coll predict one each, and the page
 * and JSON are functions of the cases, the presets and the simulator only
 * (no wall times, no dates, numbers at fixed precision).
 *
 * Errors: VAL_BADINPUT for a table, row, scenario or preset that is wrong
 * (the message names file, line and column or the case), VAL_FAIL for a
 * simulation that could not finish; err holds the message either way. The
 * validation owns every string and array in it until val_free.
 */
#ifndef SCENARIOS_VALIDATION_H
#define SCENARIOS_VALIDATION_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "collectives/nccl.h"

enum { VAL_OK = 0, VAL_BADINPUT = -1, VAL_FAIL = -2 };

/* Sizes from which the collective target applies ("above 64 MB"). */
#define VAL_COLL_TARGET_BYTES 67108864.0
/* The target on training throughput and bus bandwidth: 10 %. */
#define VAL_TARGET_ERR 0.10

enum val_metric { VAL_TFLOPS, VAL_ITERATION, VAL_MODEL_STATES, VAL_TOKENS };

struct val_case {
	char *id, *file, *group, *unit, *formula, *source;
	enum val_metric metric;
	double measured, predicted;   /* predicted < 0: no prediction     */
	char why[160];                /* why not, or a remark              */
	uint32_t gpus, tp, pp, dp, vpp;
	char cluster[32], gpu[32];
	char compute[160];            /* "table h200, launch 1.1 us"      */
};

struct val_point {
	double bytes, measured_Bps, predicted_Bps;
};

struct val_coll {
	char *id, *log, *cluster, *algo, *source, *note;
	uint32_t nodes, ranks;
	int per_nic;                  /* figures per NIC: bus bandwidth / NICs */
	int inplace;                  /* the log's in-place times: it has no others */
	enum nccl_op op;
	struct val_point *pts;
	size_t npts;
};

struct validation {
	const char *dir;              /* the caller's                      */
	int quick;                    /* analytic fidelity, else flow      */
	struct val_case *cases;
	size_t ncases;
	struct val_coll *colls;
	size_t ncolls;
};

/* Read dir/cases.csv and dir/collectives.csv (and the logs they name)
 * into *v: VAL_OK or VAL_BADINPUT. Call val_free either way. */
int val_read(struct validation *v, const char *dir, int quick, char *err, size_t errlen);
void val_free(struct validation *v);

/* Predict case i (load its scenario, plan and simulate the step) or
 * collective i (every size on its preset). A case that does not fit has
 * no prediction and says why; VAL_OK, VAL_BADINPUT or VAL_FAIL. */
int val_run_case(struct validation *v, size_t i, char *err, size_t errlen);
int val_run_coll(struct validation *v, size_t i, char *err, size_t errlen);

/*
 * FLOPs of one step as the case's source counted them
 * (scenarios/validation/README.md):
 * megatron_sc21: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)), recomputation included;
 * megatron_core: 12 B s L h^2 [(1 + g/a + s/h)(d a/h) + (f/h) k gamma + V/(2 L h)].
 * 0, or -1 for a formula of another name.
 */
struct par_model;
struct par_training;
int val_formula_flops(const char *formula, const struct par_model *m,
		      const struct par_training *t, double *out);

/* A case's error as its metric is published: predicted / measured - 1;
 * in training throughput, where time cases count as 1/time. */
double val_case_err(const struct val_case *c);
double val_throughput_err(const struct val_case *c);

struct val_stats {
	size_t n, missing;            /* errors counted, cases not predicted */
	double median, worst;         /* of the absolute errors              */
};
/* The cases of a group (NULL: every training case), in throughput or as
 * published. */
struct val_stats val_case_stats(const struct validation *v, const char *group, int throughput);
/* A collective's sizes from min_bytes. */
struct val_stats val_coll_stats(const struct val_coll *c, double min_bytes);

/* The Markdown page (docs/validation.md) and the JSON object of --json. */
void val_write_page(FILE *f, const struct validation *v);
void val_write_json(FILE *f, const struct validation *v);

#endif
