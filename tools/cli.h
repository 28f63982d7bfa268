/*
 * cli.h - the `clustersim` command: one table of subcommands, each with a
 * declarative table of options from which parsing, `help` and docs/cli.md
 * are all generated.
 *
 * Exit codes: 0 success, 1 a failure while running (a database or output
 * that cannot be written, internal), 2 bad input (options, values, files,
 * an output that is also an input), 3 a layout that does not fit.
 */
#ifndef CLI_CLI_H
#define CLI_CLI_H

#include <stdio.h>

#include "sim/units.h"

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_BADINPUT = 2, CLI_NOFIT = 3 };

enum cli_arg {
	CLI_FLAG,     /* no value                            */
	CLI_STR,      /* any text                            */
	CLI_COUNT,    /* whole number, no unit               */
	CLI_BYTES,    /* size with unit                      */
	CLI_RATE,     /* rate with unit                      */
	CLI_TIME,     /* time with unit                      */
	CLI_LIST,     /* repeatable text (--set K=V ...)     */
	/* Paths, read as text, that cli_check_files() compares: */
	CLI_FILE_IN,  /* a file the command reads            */
	CLI_FILE_OUT, /* a file (or folder) it writes        */
	CLI_FILE_DB,  /* a database it reads and adds to     */
};

struct cli_opt {
	const char *name;     /* long name without dashes            */
	char letter;          /* short name, or 0                    */
	enum cli_arg arg;
	const char *meta;     /* value placeholder in help           */
	const char *def;      /* default as shown in help, or NULL   */
	const char *help;
};

/* Parsed options of one command: values by option index. */
struct cli_args {
	const struct cli_cmd *cmd;
	const char *val[32];          /* last value given, NULL if absent  */
	int given[32];
	const char **list[32];        /* CLI_LIST values                   */
	int nlist[32];
	const char *pos[8];           /* positional arguments              */
	int npos;
	const char *line;             /* the whole command line            */
};

struct cli_cmd {
	const char *name;
	const char *usage;            /* after "clustersim NAME "          */
	const char *summary;          /* one line                          */
	const char *description;      /* paragraphs for help and docs      */
	const struct cli_opt *opts;   /* terminated by { 0 }               */
	int (*run)(struct cli_args *a);
	int mpi;                      /* shares its work over mpirun's ranks
				       * (sim/mpi_pool.h)                 */
	int pos_words;                /* positional arguments before the files
				       * it reads (calibrate's nccl or gemm);
				       * the others are all files it reads  */
};

/*
 * The subcommands. To add one: write tools/cmd_NAME.c exporting
 * `const struct cli_cmd cli_cmd_NAME`, declare it here, add it to
 * cli_cmds in cli.c and to clustersim_SOURCES in Makefile.am, regenerate
 * docs/cli.md (`clustersim help --markdown > docs/cli.md`) and add a case
 * to tests/cli/test_cli.sh.
 */
extern const struct cli_cmd cli_cmd_run;
extern const struct cli_cmd cli_cmd_collective;
extern const struct cli_cmd cli_cmd_calibrate;
extern const struct cli_cmd cli_cmd_validate;
extern const struct cli_cmd cli_cmd_sweep;
extern const struct cli_cmd cli_cmd_plan;
extern const struct cli_cmd cli_cmd_export;
extern const struct cli_cmd cli_cmd_plot;
extern const struct cli_cmd cli_cmd_report;
extern const struct cli_cmd cli_cmd_presets;
extern const struct cli_cmd cli_cmd_help;
extern const struct cli_cmd cli_cmd_version;
extern const struct cli_cmd *const cli_cmds[];

const struct cli_cmd *cli_find(const char *name);

/* Parse argv (after the command name). Prints the error; CLI_OK or CLI_BADINPUT. */
int cli_parse(const struct cli_cmd *cmd, int argc, char **argv, struct cli_args *a);

/* Accessors by long name; a name not in the table is a bug. */
int cli_has(const struct cli_args *a, const char *name);
const char *cli_str(const struct cli_args *a, const char *name, const char *def);
/* The values of a list option (CLI_LIST), in the order given; their number
 * in *n. */
const char **cli_list(const struct cli_args *a, const char *name, int *n);
/*
 * Typed values: parse the option's value with units (bytes, rate, time) or
 * as a whole number in [min, max]; on error print "clustersim NAME: option
 * --x: why" to stderr and return -1. Absent options leave *out unchanged.
 */
int cli_units(const struct cli_args *a, const char *name, double *out);
int cli_count(const struct cli_args *a, const char *name, long long min, long long max,
	      long long *out);

/*
 * Outputs never destroy inputs. Every output (an option of type CLI_FILE_OUT
 * or CLI_FILE_DB) is compared with every input (options of type
 * CLI_FILE_IN or CLI_FILE_DB, and the positional arguments after
 * pos_words) and with the files SQLite keeps beside an input (-wal, -shm,
 * -journal) by sim_out_same(); one that is the same file is refused
 * (CLI_BADINPUT, with a message naming both) before anything is read or
 * written. main() calls it for every command; commands whose inputs or
 * outputs are not named on the command line (the files of a folder) check
 * them with cli_check_same().
 */
int cli_check_files(struct cli_args *a);
/* Refuse output out if it is the same file as input in; out_what and
 * in_what name them in the message ("option -o", "'DIR/gemm.csv'").
 * CLI_OK or CLI_BADINPUT. */
int cli_check_same(struct cli_args *a, const char *out_what, const char *out,
		   const char *in_what, const char *in);

/*
 * Every file a command writes goes through sim/outfile.h: written to a
 * temporary file beside it and renamed into place only when complete.
 * what names the output in messages ("option --csv"). cli_out_open:
 * CLI_OK, or the message printed and CLI_BADINPUT for a path that names no
 * file (a missing folder), CLI_FAIL for one that cannot be written.
 * cli_out_commit: rc unchanged when it is not CLI_OK (the output is then
 * abandoned, the old file kept), else the commit's CLI_OK or CLI_FAIL.
 */
struct sim_out;
int cli_out_open(struct cli_args *a, const char *what, const char *path, struct sim_out *o);
int cli_out_commit(struct cli_args *a, const char *what, struct sim_out *o, int rc);

/*
 * Open the database path for writing (sim_store_open). CLI_OK; or the
 * message printed ("option --db: ...") and CLI_BADINPUT for a file that is
 * not a clustersim database, CLI_FAIL for one that cannot be written.
 */
struct sim_store;
int cli_store_open(struct cli_args *a, const char *path, struct sim_store **st);

/*
 * An option that stands for a scenario key (--steps for sim.steps): check
 * its value as the key would, naming the option the user typed in the
 * error ("option --steps: sim.steps: expected a whole number from 1 to
 * 100000, got '0'"), and append "KEY=VALUE" to sets[*n] (allocated: the caller frees
 * it). Nothing when the option is not given. CLI_OK or CLI_BADINPUT.
 */
int cli_fold_option(const struct cli_args *a, const char *option, const char *key,
		    const char **sets, size_t *n);

/* Print what a scenario's validation let pass but should say (its
 * warnings, e.g. parallel.tp_across_nodes) to stderr. */
struct scn;
void cli_warn_scenario(const struct cli_args *a, const struct scn *s, const char *label);

/* s as a JSON string on f, whole: quotes, backslashes and control
 * characters escaped, invalid UTF-8 replaced by U+FFFD. NULL is "". */
void cli_json_str(FILE *f, const char *s);

/* Print "clustersim CMD: message" to stderr and return code. */
int cli_error(const struct cli_args *a, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The help text of one command, or of all, as text or Markdown. */
void cli_help(FILE *out, const struct cli_cmd *cmd);
void cli_help_all(FILE *out);
/* The names of the commands with .mpi set: "sweep and plan". */
void cli_mpi_names(char *buf, size_t len);
void cli_help_markdown(FILE *out);

/*
 * Write one CSV field (after a comma unless first): quoted by libcsv when it
 * holds a comma, quote or line break, as it is otherwise. NULL is empty.
 */
void cli_csv_field(FILE *f, const char *s, int first);

/* The command line as one string (stored with every run); caller frees. */
char *cli_command_line(int argc, char **argv);

/* `run` of a scenario with a jobs list (run_jobs.c): simulate, store (--db)
 * and print as run does; the exit code. */
struct scn_jobs;
int cli_run_jobs(struct cli_args *a, struct scn_jobs *js);


/*
 * Reading a stored run (cmd_export.c; also used by cmd_plot.c and
 * cmd_report.c) through the store module (sim/store_read.h). The database
 * is the command's first positional argument.
 * cli_read_open: open it read-only, or print why not ("cannot read
 * database ...") and return CLI_BADINPUT; the caller closes *db.
 * cli_read_run: the run to read: with --run, *run if it exists and is
 * complete, else the newest complete run; CLI_BADINPUT with a message
 * naming --run or the file (also for a file that is not a clustersim
 * database).
 * cli_read_error: a query of the store module failed: "PATH: not a
 * clustersim database (why)" and CLI_BADINPUT when the file is not SQLite
 * or lacks the tables, else (an I/O error, a file-size limit) "PATH: cannot
 * read the database: why" and CLI_FAIL.
 */
struct sim_store_read;
int cli_read_open(struct cli_args *a, struct sim_store_read **db);
int cli_read_run(struct cli_args *a, struct sim_store_read *db, long long *run);
int cli_read_error(const struct cli_args *a, const struct sim_store_read *db, const char *path);
/* --plan ID|last of report and plot: read that plan of the database
 * (scn_plan_load) into *h and *v (*n layouts; scn_plan_free and free), or
 * print why not (no such plan, a bad id) and return the exit code. */
struct scn_plan_head;
struct scn_plan_layout;
int cli_read_plan(struct cli_args *a, struct scn_plan_head *h, struct scn_plan_layout **v,
		  size_t *n);


#endif
