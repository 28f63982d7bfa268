/*
 * pool.h - the one worker pool that sweep and plan run their tasks on.
 *
 * A caller hands pool_run() an array of fixed-size tasks and a struct
 * pool_job of callbacks. Each task runs in a worker process, never in the
 * caller's: forked children here (-j N, N >= 1), or under mpirun (built
 * --with-mpi) the other MPI ranks, each of which again runs every task in a
 * forked child (sim/mpi_pool.h carries the messages). Whatever a task does
 * (abort, a segfault, the OOM killer's SIGKILL) it is lost alone: the pool
 * notices the dead worker (end of file on its pipe, then waitpid), makes the
 * task's result with job->lost and the reason ("its worker was killed by
 * signal 9 (SIGKILL)"), starts a new worker and goes on. Every task is handed
 * out once and gives exactly one result, never two; results are delivered
 * to job->done in the caller's process, in the order they arrive.
 *
 * The pool owns its processes and pipes for the length of one pool_run;
 * the caller owns the tasks, the callbacks' context and the results.
 */
#ifndef SIM_POOL_H
#define SIM_POOL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct pool_job {
	size_t task_size, result_size;  /* bytes of one task, one result  */
	/* In a worker: run one task and fill its result. */
	void (*run)(void *ctx, const void *task, void *result);
	/* Where a worker died: the result of the task it held; why says how
	 * ("its worker was killed by signal 6 (SIGABRT)"). */
	void (*lost)(void *ctx, const void *task, void *result, const char *why);
	/* In the caller's process (rank 0): one result as it arrives. */
	void (*done)(void *ctx, const void *result);
	void *ctx;
};

struct pool_stats {
	uint32_t done;                  /* results delivered, lost ones too */
	uint32_t lost;                  /* of them, tasks whose worker died */
};

/*
 * Run tasks[0..n) on `jobs` forked workers (at most 64; fewer when there are
 * fewer tasks), or on the other MPI ranks when there are several. Once
 * *stop is set (stop NULL: never; workers then ignore SIGINT, which the
 * caller handles) no task is handed out and those running are waited for.
 * Returns 0 with *st filled, or -1 with errno when no worker could be
 * started (nothing ran). A worker that cannot be restarted after a crash
 * leaves the rest to the others; st->done < n says tasks were not run.
 */
int pool_run(const struct pool_job *job, const void *tasks, uint32_t n, int jobs,
	     volatile sig_atomic_t *stop, struct pool_stats *st);

/* MPI ranks other than 0: run the tasks rank 0 hands out, each in a forked
 * child, until rank 0 says stop (mp_stop_workers). */
void pool_serve(const struct pool_job *job);

/*
 * Test hook, for the crash tests (tests/cli/test_pool.sh): when the
 * environment has CLUSTERSIM_TEST_CRASH=ID[:SIGNAL], the worker running
 * the task the command numbers ID (sweep: point ID; plan: the layout of
 * estimate rank ID) kills itself with SIGNAL (a number, or ABRT, KILL,
 * SEGV, TERM; default ABRT) before running it. Does nothing otherwise.
 */
void pool_test_crash(uint32_t id);

#endif
