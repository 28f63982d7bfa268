/*
 * nccl_calib.h - fitting the ring's latency and bandwidth to nccl-tests
 * logs and turning the fit into a cluster preset: what `clustersim
 * calibrate nccl` does (collectives/nccl_calib.c).
 *
 * Logs are grouped by scope (every rank on one host: the NVLink domain;
 * several hosts: the network) and each scope is fitted jointly over its
 * logs (nccl_fit, collectives/nccl.h). A preset is a base cluster with the
 * fitted scope's latency and bandwidth replaced; the network's figures are
 * read off the simulated collective, so that the preset reproduces the fit.
 *
 * Functions that can fail return 0, or -1 with a message in err naming the
 * log or the figure. The calibration owns its logs and points until
 * nccl_calib_free.
 */
#ifndef COLLECTIVES_NCCL_CALIB_H
#define COLLECTIVES_NCCL_CALIB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "collectives/nccl.h"

#define NCCL_CALIB_MAX_LOGS 7

/* One scope's logs and fit. */
struct nccl_scope {
	const char *name;            /* "NVLink domain (inside a node)", ... */
	int inter;                   /* across nodes                  */
	struct nccl_point *pts;
	size_t npts;
	double lo, hi;               /* the fit's range of sizes      */
	int lo_given, hi_given;
	struct nccl_fit fit;
	int fitted;
	uint32_t ranks, nodes;       /* of its first log              */
};

struct nccl_calib {
	struct nccl_log logs[NCCL_CALIB_MAX_LOGS];
	int log_scope[NCCL_CALIB_MAX_LOGS];  /* index into scope[] of each log */
	int nlogs;
	int inplace;                 /* fit the in-place times        */
	struct nccl_scope scope[2];  /* [0] inside a node, [1] across  */
};

/* How to read the logs: what overrides their own lines (0 / NONE: the
 * log's). */
struct nccl_calib_opts {
	enum nccl_op op;
	uint32_t ranks, nodes;
	int inplace;
};

/* Read paths[0..n) (n <= NCCL_CALIB_MAX_LOGS) into a zeroed *c and give
 * each log its op, ranks and scope. */
int nccl_calib_read(struct nccl_calib *c, const char *const *paths, int n,
		    const struct nccl_calib_opts *o, char *err, size_t errlen);

/* Fit each scope that has logs, over [lo, hi] where given (lo_given,
 * hi_given), else over the bandwidth-bound sizes (nccl_fit_range). */
int nccl_calib_fit(struct nccl_calib *c, double lo, int lo_given, double hi, int hi_given,
		   char *err, size_t errlen);

/* The scope of log i, when it was fitted; else NULL. */
const struct nccl_scope *nccl_calib_scope_of(const struct nccl_calib *c, int i);

/*
 * Put the fits into cluster t (the base preset base, a fat tree of NVLink
 * nodes): the NVLink domain's latency and bandwidth as they are, and the
 * network's latency and NIC bandwidth with which the simulated collective
 * across nodes reproduces the fit.
 */
struct topo_config;
int nccl_calib_apply(const struct nccl_calib *c, struct topo_config *t, const char *base,
		     char *err, size_t errlen);

/* The caveat of NVLink figures fitted on fewer ranks than a node of
 * gpus_per_node has, in buf; NULL when the logs span the node. */
const char *nccl_calib_caveat(const struct nccl_calib *c, uint32_t gpus_per_node, char *buf,
			      size_t len);

/* The preset YAML of cluster t (after nccl_calib_apply) with a header
 * naming the command (args: its arguments, after the program's name, or
 * NULL), the logs, the fits and the caveat ("" for none). */
void nccl_calib_write_preset(FILE *f, const struct nccl_calib *c, const struct topo_config *t,
			     const char *base, const char *args, const char *caveat);

/* Every log's sizes with measured and fitted time and the fits, as the
 * text tables or as one JSON object. */
void nccl_calib_write_text(FILE *f, const struct nccl_calib *c);
void nccl_calib_write_json(FILE *f, const struct nccl_calib *c);

void nccl_calib_free(struct nccl_calib *c);

#endif
