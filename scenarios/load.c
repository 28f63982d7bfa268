/*
 * load.c - load a scenario: defaults, then the cluster and model presets,
 * then the file's keys, then --set overrides, then the derived defaults and
 * the checks across keys. Presets are scenario fragments found by name
 * (scn_find_preset); --set cluster.preset and --set model.preset choose them
 * too, before anything else is applied.
 */
#include "scenarios/scenario.h"

#include <ctype.h>
#include <dirent.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parallel/dp.h"
#include "parallel/layout.h"
#include "parallel/step.h"
#include "parallel/schedule.h"
#include "scenarios/scn-int.h"

#ifndef CLUSTERSIM_DATADIR
#define CLUSTERSIM_DATADIR "/usr/local/share/clustersim"
#endif
#ifndef CLUSTERSIM_SRCDIR
#define CLUSTERSIM_SRCDIR "."
#endif

const char *scn_datadir(void)
{
	if (access(CLUSTERSIM_DATADIR "/clusters", R_OK) == 0)
		return CLUSTERSIM_DATADIR;
	return CLUSTERSIM_SRCDIR "/scenarios";
}

/* A preset name is a plain file name: letters, digits, '.', '_' and '-'. */
static int name_ok(const char *name)
{
	if (!*name || name[0] == '.')
		return 0;
	for (const char *c = name; *c; c++)
		if (!(isalnum((unsigned char)*c) || *c == '.' || *c == '_' || *c == '-'))
			return 0;
	return 1;
}

int scn_find_preset(const char *scenario_path, const char *kind, const char *name,
		    char *out, size_t outlen, char *err, size_t errlen)
{
	if (!name_ok(name))
		return sim_errf(err, errlen, "expected a preset name (letters, digits, '.', '_' and "
			    "'-'), got '%s'", name);
	char dir[1024] = ".", tried[1024] = "";
	if (scenario_path && *scenario_path) {
		char tmp[1024];
		snprintf(tmp, sizeof(tmp), "%s", scenario_path);
		snprintf(dir, sizeof(dir), "%s", dirname(tmp));
	}
	const char *const places[] = { dir, scn_datadir() };
	for (size_t i = 0; i < ARRAY_SIZE(places); i++) {
		if (i && !strcmp(places[i], places[0]))
			continue;
		snprintf(out, outlen, "%s/%s/%s.yaml", places[i], kind, name);
		if (access(out, R_OK) == 0)
			return 0;
		snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried), "%s%s/%s/",
			 i ? ", " : "", places[i], kind);
	}
	return sim_errf(err, errlen, "no %s preset named '%s' (looked in %s)",
		    strcmp(kind, "clusters") ? "model" : "cluster", name, tried);
}

/* Apply one YAML file's keys, all of which must be under `only` if given. */
static int apply_kvs(struct scn *s, const char *path, const struct scn_kvs *kv, const char *only,
		     int skip_presets, char *err, size_t errlen)
{
	char why[SCN_ERRLEN];
	for (size_t i = 0; i < kv->n; i++) {
		const char *k = kv->v[i].key;
		if (only && strncmp(k, only, strlen(only)))
			return sim_errf(err, errlen, "%s:%d: %s: a %s preset holds only %s keys", path,
				    kv->v[i].line, k, only, only);
		if (skip_presets && (!strcmp(k, "cluster.preset") || !strcmp(k, "model.preset")))
			continue;
		if (scn_set(s, k, kv->v[i].value, why, sizeof(why)) < 0)
			return sim_errf(err, errlen, "%s:%d: %s", path, kv->v[i].line, why);
	}
	return 0;
}

/* Read a preset file of one section into s. */
static int load_preset(struct scn *s, const char *scenario, const char *kind,
		       const char *section, const char *name, char *err, size_t errlen)
{
	char path[1200];
	struct scn_kvs kv = { 0 };
	if (scn_find_preset(scenario, kind, name, path, sizeof(path), err, errlen) < 0 ||
	    scn_yaml_read(path, &kv, err, errlen) < 0) {
		scn_kvs_free(&kv);
		return -1;
	}
	int rc = apply_kvs(s, path, &kv, section, 0, err, errlen);
	scn_kvs_free(&kv);
	return rc;
}

int scn_cluster_preset(struct topo_config *c, const char *name, char *err, size_t errlen)
{
	struct scn s;
	scn_defaults(&s);
	if (load_preset(&s, NULL, "clusters", "cluster.", name, err, errlen) < 0)
		return -1;
	snprintf(s.cluster.preset, sizeof(s.cluster.preset), "%s", name);
	*c = s.cluster;
	return 0;
}

/* Where a preset was named, for messages: "file:line: key" or "--set k=v". */
struct where {
	char text[1200];
};

/* The key of a --set line, after the "jobs.I." of a job's own (jobs.c
 * passes only job I's to its scenario). */
static const char *set_key(const char *set)
{
	if (strncmp(set, "jobs.", 5))
		return set;
	const char *p = set + 5;
	while (isdigit((unsigned char)*p))
		p++;
	return *p == '.' && p > set + 5 ? p + 1 : set;
}

/* The value a key gets last: from --set if given there, else from the file. */
static const char *last_value(const struct scn_kvs *kv, const char *const *sets, size_t nsets,
			      const char *key, const char *path, struct where *w)
{
	const char *v = NULL;
	for (size_t i = 0; i < kv->n; i++)
		if (!strcmp(kv->v[i].key, key)) {
			v = kv->v[i].value;
			snprintf(w->text, sizeof(w->text), "%s:%d: %s", path, kv->v[i].line, key);
		}
	size_t n = strlen(key);
	for (size_t i = 0; i < nsets; i++) {
		const char *k = set_key(sets[i]);
		if (!strncmp(k, key, n) && k[n] == '=') {
			v = k + n + 1;
			snprintf(w->text, sizeof(w->text), "--set %s: %s", sets[i], key);
		}
	}
	return v;
}

/* Read the preset a scenario names; errors say where it was named. */
static int use_preset(struct scn *s, const char *path, const char *kind, const char *section,
		      const char *name, const struct where *w, char *err, size_t errlen)
{
	char why[SCN_ERRLEN];
	char *dst = !strcmp(kind, "clusters") ? s->cluster.preset : s->model.preset;
	size_t cap = !strcmp(kind, "clusters") ? sizeof(s->cluster.preset) : sizeof(s->model.preset);
	if (strlen(name) >= cap)
		return sim_errf(err, errlen, "%s: a preset name has at most %zu characters, got '%s'",
			    w->text, cap - 1, name);
	if (load_preset(s, path, kind, section, name, why, sizeof(why)) < 0)
		return sim_errf(err, errlen, "%s: %s", w->text, why);
	snprintf(dst, cap, "%s", name);
	return 0;
}

/* Characters of a --set line an error repeats before the reason. */
#define SET_SHOWN 120

static int apply_sets(struct scn *s, const char *const *sets, size_t nsets, char *err,
		      size_t errlen)
{
	char why[SCN_ERRLEN], key[128];
	for (size_t i = 0; i < nsets; i++) {
		const char *k = set_key(sets[i]), *eq = strchr(k, '=');
		if (!eq || eq == k || (size_t)(eq - k) >= sizeof(key))
			return sim_errf(err, errlen, "--set %s: expected section.key=value", sets[i]);
		snprintf(key, sizeof(key), "%.*s", (int)(eq - k), k);
		if (!strcmp(key, "cluster.preset") || !strcmp(key, "model.preset"))
			continue;
		if (scn_set(s, key, eq + 1, why, sizeof(why)) < 0)  /* a long value: cut here */
			return sim_errf(err, errlen, "--set %.*s%s: %s", SET_SHOWN, sets[i],
					strlen(sets[i]) > SET_SHOWN ? "..." : "", why);
	}
	return 0;
}

/* Fill what 0 means "derived" for. */
static void derive(struct scn *s)
{
	struct par_model *m = &s->model;
	if (!m->kv_heads)
		m->kv_heads = m->heads;
	if (!m->head_dim && m->heads)
		m->head_dim = m->hidden / m->heads;
	if (!m->ffn)
		m->ffn = 4 * m->hidden;
	if (m->moe.experts && !m->moe.expert_ffn)
		m->moe.expert_ffn = m->ffn;
}

/* Where a key got its value, for messages ("file:line: key", "--set ...: key"),
 * or the key alone. */
static void where_of(const struct scn_kvs *kv, const char *const *sets, size_t nsets,
		     const char *key, const char *path, struct where *w)
{
	if (!last_value(kv, sets, nsets, key, path ? path : "--set", w))
		snprintf(w->text, sizeof(w->text), "%s", key);
}

/*
 * parallel.strategy and its aliases: parallel.zero N names the strategy of
 * ZeRO stage N (0: ddp), parallel.fsdp.enabled true names fsdp (zero then
 * ignored). A strategy named explicitly that an alias set contradicts is an
 * error naming both keys; else the aliases are set to agree with it (a
 * strategy left auto stays auto: the aliases name it).
 */
static int resolve_strategy(struct scn *s, const char *path, const struct scn_kvs *kv,
			    const char *const *sets, size_t nsets, char *err, size_t errlen)
{
	struct par_layout *l = &s->parallel;
	const struct par_dp_strategy *alias = par_dp_of_aliases(l->zero, l->fsdp.enabled);
	int aliased = l->zero != 0 || l->fsdp.enabled;
	if (l->strategy <= 0)
		return 0;  /* auto: the aliases name it */
	const struct par_dp_strategy *st = par_dp_strategies[l->strategy - 1];
	if (aliased && st != alias) {
		const char *key = l->fsdp.enabled ? "parallel.fsdp.enabled" : "parallel.zero";
		char value[16];
		struct where ws, wa;
		if (l->fsdp.enabled)
			snprintf(value, sizeof(value), "true");
		else
			snprintf(value, sizeof(value), "%u", l->zero);
		where_of(kv, sets, nsets, "parallel.strategy", path, &ws);
		where_of(kv, sets, nsets, key, path, &wa);
		return sim_errf(err, errlen, "%s: %s contradicts %s: %s, which names %s; give "
				"one of parallel.strategy and %s", ws.text, st->name, wa.text, value,
				alias->name, key);
	}
	l->fsdp.enabled = (st->flags & PAR_DP_ALIAS_FSDP) != 0;
	if (!l->fsdp.enabled)
		l->zero = par_dp_zero_stage(st);
	return 0;
}

/*
 * Where compute.efficiency's table is: the scenario's own folder
 * (calibration/NAME/ next to it, as `clustersim calibrate gemm -o` writes
 * one) before the data folder, as for presets.
 */
static void calibration_dir(struct scn *s)
{
	char tmp[1024], probe[2200];
	if (!*s->path || !*s->compute.table)
		return;
	snprintf(tmp, sizeof(tmp), "%s", s->path);
	const char *dir = dirname(tmp);
	snprintf(probe, sizeof(probe), "%s/calibration/%s/gemm.csv", dir, s->compute.table);
	if (access(probe, R_OK) == 0)
		snprintf(s->datadir, sizeof(s->datadir), "%s", dir);
}

int scn_load_kvs(struct scn *s, const char *path, const struct scn_kvs *kv,
		 const char *const *sets, size_t nsets, uint32_t share_nodes,
		 enum scn_check check, char *err, size_t errlen)
{
	scn_defaults(s);
	snprintf(s->path, sizeof(s->path), "%s", path ? path : "");
	snprintf(s->datadir, sizeof(s->datadir), "%s", scn_datadir());
	const char *label = path ? path : "--set";
	int rc = 0;
	struct where cw, mw;
	const char *cp = last_value(kv, sets, nsets, "cluster.preset", path, &cw);
	const char *mp = last_value(kv, sets, nsets, "model.preset", path, &mw);
	if (!cp)
		rc = sim_errf(err, errlen, "%s: cluster.preset: required (a file of scenarios/clusters/, "
			  "see clustersim presets)", label);
	if (!rc)
		rc = use_preset(s, path, "clusters", "cluster.", cp, &cw, err, errlen);
	if (!rc && mp)
		rc = use_preset(s, path, "models", "model.", mp, &mw, err, errlen);
	if (!rc)
		rc = apply_kvs(s, label, kv, NULL, 1, err, errlen);
	if (!rc)
		rc = apply_sets(s, sets, nsets, err, errlen);
	if (rc)
		return -1;
	if (share_nodes) {
		s->cluster.nodes = share_nodes;
		s->cluster.faults[0] = 0;
	}
	calibration_dir(s);
	derive(s);
	if (check != SCN_CHECK_TOP && resolve_strategy(s, path, kv, sets, nsets, err, errlen) < 0)
		return -1;
	char why[SCN_ERRLEN];
	if (check == SCN_CHECK_TOP)
		rc = topo_config_check(&s->cluster, why, sizeof(why));
	else if (scn_check_required(s, why, sizeof(why)) < 0)
		rc = -1;
	else
		rc = check == SCN_CHECK_ALL ? scn_validate(s, why, sizeof(why))
					: topo_config_check(&s->cluster, why, sizeof(why));
	if (rc < 0)
		return sim_errf(err, errlen, "%s: %s", label, why);
	if (check != SCN_CHECK_ALL)
		return 0;
	/* The effective configuration names the dp that auto chose. */
	s->parallel.dp = scn_gpus(s) / (s->parallel.tp * s->parallel.cp * s->parallel.pp);
	return 0;
}

/* A file with a jobs list is for scn_load_jobs. */
static int refuse_jobs(const char *path, const struct scn_kvs *kv, char *err, size_t errlen)
{
	if (kv->jobs_line)
		return sim_errf(err, errlen, "%s:%d: jobs: this command takes a scenario of one "
				"job; `clustersim run` runs several", path, kv->jobs_line);
	for (size_t i = 0; i < kv->n; i++)
		if (!strncmp(kv->v[i].key, "jobs", 4) && (!kv->v[i].key[4] || kv->v[i].key[4] == '.'))
			return sim_errf(err, errlen, "%s:%d: jobs: expected a list of jobs "
					"(\"- name: ...\" items), got a %s", path, kv->v[i].line,
					kv->v[i].key[4] ? "mapping" : "plain value");
	return 0;
}

int scn_load_one(struct scn *s, const char *path, const struct scn_kvs *kv,
		 const char *const *sets, size_t nsets, enum scn_check check, char *err,
		 size_t errlen)
{
	if (path && refuse_jobs(path, kv, err, errlen) < 0)
		return -1;
	for (size_t i = 0; i < nsets; i++)
		if (!strncmp(sets[i], "jobs.", 5))
			return sim_errf(err, errlen, "--set %s: the scenario has no jobs list", sets[i]);
	return scn_load_kvs(s, path, kv, sets, nsets, 0, check, err, errlen);
}

static int load(struct scn *s, const char *path, const char *const *sets, size_t nsets,
		char *err, size_t errlen, enum scn_check check)
{
	struct scn_kvs kv = { 0 };
	int rc = path ? scn_yaml_read(path, &kv, err, errlen) : 0;
	if (!rc)
		rc = scn_load_one(s, path, &kv, sets, nsets, check, err, errlen);
	scn_kvs_free(&kv);
	return rc;
}

int scn_load(struct scn *s, const char *path, const char *const *sets, size_t nsets,
	     char *err, size_t errlen)
{
	return load(s, path, sets, nsets, err, errlen, SCN_CHECK_ALL);
}

int scn_load_unchecked(struct scn *s, const char *path, const char *const *sets, size_t nsets,
		       char *err, size_t errlen)
{
	return load(s, path, sets, nsets, err, errlen, SCN_CHECK_REQUIRED);
}

/* ---- checks across keys -------------------------------------------------------- */

uint32_t scn_gpus(const struct scn *s)
{
	const struct par_layout *p = &s->parallel;
	uint64_t mp = (uint64_t)p->tp * p->cp * p->pp;
	return (uint32_t)(mp * (p->dp ? p->dp : topo_config_gpus(&s->cluster) / mp));
}

static int check_model(const struct scn *s, char *err, size_t errlen)
{
	const struct par_model *m = &s->model;
	if (m->heads % m->kv_heads)
		return sim_errf(err, errlen, "model.kv_heads: %u does not divide model.heads (%u)",
			    m->kv_heads, m->heads);
	if (!m->head_dim)
		return sim_errf(err, errlen, "model.head_dim: model.hidden (%u) is smaller than "
			    "model.heads (%u); set model.head_dim", m->hidden, m->heads);
	if (m->moe.experts && (!m->moe.top_k || m->moe.top_k > m->moe.experts))
		return sim_errf(err, errlen, "model.moe.top_k: expected 1 to %u (model.moe.experts), "
			    "got %u", m->moe.experts, m->moe.top_k);
	if (s->training.precision == PAR_FP8 && !topo_gpu_find(s->cluster.gpu)->fp8)
		return sim_errf(err, errlen, "training.precision: %s has no fp8 support",
			    s->cluster.gpu);
	return 0;
}

int scn_validate(const struct scn *s, char *err, size_t errlen)
{
	if (topo_config_check(&s->cluster, err, errlen) < 0)
		return -1;
	if (check_model(s, err, errlen) < 0 ||
	    par_layout_check(&s->model, &s->training, &s->parallel, &s->cluster,
			     ((struct scn *)s)->warnings, sizeof(s->warnings), err, errlen) < 0)
		return -1;
	return 0;
}

/* ---- listing presets -------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int scn_preset_names(const char *kind, char ***names, size_t *n)
{
	char dir[1200];
	snprintf(dir, sizeof(dir), "%s/%s", scn_datadir(), kind);
	DIR *d = opendir(dir);
	*names = NULL;
	*n = 0;
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));) {
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 5, ".yaml") || e->d_name[0] == '.')
			continue;
		*names = xreallocarray(*names, *n + 1, sizeof(char *));
		(*names)[(*n)++] = xasprintf("%.*s", (int)(len - 5), e->d_name);
	}
	closedir(d);
	if (*n)
		qsort(*names, *n, sizeof(char *), cmp_str);
	return 0;
}
