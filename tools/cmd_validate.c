/*
 * cmd_validate.c - `clustersim validate`: run every published case of
 * scenarios/validation/ (cases.csv: training runs and memory figures;
 * collectives.csv: nccl-tests sweeps and single figures), compare each
 * prediction with its measurement, and write the table docs/validation.md
 * holds, or check that file against it.
 *
 * The page is a function of the cases, the presets and the simulator only:
 * no wall times, no dates, numbers at fixed precision. So --check can fail
 * CI when the committed page is stale. The cases, the predictions and the
 * page are scenarios/validation.h's; this file is the command.
 */
#include "tools/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenarios/scenario.h"
#include "scenarios/validation.h"
#include "sim/outfile.h"
#include "sim/util.h"

static const struct cli_opt validate_opts[] = {
	{ "quick", 0, CLI_FLAG, NULL, NULL,
	  "analytic fidelity (closed-form collectives): the whole set in well under a minute; "
	  "without it every case runs in flow fidelity" },
	{ "dir", 0, CLI_STR, "DIR", "DATADIR/validation",
	  "the cases: DIR/cases.csv, DIR/collectives.csv and the files they name" },
	{ "output", 'o', CLI_FILE_OUT, "FILE", NULL, "write the Markdown page (docs/validation.md)" },
	{ "check", 0, CLI_FILE_IN, "FILE", NULL,
	  "compare the Markdown page with FILE; exit 1 if it would change" },
	{ "json", 0, CLI_FLAG, NULL, NULL, "print a JSON object instead of the page" },
	{ 0 },
};

/* Compare the page with a file; report the first differing line. */
static int check_page(struct cli_args *a, const char *page, size_t len, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return cli_error(a, CLI_BADINPUT, "option --check: cannot read %s", path);
	size_t cap = len + 65536, n = 0;
	char *old = xmalloc(cap);
	for (size_t got; n < cap && (got = fread(old + n, 1, cap - n, f)) > 0;)
		n += got;
	fclose(f);
	int rc = CLI_OK;
	if (n != len || memcmp(old, page, len)) {
		size_t i = 0, line = 1;
		for (; i < n && i < len && old[i] == page[i]; i++)
			line += old[i] == '\n';
		rc = cli_error(a, CLI_FAIL, "%s is stale: line %zu differs from what the simulator "
			       "writes now; run `make validate` (clustersim validate%s -o %s) and "
			       "commit it", path, line, cli_has(a, "quick") ? " --quick" : "", path);
	}
	free(old);
	return rc;
}

/* A library call's VAL_ code as the exit code, its message printed. */
static int lib_rc(struct cli_args *a, int rc, const char *err)
{
	if (rc == VAL_OK)
		return CLI_OK;
	return cli_error(a, rc == VAL_FAIL ? CLI_FAIL : CLI_BADINPUT, "%s", err);
}

static int validate_run(struct cli_args *a)
{
	if (a->npos)
		return cli_error(a, CLI_BADINPUT, "unexpected argument '%s' (the cases come from "
				 "--dir)", a->pos[0]);
	char *dir = cli_has(a, "dir") ? xstrdup(cli_str(a, "dir", ""))
				      : xasprintf("%s/validation", scn_datadir());
	struct validation v = { 0 };
	char err[8192];
	int rc = CLI_OK;
	static const char *const tables[] = { "cases.csv", "collectives.csv" };
	for (size_t i = 0; rc == CLI_OK && cli_has(a, "output") && i < ARRAY_SIZE(tables); i++) {
		char *in = xasprintf("%s/%s", dir, tables[i]), *what = xasprintf("'%s'", in);
		rc = cli_check_same(a, "option -o", cli_str(a, "output", ""), what, in);
		free(in);
		free(what);
	}
	if (rc == CLI_OK && val_read(&v, dir, cli_has(a, "quick"), err, sizeof(err)) != VAL_OK)
		rc = cli_error(a, CLI_BADINPUT, "%s", err);
	for (size_t i = 0; rc == CLI_OK && i < v.ncases; i++) {
		fprintf(stderr, "validate: %s (%zu of %zu)\n", v.cases[i].id, i + 1, v.ncases);
		rc = lib_rc(a, val_run_case(&v, i, err, sizeof(err)), err);
	}
	for (size_t i = 0; rc == CLI_OK && i < v.ncolls; i++)
		rc = lib_rc(a, val_run_coll(&v, i, err, sizeof(err)), err);
	if (rc == CLI_OK) {
		char *page = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&page, &len);
		if (!mem)
			BUG("open_memstream failed");
		val_write_page(mem, &v);
		fclose(mem);
		if (cli_has(a, "json"))
			val_write_json(stdout, &v);
		else if (!cli_has(a, "output") && !cli_has(a, "check"))
			fwrite(page, 1, len, stdout);
		if (cli_has(a, "output")) {
			const char *out = cli_str(a, "output", "");
			struct sim_out o;
			if ((rc = cli_out_open(a, "option -o", out, &o)) == CLI_OK) {
				fwrite(page, 1, len, o.f);
				rc = cli_out_commit(a, "option -o", &o, CLI_OK);
			}
			if (rc == CLI_OK)
				fprintf(stderr, "validate: wrote %s\n", out);
		}
		if (rc == CLI_OK && cli_has(a, "check"))
			rc = check_page(a, page, len, cli_str(a, "check", ""));
		free(page);
	}
	val_free(&v);
	free(dir);
	return rc;
}

const struct cli_cmd cli_cmd_validate = {
	.name = "validate",
	.usage = "[--quick] [-o FILE | --check FILE] [--json] [--dir DIR]",
	.summary = "Compare predictions with published training runs and nccl-tests sweeps.",
	.description =
		"Runs every case of scenarios/validation/ (cases.csv: Megatron-LM, Megatron-Core "
		"and ZeRO figures; collectives.csv: nccl-tests sweeps, published or measured "
		"for clustersim) and compares each prediction with the measurement: TFLOP/s per "
		"GPU counted with the "
		"paper's own FLOP formula, iteration time, model-state memory, bus bandwidth. "
		"Prints the Markdown page of docs/validation.md: the calibration used, each case "
		"with its error, the median and worst absolute error per group, and every "
		"size of the collective sweeps. --check FILE fails (exit 1) when FILE differs "
		"from that page, so a committed page is always the current one; `make "
		"validate` rewrites it. Progress goes to standard error. With --json the object "
		"has fidelity, throughput_median_abs_error and throughput_worst_abs_error "
		"(fractions), cases [{id, group, metric, measured, predicted, error}] "
		"(predicted and error null where the case does not run) and collectives [{id, "
		"cluster, ranks, times (\"out-of-place\" or \"in-place\": the log's column; "
		"null for a single figure), points [{bytes, measured_busbw_Bps, "
		"predicted_busbw_Bps}]}].",
	.opts = validate_opts,
	.run = validate_run,
};
