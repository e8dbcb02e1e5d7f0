/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conformance tests of process hygiene, run on every backend from
 * conformance.c's main through conf_process_run(): several handles in
 * several threads, a storm of the application's own signals during blocking
 * reads, and a process blocked in notifyx_read being killed.  (fork and exec
 * are checked in conformance.c.)
 *
 * The threads here use no testutil helper that keeps static state (tu_path,
 * tu_fmt, tu_log): each thread has its own buffers and reads its own handle.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conformance.h"

#define NTHREADS 4
#define PER_THREAD 150 /* files each thread creates */
#define STORM_FILES 600
#define STORM_BATCHES 30
#define STORM_SIGNALS_PER_BATCH 5
#define DEADLINE_MS 20000

/* Names "t<thread>-<k>" seen by one handle, counted. */
struct seen {
	unsigned char count[NTHREADS][PER_THREAD > STORM_FILES ? PER_THREAD : STORM_FILES];
	unsigned total;   /* CREATE events with a name of that form */
	unsigned other;   /* any other event but the always-delivered ones */
	char bad[256];    /* the first unexpected event, for the message */
};

/* Counts one record; returns false on a name this test did not make. */
static void seen_add(struct seen *s, const struct notifyx_event *ev)
{
	const char *p = notifyx_event_path(ev);
	int t, k, n = 0;

	if (ev->mask == NOTIFYX_CREATE && sscanf(p, "t%d-%d%n", &t, &k, &n) == 2 && p[n] == 0 &&
	    t >= 0 && t < NTHREADS && k >= 0 && k < (int)sizeof s->count[0]) {
		if (s->count[t][k] < 255)
			s->count[t][k]++;
		s->total++;
		return;
	}
	if (!s->other++)
		snprintf(s->bad, sizeof s->bad, "%s \"%s\" (wd %d)", notifyx_event_name(ev->mask),
			 p, (int)ev->wd);
}

/* Reads nx with blocking reads until want names are seen or the deadline
 * passes; EINTR from the application's signals is retried, as a program does.
 * A watchdog (below) makes sure a read cannot block past the deadline. */
static int read_until(struct notifyx *nx, struct seen *s, unsigned want, unsigned *eintr)
{
	union {
		struct notifyx_event ev;
		char b[16 * NOTIFYX_EVENT_MAX];
	} buf;
	long end = tu_now_ms() + DEADLINE_MS;

	while (s->total < want && tu_now_ms() < end) {
		const struct notifyx_event *ev;
		ssize_t r = notifyx_read(nx, buf.b, sizeof buf.b);

		if (r < 0) {
			if (errno == EINTR) {
				if (eintr)
					(*eintr)++;
				continue;
			}
			return -1;
		}
		for (ev = &buf.ev; (const char *)ev < buf.b + r; ev = notifyx_event_next(ev))
			seen_add(s, ev);
	}
	return 0;
}

/* Past the deadline, creates a file in dir every 200 ms until stopped, so
 * that a reader missing events wakes up and fails instead of hanging. */
struct watchdog {
	pthread_t th;
	const char *dir;
	atomic_int stop;
};

static void *watchdog_main(void *arg)
{
	struct watchdog *wd = arg;
	long end = tu_now_ms() + DEADLINE_MS + 100;
	char p[4096];
	int n = 0, fd;

	while (!atomic_load(&wd->stop)) {
		usleep(20000);
		if (tu_now_ms() < end)
			continue;
		snprintf(p, sizeof p, "%s/wake-%d", wd->dir, n++);
		fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (fd >= 0)
			close(fd);
		usleep(180000);
	}
	return NULL;
}

static void watchdog_start(struct watchdog *wd, const char *dir)
{
	wd->dir = dir;
	atomic_store(&wd->stop, 0);
	assert_int_equal(pthread_create(&wd->th, NULL, watchdog_main, wd), 0);
}

static void watchdog_stop(struct watchdog *wd)
{
	atomic_store(&wd->stop, 1);
	pthread_join(wd->th, NULL);
}

/* Fails unless every name was seen exactly once and nothing else came. */
static void seen_check(const struct seen *s, int nthreads, int per, const char *who)
{
	int t, k;

	for (t = 0; t < nthreads; t++)
		for (k = 0; k < per; k++)
			if (s->count[t][k] != 1)
				fail_msg("%s: \"t%d-%d\" reported %d times, expected once "
					 "(%u names in all)", who, t, k, s->count[t][k], s->total);
	if (s->other)
		fail_msg("%s: %u unexpected events, the first %s", who, s->other, s->bad);
}

static void make_files(const char *dir, int t, int n)
{
	char p[4096];
	int k, fd;

	for (k = 0; k < n; k++) {
		snprintf(p, sizeof p, "%s/t%d-%d", dir, t, k);
		fd = open(p, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0)
			fail_msg("creating %s: %s", p, strerror(errno));
		close(fd);
	}
}

/* ---- several handles in several threads ---- */

struct worker {
	pthread_t th;
	int id;
	const char *dir;
	struct notifyx *nx;
	struct seen seen;
	pthread_barrier_t *start;
	int err;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	pthread_barrier_wait(w->start);
	make_files(w->dir, w->id, PER_THREAD);
	if (read_until(w->nx, &w->seen, NTHREADS * PER_THREAD, NULL) < 0)
		w->err = errno;
	return NULL;
}

/* Every thread has its own handle on one shared directory and creates files
 * in it: each handle reports every file, once, whichever thread made it. */
static void threads_own_handles(void **state)
{
	struct tu_fix *f = F(state);
	static struct worker w[NTHREADS];
	pthread_barrier_t start;
	struct watchdog dog;
	int i;

	tu_require_events(f->nx, NOTIFYX_CREATE);
	memset(w, 0, sizeof w);
	pthread_barrier_init(&start, NULL, NTHREADS);
	/* The handles are opened and watched here, before any file exists, so
	 * that every handle must see every file. */
	for (i = 0; i < NTHREADS; i++) {
		w[i].id = i;
		w[i].dir = f->dir;
		w[i].start = &start;
		w[i].nx = tu_open(0, 0);
		assert_non_null(w[i].nx);
		assert_true(notifyx_add_watch(w[i].nx, f->dir, NOTIFYX_CREATE, 0) > 0);
	}
	watchdog_start(&dog, f->dir);
	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&w[i].th, NULL, worker_main, &w[i]), 0);
	for (i = 0; i < NTHREADS; i++)
		pthread_join(w[i].th, NULL);
	watchdog_stop(&dog);
	pthread_barrier_destroy(&start);
	for (i = 0; i < NTHREADS; i++) {
		notifyx_close(w[i].nx);
		if (w[i].err)
			fail_msg("handle of thread %d: notifyx_read failed with %s", i,
				 strerrorname_np(w[i].err));
		seen_check(&w[i].seen, NTHREADS, PER_THREAD, tu_fmt("handle of thread %d", i));
	}
}

/* ---- a storm of the application's signals during blocking reads ---- */

static atomic_uint storm_caught;

static void on_storm(int sig)
{
	(void)sig;
	atomic_fetch_add_explicit(&storm_caught, 1, memory_order_relaxed);
}

struct storm {
	pthread_t reader;
	atomic_int stop;
	const char *dir;
};

/* Sends SIGUSR1 to the reading thread as fast as it can be taken. */
static void *storm_main(void *arg)
{
	struct storm *s = arg;

	while (!atomic_load(&s->stop)) {
		pthread_kill(s->reader, SIGUSR1);
		usleep(50);
	}
	return NULL;
}

/* Creates the files in batches, each after a few more signals were caught,
 * so that the storm lasts through the whole run however fast the backend. */
static void *storm_writer(void *arg)
{
	struct storm *s = arg;
	int b;

	for (b = 0; b < STORM_BATCHES; b++) {
		long end = tu_now_ms() + 2000;
		char p[4096];
		int k, fd;

		while (atomic_load(&storm_caught) < (unsigned)(b + 1) * STORM_SIGNALS_PER_BATCH &&
		       tu_now_ms() < end)
			usleep(100);
		for (k = b * STORM_FILES / STORM_BATCHES; k < (b + 1) * STORM_FILES / STORM_BATCHES;
		     k++) {
			snprintf(p, sizeof p, "%s/t0-%d", s->dir, k);
			fd = open(p, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
			if (fd >= 0)
				close(fd);
		}
	}
	return NULL;
}

static void storm_one(struct tu_fix *f, int sa_flags, const char *how)
{
	struct notifyx *nx = tu_open(0, 0);
	struct sigaction sa, old;
	struct storm s = { pthread_self(), 0, f->dir };
	static struct seen seen;
	pthread_t sender, writer;
	struct watchdog dog;
	unsigned eintr = 0;
	sigset_t set;
	int r, err;

	assert_non_null(nx);
	assert_true(notifyx_add_watch(nx, f->dir, NOTIFYX_CREATE, 0) > 0);
	memset(&seen, 0, sizeof seen);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_storm;
	sa.sa_flags = sa_flags;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	atomic_store(&storm_caught, 0);
	/* Only this thread takes the signal: the new threads inherit a mask
	 * that blocks it. */
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	assert_int_equal(pthread_create(&sender, NULL, storm_main, &s), 0);
	assert_int_equal(pthread_create(&writer, NULL, storm_writer, &s), 0);
	watchdog_start(&dog, f->dir);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	r = read_until(nx, &seen, STORM_FILES, &eintr);
	err = errno;
	atomic_store(&s.stop, 1);
	pthread_join(sender, NULL);
	pthread_join(writer, NULL);
	watchdog_stop(&dog);
	sigaction(SIGUSR1, &old, NULL);
	notifyx_close(nx);
	if (r < 0)
		fail_msg("signal storm (%s): notifyx_read failed with %s", how, strerrorname_np(err));
	printf("# signal storm (%s): %u signals caught, %u reads ended with EINTR\n", how,
	       atomic_load(&storm_caught), eintr);
	if (atomic_load(&storm_caught) < STORM_BATCHES * STORM_SIGNALS_PER_BATCH)
		fail_msg("signal storm (%s): only %u signals reached the reader", how,
			 atomic_load(&storm_caught));
	seen_check(&seen, 1, STORM_FILES, tu_fmt("signal storm (%s)", how));
}

static void signal_storm(void **state)
{
	struct tu_fix *f = F(state);

	tu_require_events(f->nx, NOTIFYX_CREATE);
	storm_one(f, 0, "without SA_RESTART");
	tu_rm_rf(f->dir);
	tu_mkdir(f->dir);
	storm_one(f, SA_RESTART, "with SA_RESTART");
}

/* ---- a process blocked in notifyx_read can be killed ---- */

/* Forks a child blocked in notifyx_read on an idle directory, sends it sig
 * once it is asleep there and checks that sig ended it. */
static void killed_while_reading(struct tu_fix *f, int sig)
{
	int ready[2], status = 0;
	long end;
	pid_t pid;
	char c;

	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct notifyx *nx = tu_open(0, 0);
		char buf[NOTIFYX_EVENT_MAX];

		if (!nx || notifyx_add_watch(nx, f->dir, NOTIFYX_CREATE, 0) <= 0)
			_exit(3);
		if (write(ready[1], "r", 1) != 1)
			_exit(4);
		notifyx_read(nx, buf, sizeof buf);
		_exit(5); /* nothing is created: the read must not return */
	}
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1) {
		waitpid(pid, &status, 0);
		fail_msg("child could not set up its watch (status %#x)", status);
	}
	close(ready[0]);
	/* Wait until the child sleeps (state S) in the kernel, inside the read. */
	end = tu_now_ms() + 3000;
	for (;;) {
		char path[64], st[512], *p;
		int fd, n;

		snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? (int)read(fd, st, sizeof st - 1) : -1;
		if (fd >= 0)
			close(fd);
		st[n > 0 ? n : 0] = 0;
		p = strrchr(st, ')');
		if ((p && p[1] == ' ' && p[2] == 'S') || tu_now_ms() > end)
			break;
		tu_sleep_ms(5);
	}
	tu_sleep_ms(50);
	assert_int_equal(kill(pid, sig), 0);
	end = tu_now_ms() + 5000;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (tu_now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fail_msg("a process blocked in notifyx_read survived %s for 5 s",
				 sigabbrev_np(sig));
		}
		tu_sleep_ms(5);
	}
	if (!WIFSIGNALED(status) || WTERMSIG(status) != sig)
		fail_msg("child blocked in notifyx_read: expected death by SIG%s, status %#x",
			 sigabbrev_np(sig), status);
}

static void read_killable(void **state)
{
	struct tu_fix *f = F(state);

	tu_require_events(f->nx, NOTIFYX_CREATE);
	killed_while_reading(f, SIGTERM); /* default action: terminate */
	killed_while_reading(f, SIGKILL);
}

int conf_process_run(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(threads_own_handles, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(signal_storm, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(read_killable, tu_setup, tu_teardown),
	};

	return cmocka_run_group_tests_name("conformance: process hygiene", tests, NULL, NULL);
}
