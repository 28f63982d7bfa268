/*
 * main.c - the `clustersim` command: finds the subcommand in the table
 * (cli.c) and runs it. Results go to stdout, diagnostics to stderr.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

/* True if argv asks for help before any "--". */
static int wants_help(int argc, char **argv)
{
	for (int i = 0; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
	return 0;
}

int main(int argc, char **argv)
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
	if (wants_help(argc - 2, argv + 2)) {
		cli_help(stdout, cmd);
		return CLI_OK;
	}
	struct cli_args a;
	int rc = cli_parse(cmd, argc - 2, argv + 2, &a);
	char *line = cli_command_line(argc, argv);
	a.line = line;
	if (rc == CLI_OK)
		rc = cmd->run(&a);
	for (size_t i = 0; i < sizeof(a.list) / sizeof(a.list[0]); i++)
		free(a.list[i]);
	free(line);
	return rc;
}
