/*
 * fuzz_scenario.c - libFuzzer target for the scenario loader: each input is
 * written to a file and loaded as a scenario, as `clustersim run` loads one
 * (YAML, keys, values with units, presets, cross-key validation, a jobs
 * list with each job's keys and placement). Loading
 * may fail, never crash, leak or read out of bounds. Built and run by
 * tools/fuzz.sh.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "scenarios/scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/fuzz_scenario.%d.yaml", (int)getpid());
	FILE *f = fopen(path, "wb");
	if (!f)
		abort();
	if (size && fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);
	struct scn_jobs js;
	char err[SCN_ERRLEN];
	if (scn_load_jobs(&js, path, NULL, 0, err, sizeof(err)) == 0)
		scn_jobs_free(&js);
	return 0;
}
