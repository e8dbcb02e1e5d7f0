/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of dnotify's signal routing (backends/dnsig.c) on the real
 * kernel: real F_NOTIFY registrations on temporary directories, real signals.
 * Each directory's signals reach only its channel, in one thread or several;
 * unwatch and close stop them; the signal's disposition decides EBUSY; bad
 * arguments are EINVAL; dispositions come back after the last close, and
 * signals still pending then do not kill.  (SIGIO, fork, descriptors and
 * load: unit-dnsig-sigio.c.)  Exits 77 when dnotify is disabled or missing. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dnsigutil.h"

/* ---- routing ---- */

static void test_routes_to_own_channel(void **state)
{
	struct dir d1, d2, d3;
	struct nx_dnsig *a = chan(0), *b = chan(0);
	struct got g;
	bool ov = true;

	dir_make(&d1);
	dir_make(&d2);
	dir_make(&d3);
	assert_int_equal(nx_dnsig_watch(a, d1.fd, ALL_DN), 0);
	assert_int_equal(nx_dnsig_watch(a, d2.fd, ALL_DN), 0);
	assert_int_equal(nx_dnsig_watch(b, d3.fd, ALL_DN), 0);

	/* Ten changes before the drain: one report. */
	for (int i = 0; i < 10; i++)
		touch(&d1, "f");
	assert_int_equal(drain_wait(a, &g, &ov), 1);
	assert_int_equal(g.fd[0], d1.fd);
	assert_false(ov);
	assert_false(readable(b, QUIET_MS));
	assert_int_equal(nx_dnsig_drain(b, collect, &g, &ov), 0);

	/* Reported again after a drain; the other channel's directory reaches
	 * only it. */
	touch(&d3, "g");
	assert_int_equal(drain_wait(b, &g, &ov), 1);
	assert_int_equal(g.fd[0], d3.fd);
	assert_false(readable(a, QUIET_MS));

	touch(&d2, "h");
	touch(&d1, "f");
	assert_int_equal(drain_wait(a, &g, &ov), 2);
	assert_true((g.fd[0] == d1.fd && g.fd[1] == d2.fd) ||
		    (g.fd[0] == d2.fd && g.fd[1] == d1.fd));

	/* Each kind of change signals. */
	assert_int_equal(renameat(d1.fd, "f", d1.fd, "f2"), 0);
	assert_int_equal(drain_wait(a, &g, &ov), 1);
	assert_int_equal(fchmodat(d1.fd, "f2", 0600, 0), 0);
	assert_int_equal(drain_wait(a, &g, &ov), 1);
	assert_int_equal(unlinkat(d1.fd, "f2", 0), 0);
	assert_int_equal(drain_wait(a, &g, &ov), 1);
	assert_int_equal(g.fd[0], d1.fd);

	nx_dnsig_unwatch(a, d1.fd);
	nx_dnsig_unwatch(a, d2.fd);
	nx_dnsig_unwatch(b, d3.fd);
	nx_dnsig_close(a);
	nx_dnsig_close(b);
	dir_remove(&d1);
	dir_remove(&d2);
	dir_remove(&d3);
}

static void test_unwatch_stops(void **state)
{
	struct nx_dnsig *c = chan(0);
	struct dir d;
	struct got g;
	bool ov;
	unsigned long hits;
	sigset_t set, old;

	dir_make(&d);
	assert_int_equal(nx_dnsig_watch(c, d.fd, ALL_DN), 0);
	nx_dnsig_unwatch(c, d.fd);
	nx_dnsig_unwatch(c, d.fd); /* twice: nothing */
	hits = nx_dnsig_thread_signals();
	touch(&d, "f");
	assert_false(readable(c, QUIET_MS));
	/* The kernel's registration is gone too: no signal at all. */
	assert_int_equal(nx_dnsig_thread_signals(), hits);

	/* A signal already queued when unwatch runs is dropped. */
	assert_int_equal(nx_dnsig_watch(c, d.fd, ALL_DN), 0);
	sigemptyset(&set);
	sigaddset(&set, nx_dnsig_signal(c));
	assert_int_equal(pthread_sigmask(SIG_BLOCK, &set, &old), 0);
	touch(&d, "g");
	nx_dnsig_unwatch(c, d.fd);
	hits = nx_dnsig_thread_signals();
	assert_int_equal(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
	/* Handled here (a creation and a write: two queued signals), and
	 * dropped. */
	assert_true(nx_dnsig_thread_signals() >= hits + 1);
	assert_false(readable(c, QUIET_MS));
	assert_int_equal(nx_dnsig_drain(c, collect, &g, &ov), 0);

	nx_dnsig_close(c);
	dir_remove(&d);
}

/* A directory unwatched while its report waits in the pipe, then watched by
 * another channel, reports there: the wait does not carry over. */
static void test_watch_after_undrained(void **state)
{
	struct nx_dnsig *a = chan(0), *b = chan(0);
	struct dir d;
	struct got g;
	bool ov;

	dir_make(&d);
	assert_int_equal(nx_dnsig_watch(a, d.fd, ALL_DN), 0);
	touch(&d, "f");
	assert_true(readable(a, WAIT_MS));
	nx_dnsig_unwatch(a, d.fd);
	assert_int_equal(nx_dnsig_watch(b, d.fd, ALL_DN), 0);
	touch(&d, "g");
	assert_int_equal(drain_wait(b, &g, &ov), 1);
	assert_int_equal(g.fd[0], d.fd);
	assert_false(ov);
	/* The stale entry in a's pipe is dropped. */
	assert_int_equal(nx_dnsig_drain(a, collect, &g, &ov), 0);
	nx_dnsig_close(a);
	nx_dnsig_close(b);
	dir_remove(&d);
}

/* Watching again adds events: the kernel only adds to a registration. */
static void test_watch_again_adds(void **state)
{
	struct nx_dnsig *c = chan(0);
	struct dir d;
	struct got g;
	bool ov;

	dir_make(&d);
	touch(&d, "f");
	assert_int_equal(nx_dnsig_watch(c, d.fd, DN_CREATE), 0);
	touch(&d, "f"); /* a write: DN_MODIFY only */
	assert_false(readable(c, QUIET_MS));
	assert_int_equal(nx_dnsig_watch(c, d.fd, DN_MODIFY), 0);
	touch(&d, "f");
	assert_int_equal(drain_wait(c, &g, &ov), 1);
	touch(&d, "new");
	assert_int_equal(drain_wait(c, &g, &ov), 1);
	assert_int_equal(g.fd[0], d.fd);
	nx_dnsig_close(c); /* cancels what is still watched */
	touch(&d, "newer");
	dir_remove(&d);
}

/* ---- several threads ---- */

#define THREAD_ROUNDS 300

struct worker {
	pthread_barrier_t *start;
	int sig;
	int rounds_ok;
	int foreign;   /* reports of a descriptor not this thread's */
	int missing;   /* rounds whose change was never reported */
	int failed;    /* a call failed */
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	struct nx_dnsig *c;
	struct dir d;
	char name[32];

	strcpy(d.path, "/tmp/nx-dnsig-XXXXXX");
	if (!mkdtemp(d.path) || (d.fd = open(d.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    nx_dnsig_open(w->sig, &c) < 0) {
		w->failed++;
		pthread_barrier_wait(w->start);
		return NULL;
	}
	if (nx_dnsig_watch(c, d.fd, ALL_DN) < 0)
		w->failed++;
	pthread_barrier_wait(w->start);
	for (int i = 0; i < THREAD_ROUNDS; i++) {
		struct got g = { .n = 0 };
		bool ov, mine = false;
		int fd;

		snprintf(name, sizeof(name), "f%d", i);
		if ((fd = openat(d.fd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0) {
			w->failed++;
			break;
		}
		close(fd);
		/* The signal may be handled by the other thread: the table
		 * still routes it here. */
		while (!mine && readable(c, WAIT_MS)) {
			if (nx_dnsig_drain(c, collect, &g, &ov) < 0)
				w->failed++;
			for (int k = 0; k < g.n && k < 64; k++) {
				if (g.fd[k] == d.fd)
					mine = true;
				else
					w->foreign++;
			}
			g.n = 0;
		}
		if (mine)
			w->rounds_ok++;
		else
			w->missing++;
		unlinkat(d.fd, name, 0);
		/* The unlink's own report comes with the next round's. */
	}
	nx_dnsig_unwatch(c, d.fd);
	nx_dnsig_close(c);
	close(d.fd);
	rmdir(d.path);
	return NULL;
}

static void run_workers(int sig1, int sig2)
{
	pthread_barrier_t start;
	struct worker w[2] = { { .start = &start, .sig = sig1 }, { .start = &start, .sig = sig2 } };
	pthread_t t[2];

	assert_int_equal(pthread_barrier_init(&start, NULL, 2), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	pthread_barrier_destroy(&start);
	for (int i = 0; i < 2; i++) {
		print_message("thread %d: %d/%d rounds reported, %d foreign, %d missing\n", i,
			      w[i].rounds_ok, THREAD_ROUNDS, w[i].foreign, w[i].missing);
		assert_int_equal(w[i].failed, 0);
		assert_int_equal(w[i].foreign, 0);
		assert_int_equal(w[i].rounds_ok, THREAD_ROUNDS);
	}
	assert_true(is_dfl(sig1 ? sig1 : nx_dnsig_default_signal()));
	assert_true(is_dfl(sig2 ? sig2 : nx_dnsig_default_signal()));
}

static void test_two_threads_same_signal(void **state)
{
	run_workers(0, 0);
}

static void test_two_threads_two_signals(void **state)
{
	run_workers(SIGRTMIN + 7, SIGRTMIN + 8);
}

/* ---- dispositions ---- */

static void test_ebusy(void **state)
{
	int sig = nx_dnsig_default_signal();
	struct nx_dnsig *c = NULL;
	struct sigaction sa;

	set_handler(sig, app_handler, 0);
	errno = 0;
	assert_int_equal(nx_dnsig_open(0, &c), -1);
	assert_int_equal(errno, EBUSY);
	sa = disposition(sig);
	assert_ptr_equal(sa.sa_handler, app_handler);
	assert_true(is_dfl(SIGIO)); /* nothing installed on the way */

	set_handler(sig, SIG_IGN, 0);
	errno = 0;
	assert_int_equal(nx_dnsig_open(sig, &c), -1);
	assert_int_equal(errno, EBUSY);
	assert_ptr_equal(disposition(sig).sa_handler, SIG_IGN);

	set_handler(sig, SIG_DFL, 0);
	c = chan(sig);
	/* The application takes the signal while the channel is open: a second
	 * channel is refused, and the last close leaves the application's
	 * handler in place. */
	set_handler(sig, app_handler, SA_RESTART);
	assert_int_equal(nx_dnsig_open(sig, &(struct nx_dnsig *){ NULL }), -1);
	assert_int_equal(errno, EBUSY);
	nx_dnsig_close(c);
	assert_ptr_equal(disposition(sig).sa_handler, app_handler);
	assert_true(is_dfl(SIGIO));
	set_handler(sig, SIG_DFL, 0);
}

static void test_einval(void **state)
{
	const int bad[] = { -1, 1000, SIGUSR1, SIGIO, SIGRTMIN - 1, SIGRTMAX + 1 };
	struct nx_dnsig *c = NULL;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		assert_int_equal(nx_dnsig_open(bad[i], &c), -1);
		assert_int_equal(errno, EINVAL);
		assert_null(c);
	}
	assert_true(is_dfl(SIGIO));
	/* The ends of the range are valid. */
	c = chan(SIGRTMIN);
	nx_dnsig_close(c);
	c = chan(SIGRTMAX);
	nx_dnsig_close(c);
	assert_true(is_dfl(SIGRTMIN));
	assert_true(is_dfl(SIGRTMAX));
}

static void test_watch_errors(void **state)
{
	struct nx_dnsig *a = chan(0), *b = chan(0);
	struct dir d;
	int file, nfd;

	dir_make(&d);
	errno = 0;
	assert_int_equal(nx_dnsig_watch(a, d.fd, 0), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(nx_dnsig_watch(a, d.fd, DN_MULTISHOT | DN_CREATE), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(nx_dnsig_watch(a, d.fd, 0x40), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(nx_dnsig_watch(a, -1, DN_CREATE), -1);
	assert_int_equal(errno, EINVAL);

	nfd = dup(0);
	assert_true(nfd >= 0);
	close(nfd);
	assert_int_equal(nx_dnsig_watch(a, nfd, DN_CREATE), -1);
	assert_int_equal(errno, EBADF);

	touch(&d, "file");
	file = openat(d.fd, "file", O_RDONLY | O_CLOEXEC);
	assert_true(file >= 0);
	assert_int_equal(nx_dnsig_watch(a, file, DN_CREATE), -1);
	assert_int_equal(errno, ENOTDIR);
	close(file);

	assert_int_equal(nx_dnsig_watch(a, d.fd, DN_CREATE), 0);
	assert_int_equal(nx_dnsig_watch(b, d.fd, DN_CREATE), -1);
	assert_int_equal(errno, EBUSY);
	/* A failed watch left the descriptor where it was. */
	nx_dnsig_unwatch(b, d.fd); /* not b's: nothing */
	touch(&d, "new");
	assert_true(readable(a, WAIT_MS));
	assert_false(readable(b, QUIET_MS));

	nx_dnsig_close(a);
	nx_dnsig_close(b);
	dir_remove(&d);
}

static void test_restore(void **state)
{
	int sig = nx_dnsig_default_signal(), other = SIGRTMIN + 7;
	struct nx_dnsig *a, *b;
	struct sigaction sa;

	set_handler(SIGIO, app_handler, SA_RESTART);
	assert_true(is_dfl(sig));
	a = chan(0);
	sa = disposition(sig);
	assert_true(sa.sa_flags & SA_SIGINFO);
	assert_true(sa.sa_flags & SA_RESTART);
	sa = disposition(SIGIO);
	assert_true(sa.sa_flags & SA_SIGINFO);
	assert_true(sa.sa_flags & SA_RESTART);

	b = chan(other);
	nx_dnsig_close(a);
	assert_true(is_dfl(sig));
	assert_false(is_dfl(other));
	assert_true(disposition(SIGIO).sa_flags & SA_SIGINFO); /* b still needs it */
	nx_dnsig_close(b);
	assert_true(is_dfl(other));
	sa = disposition(SIGIO);
	assert_ptr_equal(sa.sa_handler, app_handler);
	assert_true(sa.sa_flags & SA_RESTART);
	set_handler(SIGIO, SIG_DFL, 0);

	/* SIG_IGN comes back as SIG_IGN. */
	set_handler(SIGIO, SIG_IGN, 0);
	nx_dnsig_close(chan(0));
	assert_ptr_equal(disposition(SIGIO).sa_handler, SIG_IGN);
	set_handler(SIGIO, SIG_DFL, 0);
}

/* A routing signal pending (blocked) at the last close would kill the
 * process under SIG_DFL: the close discards it. */
static void test_close_with_pending_signal(void **state)
{
	struct nx_dnsig *c = chan(0);
	int sig = nx_dnsig_signal(c);
	struct dir d;
	sigset_t set, old, pend;

	dir_make(&d);
	assert_int_equal(nx_dnsig_watch(c, d.fd, ALL_DN), 0);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigaddset(&set, SIGIO);
	assert_int_equal(pthread_sigmask(SIG_BLOCK, &set, &old), 0);
	touch(&d, "f");
	raise(SIGIO);
	assert_int_equal(sigpending(&pend), 0);
	assert_int_equal(sigismember(&pend, sig), 1);
	assert_int_equal(sigismember(&pend, SIGIO), 1);
	nx_dnsig_close(c);
	assert_true(is_dfl(sig));
	assert_true(is_dfl(SIGIO));
	assert_int_equal(sigpending(&pend), 0);
	assert_int_equal(sigismember(&pend, sig), 0);
	assert_int_equal(sigismember(&pend, SIGIO), 0);
	assert_int_equal(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
	dir_remove(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routes_to_own_channel),
		cmocka_unit_test(test_unwatch_stops),
		cmocka_unit_test(test_watch_again_adds),
		cmocka_unit_test(test_watch_after_undrained),
		cmocka_unit_test(test_two_threads_same_signal),
		cmocka_unit_test(test_two_threads_two_signals),
		cmocka_unit_test(test_ebusy),
		cmocka_unit_test(test_einval),
		cmocka_unit_test(test_watch_errors),
		cmocka_unit_test(test_restore),
		cmocka_unit_test(test_close_with_pending_signal),
	};

	if (nx_dnsig_probe() < 0) {
		printf("SKIP: dnotify is not available here: %s\n", strerror(errno));
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
