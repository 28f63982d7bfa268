/*
 * outfile.c - outputs written to a temporary file beside the target and
 * renamed into place when complete; see outfile.h.
 */
#include "sim/outfile.h"

#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/util.h"

/* The folder of path and its last component, as new strings. */
static void split_path(const char *path, char **dir, char **base)
{
	char *d = xstrdup(path), *b = xstrdup(path);
	*dir = xstrdup(dirname(d));
	*base = xstrdup(basename(b));
	free(d);
	free(b);
}

/* A path that names no file (a missing folder, a folder, a name too long)
 * is bad input; anything else that stops a write is a failure. */
static enum sim_out_rc class_of(int e)
{
	return e == ENOENT || e == ENOTDIR || e == EISDIR || e == ENAMETOOLONG || e == ELOOP
	       ? SIM_OUT_BADPATH : SIM_OUT_IOERR;
}

/* Release o's strings and clear it. */
static void out_clear(struct sim_out *o)
{
	free(o->tmp);
	free(o->path);
	*o = (struct sim_out){ 0 };
}

static enum sim_out_rc out_fail(struct sim_out *o, enum sim_out_rc rc, const char *path, int e,
				char *err, size_t errlen)
{
	sim_errf(err, errlen, "cannot write '%s': %s", path, strerror(e));
	out_clear(o);
	return rc;
}

/* The mode of a new file: what fopen() gives, 0666 less the umask (which
 * can only be read by setting it; clustersim runs one thread). */
static mode_t new_file_mode(void)
{
	mode_t mask = umask(0);
	umask(mask);
	return 0666 & ~mask;
}

enum sim_out_rc sim_out_open(struct sim_out *o, const char *path, char *err, size_t errlen)
{
	*o = (struct sim_out){ 0 };
	if (!strcmp(path, "-")) {
		o->f = stdout;
		o->path = xstrdup(path);
		return SIM_OUT_OK;
	}
	if (!*path)
		return out_fail(o, SIM_OUT_BADPATH, path, ENOENT, err, errlen);
	struct stat st;
	int exists = stat(path, &st) == 0;
	if (exists && S_ISDIR(st.st_mode))
		return out_fail(o, SIM_OUT_BADPATH, path, EISDIR, err, errlen);
	if (exists && !S_ISREG(st.st_mode)) {
		/* A FIFO or a device: nothing to replace, written as it is. */
		if (!(o->f = fopen(path, "w")))
			return out_fail(o, class_of(errno), path, errno, err, errlen);
		o->path = xstrdup(path);
		return SIM_OUT_OK;
	}
	char *real = exists ? realpath(path, NULL) : NULL;
	o->path = real ? real : xstrdup(path);
	char *dir, *base;
	split_path(o->path, &dir, &base);
	o->tmp = xasprintf("%s/.%s.XXXXXX", dir, base);
	free(dir);
	free(base);
	int fd = mkstemp(o->tmp);
	if (fd < 0)
		return out_fail(o, class_of(errno), path, errno, err, errlen);
	if (fchmod(fd, exists ? st.st_mode & 07777 : new_file_mode()) != 0 ||
	    !(o->f = fdopen(fd, "w"))) {
		int e = errno;
		close(fd);
		unlink(o->tmp);
		return out_fail(o, SIM_OUT_IOERR, path, e, err, errlen);
	}
	return SIM_OUT_OK;
}

enum sim_out_rc sim_out_commit(struct sim_out *o, char *err, size_t errlen)
{
	BUG_ON(!o->f);
	/* A write that failed earlier set the FILE's error flag; its errno is
	 * the best reason there is, unless the flush fails again now. */
	int e = 0, before = errno;
	errno = 0;
	if (fflush(o->f) != 0)
		e = errno ? errno : EIO;
	else if (ferror(o->f))
		e = before ? before : EIO;
	if (!e && o->tmp && fsync(fileno(o->f)) != 0)
		e = errno;
	if (o->f != stdout && fclose(o->f) != 0 && !e)
		e = errno ? errno : EIO;
	o->f = NULL;
	if (!e && o->tmp && rename(o->tmp, o->path) != 0)
		e = errno;
	if (e) {
		if (o->tmp)
			unlink(o->tmp);
		sim_errf(err, errlen, "error writing '%s': %s%s", o->path, strerror(e),
			 o->tmp ? " (the file is left as it was)" : "");
	}
	out_clear(o);
	return e ? SIM_OUT_IOERR : SIM_OUT_OK;
}

void sim_out_abort(struct sim_out *o)
{
	if (o->f == stdout)
		fflush(stdout);
	else if (o->f)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	out_clear(o);
}

/* path with its folder resolved (symbolic links, "..", "."); for a file
 * that does not exist yet. A new string. */
static char *resolved(const char *path)
{
	char *r = realpath(path, NULL);
	if (r)
		return r;
	char *dir, *base;
	split_path(path, &dir, &base);
	char *rd = realpath(dir, NULL);
	char *out = rd ? xasprintf("%s/%s", strcmp(rd, "/") ? rd : "", base) : xstrdup(path);
	free(rd);
	free(dir);
	free(base);
	return out;
}

/* A FIFO, a device or a socket: writing it replaces nothing. */
static int special(const struct stat *st)
{
	return !S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode);
}

int sim_out_same(const char *a, const char *b)
{
	if (!strcmp(a, "-") || !strcmp(b, "-"))
		return 0;
	struct stat sa, sb;
	int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
	if ((ea && special(&sa)) || (eb && special(&sb)))
		return 0;
	if (ea && eb)
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	if (ea || eb)
		return 0;
	char *ra = resolved(a), *rb = resolved(b);
	int same = !strcmp(ra, rb);
	free(ra);
	free(rb);
	return same;
}
