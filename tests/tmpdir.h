/*
 * tmpdir.h - a scratch directory for the unit tests that write files:
 * made by tmp_init(), removed with every file in it by tmp_clear().
 * Header-only, like testlib.h and checkmain.h.
 */
#ifndef TESTS_TMPDIR_H
#define TESTS_TMPDIR_H

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/util.h"

struct tmp {
	char dir[64];
};

/* A new directory /tmp/NAME.XXXXXX. */
static inline void tmp_init(struct tmp *t, const char *name)
{
	snprintf(t->dir, sizeof t->dir, "/tmp/%s.XXXXXX", name);
	ck_assert_msg(mkdtemp(t->dir) != NULL, "mkdtemp failed");
}

/* DIR/name, allocated: the caller frees it. */
static inline char *tmp_path(const struct tmp *t, const char *name)
{
	return xasprintf("%s/%s", t->dir, name);
}

/* The files in the directory, "." and ".." left out. */
static inline int tmp_count(const struct tmp *t)
{
	DIR *d = opendir(t->dir);
	ck_assert_ptr_nonnull(d);
	int n = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static inline void tmp_clear(struct tmp *t)
{
	DIR *d = opendir(t->dir);
	ck_assert_ptr_nonnull(d);
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *p = tmp_path(t, e->d_name);
		unlink(p);
		free(p);
	}
	closedir(d);
	rmdir(t->dir);
}

#endif
