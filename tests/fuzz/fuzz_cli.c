/*
 * fuzz_cli.c - libFuzzer target for the command-line option parser
 * (tools/cli.c): the first byte picks a command, the rest is split at NUL
 * bytes into its arguments; every option is then read back through the
 * typed accessors (sizes, rates, times and counts with units). Parsing may
 * refuse, never crash or read out of bounds. Built and run by tools/fuzz.sh.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t ncmds = 0;
	while (cli_cmds[ncmds])
		ncmds++;
	if (size < 1)
		return 0;
	const struct cli_cmd *cmd = cli_cmds[data[0] % ncmds];
	char *buf = malloc(size);  /* data[1..] and a final NUL */
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = '\0';
	char *argv[MAX_ARGS];
	int argc = 0;
	for (size_t at = 0; at < size - 1 && argc < MAX_ARGS; at += strlen(buf + at) + 1)
		argv[argc++] = buf + at;
	struct cli_args a;
	if (cli_parse(cmd, argc, argv, &a) == CLI_OK) {
		for (int i = 0; cmd->opts[i].name; i++) {
			double v;
			long long c;
			switch (cmd->opts[i].arg) {
			case CLI_BYTES:
			case CLI_RATE:
			case CLI_TIME:
				cli_units(&a, cmd->opts[i].name, &v);
				break;
			case CLI_COUNT:
				cli_count(&a, cmd->opts[i].name, 0, 1LL << 40, &c);
				break;
			default:
				cli_str(&a, cmd->opts[i].name, NULL);
				break;
			}
		}
	}
	for (int i = 0; i < 32; i++)
		free(a.list[i]);
	free(buf);
	return 0;
}
