/*
 * sheet.c - CSV files read by column name with libcsv (sheet.h).
 */
#include "sim/sheet.h"

#include <csv.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "sim/units.h"
#include "sim/util.h"

/* State of the libcsv callbacks while one file is read. */
struct sheet_reader {
	struct sheet *sh;
	char **rec;               /* fields of the record being read          */
	size_t nrec, caprec;
	size_t line;              /* line being fed to csv_parse              */
	size_t rec_line;          /* line the record started on               */
	char *err;
	size_t errlen;
	int failed;
};

static void reader_drop_record(struct sheet_reader *r)
{
	for (size_t i = 0; i < r->nrec; i++)
		free(r->rec[i]);
	r->nrec = 0;
}

/* libcsv: one field (len bytes, not necessarily terminated; NULL if empty). */
static void on_field(void *s, size_t len, void *data)
{
	struct sheet_reader *r = data;
	char *f = xmalloc(len + 1);

	if (r->nrec == 0)
		r->rec_line = r->line;
	if (len)
		memcpy(f, s, len);
	f[len] = 0;
	if (r->nrec == r->caprec) {
		r->caprec = r->caprec ? 2 * r->caprec : 16;
		r->rec = xreallocarray(r->rec, r->caprec, sizeof *r->rec);
	}
	r->rec[r->nrec++] = f;
}

/*
 * A column name given twice would be read from its first column alone, the
 * other silently left out: refuse it. O(columns^2): tables have a few dozen.
 */
static void header_twice(struct sheet_reader *r)
{
	const struct sheet *sh = r->sh;
	for (size_t i = 0; i < sh->ncols && !r->failed; i++)
		for (size_t j = i + 1; j < sh->ncols && *sh->head[i]; j++)
			if (!strcmp(sh->head[i], sh->head[j])) {
				r->failed = sim_errf(r->err, r->errlen, "%s:%zu: column '%s' is "
						 "named twice (fields %zu and %zu): expected "
						 "each name once", sh->path, r->rec_line,
						 sh->head[i], i + 1, j + 1);
				break;
			}
}

/* libcsv: end of a record. The first is the header; the rest must match it. */
static void on_record(int c, void *data)
{
	struct sheet_reader *r = data;
	struct sheet *sh = r->sh;

	(void)c;
	if (r->failed) {
		reader_drop_record(r);
		return;
	}
	if (!sh->head) {
		sh->head = r->rec;
		sh->ncols = r->nrec;
		r->rec = NULL;
		r->nrec = r->caprec = 0;
		header_twice(r);
		return;
	}
	if (r->nrec != sh->ncols) {
		r->failed = sim_errf(r->err, r->errlen, "%s:%zu: expected %zu fields as in the "
				 "header, got %zu", sh->path, r->rec_line, sh->ncols, r->nrec);
		reader_drop_record(r);
		return;
	}
	if (sh->nrows == sh->cap) {
		sh->cap = sh->cap ? 2 * sh->cap : 64;
		sh->cells = xreallocarray(sh->cells, sh->cap * sh->ncols, sizeof *sh->cells);
		sh->line = xreallocarray(sh->line, sh->cap, sizeof *sh->line);
	}
	memcpy(sh->cells + sh->nrows * sh->ncols, r->rec, sh->ncols * sizeof *r->rec);
	sh->line[sh->nrows++] = r->rec_line;
	r->nrec = 0;
}

void sheet_free(struct sheet *sh)
{
	for (size_t i = 0; i < sh->nrows * sh->ncols; i++)
		free(sh->cells[i]);
	for (size_t i = 0; sh->head && i < sh->ncols; i++)
		free(sh->head[i]);
	free(sh->cells);
	free(sh->line);
	free(sh->head);
	free(sh->path);
	memset(sh, 0, sizeof *sh);
}

/*
 * Read dir/name into sh. It is fed to libcsv a line at a time (the parser
 * keeps its state across calls, so quoted newlines still work) to know the
 * line of each record. 0, or -1 with err naming the file (and line).
 */
int sheet_read(struct sheet *sh, const char *dir, const char *name, char *err, size_t errlen)
{
	struct sheet_reader r = { .sh = sh, .err = err, .errlen = errlen };
	struct csv_parser cp;
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;

	memset(sh, 0, sizeof *sh);
	sh->path = dir ? xasprintf("%s/%s", dir, name) : xstrdup(name);
	f = fopen(sh->path, "r");
	if (!f) {
		sim_errf(err, errlen, "cannot open %s: %s", sh->path, strerror(errno));
		sheet_free(sh);
		return -1;
	}
	if (csv_init(&cp, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0)
		BUG("csv_init failed");
	while (!r.failed && (n = getline(&buf, &cap, f)) > 0) {
		size_t skip = 0;

		/* A spreadsheet's UTF-8 byte-order mark is not part of the first name. */
		if (++r.line == 1 && n >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
			skip = 3;
		if (csv_parse(&cp, buf + skip, (size_t)n - skip, on_field, on_record, &r) !=
		    (size_t)n - skip)
			r.failed = sim_errf(err, errlen, "%s:%zu: %s", sh->path, r.line,
					csv_strerror(csv_error(&cp)));
	}
	if (!r.failed && ferror(f))
		r.failed = sim_errf(err, errlen, "%s: read error", sh->path);
	if (!r.failed && csv_fini(&cp, on_field, on_record, &r) != 0)
		r.failed = sim_errf(err, errlen, "%s:%zu: %s", sh->path, r.line,
				csv_strerror(csv_error(&cp)));
	if (!r.failed && !sh->head)
		r.failed = sim_errf(err, errlen, "%s: empty file: expected a header line",
				sh->path);
	if (!r.failed && sh->nrows == 0)
		r.failed = sim_errf(err, errlen, "%s: no rows after the header", sh->path);
	reader_drop_record(&r);
	free(r.rec);
	csv_free(&cp);
	free(buf);
	fclose(f);
	if (r.failed)
		sheet_free(sh);  /* nothing for the caller to free */
	return r.failed ? -1 : 0;
}

/* Index of the column called name, or -1 with err. */
int sheet_col(const struct sheet *sh, const char *name, char *err, size_t errlen)
{
	for (size_t i = 0; i < sh->ncols; i++)
		if (strcmp(sh->head[i], name) == 0)
			return (int)i;
	return sim_errf(err, errlen, "%s:1: no column '%s' in the header", sh->path, name);
}

const char *sheet_cell(const struct sheet *sh, size_t row, int col)
{
	return sh->cells[row * sh->ncols + (size_t)col];
}

/* The cell as a number > 0 (a time, a size, a count), or -1 with err. */
int sheet_pos(const struct sheet *sh, size_t row, int col, double *out, char *err,
	      size_t errlen)
{
	const char *s = sheet_cell(sh, row, col);
	double v;

	if (sim_number_parse(s, &v, NULL, 0) < 0)
		return sim_errf(err, errlen, "%s:%zu: column '%s': expected a decimal number, got '%s'",
			    sh->path, sh->line[row], sh->head[col], s);
	if (v <= 0)
		return sim_errf(err, errlen, "%s:%zu: column '%s': expected a positive number, "
			    "got '%s'", sh->path, sh->line[row], sh->head[col], s);
	*out = v;
	return 0;
}

/* Look up ncol columns by name into idx[]; 0 or -1 with err. */
int sheet_cols(const struct sheet *sh, const char *const *names, int *idx, size_t ncol,
	       char *err, size_t errlen)
{
	for (size_t i = 0; i < ncol; i++)
		if ((idx[i] = sheet_col(sh, names[i], err, errlen)) < 0)
			return -1;
	return 0;
}

