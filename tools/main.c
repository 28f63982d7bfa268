/*
 * main.c - the `clustersim` command: finds the subcommand in the table
 * (cli.c), refuses an output that is one of its inputs (cli_check_files)
 * and runs it. Results go to stdout, diagnostics to stderr.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "sim/mpi_pool.h"

/* True if argv asks for help before any "--". */
static int wants_help(int argc, char **argv)
{
	for (int i = 0; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
	return 0;
}

static int run(int argc, char **argv)
{
	if (argc < 2) {
		cli_help_all(stderr);
		return CLI_BADINPUT;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		cli_help_all(stdout);
		return CLI_OK;
	}
	if (!strcmp(argv[1], "--version"))
		argv[1] = "version";
	const struct cli_cmd *cmd = cli_find(argv[1]);
	if (!cmd) {
		fprintf(stderr, "clustersim: unknown command '%s' (see clustersim help)\n", argv[1]);
		return CLI_BADINPUT;
	}
	if (mp_launched() && (!mp_built() || !cmd->mpi)) {
		char names[128];
		cli_mpi_names(names, sizeof(names));
		if (!mp_built())
			fprintf(stderr, "clustersim %s: started by an MPI launcher, but this "
				"clustersim was built without MPI support (./configure "
				"--with-mpi): every rank would do the whole of clustersim %s; "
				"run it once, without mpirun\n", cmd->name, cmd->name);
		else if (mp_rank() == 0)
			fprintf(stderr, "clustersim %s: under mpirun only %s share their work "
				"between ranks; run %s once, without mpirun\n", cmd->name, names,
				cmd->name);
		return CLI_BADINPUT;
	}
	if (wants_help(argc - 2, argv + 2)) {
		cli_help(stdout, cmd);
		return CLI_OK;
	}
	struct cli_args a;
	int rc = cli_parse(cmd, argc - 2, argv + 2, &a);
	char *line = cli_command_line(argc, argv);
	a.line = line;
	if (rc == CLI_OK)
		rc = cli_check_files(&a);
	if (rc == CLI_OK)
		rc = cmd->run(&a);
	for (size_t i = 0; i < sizeof(a.list) / sizeof(a.list[0]); i++)
		free(a.list[i]);
	free(line);
	return rc;
}

/*
 * Under mpirun (built --with-mpi) every rank runs the same command; sweep
 * and plan share their points out (mpi_pool.h). Rank 0 tells the others
 * that no more points will come, whether its command succeeded or not.
 */
int main(int argc, char **argv)
{
	/* A file-size limit (ulimit -f) makes a write fail with EFBIG, which
	 * the output or database reports, instead of killing the process
	 * without a word. */
	signal(SIGXFSZ, SIG_IGN);
	mp_init(&argc, &argv);
	int rc = run(argc, argv);
	if (mp_size() > 1 && mp_rank() == 0)
		mp_stop_workers();
	mp_finalize();
	return rc;
}
