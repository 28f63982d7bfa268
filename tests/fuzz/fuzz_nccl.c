/*
 * fuzz_nccl.c - libFuzzer target for the nccl-tests log reader
 * (collectives/nccl.c): any bytes are read as a log; a log that reads is
 * also fitted over every size. Never a crash, a leak or an out-of-bounds
 * read. Built and run by tools/fuzz.sh.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "collectives/nccl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nccl_log log;
	char err[512];
	if (nccl_log_parse(&log, "fuzz.txt", (const char *)data, size, err, sizeof(err)) < 0)
		return 0;
	struct nccl_point *p = malloc((log.nrows ? log.nrows : 1) * sizeof(*p));
	uint32_t n = log.ranks >= 2 ? log.ranks : 8;
	enum nccl_op op = log.op != NCCL_OP_NONE ? log.op : NCCL_OP_ALLREDUCE;
	for (size_t i = 0; i < log.nrows; i++)
		p[i] = (struct nccl_point){ op, n, log.rows[i].bytes, log.rows[i].time_s[0] };
	double lo, hi;
	struct nccl_fit fit;
	nccl_fit_range(p, log.nrows, &lo, &hi);
	nccl_fit(p, log.nrows, lo, hi, &fit, err, sizeof(err));
	free(p);
	nccl_log_free(&log);
	return 0;
}
