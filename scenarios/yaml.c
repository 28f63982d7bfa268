/*
 * yaml.c - read a YAML file with libyaml into a flat list of dotted keys and
 * scalar values, each with its line, so that every later error can name the
 * line. Scenarios are nested mappings of scalars, with one list: the
 * top-level `jobs`, a list of mappings whose keys read "jobs.I.key" (I from
 * 0); the list's length and line go to the result's jobs and jobs_line.
 * Other lists, aliases and non-scalar keys are refused with the line where
 * they appear.
 *
 * The file is read once, whole, into memory and parsed from there, so a
 * pipe or a FIFO (`run /dev/stdin`, `run <(...)`) works like a file. Keys
 * given twice are found through a hash set of the keys so far: reading N
 * keys is O(N) (a scan of the earlier keys for each made 240,000 keys take
 * minutes).
 */
#include "scenarios/scn-int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MAX_DEPTH 8

/*
 * A hash set of the keys of a struct scn_kvs: slot[i] is 1 + an index into
 * kvs->v, 0 when empty; open addressing with linear probing, at most half
 * full, so a lookup is O(1) on average.
 */
struct keyset {
	size_t *slot;
	size_t cap;                  /* a power of two, or 0                 */
};

/* FNV-1a, 64 bits. */
static uint64_t key_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The index of key in kv, or -1. */
static long keyset_find(const struct keyset *ks, const struct scn_kvs *kv, const char *key)
{
	if (!ks->cap)
		return -1;
	for (size_t i = key_hash(key) & (ks->cap - 1);; i = (i + 1) & (ks->cap - 1)) {
		if (!ks->slot[i])
			return -1;
		if (!strcmp(kv->v[ks->slot[i] - 1].key, key))
			return (long)(ks->slot[i] - 1);
	}
}

static void keyset_put(struct keyset *ks, const struct scn_kvs *kv, size_t idx)
{
	size_t i = key_hash(kv->v[idx].key) & (ks->cap - 1);
	while (ks->slot[i])
		i = (i + 1) & (ks->cap - 1);
	ks->slot[i] = idx + 1;
}

/* Add kv->v[kv->n - 1], the newest key (not in the set yet). */
static void keyset_add(struct keyset *ks, const struct scn_kvs *kv)
{
	if (2 * kv->n > ks->cap) {   /* grow and rehash: amortised O(1) */
		free(ks->slot);
		ks->cap = ks->cap ? 2 * ks->cap : 64;
		ks->slot = xcalloc(ks->cap, sizeof(*ks->slot));
		for (size_t i = 0; i + 1 < kv->n; i++)
			keyset_put(ks, kv, i);
	}
	keyset_put(ks, kv, kv->n - 1);
}

struct reader {
	const char *path;
	char *path_keys[MAX_DEPTH];  /* the mapping keys above the current one */
	int depth;                   /* mappings (and the jobs list) open       */
	int list_depth;              /* depth inside the jobs list, or 0        */
	int list_line;               /* where it starts                         */
	unsigned items;              /* its items so far                        */
	char *key;                   /* a key waiting for its value, or NULL    */
	int key_line;                /* where that key is                       */
	struct scn_kvs *out;
	struct scn_kvs sections;      /* mappings opened so far, to refuse twins */
	struct keyset out_set, section_set;  /* the keys of out and sections   */
	char *err;
	size_t errlen;
};

static int rfail(struct reader *r, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int rfail(struct reader *r, int line, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(r->err, r->errlen, "%s:%d: ", r->path, line);
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < r->errlen)
		vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* The dotted key of the waiting key at the current depth. */
static char *dotted(const struct reader *r)
{
	size_t n = strlen(r->key) + 1;
	for (int i = 1; i < r->depth; i++)
		n += strlen(r->path_keys[i]) + 1;
	char *s = xmalloc(n);
	s[0] = 0;
	for (int i = 1; i < r->depth; i++) {
		strcat(s, r->path_keys[i]);
		strcat(s, ".");
	}
	strcat(s, r->key);
	return s;
}

/* A mapping key (a section) may appear once: YAML keys are unique. */
static int section_seen(struct reader *r, int line)
{
	char *key = dotted(r);
	long i = keyset_find(&r->section_set, &r->sections, key);
	if (i >= 0) {
		rfail(r, line, "%s is given twice (first on line %d)", key, r->sections.v[i].line);
		free(key);
		return -1;
	}
	if (r->sections.n == r->sections.cap) {
		r->sections.cap = r->sections.cap ? 2 * r->sections.cap : 8;
		r->sections.v = xreallocarray(r->sections.v, r->sections.cap, sizeof(*r->sections.v));
	}
	r->sections.v[r->sections.n++] = (struct scn_kv){ key, xstrdup(""), line };
	keyset_add(&r->section_set, &r->sections);
	return 0;
}

static int add_value(struct reader *r, const char *value, int line)
{
	char *key = dotted(r);
	long i = keyset_find(&r->out_set, r->out, key);
	if (i >= 0) {
		free(key);
		return rfail(r, line, "%s is given twice (first on line %d)", r->out->v[i].key,
			     r->out->v[i].line);
	}
	if (r->out->n == r->out->cap) {
		r->out->cap = r->out->cap ? 2 * r->out->cap : 32;
		r->out->v = xreallocarray(r->out->v, r->out->cap, sizeof(*r->out->v));
	}
	r->out->v[r->out->n++] = (struct scn_kv){ key, xstrdup(value), line };
	keyset_add(&r->out_set, r->out);
	free(r->key);
	r->key = NULL;
	return 0;
}

/* Handle one event; returns 1 at the end of the document, 0 to go on, -1. */
static int on_event(struct reader *r, const yaml_event_t *e)
{
	int line = (int)e->start_mark.line + 1;
	switch (e->type) {
	case YAML_STREAM_START_EVENT:
	case YAML_DOCUMENT_START_EVENT:
		return 0;
	case YAML_DOCUMENT_END_EVENT:
	case YAML_STREAM_END_EVENT:
		return 1;
	case YAML_MAPPING_START_EVENT:
		if (r->depth > 0 && !r->key && r->depth == r->list_depth) {
			if (r->depth == MAX_DEPTH)   /* an item of the jobs list */
				return rfail(r, line, "mappings nested too deep");
			r->path_keys[r->depth++] = xasprintf("%u", r->items++);
			return 0;
		}
		if (r->depth > 0 && !r->key)
			return rfail(r, line, "a key must be a plain name, not a mapping");
		if (r->depth == MAX_DEPTH)
			return rfail(r, line, "mappings nested too deep");
		if (r->key && section_seen(r, r->key_line) < 0)
			return -1;
		r->path_keys[r->depth++] = r->key ? r->key : xstrdup("");
		r->key = NULL;
		return 0;
	case YAML_MAPPING_END_EVENT:
		free(r->path_keys[--r->depth]);
		return 0;
	case YAML_SEQUENCE_END_EVENT:       /* the jobs list */
		free(r->path_keys[--r->depth]);
		r->list_depth = 0;
		r->out->jobs = r->items;
		r->out->jobs_line = r->list_line;
		return 0;
	case YAML_SCALAR_EVENT: {
		const char *v = (const char *)e->data.scalar.value;
		if (r->depth == 0)
			return rfail(r, line, "expected a mapping of sections (cluster, model, "
				     "training, parallel, compute, sim), got a plain value");
		if (!r->key && r->depth == r->list_depth)
			return rfail(r, line, "jobs: expected each item to be a mapping of a job's "
				     "keys (name, nodes, model, ...), got '%s'", v);
		if (!r->key) {
			if (!*v)
				return rfail(r, line, "empty key");
			r->key = xstrdup(v);
			r->key_line = line;
			return 0;
		}
		if (!*v && e->data.scalar.plain_implicit) {
			char *k = dotted(r);
			rfail(r, line, "%s: expected a value", k);
			free(k);
			return -1;
		}
		return add_value(r, v, line);
	}
	case YAML_SEQUENCE_START_EVENT: {
		if (!r->key && r->depth && r->depth == r->list_depth)
			return rfail(r, line, "jobs: expected each item to be a mapping of a job's "
				     "keys, got a list");
		if (!r->key)
			return rfail(r, line, "expected a mapping of sections, got a list");
		if (r->depth == 1 && !strcmp(r->key, "jobs")) {
			if (section_seen(r, line) < 0)
				return -1;
			r->path_keys[r->depth++] = r->key;
			r->key = NULL;
			r->list_depth = r->depth;
			r->list_line = r->key_line;
			return 0;
		}
		char *k = dotted(r);
		rfail(r, line, "%s: expected a value or a mapping, got a list", k);
		free(k);
		return -1;
	}
	case YAML_ALIAS_EVENT:
		return rfail(r, line, "aliases (*name) are not supported in scenarios");
	default:
		return rfail(r, line, "unexpected YAML element");
	}
}

int scn_read_file(const char *path, char **buf, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	size_t n = 0, cap = 0;
	char *b = NULL;
	*buf = NULL;
	*len = 0;
	if (!f)
		return sim_errf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
	for (;;) {
		if (cap - n < 65536) {
			cap = cap ? 2 * cap : 65536;
			b = xrealloc(b, cap + 1);
		}
		size_t got = fread(b + n, 1, cap - n, f);
		n += got;
		if (n > SCN_MAX_FILE_BYTES) {
			fclose(f);
			free(b);
			return sim_errf(err, errlen, "%s: longer than %d MiB: expected a scenario "
					"file", path, SCN_MAX_FILE_BYTES >> 20);
		}
		if (got == 0)
			break;
	}
	int bad = ferror(f), e = errno;
	fclose(f);
	if (bad) {
		free(b);
		return sim_errf(err, errlen, "%s: cannot read: %s", path, strerror(e));
	}
	b[n] = 0;
	*buf = b;
	*len = n;
	return 0;
}

/* The line of byte offset off of buf (1-based). */
static int line_of(const char *buf, size_t len, size_t off)
{
	int line = 1;
	for (size_t i = 0; i < off && i < len; i++)
		line += buf[i] == '\n';
	return line;
}

int scn_yaml_parse(const char *path, const char *buf, size_t len, struct scn_kvs *out,
		   char *err, size_t errlen)
{
	yaml_parser_t p;
	yaml_parser_initialize(&p);
	yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
	struct reader r = { .path = path, .out = out, .err = err, .errlen = errlen };
	int rc = 0, docs = 0;
	while (rc == 0) {
		yaml_event_t e;
		if (!yaml_parser_parse(&p, &e)) {
			/* A reader error (invalid UTF-8, a control character) has an
			 * offset, not a mark. */
			int line = p.error == YAML_READER_ERROR ? line_of(buf, len, p.problem_offset)
								: (int)p.problem_mark.line + 1;
			rc = rfail(&r, line, "YAML syntax: %s%s%s", p.problem ? p.problem : "error",
				   p.context ? " " : "", p.context ? p.context : "");
			break;
		}
		if (e.type == YAML_DOCUMENT_START_EVENT && ++docs > 1)
			rc = rfail(&r, (int)e.start_mark.line + 1, "expected one YAML document");
		else
			rc = on_event(&r, &e);
		int end = e.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&e);
		if (end)
			break;
		if (rc == 1)
			rc = 0;
	}
	while (r.depth > 0)
		free(r.path_keys[--r.depth]);
	free(r.key);
	scn_kvs_free(&r.sections);
	free(r.out_set.slot);
	free(r.section_set.slot);
	yaml_parser_delete(&p);
	return rc < 0 ? -1 : 0;
}

int scn_yaml_read(const char *path, struct scn_kvs *out, char *err, size_t errlen)
{
	char *buf;
	size_t len;
	if (scn_read_file(path, &buf, &len, err, errlen) < 0)
		return -1;
	int rc = scn_yaml_parse(path, buf, len, out, err, errlen);
	free(buf);
	return rc;
}

void scn_kvs_free(struct scn_kvs *kvs)
{
	for (size_t i = 0; i < kvs->n; i++) {
		free(kvs->v[i].key);
		free(kvs->v[i].value);
	}
	free(kvs->v);
	*kvs = (struct scn_kvs){ 0 };
}
