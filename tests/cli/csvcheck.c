/*
 * csvcheck.c - does a CSV file hold exactly what a query of a database
 * returns? The file is parsed with libcsv (strict mode), so quoting, embedded
 * commas, quotes and newlines are checked by an independent reader:
 *
 *   csvcheck DB CSV SQL [RUN]
 *   csvcheck --parse CSV
 *
 * SQL may use ?1, bound to RUN. The first record must be the column names,
 * then one record per row, each field equal to sqlite3_column_text (NULL is
 * an empty field). Prints "N rows x M fields match" and exits 0, or names the
 * first difference and exits 1; 2 for a usage or I/O error. With --parse it
 * only reads the file: every record must have as many fields as the first;
 * it prints "N records of M fields".
 */
#include <csv.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct reader {
	sqlite3_stmt *q;    /* NULL with --parse */
	int ncol;
	long row;           /* record index: 0 is the header */
	int col;            /* field index in the record    */
	int done;           /* the query ran out of rows    */
	int bad;
};

static void fail(struct reader *r, const char *what, const char *got, const char *want)
{
	if (!r->bad)
		fprintf(stderr, "csvcheck: record %ld, field %d: %s: got '%s', expected '%s'\n",
			r->row, r->col, what, got ? got : "(none)", want ? want : "(none)");
	r->bad = 1;
}

static void on_field(void *s, size_t len, void *data)
{
	struct reader *r = data;
	const char *got = s ? s : "";
	(void)len;
	if (r->bad)
		return;
	if (!r->q) {
		r->col++;
		return;
	}
	if (r->col >= r->ncol) {
		fail(r, "an extra field", got, NULL);
		return;
	}
	const char *want = r->row == 0 ? sqlite3_column_name(r->q, r->col)
		: r->done ? NULL : (const char *)sqlite3_column_text(r->q, r->col);
	if (r->row > 0 && r->done)
		fail(r, "a row the query does not have", got, NULL);
	else if (strcmp(got, want ? want : ""))
		fail(r, r->row == 0 ? "column name" : "value", got, want ? want : "");
	r->col++;
}

static void on_record(int c, void *data)
{
	struct reader *r = data;
	(void)c;
	if (r->bad)
		return;
	if (!r->q && r->row == 0)
		r->ncol = r->col;
	if (r->col != r->ncol)
		fail(r, "field count", "fewer", "one per column");
	if (!r->q) {
		r->row++, r->col = 0;
		return;
	}
	r->row++, r->col = 0;
	if (!r->done && sqlite3_step(r->q) != SQLITE_ROW)
		r->done = 1;
}

int main(int argc, char **argv)
{
	int parse_only = argc == 3 && !strcmp(argv[1], "--parse");
	if (argc < 4 && !parse_only) {
		fprintf(stderr, "usage: csvcheck DB CSV SQL [RUN] | csvcheck --parse CSV\n");
		return 2;
	}
	sqlite3 *db = NULL;
	struct reader r = { 0 };
	if (!parse_only) {
		if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
			fprintf(stderr, "csvcheck: %s: %s\n", argv[1], sqlite3_errmsg(db));
			return 2;
		}
		if (sqlite3_prepare_v2(db, argv[3], -1, &r.q, NULL) != SQLITE_OK) {
			fprintf(stderr, "csvcheck: %s\n", sqlite3_errmsg(db));
			return 2;
		}
		if (argc > 4)
			sqlite3_bind_int64(r.q, 1, atoll(argv[4]));
		r.ncol = sqlite3_column_count(r.q);
	}
	FILE *f = fopen(argv[2], "rb");
	if (!f) {
		fprintf(stderr, "csvcheck: cannot read %s\n", argv[2]);
		return 2;
	}
	struct csv_parser p;
	csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL);
	char buf[65536];
	size_t n;
	int rc = 0;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		if (csv_parse(&p, buf, n, on_field, on_record, &r) != n) {
			fprintf(stderr, "csvcheck: %s: %s\n", argv[2], csv_strerror(csv_error(&p)));
			rc = 1;
			break;
		}
	if (!rc && csv_fini(&p, on_field, on_record, &r) != 0) {
		fprintf(stderr, "csvcheck: %s: %s\n", argv[2], csv_strerror(csv_error(&p)));
		rc = 1;
	}
	csv_free(&p);
	fclose(f);
	if (!rc && !r.bad && r.q && r.row > 0 && !r.done) {
		fprintf(stderr, "csvcheck: the query has more rows than the %ld records\n",
			r.row - 1);
		rc = 1;
	}
	if (!rc && r.row == 0) {
		fprintf(stderr, "csvcheck: %s: no header record\n", argv[2]);
		rc = 1;
	}
	rc |= r.bad;
	if (!rc && parse_only)
		printf("%ld records of %d fields\n", r.row, r.ncol);
	else if (!rc)
		printf("%ld rows x %d fields match\n", r.row - 1, r.ncol);
	sqlite3_finalize(r.q);
	sqlite3_close(db);
	return rc;
}
