/*
 * mpi_pool.h - sweep and plan points spread over the ranks of mpirun
 * (`./configure --with-mpi`).
 *
 * Under mpirun every rank parses the same command line and builds the same
 * list of tasks (points, layouts). Rank 0 hands out task numbers one at a
 * time, each to a rank that has just returned a result (so slow tasks do
 * not hold up the rest), receives fixed-size results and alone writes the
 * database; the other ranks run what they are handed until rank 0 tells
 * them to stop. Without MPI, or outside mpirun, there is one rank and the
 * commands use their forked workers (-j) as before.
 */
#ifndef SIM_MPI_POOL_H
#define SIM_MPI_POOL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* Start MPI when built with it and started by mpirun (main, first). */
void mp_init(int *argc, char ***argv);
/* Stop it (main, last; also after an error of any rank). */
void mp_finalize(void);

int mp_built(void);      /* built with --with-mpi                          */
int mp_rank(void);       /* 0 without MPI                                  */
int mp_size(void);       /* 1 without MPI                                  */
/* Started by a launcher with more than one rank (Open MPI's mpirun, Slurm's
 * srun, MPICH's PMI), whether or not this build can use them. */
int mp_launched(void);

/*
 * Rank 0 of several: run the n tasks (task_size bytes each, back to back in
 * `tasks`) on ranks 1..size-1, dynamically, and call on_result(ctx, result)
 * for each result as it arrives (result_size bytes, received into `buf`).
 * Once *stop is set (stop NULL: never) no new task is handed out; the
 * running ones are waited for. Returns the number of results. The other
 * ranks stay ready for the next call until mp_stop_workers.
 */
uint32_t mp_dispatch(const void *tasks, uint32_t n, size_t task_size, void *buf,
		     size_t result_size, void (*on_result)(void *ctx, const void *result),
		     void *ctx, volatile sig_atomic_t *stop);

/* Rank 0: tell the other ranks that no more tasks will come (main does,
 * after the command, whether it succeeded or not). */
void mp_stop_workers(void);

/*
 * The other ranks: for each task rank 0 hands out (received into `task`,
 * task_size bytes), run(ctx, task, buf) and send buf (result_size bytes)
 * back, until rank 0 says stop.
 */
void mp_serve(void *task, size_t task_size, void *buf, size_t result_size,
	      void (*run)(void *ctx, const void *task, void *buf), void *ctx);

#endif
