/*
 * sha256.c - SHA-256 as FIPS 180-4 section 6.2 gives it (sha256.h). Blocks
 * of 64 bytes, big-endian words; the padding is a 1 bit, zeros and the
 * message length in bits. Checked against the standard's test vectors in
 * tests/unit/test_sha256.c.
 */
#include "sim/sha256.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

static uint32_t ror(uint32_t x, int n)
{
	return x >> n | x << (32 - n);
}

/* One 64-byte block into the state (section 6.2.2). */
static void block(uint32_t h[8], const unsigned char *p)
{
	uint32_t w[64], v[8];
	for (int t = 0; t < 16; t++)
		w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
		       (uint32_t)p[4 * t + 2] << 8 | p[4 * t + 3];
	for (int t = 16; t < 64; t++) {
		uint32_t s0 = ror(w[t - 15], 7) ^ ror(w[t - 15], 18) ^ w[t - 15] >> 3;
		uint32_t s1 = ror(w[t - 2], 17) ^ ror(w[t - 2], 19) ^ w[t - 2] >> 10;
		w[t] = w[t - 16] + s0 + w[t - 7] + s1;
	}
	memcpy(v, h, sizeof(v));
	for (int t = 0; t < 64; t++) {
		uint32_t S1 = ror(v[4], 6) ^ ror(v[4], 11) ^ ror(v[4], 25);
		uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
		uint32_t t1 = v[7] + S1 + ch + K[t] + w[t];
		uint32_t S0 = ror(v[0], 2) ^ ror(v[0], 13) ^ ror(v[0], 22);
		uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
		memmove(v + 1, v, 7 * sizeof(v[0]));
		v[4] += t1;
		v[0] = t1 + S0 + maj;
	}
	for (int i = 0; i < 8; i++)
		h[i] += v[i];
}

void sha256_init(struct sha256 *c)
{
	static const uint32_t h0[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	memcpy(c->h, h0, sizeof(h0));
	c->bytes = 0;
}

void sha256_update(struct sha256 *c, const void *data, size_t n)
{
	const unsigned char *p = data;
	while (n) {
		size_t used = c->bytes % 64, k = 64 - used < n ? 64 - used : n;
		memcpy(c->buf + used, p, k);
		c->bytes += k, p += k, n -= k;
		if (c->bytes % 64 == 0)
			block(c->h, c->buf);
	}
}

void sha256_hex(struct sha256 *c, char out[65])
{
	uint64_t bits = c->bytes * 8;
	unsigned char pad[72] = { 0x80 };
	size_t npad = (c->bytes % 64 < 56 ? 56 : 120) - c->bytes % 64;
	for (int i = 0; i < 8; i++)
		pad[npad + (size_t)i] = (unsigned char)(bits >> (56 - 8 * i));
	sha256_update(c, pad, npad + 8);
	for (int i = 0; i < 8; i++)
		snprintf(out + 8 * i, 9, "%08x", c->h[i]);
}

int sha256_file(const char *path, char out[65])
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	struct sha256 c;
	unsigned char buf[65536];
	size_t n;
	sha256_init(&c);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		sha256_update(&c, buf, n);
	int err = ferror(f), e = errno;
	fclose(f);
	if (err) {
		errno = e;
		return -1;
	}
	sha256_hex(&c, out);
	return 0;
}
