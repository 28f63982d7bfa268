/* scn-int.h - what the files of scenarios/ share: the flattened YAML and the key table. */
#ifndef SCN_SCN_INT_H
#define SCN_SCN_INT_H

#include <stddef.h>

#include "scenarios/scenario.h"

/* One scalar of a YAML file under its dotted key ("parallel.ddp.bucket"). */
struct scn_kv {
	char *key;
	char *value;
	int line;           /* 1-based */
};

struct scn_kvs {
	struct scn_kv *v;
	size_t n, cap;
	unsigned jobs;      /* items of the top-level jobs list               */
	int jobs_line;      /* where it starts; 0: the file has none          */
};

/* Read a YAML file (once, whole: scn_read_file) into dotted keys; 0, or -1
 * with "path:line: why". */
int scn_yaml_read(const char *path, struct scn_kvs *out, char *err, size_t errlen);
/* The same from len bytes in memory that came from path. */
int scn_yaml_parse(const char *path, const char *buf, size_t len, struct scn_kvs *out,
		   char *err, size_t errlen);
void scn_kvs_free(struct scn_kvs *kvs);

/* load.c */
enum scn_check {
	SCN_CHECK_ALL,       /* every check (scn_load)                         */
	SCN_CHECK_REQUIRED,  /* the required keys and the cluster (the planner) */
	SCN_CHECK_TOP,       /* the cluster alone: the shared part of jobs      */
};
/*
 * Load a scenario from a file's keys (kv; path NULL: none) and --set lines:
 * defaults, presets, keys, sets; then, for a job, share_nodes (> 0) as its
 * cluster.nodes (cluster.faults stay with the whole cluster); the derived
 * defaults and the checks. 0, or -1 with err.
 */
int scn_load_kvs(struct scn *s, const char *path, const struct scn_kvs *kv,
		 const char *const *sets, size_t nsets, uint32_t share_nodes,
		 enum scn_check check, char *err, size_t errlen);

/* One job's scenario from a file's keys (no jobs list) and --set lines, as
 * scn_load does after reading the file. 0, or -1 with err. */
int scn_load_one(struct scn *s, const char *path, const struct scn_kvs *kv,
		 const char *const *sets, size_t nsets, enum scn_check check, char *err,
		 size_t errlen);

/* keys.c */
void scn_defaults(struct scn *s);
int scn_key_is_known(const char *key);
int scn_check_required(const struct scn *s, char *err, size_t errlen);

#endif
