/*
 * test_outfile.c - outputs written whole or not at all (sim/outfile.c):
 * a commit replaces the old file, an abort or a failed write leaves it as it
 * was and no temporary file behind, a new file gets the usual permissions,
 * a symbolic link is followed, and sim_out_same() tells the same file by
 * inode, by link and by path.
 *
 * Every test works in its own directory from mkdtemp() under /tmp.
 */
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/outfile.h"
#include "sim/util.h"
#include "tests/checkmain.h"
#include "tests/tmpdir.h"

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* The file's text (up to 255 bytes), "" if it does not exist. */
static const char *get(const char *path)
{
	static char buf[256];
	FILE *f = fopen(path, "r");
	buf[0] = 0;
	if (f) {
		buf[fread(buf, 1, sizeof buf - 1, f)] = 0;
		fclose(f);
	}
	return buf;
}

START_TEST(test_commit_replaces)
{
	struct tmp t;
	tmp_init(&t, "test_outfile");
	char *path = tmp_path(&t, "out.csv"), err[256] = "";
	put(path, "old\n");
	chmod(path, 0640);
	struct sim_out o;
	ck_assert_int_eq(sim_out_open(&o, path, err, sizeof err), SIM_OUT_OK);
	fputs("new\n", o.f);
	ck_assert_str_eq(get(path), "old\n");       /* not there until committed */
	ck_assert_int_eq(tmp_count(&t), 2);           /* the old file and the temporary */
	ck_assert_int_eq(sim_out_commit(&o, err, sizeof err), SIM_OUT_OK);
	ck_assert_str_eq(get(path), "new\n");
	ck_assert_int_eq(tmp_count(&t), 1);
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0640);    /* a replaced file keeps its mode */
	sim_out_abort(&o);                            /* after commit: nothing */
	ck_assert_str_eq(get(path), "new\n");
	free(path);
	tmp_clear(&t);
}
END_TEST

START_TEST(test_abort_keeps_old)
{
	struct tmp t;
	tmp_init(&t, "test_outfile");
	char *path = tmp_path(&t, "out.svg"), err[256] = "";
	put(path, "old\n");
	struct sim_out o;
	ck_assert_int_eq(sim_out_open(&o, path, err, sizeof err), SIM_OUT_OK);
	fputs("half a picture", o.f);
	sim_out_abort(&o);
	ck_assert_str_eq(get(path), "old\n");
	ck_assert_int_eq(tmp_count(&t), 1);
	free(path);
	tmp_clear(&t);
}
END_TEST

/* A new file gets 0666 less the umask, as fopen() would give it. */
START_TEST(test_new_file_mode)
{
	struct tmp t;
	tmp_init(&t, "test_outfile");
	char *path = tmp_path(&t, "new.txt"), err[256] = "";
	mode_t old = umask(022);
	struct sim_out o;
	ck_assert_int_eq(sim_out_open(&o, path, err, sizeof err), SIM_OUT_OK);
	ck_assert_int_eq(sim_out_commit(&o, err, sizeof err), SIM_OUT_OK);
	umask(old);
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0644);
	ck_assert_int_eq(st.st_size, 0);
	free(path);
	tmp_clear(&t);
}
END_TEST

/* A write past a file-size limit (ulimit -f) fails the commit with the
 * system's reason; the old file is kept and no temporary is left. */
START_TEST(test_write_error_keeps_old)
{
	struct tmp t;
	tmp_init(&t, "test_outfile");
	char *path = tmp_path(&t, "big.csv"), err[256] = "";
	put(path, "old\n");
	signal(SIGXFSZ, SIG_IGN);
	struct rlimit was, lim = { .rlim_cur = 4096 };
	getrlimit(RLIMIT_FSIZE, &was);
	lim.rlim_max = was.rlim_max;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	struct sim_out o;
	ck_assert_int_eq(sim_out_open(&o, path, err, sizeof err), SIM_OUT_OK);
	for (int i = 0; i < 10000; i++)
		fputs("0123456789\n", o.f);
	enum sim_out_rc rc = sim_out_commit(&o, err, sizeof err);
	setrlimit(RLIMIT_FSIZE, &was);
	ck_assert_int_eq(rc, SIM_OUT_IOERR);
	ck_assert_msg(strstr(err, "File too large") && strstr(err, "big.csv"), "%s", err);
	ck_assert_str_eq(get(path), "old\n");
	ck_assert_int_eq(tmp_count(&t), 1);
	free(path);
	tmp_clear(&t);
}
END_TEST

/* A missing folder or a folder is a bad path; nothing is created. */
START_TEST(test_bad_paths)
{
	struct tmp t;
	tmp_init(&t, "test_outfile");
	char *nodir = tmp_path(&t, "no/such.csv"), err[256] = "";
	struct sim_out o;
	ck_assert_int_eq(sim_out_open(&o, nodir, err, sizeof err), SIM_OUT_BADPATH);
	ck_assert_msg(strstr(err, nodir) != NULL, "%s", err);
	ck_assert_int_eq(sim_out_open(&o, t.dir, err, sizeof err), SIM_OUT_BADPATH);
	ck_assert_int_eq(sim_out_open(&o, "", err, sizeof err), SIM_OUT_BADPATH);
	ck_assert_int_eq(tmp_count(&t), 0);
	free(nodir);
	tmp_clear(&t);
}
END_TEST

/* A symbolic link is followed: its target is replaced, the link stays. */
START_TEST(test_symlink_followed)
{
	struct tmp t;
	tmp_init(&t, "test_outfile");
	char *target = tmp_path(&t, "target.txt"), *link = tmp_path(&t, "link.txt");
	char err[256] = "";
	put(target, "old\n");
	ck_assert_int_eq(symlink(target, link), 0);
	struct sim_out o;
	ck_assert_int_eq(sim_out_open(&o, link, err, sizeof err), SIM_OUT_OK);
	fputs("new\n", o.f);
	ck_assert_int_eq(sim_out_commit(&o, err, sizeof err), SIM_OUT_OK);
	struct stat st;
	ck_assert_int_eq(lstat(link, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_str_eq(get(target), "new\n");
	free(target);
	free(link);
	tmp_clear(&t);
}
END_TEST

START_TEST(test_same)
{
	struct tmp t;
	tmp_init(&t, "test_outfile");
	char *a = tmp_path(&t, "a.db"), *b = tmp_path(&t, "b.db"), *hard = tmp_path(&t, "h.db");
	char *sym = tmp_path(&t, "s.db"), *dotted = xasprintf("%s/./a.db", t.dir);
	char *new1 = tmp_path(&t, "new.csv"), *new2 = xasprintf("%s/../%s/new.csv", t.dir,
								   strrchr(t.dir, '/') + 1);
	put(a, "a");
	put(b, "b");
	ck_assert_int_eq(link(a, hard), 0);
	ck_assert_int_eq(symlink(a, sym), 0);
	ck_assert(sim_out_same(a, a));
	ck_assert(sim_out_same(dotted, a));
	ck_assert(sim_out_same(hard, a));
	ck_assert(sim_out_same(sym, a));
	ck_assert(!sim_out_same(a, b));
	ck_assert(sim_out_same(new1, new2));    /* neither exists yet: by path */
	ck_assert(!sim_out_same(new1, a));
	ck_assert(!sim_out_same("-", "-"));
	ck_assert(!sim_out_same("/dev/null", "/dev/null"));
	free(a);
	free(b);
	free(hard);
	free(sym);
	free(dotted);
	free(new1);
	free(new2);
	tmp_clear(&t);
}
END_TEST

static Suite *outfile_suite(void)
{
	Suite *s = suite_create("outfile");
	TCase *tc = tcase_create("outfile");
	tcase_add_test(tc, test_commit_replaces);
	tcase_add_test(tc, test_abort_keeps_old);
	tcase_add_test(tc, test_new_file_mode);
	tcase_add_test(tc, test_write_error_keeps_old);
	tcase_add_test(tc, test_bad_paths);
	tcase_add_test(tc, test_symlink_followed);
	tcase_add_test(tc, test_same);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(outfile_suite());
}
