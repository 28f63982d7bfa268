/*
 * cmd_presets.c - `clustersim presets`: the cluster and GPU presets, the
 * cluster keys that --set overrides, and where every number comes from.
 */
#include "tools/cli.h"

#include "sim/units.h"
#include "topology/topo.h"

static const struct cli_opt presets_opts[] = { { 0 } };

static void print_cluster(const struct topo_preset *p)
{
	const struct topo_config *c = &p->cfg;
	char nvbw[32], nvl[32], nbw[32], nl[32];
	sim_units_format(SIM_UNIT_RATE, c->nvlink_bw_Bps, nvbw, sizeof(nvbw));
	sim_units_format(SIM_UNIT_TIME, c->nvlink_lat_s, nvl, sizeof(nvl));
	sim_units_format(SIM_UNIT_RATE, c->net_bw_Bps, nbw, sizeof(nbw));
	sim_units_format(SIM_UNIT_TIME, c->net_lat_s, nl, sizeof(nl));
	printf("  %-12s %s\n", p->name, p->help);
	if (c->kind == TOPO_IDEAL)
		printf("               link per rank pair: %s, %s; gpu %s\n", nbw, nl, c->gpu);
	else
		printf("               %u x %s per node; NVLink %s, %s; %u NICs x %s, %s; "
		       "%u nodes per leaf, oversubscription %g\n", c->gpus_per_node, c->gpu,
		       nvbw, nvl, c->nics_per_node, nbw, nl, c->nodes_per_leaf, c->oversub);
	printf("               source: %s\n", c->source);
}

static int presets_run(struct cli_args *a)
{
	(void)a;
	printf("clusters:\n");
	for (size_t i = 0; i < topo_npresets; i++)
		print_cluster(&topo_presets[i]);
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
