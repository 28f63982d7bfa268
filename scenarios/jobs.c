/*
 * jobs.c - a scenario of several jobs on one cluster: a top-level `jobs:`
 * list, each item one job's keys.
 *
 *   cluster: {preset: dgx-h100, nodes: 6}     # shared: the whole cluster
 *   training: {seq: 2048}                     # a default for every job
 *   jobs:
 *     - name: a
 *       nodes: 2                              # its share, in nodes
 *       model: {preset: gpt3-1.3b}
 *       parallel: {tp: 8}
 *     - name: b
 *       nodes: 2
 *       first_node: 3
 *       ...
 *
 * Each job is a scenario of its own: the file's top-level keys, then the
 * job's, then --set (KEY=V for every job, jobs.I.KEY=V for job I), on a
 * cluster of the job's nodes; it is validated as one. The cluster, sim,
 * variability and failures sections belong to the whole cluster and are
 * set at the top level only.
 */
#include "scenarios/scenario.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/jobs.h"
#include "scenarios/scn-int.h"
#include "sim/units.h"

_Static_assert(PAR_JOBS_MAX_STEPS == 10000, "the help of a job's start says 10,000 steps");

/* The keys of a job item besides its sections; help for docs/scenario.md. */
static const struct {
	const char *name, *value, *deflt, *help;
} job_keys[] = {
	{ "name", "text", "jobI (I its index from 0)",
	  "the job's name in the report (letters, digits, '_' and '-'; unique)" },
	{ "nodes", "integer", "required",
	  "the nodes it runs on (GPUs on the ideal cluster); its layout must fill them" },
	{ "first_node", "integer", "after the previous job's",
	  "its first node on the cluster (node 0 is ranks 0 to gpus_per_node - 1)" },
	{ "start", "time", "0",
	  "when its first step starts, together with the others (their phases' alignment); "
	  "from 0 to 1 day; a start so late that another job would run more than sim.steps + "
	  "10,000 steps together (estimated from the steps alone) is refused before the run "
	  "together" },
};

/* Sections a job may set, and the whole cluster's. */
static const char *const job_sections[] = { "model.", "training.", "parallel.", "compute." };
static const char *const cluster_sections[] = { "cluster.", "sim.", "variability.",
						"failures." };

static int in_sections(const char *key, const char *const *sections, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strncmp(key, sections[i], strlen(sections[i])))
			return 1;
	return 0;
}

/* "jobs.I." of key, or -1 if key is not one of job I's. */
static int job_index(const char *key, const char **rest)
{
	if (strncmp(key, "jobs.", 5) || !isdigit((unsigned char)key[5]))
		return -1;
	char *end;
	errno = 0;
	unsigned long i = strtoul(key + 5, &end, 10);
	if (*end != '.' || errno || i >= PAR_MAX_JOBS)
		return -1;
	*rest = end + 1;
	return (int)i;
}

static int whole(const char *where, const char *key, const char *v, uint32_t min, uint32_t max,
		 uint32_t *out, char *err, size_t errlen)
{
	unsigned long long n;
	if (sim_whole_parse(v, max, &n, NULL, 0) < 0 || n < min)
		return sim_errf(err, errlen, "%s: %s: expected a whole number from %u to %u, got '%s'",
				where, key, min, max, v);
	*out = (uint32_t)n;
	return 0;
}

/* A name goes into metrics' names (job.NAME.step.K), so no '.'. */
static int name_ok(const char *v)
{
	if (!*v || strlen(v) >= sizeof(((struct scn_job *)0)->name))
		return 0;
	for (const char *c = v; *c; c++)
		if (!(isalnum((unsigned char)*c) || *c == '_' || *c == '-'))
			return 0;
	return 1;
}

/* Set one of a job's own keys (name, nodes, first_node). */
static int job_key(struct scn_job *j, const char *where, const char *key, const char *v,
		   char *err, size_t errlen)
{
	if (!strcmp(key, "name")) {
		if (!name_ok(v))
			return sim_errf(err, errlen, "%s: name: expected letters, digits, '_' and "
					"'-' (at most %zu), got '%s'", where, sizeof(j->name) - 1, v);
		snprintf(j->name, sizeof(j->name), "%s", v);
		return 0;
	}
	if (!strcmp(key, "nodes"))
		return whole(where, key, v, 1, TOPO_MAX_RANKS, &j->nodes, err, errlen);
	if (!strcmp(key, "first_node")) {
		j->first_set = 1;
		return whole(where, key, v, 0, TOPO_MAX_RANKS, &j->first_node, err, errlen);
	}
	if (!strcmp(key, "start")) {
		char why[256];
		if (sim_units_parse(SIM_UNIT_TIME, v, &j->start_s, why, sizeof(why)) < 0 ||
		    !(j->start_s <= 86400))
			return sim_errf(err, errlen, "%s: start: expected %s from 0 to 1 day, got "
					"'%s'", where, sim_units_expect(SIM_UNIT_TIME), v);
		return 0;
	}
	if (in_sections(key, job_sections, ARRAY_SIZE(job_sections)))
		return 1;  /* a section key: the scenario's */
	if (in_sections(key, cluster_sections, ARRAY_SIZE(cluster_sections)))
		return sim_errf(err, errlen, "%s: %s: the cluster, sim, variability and failures "
				"sections are the whole cluster's: set them at the top level", where,
				key);
	return sim_errf(err, errlen, "%s: %s: not a job key (name, nodes, first_node, start, or "
			"the sections model, training, parallel and compute)", where, key);
}

/* Append kv entry e (key replaced by `key`) to out. */
static void kvs_add(struct scn_kvs *out, const char *key, const struct scn_kv *e)
{
	if (out->n == out->cap) {
		out->cap = out->cap ? 2 * out->cap : 32;
		out->v = xreallocarray(out->v, out->cap, sizeof(*out->v));
	}
	out->v[out->n++] = (struct scn_kv){ xstrdup(key), xstrdup(e->value), e->line };
}

/*
 * Job i's keys: the file's top-level keys, then its own (its name, nodes
 * and first_node to j); its --set lines: every plain one, then its own.
 */
static int job_inputs(const char *path, const struct scn_kvs *kv, const char *const *sets,
		      size_t nsets, int i, struct scn_job *j, struct scn_kvs *jkv,
		      const char **jsets, size_t *njsets, char *err, size_t errlen)
{
	char where[1200];
	const char *rest;
	for (size_t k = 0; k < kv->n; k++)
		if (job_index(kv->v[k].key, &rest) < 0)
			kvs_add(jkv, kv->v[k].key, &kv->v[k]);
	for (size_t k = 0; k < kv->n; k++) {
		if (job_index(kv->v[k].key, &rest) != i)
			continue;
		snprintf(where, sizeof(where), "%s:%d: jobs[%d]", path, kv->v[k].line, i);
		int rc = job_key(j, where, rest, kv->v[k].value, err, errlen);
		if (rc < 0)
			return -1;
		if (rc == 1)
			kvs_add(jkv, rest, &kv->v[k]);
	}
	*njsets = 0;
	for (size_t k = 0; k < nsets; k++)
		if (strncmp(sets[k], "jobs.", 5))
			jsets[(*njsets)++] = sets[k];
	for (size_t k = 0; k < nsets; k++) {
		if (job_index(sets[k], &rest) != i)
			continue;
		const char *eq = strchr(rest, '=');
		if (!eq)
			return sim_errf(err, errlen, "--set %s: expected jobs.I.section.key=value",
					sets[k]);
		char key[128];
		snprintf(key, sizeof(key), "%.*s", (int)(eq - rest), rest);
		snprintf(where, sizeof(where), "--set %s", sets[k]);
		int rc = job_key(j, where, key, eq + 1, err, errlen);
		if (rc < 0)
			return -1;
		if (rc == 1)
			jsets[(*njsets)++] = sets[k];  /* load.c reads past "jobs.I." */
	}
	return 0;
}

/* --set jobs.I... names a job the file has; plain --set keys are not jobs'. */
static int check_sets(const struct scn_kvs *kv, const char *const *sets, size_t nsets, char *err,
		      size_t errlen)
{
	const char *rest;
	for (size_t k = 0; k < nsets; k++) {
		if (strncmp(sets[k], "jobs.", 5))
			continue;
		int i = job_index(sets[k], &rest);
		if (i < 0 || (unsigned)i >= kv->jobs)
			return sim_errf(err, errlen, "--set %s: expected jobs.I.KEY=VALUE with I from "
					"0 to %u (the file's jobs)", sets[k], kv->jobs - 1);
	}
	return 0;
}

/* Placement: defaults, inside the cluster, no two jobs on one node; names. */
static int place(struct scn_jobs *js, char *err, size_t errlen)
{
	const struct topo_config *c = &js->top.cluster;
	const char *unit = c->kind == TOPO_IDEAL ? "GPU" : "node";
	uint32_t next = 0;
	for (size_t i = 0; i < js->n; i++) {
		struct scn_job *j = &js->job[i];
		if (!j->first_set)
			j->first_node = next;
		next = j->first_node + j->nodes;
		if (next > c->nodes || next < j->first_node)
			return sim_errf(err, errlen, "%s: jobs[%zu] (%s): %ss %u to %u, but the cluster "
					"has %ss 0 to %u (cluster.nodes %u)", js->top.path, i, j->name,
					unit, j->first_node, next - 1, unit, c->nodes - 1, c->nodes);
		for (size_t k = 0; k < i; k++) {
			const struct scn_job *o = &js->job[k];
			if (!strcmp(o->name, j->name))
				return sim_errf(err, errlen, "%s: jobs[%zu]: name '%s' is jobs[%zu]'s "
						"too", js->top.path, i, j->name, k);
			if (j->first_node < o->first_node + o->nodes && o->first_node < next)
				return sim_errf(err, errlen, "%s: jobs[%zu] (%s): %ss %u to %u overlap "
						"jobs[%zu] (%s): %u to %u", js->top.path, i, j->name,
						unit, j->first_node, next - 1, k, o->name,
						o->first_node, o->first_node + o->nodes - 1);
		}
	}
	return 0;
}

static int load_jobs(struct scn_jobs *js, const char *path, const struct scn_kvs *kv,
		     const char *const *sets, size_t nsets, char *err, size_t errlen)
{
	if (kv->jobs == 0)
		return sim_errf(err, errlen, "%s:%d: jobs: expected at least one job", path,
				kv->jobs_line);
	if (kv->jobs > PAR_MAX_JOBS)
		return sim_errf(err, errlen, "%s:%d: jobs: %u jobs, at most %d", path, kv->jobs_line,
				kv->jobs, PAR_MAX_JOBS);
	if (check_sets(kv, sets, nsets, err, errlen) < 0)
		return -1;
	struct scn_kvs top = { 0 };
	const char *rest;
	const char **plain = xcalloc(nsets + 1, sizeof(char *));
	size_t nplain = 0;
	for (size_t k = 0; k < kv->n; k++)
		if (job_index(kv->v[k].key, &rest) < 0)
			kvs_add(&top, kv->v[k].key, &kv->v[k]);
	for (size_t k = 0; k < nsets; k++)
		if (strncmp(sets[k], "jobs.", 5))
			plain[nplain++] = sets[k];
	int rc = scn_load_kvs(&js->top, path, &top, plain, nplain, 0, SCN_CHECK_TOP, err, errlen);
	scn_kvs_free(&top);
	free(plain);
	if (rc < 0)
		return -1;
	const char *unit = js->top.cluster.kind == TOPO_IDEAL ? "GPU" : "node";
	uint64_t gpus = topo_config_gpus(&js->top.cluster);
	if (gpus > TOPO_MAX_RANKS)
		return sim_errf(err, errlen, "%s: cluster: %llu GPUs, at most %u", path,
				(unsigned long long)gpus, TOPO_MAX_RANKS);
	js->n = kv->jobs;
	js->job = xcalloc(js->n, sizeof(*js->job));
	const char **jsets = xcalloc(nsets + 1, sizeof(char *));
	for (size_t i = 0; i < js->n && rc == 0; i++) {
		struct scn_job *j = &js->job[i];
		struct scn_kvs jkv = { 0 };
		size_t njsets;
		snprintf(j->name, sizeof(j->name), "job%zu", i);
		rc = job_inputs(path, kv, sets, nsets, (int)i, j, &jkv, jsets, &njsets, err, errlen);
		if (rc == 0 && !j->nodes)
			rc = sim_errf(err, errlen, "%s: jobs[%zu] (%s): nodes: required (the nodes "
				      "the job runs on)", path, i, j->name);
		char why[SCN_ERRLEN];
		if (rc == 0 && scn_load_kvs(&j->s, path, &jkv, jsets, njsets, j->nodes,
					    SCN_CHECK_ALL, why, sizeof(why)) < 0) {
			/* "FILE: why" (no line: a check across keys) reads FILE: jobs[i] ...: why */
			size_t n = strlen(path);
			const char *w = !strncmp(why, path, n) && !strncmp(why + n, ": ", 2) ?
					why + n + 2 : why;
			rc = sim_errf(err, errlen, "%s%sjobs[%zu] (%s) on %u %s%s: %s",
				      w != why ? path : "", w != why ? ": " : "", i, j->name,
				      j->nodes, unit, j->nodes == 1 ? "" : "s", w);
		}
		/* Interference in a jobs list is not simulated yet (each job has its
		 * own compute model): auto reads none here. */
		if (rc == 0 && j->s.compute.interference == PAR_INTERF_AUTO)
			j->s.compute.interference = PAR_INTERF_NONE;
		scn_kvs_free(&jkv);
	}
	free(jsets);
	return rc < 0 ? -1 : place(js, err, errlen);
}

int scn_load_jobs(struct scn_jobs *js, const char *path, const char *const *sets, size_t nsets,
		  char *err, size_t errlen)
{
	struct scn_kvs kv = { 0 };
	*js = (struct scn_jobs){ 0 };
	int rc = scn_yaml_read(path, &kv, err, errlen);  /* read once: a pipe works */
	if (rc == 0 && kv.jobs_line)
		rc = load_jobs(js, path, &kv, sets, nsets, err, errlen);
	else if (rc == 0)  /* one job */
		rc = scn_load_one(&js->top, path, &kv, sets, nsets, SCN_CHECK_ALL, err, errlen);
	scn_kvs_free(&kv);
	if (rc < 0) {
		scn_jobs_free(js);
		return -1;
	}
	return 0;
}

void scn_jobs_free(struct scn_jobs *js)
{
	free(js->job);
	js->job = NULL;
	js->n = 0;
}

char *scn_jobs_json(const struct scn_jobs *js)
{
	char *out = scn_json(&js->top);
	out[strlen(out) - 1] = 0;  /* its closing brace: the jobs go inside */
	char *next = xasprintf("%s,\"jobs\":[", out);
	free(out);
	out = next;
	for (size_t i = 0; i < js->n; i++) {
		const struct scn_job *j = &js->job[i];
		char *cfg = scn_json(&j->s);
		next = xasprintf("%s%s{\"name\":\"%s\",\"nodes\":%u,\"first_node\":%u,"
				 "\"start_s\":%.17g,\"scenario\":%s}", out, i ? "," : "", j->name,
				 j->nodes, j->first_node, j->start_s, cfg);
		free(cfg);
		free(out);
		out = next;
	}
	next = xasprintf("%s]}", out);
	free(out);
	return next;
}

void scn_job_keys_markdown(FILE *out)
{
	fprintf(out, "| key | value | default | meaning |\n|---|---|---|---|\n");
	for (size_t i = 0; i < ARRAY_SIZE(job_keys); i++)
		fprintf(out, "| `%s` | %s | %s | %s |\n", job_keys[i].name, job_keys[i].value,
			job_keys[i].deflt, job_keys[i].help);
	fprintf(out, "| `model.*`, `training.*`, `parallel.*`, `compute.*` | | the file's | "
		"the job's own keys of these sections, over the file's top-level ones |\n");
}
