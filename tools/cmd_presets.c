/*
 * cmd_presets.c - `clustersim presets`: the cluster and GPU presets, the
 * cluster keys that --set overrides, and where every number comes from.
 */
#include "tools/cli.h"

#include <stdlib.h>

#include "parallel/model.h"
#include "scenarios/scenario.h"
#include "sim/units.h"
#include "topology/topo.h"

static const struct cli_opt presets_opts[] = { { 0 } };

static void print_cluster(const char *name)
{
	struct topo_config c;
	char err[512], nvbw[32], nvl[32], nbw[32], nl[32];
	if (scn_cluster_preset(&c, name, err, sizeof(err)) < 0) {
		printf("  %-12s (invalid: %s)\n", name, err);
		return;
	}
	sim_units_format(SIM_UNIT_RATE, c.nvlink_bw_Bps, nvbw, sizeof(nvbw));
	sim_units_format(SIM_UNIT_TIME, c.nvlink_lat_s, nvl, sizeof(nvl));
	sim_units_format(SIM_UNIT_RATE, c.net_bw_Bps, nbw, sizeof(nbw));
	sim_units_format(SIM_UNIT_TIME, c.net_lat_s, nl, sizeof(nl));
	printf("  %-12s %s\n", name, c.description);
	if (c.kind == TOPO_IDEAL)
		printf("               link per rank pair: %s, %s; gpu %s\n", nbw, nl, c.gpu);
	else
		printf("               %u x %s per node; NVLink %s, %s; %u NICs x %s, %s; "
		       "%u nodes per leaf, oversubscription %g\n", c.gpus_per_node, c.gpu,
		       nvbw, nvl, c.nics_per_node, nbw, nl, c.nodes_per_leaf, c.oversub);
	printf("               source: %s\n", c.source);
}

static void print_model(const char *name)
{
	struct scn s;
	char err[512], set[128];
	const char *sets[] = { "cluster.preset=ideal", set, "training.seq=1",
			       "training.global_batch=1" };
	snprintf(set, sizeof(set), "model.preset=%s", name);
	if (scn_load(&s, NULL, sets, ARRAY_SIZE(sets), err, sizeof(err)) < 0) {
		printf("  %-16s (invalid: %s)\n", name, err);
		return;
	}
	const struct par_model *m = &s.model;
	printf("  %-16s %.2f B parameters: %u layers, hidden %u, %u heads (%u kv), ffn %u, "
	       "vocab %u%s\n", name, par_model_params(m) / 1e9, m->layers, m->hidden, m->heads,
	       m->kv_heads, m->ffn, m->vocab, m->moe.experts ? ", MoE" : "");
	if (m->description[0])
		printf("                   %s\n", m->description);
	printf("                   source: %s\n", m->source[0] ? m->source : "(none given)");
}

static void each_preset(const char *kind, void (*show)(const char *))
{
	char **names;
	size_t n;
	if (scn_preset_names(kind, &names, &n) < 0) {
		printf("  (no %s folder in %s)\n", kind, scn_datadir());
		return;
	}
	for (size_t i = 0; i < n; i++) {
		show(names[i]);
		free(names[i]);
	}
	free(names);
}

static int presets_run(struct cli_args *a)
{
	(void)a;
	printf("clusters (%s/clusters):\n", scn_datadir());
	each_preset("clusters", print_cluster);
	printf("\nmodels (%s/models):\n", scn_datadir());
	each_preset("models", print_model);
	printf("\ngpus (dense peak FLOP/s):\n");
	for (size_t i = 0; i < topo_ngpus; i++) {
		const struct topo_gpu *g = &topo_gpus[i];
		char bf[32], hbm[32], mem[32];
		sim_units_format(SIM_UNIT_FLOPS, g->bf16, bf, sizeof(bf));
		sim_units_format(SIM_UNIT_RATE, g->hbm_Bps, hbm, sizeof(hbm));
		sim_units_format(SIM_UNIT_BYTES, g->mem_bytes, mem, sizeof(mem));
		printf("  %-16s bf16 %s, HBM %s, %s (%.0f MiB)\n", g->name, bf, hbm, mem,
		       g->mem_bytes / 1048576.0);
		printf("                   source: %s\n", g->source);
	}
	printf("\ncluster keys (--set cluster.KEY=VALUE):\n");
	for (size_t i = 0; i < topo_key_count(); i++) {
		const char *name, *value, *help;
		topo_key_info(i, &name, &value, &help);
		printf("  %-26s %-8s %s\n", name, value, help);
	}
	return CLI_OK;
}

const struct cli_cmd cli_cmd_presets = {
	.name = "presets",
	.usage = "",
	.summary = "List the cluster and GPU presets with their sources, and the cluster keys.",
	.opts = presets_opts,
	.run = presets_run,
};
