/*
 * sha256.h - SHA-256 (FIPS 180-4) of bytes and of a file, as lowercase hex:
 * what identifies a sweep's scenario by its content (cmd_sweep.c). The
 * caller owns every buffer; nothing is kept between calls.
 */
#ifndef SIM_SHA256_H
#define SIM_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
	uint32_t h[8];
	uint64_t bytes;           /* hashed so far             */
	unsigned char buf[64];    /* a block being filled      */
};

void sha256_init(struct sha256 *c);
void sha256_update(struct sha256 *c, const void *data, size_t n);
/* The digest as 64 hex digits and a NUL. */
void sha256_hex(struct sha256 *c, char out[65]);

/* The digest of a file's bytes: 0, or -1 with errno. */
int sha256_file(const char *path, char out[65]);

#endif
