/*
 * mpi_pool.c - tasks handed out by rank 0 to the other ranks of mpirun
 * (mpi_pool.h). Built with MPI only under --with-mpi (HAVE_MPI); otherwise
 * there is one rank and nothing to hand out.
 *
 * Messages: TAG_TASK carries a task (task_size bytes), TAG_RESULT a result
 * (result_size bytes), TAG_STOP nothing: no more tasks. Rank 0 waits with
 * MPI_Iprobe and a short sleep rather than a blocking receive, so that it
 * does not spin a core that a worker rank could use (Open MPI's blocking
 * receive polls).
 */
#include "config.h"

#include "sim/mpi_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef HAVE_MPI
#include <mpi.h>
#endif

#include "sim/util.h"

/* Environment variables that launchers set in every rank: Open MPI,
 * srun (a job step of several tasks), MPICH/Hydra (PMI). */
static const char *const size_vars[] = { "OMPI_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS",
					 "PMI_SIZE" };

int mp_launched(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(size_vars); i++) {
		const char *v = getenv(size_vars[i]);
		if (v && atoi(v) > 1)
			return 1;
	}
	return 0;
}

#ifdef HAVE_MPI

enum { TAG_TASK = 1, TAG_RESULT = 2, TAG_STOP = 3 };

static int started;        /* MPI_Init was called             */
static int rank, size = 1;

void mp_init(int *argc, char ***argv)
{
	if (!mp_launched())
		return;  /* a plain run: no MPI, one rank */
	MPI_Init(argc, argv);
	started = 1;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
}

void mp_finalize(void)
{
	if (started)
		MPI_Finalize();
	started = 0;
}

int mp_built(void)
{
	return 1;
}

int mp_rank(void)
{
	return rank;
}

int mp_size(void)
{
	return size;
}

uint32_t mp_dispatch(const void *tasks, uint32_t n, size_t task_size, void *buf,
		     size_t result_size, void (*on_result)(void *ctx, const void *result),
		     void *ctx, volatile sig_atomic_t *stop)
{
	BUG_ON(rank != 0 || size < 2 || task_size > (size_t)INT32_MAX ||
	       result_size > (size_t)INT32_MAX);
	const char *t = tasks;
	uint32_t next = 0, got = 0, busy = 0;
	for (int r = 1; r < size && next < n && !(stop && *stop); r++, next++, busy++)
		MPI_Send(t + next * task_size, (int)task_size, MPI_BYTE, r, TAG_TASK,
			 MPI_COMM_WORLD);
	const struct timespec nap = { 0, 200000 };  /* 0.2 ms */
	while (busy) {
		int flag = 0;
		MPI_Status st;
		MPI_Iprobe(MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &flag, &st);
		if (!flag) {
			nanosleep(&nap, NULL);
			continue;
		}
		MPI_Recv(buf, (int)result_size, MPI_BYTE, st.MPI_SOURCE, TAG_RESULT, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
		busy--;
		got++;
		on_result(ctx, buf);
		if (next < n && !(stop && *stop)) {
			MPI_Send(t + next * task_size, (int)task_size, MPI_BYTE, st.MPI_SOURCE,
				 TAG_TASK, MPI_COMM_WORLD);
			next++;
			busy++;
		}
	}
	return got;
}

void mp_stop_workers(void)
{
	if (rank != 0)
		return;
	for (int r = 1; r < size; r++)
		MPI_Send(NULL, 0, MPI_BYTE, r, TAG_STOP, MPI_COMM_WORLD);
}

void mp_serve(void *task, size_t task_size, void *buf, size_t result_size,
	      void (*run)(void *ctx, const void *task, void *buf), void *ctx)
{
	BUG_ON(rank == 0 || task_size > (size_t)INT32_MAX || result_size > (size_t)INT32_MAX);
	for (;;) {
		MPI_Status st;
		MPI_Probe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
		if (st.MPI_TAG == TAG_STOP) {
			MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_STOP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			return;
		}
		MPI_Recv(task, (int)task_size, MPI_BYTE, 0, TAG_TASK, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
		run(ctx, task, buf);
		MPI_Send(buf, (int)result_size, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
	}
}

#else /* no MPI: one rank */

void mp_init(int *argc, char ***argv)
{
	(void)argc, (void)argv;
}

void mp_finalize(void)
{
}

int mp_built(void)
{
	return 0;
}

int mp_rank(void)
{
	return 0;
}

int mp_size(void)
{
	return 1;
}

uint32_t mp_dispatch(const void *tasks, uint32_t n, size_t task_size, void *buf,
		     size_t result_size, void (*on_result)(void *ctx, const void *result),
		     void *ctx, volatile sig_atomic_t *stop)
{
	(void)tasks, (void)n, (void)task_size, (void)buf, (void)result_size, (void)on_result;
	(void)ctx, (void)stop;
	BUG("mp_dispatch needs several MPI ranks");
}

void mp_stop_workers(void)
{
}

void mp_serve(void *task, size_t task_size, void *buf, size_t result_size,
	      void (*run)(void *ctx, const void *task, void *buf), void *ctx)
{
	(void)task, (void)task_size, (void)buf, (void)result_size, (void)run, (void)ctx;
	BUG("mp_serve needs several MPI ranks");
}

#endif
