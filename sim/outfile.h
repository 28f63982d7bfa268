/*
 * outfile.h - every file clustersim writes is written whole or not at all,
 * and never over a file the same command reads.
 *
 * sim_out_open() creates a temporary file beside the target (mkstemp in the
 * target's folder, ".NAME.XXXXXX", so that the rename stays on one file
 * system) and hands it out for writing; sim_out_commit() flushes it, syncs
 * it to disk and renames it over the target, so that a reader sees either
 * the old file or the complete new one. sim_out_abort(), or a commit that
 * fails (a full disk, a file-size limit), removes the temporary file and
 * leaves the old one as it was. A new file gets the permissions fopen()
 * would give it (0666 less the umask), a replaced one keeps its own; a
 * symbolic link is followed, so the file it points to is replaced.
 *
 * Written directly, with nothing to replace: "-" (standard output, never
 * closed) and an existing file that is not a regular file (a FIFO, a
 * terminal, /dev/null).
 *
 * The caller owns struct sim_out; it holds the FILE and two strings from
 * open until commit or abort, both of which release them (abort after
 * commit, or twice, does nothing).
 */
#ifndef SIM_OUTFILE_H
#define SIM_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

/* Results of sim_out_open() and sim_out_commit(). */
enum sim_out_rc {
	SIM_OUT_OK = 0,
	SIM_OUT_BADPATH = -1,   /* the path names no file that can be written: its folder
				 * does not exist, or it is a folder (bad input)       */
	SIM_OUT_IOERR = -2,     /* it could not be written: permissions, a read-only file
				 * system, a full disk, a file-size limit, I/O errors  */
};

struct sim_out {
	FILE *f;          /* write here between open and commit              */
	char *path;       /* the target, symbolic links resolved             */
	char *tmp;        /* the temporary file; NULL when written directly  */
};

/* Start writing path ("-": standard output). The message in err names the
 * path and why. */
enum sim_out_rc sim_out_open(struct sim_out *o, const char *path, char *err, size_t errlen);

/* Finish: flush, sync and rename into place; on any error (also one that
 * an earlier write left on the FILE) remove the temporary file, keep the old
 * one and return SIM_OUT_IOERR with the reason in err. */
enum sim_out_rc sim_out_commit(struct sim_out *o, char *err, size_t errlen);

/* Give up: remove the temporary file; the target is left as it was. */
void sim_out_abort(struct sim_out *o);

/*
 * Whether paths a and b name the same file: the same device and inode when
 * both exist, the same resolved path when neither does (two outputs not yet
 * written). "-" is no file, and a FIFO or a device is never the same as
 * anything: writing one destroys nothing.
 */
int sim_out_same(const char *a, const char *b);

#endif
