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
};

/* Read a YAML file into dotted keys; 0, or -1 with "path:line: why". */
int scn_yaml_read(const char *path, struct scn_kvs *out, char *err, size_t errlen);
void scn_kvs_free(struct scn_kvs *kvs);

/* keys.c */
void scn_defaults(struct scn *s);
int scn_key_is_known(const char *key);
int scn_check_required(const struct scn *s, char *err, size_t errlen);

#endif
