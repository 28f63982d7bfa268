/*
 * cli.c - subcommand table, option parsing and help generated from the
 * option tables (see cli.h).
 */
#include "config.h"
#include "tools/cli.h"
#include "tools/svg.h"

#include <csv.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/goodput.h"
#include "scenarios/scenario.h"
#include "sim/outfile.h"
#include "sim/store.h"
#include "sim/util.h"
#include "sim/mpi_pool.h"

const struct cli_cmd *const cli_cmds[] = {
	&cli_cmd_run,
	&cli_cmd_sweep,
	&cli_cmd_plan,
	&cli_cmd_collective,
	&cli_cmd_calibrate,
	&cli_cmd_validate,
	&cli_cmd_export,
	&cli_cmd_plot,
	&cli_cmd_report,
	&cli_cmd_presets,
	&cli_cmd_help,
	&cli_cmd_version,
	NULL,
};

const struct cli_cmd *cli_find(const char *name)
{
	for (const struct cli_cmd *const *c = cli_cmds; *c; c++)
		if (strcmp((*c)->name, name) == 0)
			return *c;
	return NULL;
}

int cli_error(const struct cli_args *a, int code, const char *fmt, ...)
{
	va_list ap;
	if (mp_rank() > 0)
		return code;  /* under mpirun, rank 0 says it once */
	fprintf(stderr, "clustersim %s: ", a->cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

int cli_fold_option(const struct cli_args *a, const char *option, const char *key,
		    const char **sets, size_t *n)
{
	if (!cli_has(a, option))
		return CLI_OK;
	const char *v = cli_str(a, option, "");
	struct scn *s = xcalloc(1, sizeof(*s));  /* a scratch scenario: one key set */
	char err[SCN_ERRLEN];
	int rc = scn_set(s, key, v, err, sizeof(err));
	free(s);
	if (rc < 0)  /* "option --steps: sim.steps: expected ...": the option, then its key */
		return cli_error(a, CLI_BADINPUT, "option --%s: %s", option, err);
	sets[(*n)++] = xasprintf("%s=%s", key, v);
	return CLI_OK;
}

void cli_warn_scenario(const struct cli_args *a, const struct scn *s, const char *label)
{
	if (!s->warnings[0] || mp_rank() > 0)
		return;
	fprintf(stderr, "clustersim %s: warning: %s: %s\n", a->cmd->name,
		label ? label : *s->path ? s->path : "--set", s->warnings);
}

static int opt_index(const struct cli_cmd *cmd, const char *name)
{
	for (int i = 0; cmd->opts[i].name; i++)
		if (strcmp(cmd->opts[i].name, name) == 0)
			return i;
	return -1;
}

static int opt_letter(const struct cli_cmd *cmd, char c)
{
	for (int i = 0; cmd->opts[i].name; i++)
		if (cmd->opts[i].letter == c)
			return i;
	return -1;
}

/* Record value v for option i (NULL for a flag). */
static void set_value(struct cli_args *a, int i, const char *v)
{
	a->given[i] = 1;
	a->val[i] = v;
	if (a->cmd->opts[i].arg == CLI_LIST) {
		a->list[i] = xreallocarray(a->list[i], (size_t)a->nlist[i] + 1, sizeof(char *));
		a->list[i][a->nlist[i]++] = v;
	}
}

static int add_pos(struct cli_args *a, const char *s)
{
	if (a->npos == (int)ARRAY_SIZE(a->pos))
		return cli_error(a, -1, "too many arguments (at '%s')", s);
	a->pos[a->npos++] = s;
	return 0;
}

int cli_parse(const struct cli_cmd *cmd, int argc, char **argv, struct cli_args *a)
{
	memset(a, 0, sizeof(*a));
	a->cmd = cmd;
	for (int k = 0; k < argc; k++) {
		const char *s = argv[k], *inline_val = NULL;
		int i = -1;
		if (strcmp(s, "--") == 0) {  /* the rest is positional */
			while (++k < argc)
				if (add_pos(a, argv[k]) < 0)
					return CLI_BADINPUT;
			break;
		}
		if (s[0] != '-' || s[1] == 0) {
			if (add_pos(a, s) < 0)
				return CLI_BADINPUT;
			continue;
		}
		if (s[1] == '-') {
			char name[64];
			const char *eq = strchr(s + 2, '=');
			size_t n = eq ? (size_t)(eq - s - 2) : strlen(s + 2);
			snprintf(name, sizeof(name), "%.*s", (int)n, s + 2);
			i = opt_index(cmd, name);
			inline_val = eq ? eq + 1 : NULL;
		} else if (!s[2]) {
			i = opt_letter(cmd, s[1]);
		}
		if (i < 0)
			return cli_error(a, CLI_BADINPUT, "unknown option '%s' (see clustersim help %s)",
					 s, cmd->name);
		const struct cli_opt *o = &cmd->opts[i];
		if (o->arg == CLI_FLAG) {
			if (inline_val)
				return cli_error(a, CLI_BADINPUT, "option --%s takes no value", o->name);
			set_value(a, i, NULL);
			continue;
		}
		if (!inline_val) {
			if (k + 1 >= argc)
				return cli_error(a, CLI_BADINPUT, "option --%s needs a value (%s)",
						 o->name, o->meta);
			inline_val = argv[++k];
		}
		set_value(a, i, inline_val);
	}
	return CLI_OK;
}

static int must_index(const struct cli_args *a, const char *name)
{
	int i = opt_index(a->cmd, name);
	if (i < 0)
		BUG("option --%s is not in the table of '%s'", name, a->cmd->name);
	return i;
}

int cli_has(const struct cli_args *a, const char *name)
{
	return a->given[must_index(a, name)];
}

const char *cli_str(const struct cli_args *a, const char *name, const char *def)
{
	int i = must_index(a, name);
	return a->given[i] ? a->val[i] : def;
}

const char **cli_list(const struct cli_args *a, const char *name, int *n)
{
	int i = must_index(a, name);
	*n = a->nlist[i];
	return a->list[i];
}

/* "-b/--minbytes" or "--db", for messages. */
static const char *opt_name(const struct cli_opt *o, char *buf, size_t len)
{
	if (o->letter)
		snprintf(buf, len, "-%c/--%s", o->letter, o->name);
	else
		snprintf(buf, len, "--%s", o->name);
	return buf;
}

/* ---- files read and written ------------------------------------------------------ */

int cli_check_same(struct cli_args *a, const char *out_what, const char *out,
		   const char *in_what, const char *in)
{
	if (!sim_out_same(out, in))
		return CLI_OK;
	return cli_error(a, CLI_BADINPUT, "%s: '%s' is the same file as the input %s: "
			 "writing it would destroy that input, so nothing was written; choose "
			 "another file", out_what, out, in_what);
}

/* Refuse out if it is the input in or, should in be a database, one of
 * the files SQLite keeps beside it (its WAL, shared memory and journal),
 * whose loss loses what is written there. what names in. */
static int check_input(struct cli_args *a, const char *out_what, const char *out,
		       const char *what, const char *in)
{
	static const char *const sides[] = { "", "-wal", "-shm", "-journal" };
	int rc = CLI_OK;
	for (size_t k = 0; k < ARRAY_SIZE(sides) && rc == CLI_OK; k++) {
		char *side = xasprintf("%s%s", in, sides[k]);
		char *side_what = k ? xasprintf("'%s' (beside %s)", side, what) : xstrdup(what);
		if (!k || strcmp(in, "-"))
			rc = cli_check_same(a, out_what, out, side_what, side);
		free(side);
		free(side_what);
	}
	return rc;
}

/* The inputs of the command line: its options of type CLI_FILE_IN or
 * CLI_FILE_DB, and its positional arguments after pos_words. */
static int check_against_inputs(struct cli_args *a, const char *out_what, const char *out,
				int out_opt)
{
	char what[1200];
	for (int i = 0; a->cmd->opts[i].name; i++) {
		const struct cli_opt *o = &a->cmd->opts[i];
		if (i == out_opt || !a->given[i] || (o->arg != CLI_FILE_IN && o->arg != CLI_FILE_DB))
			continue;
		char on[80];
		snprintf(what, sizeof(what), "'%.1024s' (option %s)", a->val[i],
			 opt_name(o, on, sizeof(on)));
		if (check_input(a, out_what, out, what, a->val[i]) != CLI_OK)
			return CLI_BADINPUT;
	}
	for (int k = a->cmd->pos_words; k < a->npos; k++) {
		snprintf(what, sizeof(what), "'%.1024s'", a->pos[k]);
		if (check_input(a, out_what, out, what, a->pos[k]) != CLI_OK)
			return CLI_BADINPUT;
	}
	return CLI_OK;
}

int cli_check_files(struct cli_args *a)
{
	for (int i = 0; a->cmd->opts[i].name; i++) {
		const struct cli_opt *o = &a->cmd->opts[i];
		if (!a->given[i] || (o->arg != CLI_FILE_OUT && o->arg != CLI_FILE_DB))
			continue;
		char what[96], on[80];
		snprintf(what, sizeof(what), "option %s", opt_name(o, on, sizeof(on)));
		if (check_against_inputs(a, what, a->val[i], i) != CLI_OK)
			return CLI_BADINPUT;
	}
	return CLI_OK;
}

int cli_out_open(struct cli_args *a, const char *what, const char *path, struct sim_out *o)
{
	char err[1200];
	enum sim_out_rc rc = sim_out_open(o, path, err, sizeof(err));
	if (rc == SIM_OUT_OK)
		return CLI_OK;
	return cli_error(a, rc == SIM_OUT_BADPATH ? CLI_BADINPUT : CLI_FAIL, "%s: %s", what, err);
}

int cli_out_commit(struct cli_args *a, const char *what, struct sim_out *o, int rc)
{
	if (rc != CLI_OK) {
		sim_out_abort(o);
		return rc;
	}
	char err[1200];
	if (sim_out_commit(o, err, sizeof(err)) != SIM_OUT_OK)
		return cli_error(a, CLI_FAIL, "%s: %s", what, err);
	return CLI_OK;
}

int cli_store_open(struct cli_args *a, const char *path, struct sim_store **st)
{
	char err[1024];
	enum sim_store_fail why;
	*st = sim_store_open_why(path, &why, err, sizeof(err));
	if (*st)
		return CLI_OK;
	return cli_error(a, why == SIM_STORE_NOT_OURS ? CLI_BADINPUT : CLI_FAIL, "option --db: %s",
			 err);
}


int cli_units(const struct cli_args *a, const char *name, double *out)
{
	int i = must_index(a, name);
	if (!a->given[i])
		return 0;
	enum cli_arg t = a->cmd->opts[i].arg;
	enum sim_unit u = t == CLI_RATE ? SIM_UNIT_RATE : t == CLI_TIME ? SIM_UNIT_TIME
									 : SIM_UNIT_BYTES;
	char why[256], on[80];
	if (sim_units_parse(u, a->val[i], out, why, sizeof(why)) < 0) {
		cli_error(a, CLI_BADINPUT, "option %s: %s",
			  opt_name(&a->cmd->opts[i], on, sizeof(on)), why);
		return -1;
	}
	return 0;
}

int cli_count(const struct cli_args *a, const char *name, long long min, long long max,
	      long long *out)
{
	int i = must_index(a, name);
	if (!a->given[i])
		return 0;
	unsigned long long n;
	long long v = 0;
	BUG_ON(min < 0 || max < min);
	if (sim_whole_parse(a->val[i], (unsigned long long)max, &n, NULL, 0) == 0)
		v = (long long)n;
	else
		v = min - 1;  /* refused below */
	if (v < min) {
		char on[80];
		cli_error(a, CLI_BADINPUT, "option %s: expected a whole number from %lld to %lld, "
			  "got '%s'", opt_name(&a->cmd->opts[i], on, sizeof(on)), min, max, a->val[i]);
		return -1;
	}
	*out = v;
	return 0;
}

void cli_csv_field(FILE *f, const char *s, int first)
{
	if (!first)
		fputc(',', f);
	if (!s)
		return;
	if (strpbrk(s, ",\"\r\n"))
		csv_fwrite(f, s, strlen(s));
	else
		fputs(s, f);
}

char *cli_command_line(int argc, char **argv)
{
	size_t n = 1;
	for (int i = 0; i < argc; i++)
		n += strlen(argv[i]) + 1;
	char *s = xmalloc(n), *p = s;
	for (int i = 0; i < argc; i++)
		p += sprintf(p, "%s%s", i ? " " : "", argv[i]);
	*p = 0;
	return s;
}

/* ---- help ------------------------------------------------------------------------ */

static void opt_label(const struct cli_opt *o, char *buf, size_t len)
{
	if (o->letter)
		snprintf(buf, len, "-%c, --%s%s%s", o->letter, o->name, o->meta ? " " : "",
			 o->meta ? o->meta : "");
	else
		snprintf(buf, len, "    --%s%s%s", o->name, o->meta ? " " : "", o->meta ? o->meta : "");
}

void cli_help(FILE *out, const struct cli_cmd *cmd)
{
	fprintf(out, "usage: clustersim %s %s\n\n%s\n", cmd->name, cmd->usage, cmd->summary);
	if (cmd->description)
		fprintf(out, "\n%s\n", cmd->description);
	if (cmd->opts[0].name)
		fprintf(out, "\noptions:\n");
	for (const struct cli_opt *o = cmd->opts; o->name; o++) {
		char label[96];
		opt_label(o, label, sizeof(label));
		fprintf(out, "  %-28s %s", label, o->help);
		if (o->def)
			fprintf(out, " (default: %s)", o->def);
		fputc('\n', out);
	}
}

void cli_help_all(FILE *out)
{
	fprintf(out, "usage: clustersim COMMAND [OPTIONS]\n\n"
		"clustersim simulates large-model training on GPU clusters.\n\ncommands:\n");
	for (const struct cli_cmd *const *c = cli_cmds; *c; c++)
		fprintf(out, "  %-12s %s\n", (*c)->name, (*c)->summary);
	fprintf(out, "\n'clustersim help COMMAND' describes a command and its options.\n"
		"Exit codes: 0 success, 1 failure while running, 2 bad input, 3 does not fit.\n");
}

void cli_help_markdown(FILE *out)
{
	fprintf(out, "# clustersim command line\n\n"
		"Generated by `clustersim help --markdown`; a test checks that this file is current.\n\n"
		"Exit codes: 0 success, 1 a failure while running (a database or output file "
		"that cannot be written: read-only, a full disk, a file-size limit; an internal "
		"error), 2 bad input (options, values, files, another program's database, an "
		"output that is one of the command's inputs; the message names the option and "
		"what was expected), 3 a layout that does not fit in memory.\n\n"
		"Every file a command writes (--csv, --svg, --trace, -o) is written to a "
		"temporary file beside it and renamed into place only when complete, so an "
		"error leaves the old file as it was; - is standard output. An output that is "
		"one of the command's inputs (the same path, another spelling of it, a link "
		"to it) is refused before anything is written. A --db file must be new, empty "
		"or a clustersim database (docs/schema.md); another program's SQLite file is "
		"refused untouched.\n\n"
		"Sizes, rates and times take units: 1GB = 1e9 bytes, 1GiB = 2^30 bytes, "
		"50GB/s, 400Gb/s (bits), 10us, 1.5ms. A number without a unit is an error, "
		"except 0. Ambiguous suffixes such as 128M are refused.\n");
	for (const struct cli_cmd *const *c = cli_cmds; *c; c++) {
		const struct cli_cmd *cmd = *c;
		fprintf(out, "\n## clustersim %s\n\n```\nclustersim %s %s\n```\n\n%s\n",
			cmd->name, cmd->name, cmd->usage, cmd->summary);
		if (cmd->description)
			fprintf(out, "\n%s\n", cmd->description);
		if (!cmd->opts[0].name)
			continue;
		fprintf(out, "\n| option | value | default | meaning |\n|---|---|---|---|\n");
		for (const struct cli_opt *o = cmd->opts; o->name; o++) {
			fprintf(out, "| ");
			if (o->letter)
				fprintf(out, "`-%c`, ", o->letter);
			fprintf(out, "`--%s` | %s | %s | %s |\n", o->name, o->meta ? o->meta : "",
				o->def ? o->def : "", o->help);
		}
	}
}

/* ---- help and version as commands ------------------------------------------------ */

static const struct cli_opt help_opts[] = {
	{ "markdown", 0, CLI_FLAG, NULL, NULL, "print every command's help as Markdown (docs/cli.md)" },
	{ "keys", 0, CLI_FLAG, NULL, NULL,
	  "print every scenario key as a Markdown table (docs/scenario.md)" },
	{ "job-keys", 0, CLI_FLAG, NULL, NULL,
	  "print the keys of an item of a scenario's jobs list as a Markdown table "
	  "(docs/scenario.md)" },
	{ 0 },
};

static int help_run(struct cli_args *a)
{
	if (cli_has(a, "markdown")) {
		cli_help_markdown(stdout);
		return CLI_OK;
	}
	if (cli_has(a, "keys")) {
		scn_keys_markdown(stdout);
		return CLI_OK;
	}
	if (cli_has(a, "job-keys")) {
		scn_job_keys_markdown(stdout);
		return CLI_OK;
	}
	if (a->npos == 0) {
		cli_help_all(stdout);
		return CLI_OK;
	}
	const struct cli_cmd *cmd = cli_find(a->pos[0]);
	if (!cmd)
		return cli_error(a, CLI_BADINPUT, "unknown command '%s' (see clustersim help)",
				 a->pos[0]);
	cli_help(stdout, cmd);
	return CLI_OK;
}

const struct cli_cmd cli_cmd_help = {
	.name = "help",
	.usage = "[COMMAND] [--markdown] [--keys] [--job-keys]",
	.summary = "Describe the commands, or one command and its options.",
	.opts = help_opts,
	.run = help_run,
};

static const struct cli_opt no_opts[] = { { 0 } };

void cli_mpi_names(char *buf, size_t len)
{
	size_t n = 0, k = 0;
	for (const struct cli_cmd *const *c = cli_cmds; *c; c++)
		n += (*c)->mpi != 0;
	buf[0] = '\0';
	for (const struct cli_cmd *const *c = cli_cmds; *c; c++) {
		if (!(*c)->mpi)
			continue;
		size_t used = strlen(buf);
		snprintf(buf + used, len - used, "%s%s", k == 0 ? "" : k + 1 == n ? " and " : ", ",
			 (*c)->name);
		k++;
	}
}

static int version_run(struct cli_args *a)
{
	char names[128];
	(void)a;
	cli_mpi_names(names, sizeof(names));
	printf("clustersim %s\n", PACKAGE_VERSION);
	if (mp_built())
		printf("MPI: built in (%s spread over mpirun's ranks)\n", names);
	else
		printf("MPI: not built (./configure --with-mpi)\n");
	return CLI_OK;
}

const struct cli_cmd cli_cmd_version = {
	.name = "version",
	.usage = "",
	.summary = "Print the version.",
	.opts = no_opts,
	.run = version_run,
};

/* s as a JSON string: quotes, backslashes and control characters escaped,
 * invalid UTF-8 replaced by U+FFFD. NULL is "". */
void cli_json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	fputc('"', f);
	while (*p) {
		size_t n = gantt_utf8_len(p);
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else if (n == 0)
			fputs("\\ufffd", f);
		else
			fwrite(p, 1, n, f);
		p += n ? n : 1;
	}
	fputc('"', f);
}
