/*
 * scenario.h - one scenario: cluster, model, training, parallel layout,
 * compute model and simulation options, loaded from YAML, completed from
 * presets, overridden by --set, validated.
 *
 * Every key comes from one declarative table (keys.c): its name, kind of
 * value, unit, default and help. Loading, --set, the effective
 * configuration stored with every run and docs/scenario.md are all generated
 * from that table. A struct scn is plain data owned by the caller.
 *
 * Errors name the file, the line (where YAML gives one), the key and what was
 * expected: "run.yaml:12: model.hidden: expected a whole number, got 'big'".
 */
#ifndef SCN_SCENARIO_H
#define SCN_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "parallel/config.h"
#include "parallel/step.h"
#include "parallel/goodput.h"
#include "parallel/jobs.h"
#include "sim/sim.h"
#include "topology/topo.h"

/* auto: all up to SCN_RECORD_ALL_MAX GPUs, sample above. */
enum scn_record { SCN_RECORD_ALL, SCN_RECORD_SAMPLE, SCN_RECORD_NONE, SCN_RECORD_AUTO };
#define SCN_RECORD_ALL_MAX 1024u

struct scn_sim {
	enum sim_fidelity fidelity;
	uint32_t steps;
	uint64_t seed;
	enum scn_record record;
	double chunk_bytes;
	uint32_t symmetry;    /* 0: none; 1: dp (one data-parallel replica) */
	bool analytic_sharing;  /* closed forms share links (sim_config)  */
};

struct scn {
	struct topo_config cluster;
	struct par_model model;
	struct par_training training;
	struct par_layout parallel;
	struct par_compute compute;
	struct par_variability variability;
	struct par_failures failures;
	struct scn_sim sim;
	char path[1024];          /* the scenario file ("" for none)          */
	char warnings[1024];      /* what validation let pass but should say  */
	char datadir[1024];       /* where calibration/TABLE/ is: the scenario's
				   * folder if it has the table, else the data folder */
};

/* Most micro-batches per data-parallel replica in one step (global_batch /
 * dp / micro_batch): each is ops in every program, about 4 KB and 0.2 ms
 * per layer to build and run (a 24-layer model: 0.4 GB at the bound). */
#define SCN_MAX_MICRO_BATCHES PAR_MAX_MICRO_BATCHES

/* Largest scenario file read (a pipe of /dev/zero must not fill memory). */
#define SCN_MAX_FILE_BYTES (64 << 20)

/*
 * Read the file at path once, whole, into *buf (NUL-terminated, len bytes
 * before it; the caller frees it): a pipe or a FIFO reads like a file.
 * 0, or -1 with err (unreadable, or longer than SCN_MAX_FILE_BYTES).
 */
int scn_read_file(const char *path, char **buf, size_t *len, char *err, size_t errlen);

/* Longest error message. */
#define SCN_ERRLEN 1024

/*
 * Load path (NULL: defaults only) and apply sets[i] ("section.key=value")
 * in order, then validate. Presets named by cluster.preset and model.preset
 * are read first, so the file and --set override them. 0, or -1 with err.
 */
int scn_load(struct scn *s, const char *path, const char *const *sets, size_t nsets,
	     char *err, size_t errlen);

/* As scn_load, without the checks of the parallel layout and batch split
 * (the planner chooses those itself). */
int scn_load_unchecked(struct scn *s, const char *path, const char *const *sets, size_t nsets,
		       char *err, size_t errlen);

/*
 * A scenario of several jobs on one cluster (a top-level `jobs:` list,
 * docs/scenario.md): each job a scenario of its own on its share of the
 * cluster (cluster.nodes = its nodes), placed from first_node.
 */
struct scn_job {
	char name[64];
	uint32_t nodes;               /* its share (GPUs on the ideal cluster)  */
	uint32_t first_node;
	int first_set;                /* first_node given                       */
	double start_s;               /* its first step's start                 */
	struct scn s;
};

struct scn_jobs {
	struct scn top;               /* the whole cluster, sim, variability and
				       * failures; without a jobs list, the one
				       * scenario, checked as scn_load does     */
	struct scn_job *job;
	size_t n;                     /* 0: the file has no jobs list          */
};

/*
 * Load a scenario that may hold a jobs list. sets apply to every job, or
 * with "jobs.I." to job I alone. 0, or -1 with err (js freed).
 */
int scn_load_jobs(struct scn_jobs *js, const char *path, const char *const *sets, size_t nsets,
		  char *err, size_t errlen);
void scn_jobs_free(struct scn_jobs *js);
/* The effective configuration: the top level's keys as scn_json prints them
 * (the cluster, sim, variability and failures are the run's), and "jobs":
 * [{name, nodes, first_node, start_s, scenario: the job's scn_json}]. */
char *scn_jobs_json(const struct scn_jobs *js);
/* docs/scenario.md: the keys of a job item. */
void scn_job_keys_markdown(FILE *out);

/* Set one key from text, as --set does (no validation across keys). */
int scn_set(struct scn *s, const char *key, const char *value, char *err, size_t errlen);

/* Is this a scenario key (section.key, cluster keys included)? */
int scn_key_known(const char *key);

/* Cross-key checks (layout, batch, GPU count). 0, or -1 with err. */
int scn_validate(const struct scn *s, char *err, size_t errlen);

/* GPUs the layout uses: tp * cp * pp * dp. */
uint32_t scn_gpus(const struct scn *s);

/* The effective configuration: every key and its value, as one JSON object. */
char *scn_json(const struct scn *s);

/* docs/scenario.md: every key with its kind, unit, default and meaning. */
void scn_keys_markdown(FILE *out);

/*
 * Find a preset file "KIND/NAME.yaml" (KIND: clusters or models): in the
 * scenario's folder's KIND/, then in the data directory's KIND/ (the
 * installed one, or the source tree's scenarios/ when not installed). Writes the path found; 0 or
 * -1 with err listing where it looked.
 */
int scn_find_preset(const char *scenario_path, const char *kind, const char *name,
		    char *out, size_t outlen, char *err, size_t errlen);

/* The data directory (installed, or the source tree's scenarios/). */
const char *scn_datadir(void);

/* Load the cluster preset NAME (scenarios/clusters/NAME.yaml). 0 or -1 with err. */
int scn_cluster_preset(struct topo_config *c, const char *name, char *err, size_t errlen);

/* Names of the presets of a kind ("clusters", "models") in the data
 * directory, sorted; the caller frees each and the array. */
int scn_preset_names(const char *kind, char ***names, size_t *n);

#endif
