/*
 * sheet.h - a CSV file in memory, read by column name (libcsv): the
 * calibration tables of the compute model and the validation cases.
 *
 * The first line names the columns; every later record must have as many
 * fields. Quoted fields (with commas or line breaks), CRLF line ends and a
 * UTF-8 byte-order mark are accepted. Errors name the file and line.
 */
#ifndef SIM_SHEET_H
#define SIM_SHEET_H

#include <stddef.h>

struct sheet {
	char *path;
	char **head;              /* ncols names, from line 1                 */
	size_t ncols;
	char **cells;             /* nrows x ncols, row-major                 */
	size_t *line;             /* the file line each row starts on         */
	size_t nrows, cap;
};

/* Read dir/name (dir may be NULL: name is the path). 0, or -1 with err
 * (unreadable, malformed, empty, or no rows after the header); on failure
 * sh is left empty, with nothing to free. */
int sheet_read(struct sheet *sh, const char *dir, const char *name, char *err, size_t errlen);
void sheet_free(struct sheet *sh);

/* Index of the column called name, or -1 with err ("FILE:1: no column"). */
int sheet_col(const struct sheet *sh, const char *name, char *err, size_t errlen);
/* Look up ncol columns by name into idx[]; 0 or -1 with err. */
int sheet_cols(const struct sheet *sh, const char *const *names, int *idx, size_t ncol,
	       char *err, size_t errlen);
/* The text of a cell (never NULL; empty for an empty field). */
const char *sheet_cell(const struct sheet *sh, size_t row, int col);
/* The cell as a number > 0, or -1 with err naming file, line and column. */
int sheet_pos(const struct sheet *sh, size_t row, int col, double *out, char *err,
	      size_t errlen);

#endif
