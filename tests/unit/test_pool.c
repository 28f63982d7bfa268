/*
 * test_pool.c - sim/pool.c: every task gives exactly one result, on one
 * worker or several, when workers are killed (SIGKILL, abort) or exit
 * without a result; lost tasks carry how their worker ended; a stop flag
 * hands out nothing more; the test hook CLUSTERSIM_TEST_CRASH kills the
 * worker of the task it names; and no child is left behind.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/checkmain.h"
#include "sim/pool.h"

#define NTASKS 40

enum how { RUN, KILL_SELF, ABORT, EXIT_3 };

struct task {
	uint32_t id;
	enum how how;
};

struct result {
	uint32_t id;
	int lost;
	uint64_t square;
	char why[128];
};

struct ctx {
	struct result got[NTASKS];
	unsigned times[NTASKS];      /* results per task          */
	unsigned ndone;
	unsigned stop_after;         /* 0: never                  */
	volatile sig_atomic_t stop;
};

static void run(void *c, const void *task, void *result)
{
	const struct task *t = task;
	struct result *r = result;
	(void)c;
	pool_test_crash(t->id);
	if (t->how == KILL_SELF)
		raise(SIGKILL);
	if (t->how == ABORT)
		abort();
	if (t->how == EXIT_3)
		_exit(3);
	r->id = t->id;
	r->square = (uint64_t)t->id * t->id;
}

static void lost(void *c, const void *task, void *result, const char *why)
{
	struct result *r = result;
	(void)c;
	r->id = ((const struct task *)task)->id;
	r->lost = 1;
	snprintf(r->why, sizeof(r->why), "%s", why);
}

static void done(void *c, const void *result)
{
	struct ctx *x = c;
	const struct result *r = result;
	ck_assert_uint_lt(r->id, NTASKS);
	x->got[r->id] = *r;
	x->times[r->id]++;
	if (++x->ndone == x->stop_after)
		x->stop = 1;
}

static struct pool_job job_of(struct ctx *x)
{
	return (struct pool_job){ .task_size = sizeof(struct task),
				  .result_size = sizeof(struct result),
				  .run = run, .lost = lost, .done = done, .ctx = x };
}

/* Task i's fate: a few are killed, abort or exit early. */
static enum how fate(uint32_t i)
{
	return i % 9 == 4 ? KILL_SELF : i % 9 == 7 ? ABORT : i == 13 ? EXIT_3 : RUN;
}

static void no_children_left(void)
{
	errno = 0;
	ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
}

START_TEST(test_every_task_once)
{
	static const int jobs[] = { 1, 2, 3, 8, 64 };
	struct task t[NTASKS];
	unsigned nlost = 0;
	for (uint32_t i = 0; i < NTASKS; i++)
		t[i] = (struct task){ .id = i, .how = fate(i) }, nlost += fate(i) != RUN;
	for (size_t k = 0; k < sizeof(jobs) / sizeof(jobs[0]); k++) {
		struct ctx x = { 0 };
		const struct pool_job j = job_of(&x);
		struct pool_stats st;
		ck_assert_int_eq(pool_run(&j, t, NTASKS, jobs[k], NULL, &st), 0);
		ck_assert_msg(st.done == NTASKS && st.lost == nlost, "-j %d: %u done, %u lost",
			      jobs[k], st.done, st.lost);
		for (uint32_t i = 0; i < NTASKS; i++) {
			const struct result *r = &x.got[i];
			ck_assert_msg(x.times[i] == 1, "-j %d: task %u gave %u results", jobs[k], i,
				      x.times[i]);
			ck_assert_int_eq(r->lost, fate(i) != RUN);
			if (fate(i) == RUN)
				ck_assert_uint_eq(r->square, (uint64_t)i * i);
			const char *want = fate(i) == KILL_SELF ? "killed by signal 9 (SIGKILL)"
					 : fate(i) == ABORT ? "killed by signal 6 (SIGABRT)"
					 : fate(i) == EXIT_3 ? "exited with status 3" : "";
			ck_assert_msg(strstr(r->why, want), "-j %d: task %u: '%s'", jobs[k], i,
				      r->why);
		}
		no_children_left();
	}
}
END_TEST

START_TEST(test_all_lost)
{
	struct task t[NTASKS];
	for (uint32_t i = 0; i < NTASKS; i++)
		t[i] = (struct task){ .id = i, .how = KILL_SELF };
	struct ctx x = { 0 };
	const struct pool_job j = job_of(&x);
	struct pool_stats st;
	ck_assert_int_eq(pool_run(&j, t, NTASKS, 3, NULL, &st), 0);
	ck_assert_uint_eq(st.done, NTASKS);
	ck_assert_uint_eq(st.lost, NTASKS);
	for (uint32_t i = 0; i < NTASKS; i++)
		ck_assert_uint_eq(x.times[i], 1);
	no_children_left();
}
END_TEST

START_TEST(test_stop)
{
	struct task t[NTASKS];
	for (uint32_t i = 0; i < NTASKS; i++)
		t[i] = (struct task){ .id = i, .how = RUN };
	struct ctx x = { .stop_after = 3 };
	const struct pool_job j = job_of(&x);
	struct pool_stats st;
	ck_assert_int_eq(pool_run(&j, t, NTASKS, 2, &x.stop, &st), 0);
	/* Stopped after the third result: at most the one other running. */
	ck_assert_msg(st.done >= 3 && st.done <= 4, "%u done", st.done);
	for (uint32_t i = 0; i < NTASKS; i++)
		ck_assert_uint_le(x.times[i], 1);
	no_children_left();
}
END_TEST

START_TEST(test_crash_hook)
{
	struct task t[6];
	for (uint32_t i = 0; i < 6; i++)
		t[i] = (struct task){ .id = i, .how = RUN };
	static const char *const hooks[] = { "4:KILL", "4:SIGSEGV", "4:15", "4" };
	static const char *const want[] = { "signal 9 (SIGKILL)", "signal 11 (SIGSEGV)",
					    "signal 15 (SIGTERM)", "signal 6 (SIGABRT)" };
	for (int k = 0; k < 4; k++) {
		struct ctx x = { 0 };
		const struct pool_job j = job_of(&x);
		struct pool_stats st;
		setenv("CLUSTERSIM_TEST_CRASH", hooks[k], 1);
		ck_assert_int_eq(pool_run(&j, t, 6, 2, NULL, &st), 0);
		ck_assert_uint_eq(st.done, 6);
		ck_assert_uint_eq(st.lost, 1);
		ck_assert_msg(x.got[4].lost && strstr(x.got[4].why, want[k]), "%s: '%s'", hooks[k],
			      x.got[4].why);
	}
	unsetenv("CLUSTERSIM_TEST_CRASH");
	no_children_left();
}
END_TEST

START_TEST(test_no_tasks)
{
	struct ctx x = { 0 };
	const struct pool_job j = job_of(&x);
	struct pool_stats st = { 7, 7 };
	ck_assert_int_eq(pool_run(&j, NULL, 0, 4, NULL, &st), 0);
	ck_assert_uint_eq(st.done, 0);
	ck_assert_uint_eq(st.lost, 0);
	no_children_left();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_every_task_once);
	tcase_add_test(tc, test_all_lost);
	tcase_add_test(tc, test_stop);
	tcase_add_test(tc, test_crash_hook);
	tcase_add_test(tc, test_no_tasks);
	suite_add_tcase(s, tc);
	return check_run(s);
}
