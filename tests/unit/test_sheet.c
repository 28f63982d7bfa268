/*
 * test_sheet.c - unit tests for sim/sheet.c: a CSV file read by column
 * name (quoted fields with commas and line breaks, CRLF, a byte-order
 * mark), and the files it refuses with file and line named.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/sheet.h"
#include "tests/checkmain.h"

static char dir[64];

/* Write text to dir/name. */
static void put(const char *name, const char *text)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_sheet.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_read_by_name)
{
	put("a.csv", "\xEF\xBB\xBFid,value,note\r\n"
		     "x,1.5,\"a, b\"\r\n"
		     "y,2e3,\"two\nlines\"\r\n"
		     "z,0,\r\n");
	struct sheet sh;
	char err[256];
	ck_assert_msg(sheet_read(&sh, dir, "a.csv", err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(sh.nrows, 3);
	int col[3];
	const char *names[] = { "note", "id", "value" };
	ck_assert_int_eq(sheet_cols(&sh, names, col, 3, err, sizeof(err)), 0);
	ck_assert_int_eq(col[1], 0);  /* the BOM is not part of "id" */
	ck_assert_str_eq(sheet_cell(&sh, 0, col[0]), "a, b");
	ck_assert_str_eq(sheet_cell(&sh, 1, col[0]), "two\nlines");
	ck_assert_str_eq(sheet_cell(&sh, 2, col[0]), "");
	ck_assert_uint_eq(sh.line[2], 5);  /* the quoted line break counts */
	double v;
	ck_assert_int_eq(sheet_pos(&sh, 1, col[2], &v, err, sizeof(err)), 0);
	ck_assert_double_eq(v, 2000);
	ck_assert_int_eq(sheet_pos(&sh, 2, col[2], &v, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "a.csv:5: column 'value': expected a positive number"), "%s",
		      err);
	ck_assert_int_eq(sheet_pos(&sh, 0, col[1], &v, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "a.csv:2: column 'id': expected a decimal number, got 'x'"), "%s", err);
	ck_assert_int_eq(sheet_col(&sh, "nope", err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "a.csv:1: no column 'nope'"), "%s", err);
	sheet_free(&sh);

	/* A NULL folder: the name is the path. */
	char path[128];
	snprintf(path, sizeof(path), "%s/a.csv", dir);
	ck_assert_int_eq(sheet_read(&sh, NULL, path, err, sizeof(err)), 0);
	ck_assert_str_eq(sh.path, path);
	sheet_free(&sh);
}
END_TEST

START_TEST(test_refused)
{
	struct sheet sh;
	char err[256];
	put("ragged.csv", "a,b\n1,2\n3\n");
	ck_assert_int_eq(sheet_read(&sh, dir, "ragged.csv", err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "ragged.csv:3: expected 2 fields as in the header, got 1"), "%s",
		      err);
	put("empty.csv", "");
	ck_assert_int_eq(sheet_read(&sh, dir, "empty.csv", err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "empty file"), "%s", err);
	put("head.csv", "a,b\n");
	ck_assert_int_eq(sheet_read(&sh, dir, "head.csv", err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "no rows after the header"), "%s", err);
	put("quote.csv", "a,b\n1,\"2\n");
	ck_assert_int_eq(sheet_read(&sh, dir, "quote.csv", err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "quote.csv:"), "%s", err);
	ck_assert_int_eq(sheet_read(&sh, dir, "missing.csv", err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "cannot open") && strstr(err, "missing.csv"), "%s", err);
	/* A column named twice would be read from its first field alone. */
	put("twice.csv", "M,ms,N,ms\n1,2,3,4\n");
	ck_assert_int_eq(sheet_read(&sh, dir, "twice.csv", err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "twice.csv:1: column 'ms' is named twice (fields 2 and 4)"),
		      "%s", err);
}
END_TEST

/* Cells are numbers in the one decimal grammar (sim_number_parse): no hex,
 * inf or nan; 2e6 is a number. */
START_TEST(test_number_grammar)
{
	struct sheet sh;
	char err[256];
	double v;
	put("n.csv", "x\n2e6\n0x10\ninf\nnan\n1.5 \n");
	ck_assert_msg(sheet_read(&sh, dir, "n.csv", err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(sheet_pos(&sh, 0, 0, &v, err, sizeof(err)), 0);
	ck_assert_double_eq(v, 2e6);
	for (size_t r = 1; r <= 3; r++) {
		ck_assert_int_eq(sheet_pos(&sh, r, 0, &v, err, sizeof(err)), -1);
		ck_assert_msg(strstr(err, "expected a decimal number"), "row %zu: %s", r, err);
	}
	ck_assert_int_eq(sheet_pos(&sh, 4, 0, &v, err, sizeof(err)), 0);
	ck_assert_double_eq(v, 1.5);
	sheet_free(&sh);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sheet");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_read_by_name);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_number_grammar);
	suite_add_tcase(s, tc);
	return check_run(s);
}
