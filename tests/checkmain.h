/*
 * checkmain.h - what every Check test program ends with: a suite of SPEC
 * items (one test case per item, named by its number), and main's run.
 * Header-only, like testlib.h.
 */
#ifndef TESTS_CHECKMAIN_H
#define TESTS_CHECKMAIN_H

#include <check.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* One SPEC item: its number ("C1") and its test. */
struct spec_item {
	const char *name;
	const TTest *test;
};

/*
 * A suite with a test case per SPEC item: consecutive entries of one name
 * are that item's tests. Each case is allowed timeout_s seconds (0: Check's
 * default).
 */
static inline Suite *spec_suite_of(const char *title, const struct spec_item *items,
				   size_t n, double timeout_s)
{
	Suite *s = suite_create(title);
	TCase *tc = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!tc || strcmp(items[i].name, items[i - 1].name) != 0) {
			tc = tcase_create(items[i].name);
			if (timeout_s > 0)
				tcase_set_timeout(tc, timeout_s);
			suite_add_tcase(s, tc);
		}
		_tcase_add_test(tc, items[i].test, 0, 0, 0, 1);
	}
	return s;
}

/* Run every test of s; the exit status of the program. */
static inline int check_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
