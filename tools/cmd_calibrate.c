/*
 * cmd_calibrate.c - `clustersim calibrate nccl FILE...`: fit the ring's
 * latency and bandwidth to nccl-tests logs, print the fit and its
 * residuals, and write a cluster preset with the fitted figures.
 *
 * `clustersim calibrate gemm FILE.csv`: fit the compute model's GEMM curves
 * to a measured table and write a calibration folder.
 *
 * The fits, the preset and the tables are the library's
 * (collectives/nccl_calib.h, parallel/gemm_calib.h); this file reads the
 * options, checks the files and writes the outputs all or none.
 */
#include "tools/cli.h"

#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collectives/nccl.h"
#include "collectives/nccl_calib.h"
#include "parallel/compute.h"
#include "parallel/gemm_calib.h"
#include "scenarios/scenario.h"
#include "sim/outfile.h"
#include "sim/util.h"
#include "topology/topo.h"


static const struct cli_opt calib_opts[] = {
	{ "op", 0, CLI_STR, "OP", "from the log",
	  "nccl: the collective of every log: all_reduce_perf, all_gather_perf, reduce_scatter_perf "
	  "or alltoall_perf (the log's \"Collective test starting\" line, else its file name)" },
	{ "ranks", 'n', CLI_COUNT, "N", "the log's rank lines",
	  "nccl: ranks of every log, for logs without the \"#  Rank ...\" lines" },
	{ "nodes", 'N', CLI_COUNT, "N", "the log's hosts",
	  "nccl: nodes every log spans: 1 fits the NVLink domain, more the network" },
	{ "inplace", 0, CLI_FLAG, NULL, NULL, "nccl: fit the in-place times (default: out-of-place)" },
	{ "fit-min", 0, CLI_BYTES, "SIZE", "bandwidth-bound range",
	  "nccl: smallest size of the fit (default: from where the bus bandwidth stays at least "
	  "half its peak)" },
	{ "fit-max", 0, CLI_BYTES, "SIZE", "largest measured", "nccl: largest size of the fit" },
	{ "base", 'c', CLI_STR, "PRESET", NULL,
	  "nccl: the cluster preset the logs were measured on (GPU, nodes, NICs); needed by -o" },
	{ "gpu", 0, CLI_STR, "PRESET", NULL,
	  "gemm: the GPU the table was measured on (a GPU preset of clustersim presets); "
	  "required" },
	{ "tables", 0, CLI_STR, "NAME", "next to FILE, else h200",
	  "gemm: the calibration table whose attention, memory-bound and copy tables complete "
	  "the folder -o writes" },
	{ "output", 'o', CLI_FILE_OUT, "PATH", NULL,
	  "nccl: write the base preset with the fitted latency and bandwidth as a cluster "
	  "preset YAML (put it in clusters/ next to a scenario to name it); gemm: write a "
	  "calibration folder (put it at calibration/NAME/ next to a scenario and set "
	  "compute.efficiency: NAME)" },
	{ "json", 0, CLI_FLAG, NULL, NULL, "print a JSON object instead of the tables" },
	{ 0 },
};

/* Read every log and give each its op, ranks and scope. */
static int read_logs(struct cli_args *a, struct nccl_calib *c)
{
	struct nccl_calib_opts o = { .op = NCCL_OP_NONE, .inplace = cli_has(a, "inplace") };
	long long ranks = 0, nodes = 0;
	char err[8192];

	if (cli_has(a, "op") && (o.op = nccl_op_from_name(cli_str(a, "op", ""))) == NCCL_OP_NONE)
		return cli_error(a, CLI_BADINPUT, "option --op: unknown collective '%s': expected "
				 "all_reduce_perf, all_gather_perf, reduce_scatter_perf or "
				 "alltoall_perf", cli_str(a, "op", ""));
	if (cli_count(a, "ranks", 2, TOPO_MAX_RANKS, &ranks) < 0 ||
	    cli_count(a, "nodes", 1, TOPO_MAX_RANKS, &nodes) < 0)
		return CLI_BADINPUT;
	o.ranks = (uint32_t)ranks, o.nodes = (uint32_t)nodes;
	c->inplace = o.inplace;
	if (a->npos < 2)
		return cli_error(a, CLI_BADINPUT, "nccl: expected at least one nccl-tests log "
				 "(the output of all_reduce_perf and the like)");
	if (a->npos - 1 > NCCL_CALIB_MAX_LOGS)
		return cli_error(a, CLI_BADINPUT, "nccl: at most %d logs at once",
				 NCCL_CALIB_MAX_LOGS);
	if (nccl_calib_read(c, a->pos + 1, a->npos - 1, &o, err, sizeof(err)) < 0)
		return cli_error(a, CLI_BADINPUT, "%s", err);
	return CLI_OK;
}

static int fit_scopes(struct cli_args *a, struct nccl_calib *c)
{
	double lo = 0, hi = 0;
	char err[8192];
	if (cli_units(a, "fit-min", &lo) < 0 || cli_units(a, "fit-max", &hi) < 0)
		return CLI_BADINPUT;
	if (nccl_calib_fit(c, lo, cli_has(a, "fit-min"), hi, cli_has(a, "fit-max"), err,
			   sizeof(err)) < 0)
		return cli_error(a, CLI_BADINPUT, "%s", err);
	return CLI_OK;
}

static int write_preset(struct cli_args *a, const struct nccl_calib *c, char *caveat,
			size_t caveat_len)
{
	const char *path = cli_str(a, "output", NULL), *base = cli_str(a, "base", NULL);
	struct topo_config t;
	char err[8192];
	if (!base)
		return cli_error(a, CLI_BADINPUT, "option -o/--output needs --base PRESET: the "
				 "cluster the logs were measured on (its GPU, nodes and NICs)");
	if (scn_cluster_preset(&t, base, err, sizeof(err)) < 0)
		return cli_error(a, CLI_BADINPUT, "option --base: %s", err);
	if (t.kind != TOPO_FATTREE)
		return cli_error(a, CLI_BADINPUT, "option --base: '%s' is not a fat tree of NVLink "
				 "nodes: the fit sets NVLink and network figures", base);
	if (nccl_calib_apply(c, &t, base, err, sizeof(err)) < 0)
		return cli_error(a, CLI_BADINPUT, "%s", err);
	struct sim_out o;
	int rc = cli_out_open(a, "option -o", path, &o);
	if (rc != CLI_OK)
		return rc;
	nccl_calib_caveat(c, t.gpus_per_node, caveat, caveat_len);
	/* The command as typed, with the program's own path as its name. */
	nccl_calib_write_preset(o.f, c, &t, base, a->line ? strchr(a->line, ' ') : NULL, caveat);
	return cli_out_commit(a, "option -o", &o, CLI_OK);
}

static int calibrate_nccl(struct cli_args *a)
{
	struct nccl_calib c = { 0 };
	char caveat[512] = "";
	int rc = read_logs(a, &c);
	if (rc == CLI_OK)
		rc = fit_scopes(a, &c);
	if (rc == CLI_OK && cli_has(a, "output"))
		rc = write_preset(a, &c, caveat, sizeof(caveat));
	if (rc == CLI_OK) {
		if (cli_has(a, "json"))
			nccl_calib_write_json(stdout, &c);
		else
			nccl_calib_write_text(stdout, &c);
		if (cli_has(a, "output") && !cli_has(a, "json"))
			printf("wrote %s%s%s\n", cli_str(a, "output", ""), *caveat ? "\n" : "",
			       caveat);
	}
	nccl_calib_free(&c);
	return rc;
}

/* ---- gemm ------------------------------------------------------------------------ */

/* Copy the file from into out; 0, or -1 if from cannot be read (errors
 * writing out are found when it is committed). */
static int copy_into(const char *from, FILE *out)
{
	FILE *in = fopen(from, "rb");
	char buf[65536];
	size_t n;
	if (!in)
		return -1;
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, n, out);
	int rc = ferror(in) ? -1 : 0;
	fclose(in);
	return rc;
}

/* The tables calibrate gemm copies unchanged into the new folder. */
static const char *const other_names[] = { "attention.csv", "membound.csv", "ceilings.csv" };

/* The first of other_names that folder dir lacks, or NULL. */
static const char *missing_table(const char *dir)
{
	for (size_t i = 0; i < ARRAY_SIZE(other_names); i++) {
		char *p = xasprintf("%s/%s", dir, other_names[i]);
		int ok = access(p, R_OK) == 0;
		free(p);
		if (!ok)
			return other_names[i];
	}
	return NULL;
}

/* Where the other three tables come from: FILE's folder if it has them
 * all, else the calibration table --tables names (h200). */
static char *other_tables(struct cli_args *a, const char *file)
{
	char tmp[1024];
	snprintf(tmp, sizeof(tmp), "%s", file);
	char *dir = xstrdup(dirname(tmp));
	if (!cli_has(a, "tables") && !missing_table(dir))
		return dir;
	free(dir);
	return xasprintf("%s/calibration/%s", scn_datadir(), cli_str(a, "tables", "h200"));
}

/* The files of a calibration folder that calibrate gemm writes: its own
 * four, then the copies of other_names. */
enum { GEMM_CSV, GEMM_EFFICIENCY, GEMM_GPU, GEMM_README, GEMM_COPIES, GEMM_FILES = 7 };
static const char *const gemm_names[GEMM_FILES] = {
	[GEMM_CSV] = "gemm.csv", [GEMM_EFFICIENCY] = "efficiency.csv", [GEMM_GPU] = "gpu.txt",
	[GEMM_README] = "README.md", [GEMM_COPIES] = "attention.csv", "membound.csv",
	"ceilings.csv",
};

/* Refuse a file of the folder that is a table read: FILE, or one of the
 * tables copied (-o naming the folder they come from). */
static int gemm_check_files(struct cli_args *a, const char *dir, const char *file,
			    const char *from)
{
	int rc = CLI_OK;
	size_t nin = 1 + ARRAY_SIZE(other_names);
	char *in[1 + ARRAY_SIZE(other_names)] = { xstrdup(file) };
	for (size_t k = 1; k < nin; k++)
		in[k] = xasprintf("%s/%s", from, other_names[k - 1]);
	for (size_t i = 0; i < GEMM_FILES && rc == CLI_OK; i++) {
		char *out = xasprintf("%s/%s", dir, gemm_names[i]);
		for (size_t k = 0; k < nin && rc == CLI_OK; k++) {
			char *what = xasprintf("'%s'", in[k]);
			rc = cli_check_same(a, "option -o", out, what, in[k]);
			free(what);
		}
		free(out);
	}
	for (size_t k = 0; k < nin; k++)
		free(in[k]);
	return rc;
}

/* Write the contents of every file of the folder (the copies from from). */
static int gemm_fill(struct cli_args *a, FILE *const f[GEMM_FILES], const char *file,
		     const char *from, const struct topo_gpu *gpu, const struct par_gemm_table *t)
{
	par_gemm_write_table(f[GEMM_CSV], t);
	par_gemm_write_curves(f[GEMM_EFFICIENCY], t);
	fprintf(f[GEMM_GPU], "%s\n", gpu->name);
	par_gemm_write_readme(f[GEMM_README], a->line ? strchr(a->line, ' ') : NULL, file, gpu, t,
			      from);
	for (size_t i = 0; i < ARRAY_SIZE(other_names); i++) {
		char *src = xasprintf("%s/%s", from, other_names[i]);
		int bad = copy_into(src, f[GEMM_COPIES + i]) < 0;
		if (bad)
			cli_error(a, CLI_FAIL, "cannot read %s: %s", src, strerror(errno));
		free(src);
		if (bad)
			return CLI_FAIL;
	}
	return CLI_OK;
}

/*
 * Write the calibration folder -o DIR: all its files or none. Each is
 * written to a temporary file beside it (sim/outfile.h); only when every
 * one is complete are they renamed into place, so an error (a full disk, a
 * table that cannot be read) leaves the folder's old files as they were.
 */
static int gemm_write(struct cli_args *a, const char *file, const struct topo_gpu *gpu,
		      const struct par_gemm_table *t)
{
	const char *dir = cli_str(a, "output", "");
	char *from = other_tables(a, file);
	const char *missing = missing_table(from);
	int rc = CLI_OK, made = 0;
	if (missing)
		rc = cli_error(a, CLI_BADINPUT, "no such table: %s/%s", from, missing);
	if (rc == CLI_OK)
		rc = gemm_check_files(a, dir, file, from);
	if (rc == CLI_OK && mkdir(dir, 0777) == 0)
		made = 1;
	else if (rc == CLI_OK && errno != EEXIST)
		rc = cli_error(a, errno == ENOENT || errno == ENOTDIR ? CLI_BADINPUT : CLI_FAIL,
			       "option -o: cannot make the folder %s: %s", dir, strerror(errno));
	struct sim_out out[GEMM_FILES] = { 0 };
	FILE *f[GEMM_FILES] = { 0 };
	size_t opened = 0;
	for (; rc == CLI_OK && opened < GEMM_FILES; opened++) {
		char *path = xasprintf("%s/%s", dir, gemm_names[opened]);
		rc = cli_out_open(a, "option -o", path, &out[opened]);
		f[opened] = out[opened].f;
		free(path);
		if (rc != CLI_OK)
			break;
	}
	if (rc == CLI_OK)
		rc = gemm_fill(a, f, file, from, gpu, t);
	/* A write that failed shows on its FILE: commit that one first, which
	 * says why and removes it, then abandon the others. */
	for (size_t i = 0; rc == CLI_OK && i < GEMM_FILES; i++)
		if (fflush(f[i]) != 0 || ferror(f[i])) {
			cli_out_commit(a, "option -o", &out[i], CLI_OK);
			rc = CLI_FAIL;
		}
	for (size_t i = 0; i < opened && i < GEMM_FILES; i++)
		if (out[i].f)
			rc = cli_out_commit(a, "option -o", &out[i], rc);
	if (rc != CLI_OK && made)
		rmdir(dir);   /* only if nothing else is in it */
	free(from);
	return rc;
}

static int calibrate_gemm(struct cli_args *a)
{
	if (a->npos != 2)
		return cli_error(a, CLI_BADINPUT, "gemm: expected one measured table (gemm.csv, "
				 "as tools/measure_kernels.py writes it)");
	if (!cli_has(a, "gpu"))
		return cli_error(a, CLI_BADINPUT, "gemm: --gpu PRESET is required: the GPU the "
				 "table was measured on (its datasheet peak turns times into "
				 "efficiencies)");
	const struct topo_gpu *gpu = topo_gpu_find(cli_str(a, "gpu", ""));
	if (!gpu)
		return cli_error(a, CLI_BADINPUT, "option --gpu: unknown GPU preset '%s' (see "
				 "clustersim presets)", cli_str(a, "gpu", ""));
	struct par_gemm_table t;
	char err[512];
	if (par_gemm_table_fit(a->pos[1], gpu, &t, err, sizeof(err)) < 0)
		return cli_error(a, CLI_BADINPUT, "%s", err);
	int rc = cli_has(a, "output") ? gemm_write(a, a->pos[1], gpu, &t) : CLI_OK;
	if (rc == CLI_OK) {
		par_gemm_write_report(stdout, a->pos[1], gpu, &t, cli_has(a, "json"));
		if (cli_has(a, "output") && !cli_has(a, "json"))
			printf("\nwrote %s/ (gemm.csv, efficiency.csv, gpu.txt, README.md and the "
			       "other tables)\n", cli_str(a, "output", ""));
	}
	par_gemm_table_free(&t);
	return rc;
}

static int calibrate_run(struct cli_args *a)
{
	if (a->npos == 0)
		return cli_error(a, CLI_BADINPUT, "expected what to calibrate: nccl FILE... or gemm "
				 "FILE.csv");
	if (!strcmp(a->pos[0], "nccl"))
		return calibrate_nccl(a);
	if (!strcmp(a->pos[0], "gemm"))
		return calibrate_gemm(a);
	return cli_error(a, CLI_BADINPUT, "unknown calibration '%s': expected nccl or gemm",
			 a->pos[0]);
}

const struct cli_cmd cli_cmd_calibrate = {
	.name = "calibrate",
	.usage = "nccl FILE... [OPTIONS] | gemm FILE.csv --gpu PRESET [-o DIR]",
	.summary = "Fit the network to nccl-tests logs, or GEMM efficiency to a kernel table.",
	.description =
		"`calibrate nccl` reads the output of nccl-tests (all_reduce_perf, "
		"all_gather_perf, reduce_scatter_perf, alltoall_perf: their text tables, "
		"out-of-place or in-place columns) and fits the ring's closed form "
		"t = steps x alpha + S x f / B to the times by weighted least squares (GSL; "
		"weights 1/t^2, so every size counts by its relative error). steps is 2(n-1) "
		"for all-reduce and n-1 for the others; f is nccl-tests' bus-bandwidth factor, "
		"so B is the ring's bus bandwidth over the fitted range (measured bandwidth can "
		"keep rising past it: docs/calibration.md). Logs whose ranks sit on one host "
		"fit the NVLink domain; logs across hosts fit the network; several logs of one "
		"scope fit together. Where nccl-tests is not built, tools/measure_allreduce.py "
		"writes such a log from PyTorch, with in-place times: fit them with --inplace.\n\n"
		"The fit covers the bandwidth-bound sizes by default (from where the bus "
		"bandwidth stays at least half its peak), where training's messages lie; "
		"--fit-min and --fit-max choose another range. The tables give every size's "
		"measured and fitted time and the error; sizes outside the range are shown too. "
		"With -o and --base the base preset is written with the fitted latency and "
		"bandwidth (docs/calibration.md); when the logs inside a node used fewer "
		"GPUs than --base's node has, the file and the output say that collectives "
		"over other counts may differ.\n\n"
		"`calibrate gemm` reads a measured GEMM table (gemm.csv in the format of "
		"scenarios/calibration/h200/, as tools/measure_kernels.py writes it on your "
		"GPU), turns each row into an efficiency against --gpu's dense bf16 peak, fits "
		"the compute model's two curves (efficiency by FLOP count; and by FLOP count "
		"times a factor by the smallest of M, N, K) and prints them with each fit's time "
		"error over the rows. With -o DIR it writes a calibration folder: gemm.csv with "
		"an efficiency column, efficiency.csv (the curves' points), gpu.txt, README.md, "
		"and the attention, memory-bound and copy tables (from FILE's folder when it has "
		"them, else --tables). A scenario uses it as compute.efficiency: NAME when it "
		"sits at calibration/NAME/ next to the scenario.",
	.opts = calib_opts,
	.run = calibrate_run,
	.pos_words = 1,   /* nccl or gemm, then the files it reads */
};
