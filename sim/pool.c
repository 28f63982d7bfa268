/*
 * pool.c - tasks run in worker processes that may die (pool.h).
 *
 * Each forked worker has two pipes of its own: tasks in, results out. The
 * parent hands a worker one task at a time and polls the result pipes of
 * the busy ones. A worker's result pipe is open for writing in that worker
 * alone (a new worker closes the parent's ends of the others' pipes), so
 * end of file on it means the worker is gone: the parent reaps it, turns
 * the task it held into a lost result and forks a new worker for the tasks
 * left. A worker ends when its task pipe reaches end of file, which is how
 * the parent stops them; a worker whose parent died ends there too, or on
 * its next write (SIGPIPE).
 *
 * Invariants: a busy worker holds exactly one task, handed out once; every
 * task handed out gives exactly one call of job->done (its result, or the
 * lost one), so nothing is re-queued and nothing is counted twice.
 */
#include "sim/pool.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/util.h"
#include "sim/mpi_pool.h"

#define POOL_MAX 64

struct worker {
	pid_t pid;                /* 0: no process in this slot           */
	int to, from;             /* task pipe's write end, result's read */
	int busy;                 /* holds task `task`                    */
	uint32_t task;
};

struct pool {
	const struct pool_job *job;
	int ignore_sigint;        /* workers leave SIGINT to the parent   */
	struct worker w[POOL_MAX];
	int n;                    /* slots in use                         */
};

/* ---- signals ---------------------------------------------------------------- */

static const struct {
	int sig;
	const char *name;
} signals[] = {
	{ SIGABRT, "SIGABRT" }, { SIGKILL, "SIGKILL" }, { SIGSEGV, "SIGSEGV" },
	{ SIGBUS, "SIGBUS" },   { SIGFPE, "SIGFPE" },   { SIGILL, "SIGILL" },
	{ SIGTERM, "SIGTERM" }, { SIGINT, "SIGINT" },   { SIGHUP, "SIGHUP" },
	{ SIGQUIT, "SIGQUIT" }, { SIGPIPE, "SIGPIPE" }, { SIGXCPU, "SIGXCPU" },
	{ SIGXFSZ, "SIGXFSZ" }, { SIGTRAP, "SIGTRAP" }, { SIGSYS, "SIGSYS" },
	{ SIGUSR1, "SIGUSR1" }, { SIGUSR2, "SIGUSR2" },
};

static const char *signal_name(int sig)
{
	for (size_t i = 0; i < ARRAY_SIZE(signals); i++)
		if (signals[i].sig == sig)
			return signals[i].name;
	return "unknown signal";
}

/* How a worker ended, from waitpid's status. */
static void describe_end(int status, char *why, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(why, len, "its worker was killed by signal %d (%s)", WTERMSIG(status),
			 signal_name(WTERMSIG(status)));
	else if (WIFEXITED(status))
		snprintf(why, len, "its worker exited with status %d before sending a result",
			 WEXITSTATUS(status));
	else
		snprintf(why, len, "its worker stopped");
}

void pool_test_crash(uint32_t id)
{
	const char *v = getenv("CLUSTERSIM_TEST_CRASH");
	if (!v || !*v)
		return;
	char *end;
	unsigned long want = strtoul(v, &end, 10);
	if (end == v || want != id)
		return;
	int sig = SIGABRT;
	if (*end == ':') {
		const char *s = end + 1;
		if (*s >= '0' && *s <= '9')
			sig = atoi(s);
		for (size_t i = 0; i < ARRAY_SIZE(signals); i++)
			if (!strcmp(s, signals[i].name) || !strcmp(s, signals[i].name + 3))
				sig = signals[i].sig;
	}
	signal(sig, SIG_DFL);
	kill(getpid(), sig);
}

/* ---- pipes ------------------------------------------------------------------ */

/* Read exactly n bytes (0), or -1 at end of file or on an error. */
static int read_all(int fd, void *buf, size_t n)
{
	for (char *p = buf; n;) {
		ssize_t k = read(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k, n -= (size_t)k;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t n)
{
	for (const char *p = buf; n;) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k, n -= (size_t)k;
	}
	return 0;
}

/* ---- workers ---------------------------------------------------------------- */

/* A worker's life: run each task it reads, until end of file. */
static void __attribute__((noreturn)) worker_main(const struct pool_job *job, int in, int out)
{
	void *task = xmalloc(job->task_size), *res = xmalloc(job->result_size);
	int rc = 0;
	while (rc == 0 && read_all(in, task, job->task_size) == 0) {
		memset(res, 0, job->result_size);
		job->run(job->ctx, task, res);
		rc = write_all(out, res, job->result_size) < 0;
	}
	free(task);
	free(res);
	_exit(rc);
}

/* Fork the worker of slot w. 0, or -1 with errno (the slot stays empty). */
static int worker_start(struct pool *p, struct worker *w)
{
	int t[2], r[2];
	if (pipe(t) < 0)
		return -1;
	if (pipe(r) < 0) {
		close(t[0]), close(t[1]);
		return -1;
	}
	fflush(NULL);             /* nothing buffered is written twice */
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(t[0]), close(t[1]), close(r[0]), close(r[1]);
		errno = e;
		return -1;
	}
	if (pid == 0) {
		/* Hold no other worker's pipes: their ends must close when
		 * those workers (or the parent) do. */
		for (int i = 0; i < p->n; i++)
			if (p->w[i].pid > 0 && &p->w[i] != w)
				close(p->w[i].to), close(p->w[i].from);
		close(t[1]), close(r[0]);
		signal(SIGPIPE, SIG_DFL);
		if (p->ignore_sigint)
			signal(SIGINT, SIG_IGN);
		worker_main(p->job, t[0], r[1]);
	}
	close(t[0]), close(r[1]);
	*w = (struct worker){ .pid = pid, .to = t[1], .from = r[0] };
	return 0;
}

/* Close a worker's pipes and wait for it; how it ended in why. */
static void worker_reap(struct worker *w, char *why, size_t len)
{
	int status = 0;
	close(w->to), close(w->from);
	while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
		;
	describe_end(status, why, len);
	w->pid = 0, w->busy = 0;
}

/* Give task i to worker w, forking one first if the slot is empty; a
 * worker found dead (a write into a closed pipe: it died between tasks,
 * holding none) is replaced once. 0, or -1 if no worker took it. */
static int worker_hand(struct pool *p, struct worker *w, const void *task, uint32_t i)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		char why[128];
		if (!w->pid && worker_start(p, w) < 0)
			return -1;
		if (write_all(w->to, task, p->job->task_size) == 0) {
			w->busy = 1, w->task = i;
			return 0;
		}
		worker_reap(w, why, sizeof(why));
	}
	return -1;
}

/* Wait for worker w's result into res: 0, or -1 when the worker died
 * (then res holds the lost result, and the slot is empty). */
static int worker_collect(struct pool *p, struct worker *w, const void *task, void *res)
{
	w->busy = 0;
	if (read_all(w->from, res, p->job->result_size) == 0)
		return 0;
	char why[128];
	worker_reap(w, why, sizeof(why));
	memset(res, 0, p->job->result_size);
	p->job->lost(p->job->ctx, task, res, why);
	return -1;
}

static void pool_close(struct pool *p)
{
	for (int i = 0; i < p->n; i++)
		if (p->w[i].pid > 0)
			close(p->w[i].to);   /* end of file: the worker exits */
	for (int i = 0; i < p->n; i++)
		if (p->w[i].pid > 0) {
			while (waitpid(p->w[i].pid, NULL, 0) < 0 && errno == EINTR)
				;
			close(p->w[i].from);
			p->w[i].pid = 0;
		}
}

/* ---- forked workers: the parent ----------------------------------------------- */

static int run_forked(const struct pool_job *job, const void *tasks, uint32_t n, int jobs,
		      volatile sig_atomic_t *stop, struct pool_stats *st)
{
	struct pool p = { .job = job, .ignore_sigint = stop != NULL };
	const char *t = tasks;
	void *res = xmalloc(job->result_size);
	uint32_t next = 0;
	p.n = jobs < 1 ? 1 : jobs > POOL_MAX ? POOL_MAX : jobs;
	if ((uint32_t)p.n > n)
		p.n = (int)n;
	int started = 0;
	for (int i = 0; i < p.n; i++)
		started += worker_start(&p, &p.w[i]) == 0;
	if (!started) {
		free(res);
		return -1;
	}
	for (;;) {
		/* Hand a task to every idle worker (a new one where a slot is
		 * empty), then wait for a result of any busy one. */
		for (int i = 0; i < p.n && next < n && !(stop && *stop); i++)
			if (!p.w[i].busy && worker_hand(&p, &p.w[i], t + next * job->task_size,
							next) == 0)
				next++;
		struct pollfd fds[POOL_MAX];
		int who[POOL_MAX], nfd = 0;
		for (int i = 0; i < p.n; i++)
			if (p.w[i].busy) {
				fds[nfd] = (struct pollfd){ .fd = p.w[i].from, .events = POLLIN };
				who[nfd++] = i;
			}
		if (!nfd)
			break;
		if (poll(fds, (nfds_t)nfd, -1) < 0) {
			BUG_ON(errno != EINTR);
			continue;
		}
		for (int k = 0; k < nfd; k++) {
			if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			struct worker *w = &p.w[who[k]];
			st->lost += worker_collect(&p, w, t + w->task * job->task_size, res) < 0;
			st->done++;
			job->done(job->ctx, res);
		}
	}
	pool_close(&p);
	free(res);
	return 0;
}

/* ---- MPI ranks ------------------------------------------------------------------ */

/* Under MPI a result travels with a header: was its task lost. */
#define ENVELOPE 16

struct forward {
	const struct pool_job *job;
	struct pool_stats *st;
	struct pool local;        /* a serving rank's one forked worker */
};

static void forward_result(void *ctx, const void *env)
{
	struct forward *f = ctx;
	const char *e = env;
	f->st->lost += e[0] != 0;
	f->st->done++;
	f->job->done(f->job->ctx, e + ENVELOPE);
}

/* A serving rank: the task in its child; a lost result if the child died. */
static void serve_one(void *ctx, const void *task, void *env)
{
	struct forward *f = ctx;
	struct pool *p = &f->local;
	char *e = env, *res = e + ENVELOPE;
	memset(e, 0, ENVELOPE);
	if (worker_hand(p, &p->w[0], task, 0) < 0) {
		/* No child could be forked: run it here, unprotected. */
		memset(res, 0, f->job->result_size);
		f->job->run(f->job->ctx, task, res);
		return;
	}
	e[0] = worker_collect(p, &p->w[0], task, res) < 0;
}

void pool_serve(const struct pool_job *job)
{
	struct forward f = { .job = job, .local = { .job = job, .n = 1 } };
	void *task = xmalloc(job->task_size), *env = xmalloc(ENVELOPE + job->result_size);
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	sigaction(SIGPIPE, &ign, &old);
	mp_serve(task, job->task_size, env, ENVELOPE + job->result_size, serve_one, &f);
	pool_close(&f.local);
	sigaction(SIGPIPE, &old, NULL);
	free(task);
	free(env);
}

int pool_run(const struct pool_job *job, const void *tasks, uint32_t n, int jobs,
	     volatile sig_atomic_t *stop, struct pool_stats *st)
{
	*st = (struct pool_stats){ 0 };
	if (!n)
		return 0;
	if (mp_size() > 1) {      /* rank 0: the other ranks are the workers */
		struct forward f = { .job = job, .st = st };
		void *env = xmalloc(ENVELOPE + job->result_size);
		mp_dispatch(tasks, n, job->task_size, env, ENVELOPE + job->result_size,
			    forward_result, &f, stop);
		free(env);
		return 0;
	}
	/* Writing to a worker that just died must fail with EPIPE, not kill
	 * this process. */
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	sigaction(SIGPIPE, &ign, &old);
	int rc = run_forked(job, tasks, n, jobs, stop, st);
	int e = errno;
	sigaction(SIGPIPE, &old, NULL);
	errno = e;
	return rc;
}
