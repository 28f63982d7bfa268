/*
 * test_sha256.c - sim/sha256.c against the test vectors of FIPS 180-4's
 * examples (NIST CSRC): "abc", the empty string, the two-block message of
 * 448 bits and a million 'a's, fed whole and in uneven pieces, and a file.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/checkmain.h"
#include "sim/sha256.h"

static void digest_of(const char *s, size_t n, size_t piece, char out[65])
{
	struct sha256 c;
	sha256_init(&c);
	for (size_t i = 0; i < n; i += piece)
		sha256_update(&c, s + i, n - i < piece ? n - i : piece);
	sha256_hex(&c, out);
}

START_TEST(test_vectors)
{
	static const struct {
		const char *msg, *hex;
	} v[] = {
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
	};
	char out[65];
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		for (size_t piece = 1; piece <= 64; piece += 7) {
			digest_of(v[i].msg, strlen(v[i].msg), piece, out);
			ck_assert_msg(!strcmp(out, v[i].hex), "'%s' in pieces of %zu: %s", v[i].msg,
				      piece, out);
		}
}
END_TEST

START_TEST(test_million)
{
	size_t n = 1000000;
	char *a = malloc(n), out[65];
	memset(a, 'a', n);
	digest_of(a, n, 4093, out);
	ck_assert_str_eq(out, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	char path[] = "/tmp/test_sha256.XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, a, n), (ssize_t)n);
	close(fd);
	char file[65];
	ck_assert_int_eq(sha256_file(path, file), 0);
	ck_assert_str_eq(file, out);
	unlink(path);
	ck_assert_int_eq(sha256_file(path, file), -1);
	free(a);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sha256");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_vectors);
	tcase_add_test(tc, test_million);
	suite_add_tcase(s, tc);
	return check_run(s);
}
