/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of dnotify's signal routing (backends/dnsig.c) on the real
 * kernel: real F_NOTIFY registrations on temporary directories, real signals.
 * Each directory's signals reach only its channel, in one thread or several;
 * unwatch and close stop them; the signal's disposition decides EBUSY; bad
 * arguments are EINVAL; dispositions come back after the last close, and
 * signals still pending then do not kill; SIGIO never kills and is chained to
 * the application's handler; a forked child's close leaves the parent
 * working.  Exits 77 when dnotify is disabled or missing. */
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

#include <cmocka.h>

#include "dnsig.h"

#define WAIT_MS 3000  /* for what must come */
#define QUIET_MS 200  /* for what must not */
#define ALL_DN (DN_MODIFY | DN_CREATE | DN_DELETE | DN_RENAME | DN_ATTRIB)

struct dir {
	char path[64];
	int fd;
};

static void dir_make(struct dir *d)
{
	strcpy(d->path, "/tmp/nx-dnsig-XXXXXX");
	assert_non_null(mkdtemp(d->path));
	d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(d->fd >= 0);
}

static void dir_remove(struct dir *d)
{
	DIR *dp = opendir(d->path);
	struct dirent *e;

	assert_non_null(dp);
	while ((e = readdir(dp))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(dp), e->d_name, 0);
	}
	closedir(dp);
	if (d->fd >= 0)
		close(d->fd);
	assert_int_equal(rmdir(d->path), 0);
}

/* Creates (or rewrites) the file name in d: a DN_CREATE or DN_MODIFY. */
static void touch(const struct dir *d, const char *name)
{
	int fd = openat(d->fd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
}

static bool readable(const struct nx_dnsig *c, int ms)
{
	struct pollfd p = { .fd = nx_dnsig_fd(c), .events = POLLIN };
	int r;

	while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR)
		;
	return r == 1;
}

struct got {
	int fd[64];
	int n;
};

static void collect(void *ctx, int fd)
{
	struct got *g = ctx;

	if (g->n < 64)
		g->fd[g->n] = fd;
	g->n++;
}

/* Waits for c to become readable, then drains it into *g. */
static int drain_wait(struct nx_dnsig *c, struct got *g, bool *overflow)
{
	g->n = 0;
	if (!readable(c, WAIT_MS))
		return -2;
	return nx_dnsig_drain(c, collect, g, overflow);
}

static struct nx_dnsig *chan(int sig)
{
	struct nx_dnsig *c = NULL;

	assert_int_equal(nx_dnsig_open(sig, &c), 0);
	assert_non_null(c);
	return c;
}

static struct sigaction disposition(int sig)
{
	struct sigaction sa;

	assert_int_equal(sigaction(sig, NULL, &sa), 0);
	return sa;
}

static bool is_dfl(int sig)
{
	struct sigaction sa = disposition(sig);

	return !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL;
}

static void set_handler(int sig, void (*fn)(int), int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(sig, &sa, NULL), 0);
}

static volatile sig_atomic_t app_hits;

static void app_handler(int sig)
{
	app_hits++;
}

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

/* ---- SIGIO ---- */

static void test_sigio_default(void **state)
{
	struct nx_dnsig *a = chan(0), *b = chan(SIGRTMIN + 7);
	unsigned long hits = nx_dnsig_thread_signals();
	struct got g = { .n = 0 };
	bool ov = false;

	assert_int_equal(raise(SIGIO), 0); /* SIG_DFL would have killed us */
	assert_int_equal(nx_dnsig_thread_signals(), hits + 1);
	assert_true(readable(a, WAIT_MS));
	assert_int_equal(nx_dnsig_drain(a, collect, &g, &ov), 0);
	assert_true(ov);
	assert_int_equal(nx_dnsig_drain(a, collect, &g, &ov), 0);
	assert_false(ov);
	assert_false(readable(a, 0));
	/* Every channel learnt of it. */
	assert_int_equal(nx_dnsig_drain(b, collect, &g, &ov), 0);
	assert_true(ov);
	nx_dnsig_close(a);
	nx_dnsig_close(b);
	assert_true(is_dfl(SIGIO));
}

static volatile sig_atomic_t info_hits, info_code;

static void app_sigio_info(int sig, siginfo_t *si, void *uc)
{
	sigset_t cur;

	info_hits++;
	info_code = si->si_code;
	/* Called as the kernel would: SIGIO blocked, the rest not. */
	pthread_sigmask(SIG_SETMASK, NULL, &cur);
	if (sigismember(&cur, SIGIO) != 1 || sigismember(&cur, SIGUSR2) != 0)
		info_code = -12345;
}

static void test_sigio_chained(void **state)
{
	struct sigaction sa;
	struct nx_dnsig *c;
	unsigned long hits;
	struct got g;
	bool ov = false;

	app_hits = 0;
	set_handler(SIGIO, app_handler, SA_RESTART);
	c = chan(0);
	hits = nx_dnsig_thread_signals();
	assert_int_equal(raise(SIGIO), 0);
	assert_int_equal(app_hits, 1);
	/* The application's handler ran: not the library's own signal. */
	assert_int_equal(nx_dnsig_thread_signals(), hits);
	assert_int_equal(nx_dnsig_drain(c, collect, &g, &ov), 0);
	assert_true(ov);
	nx_dnsig_close(c);

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = app_sigio_info;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGIO, &sa, NULL), 0);
	c = chan(0);
	info_hits = 0;
	assert_int_equal(raise(SIGIO), 0);
	assert_int_equal(info_hits, 1);
	assert_int_equal(info_code, SI_TKILL);
	nx_dnsig_close(c);
	assert_ptr_equal(disposition(SIGIO).sa_sigaction, app_sigio_info);

	/* SIG_IGN before: not called, and no death. */
	set_handler(SIGIO, SIG_IGN, 0);
	c = chan(0);
	assert_int_equal(raise(SIGIO), 0);
	assert_int_equal(nx_dnsig_drain(c, collect, &g, &ov), 0);
	assert_true(ov);
	nx_dnsig_close(c);
	set_handler(SIGIO, SIG_DFL, 0);
}

/* What the application's handler saw of its thread. */
static volatile sig_atomic_t flags_hits, flags_onstack;
static sigset_t flags_mask;

static void app_sigio_flags(int sig)
{
	stack_t ss;

	flags_hits++;
	flags_onstack = sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK);
	pthread_sigmask(SIG_SETMASK, NULL, &flags_mask);
}

/* Installs app_sigio_flags on SIGIO with flags and a mask of mask_sig (0:
 * empty; -1: every bit, glibc's internal signals too), opens a channel and
 * raises SIGIO once, with errno at 0 around it.  Returns the channel. */
static struct nx_dnsig *raise_app_sigio(int flags, int mask_sig)
{
	struct sigaction sa;
	struct nx_dnsig *c;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = app_sigio_flags;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	if (mask_sig > 0)
		sigaddset(&sa.sa_mask, mask_sig);
	else if (mask_sig < 0)
		memset(&sa.sa_mask, 0xff, sizeof(sa.sa_mask));
	assert_int_equal(sigaction(SIGIO, &sa, NULL), 0);
	c = chan(0);
	flags_hits = 0;
	flags_onstack = -1;
	errno = 0;
	assert_int_equal(raise(SIGIO), 0);
	/* The interrupted code finds errno as it left it. */
	assert_int_equal(errno, 0);
	assert_int_equal(flags_hits, 1);
	return c;
}

/* The library's SIGIO handler, installed over the application's, keeps its
 * SA_RESTART and SA_ONSTACK: the application's handler, called from ours,
 * still runs on its alternate stack, with its sa_mask and SIGIO blocked (not
 * SIGIO under SA_NODEFER), and no call of the thread fails with EINTR for
 * it. */
static void test_sigio_app_flags(void **state)
{
	static char alt[1 << 16];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) }, old_ss;
	struct nx_dnsig *c;
	struct sigaction sa;

	assert_int_equal(sigaltstack(&ss, &old_ss), 0);
	c = raise_app_sigio(SA_RESTART | SA_ONSTACK, SIGUSR1);
	sa = disposition(SIGIO);
	assert_true(sa.sa_flags & SA_SIGINFO); /* the library's */
	assert_int_equal(sa.sa_flags & (SA_RESTART | SA_ONSTACK), SA_RESTART | SA_ONSTACK);
	assert_int_equal(flags_onstack, 1);
	assert_int_equal(sigismember(&flags_mask, SIGUSR1), 1);
	assert_int_equal(sigismember(&flags_mask, SIGIO), 1);
	assert_int_equal(sigismember(&flags_mask, SIGUSR2), 0);
	nx_dnsig_close(c);
	sa = disposition(SIGIO);
	assert_ptr_equal(sa.sa_handler, app_sigio_flags);
	assert_int_equal(sa.sa_flags & (SA_SIGINFO | SA_RESTART | SA_ONSTACK),
			 SA_RESTART | SA_ONSTACK);

	/* Without SA_ONSTACK neither handler takes the alternate stack. */
	c = raise_app_sigio(SA_NODEFER, SIGUSR2);
	assert_false(disposition(SIGIO).sa_flags & SA_ONSTACK);
	assert_int_equal(flags_onstack, 0);
	assert_int_equal(sigismember(&flags_mask, SIGUSR2), 1);
	assert_int_equal(sigismember(&flags_mask, SIGIO), 0);
	nx_dnsig_close(c);

	/* A mask with glibc's internal signals (sigaddset refuses them). */
	c = raise_app_sigio(SA_RESTART, -1);
	assert_int_equal(sigismember(&flags_mask, SIGUSR1), 1);
	nx_dnsig_close(c);

	set_handler(SIGIO, SIG_DFL, 0);
	assert_int_equal(sigaltstack(&old_ss, NULL), 0);
}

/* ---- fork, descriptors ---- */

static int count_fds(void)
{
	DIR *dp = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(dp);
	while (readdir(dp))
		n++;
	closedir(dp);
	return n;
}

static void test_no_descriptor_kept(void **state)
{
	int before = count_fds();
	struct nx_dnsig *c = chan(0);
	struct dir d;

	dir_make(&d);
	/* The pipe's two ends, and nothing per directory (never a dup). */
	assert_int_equal(count_fds(), before + 3);
	assert_int_equal(nx_dnsig_watch(c, d.fd, ALL_DN), 0);
	assert_int_equal(count_fds(), before + 3);
	nx_dnsig_close(c);
	assert_int_equal(count_fds(), before + 1);
	dir_remove(&d);
	assert_int_equal(count_fds(), before);
}

static void test_fork_child_closes(void **state)
{
	struct nx_dnsig *c = chan(0);
	struct dir d;
	struct got g;
	bool ov;
	pid_t pid;
	int status;

	dir_make(&d);
	assert_int_equal(nx_dnsig_watch(c, d.fd, ALL_DN), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* The forked close, then a channel of the child's own. */
		struct nx_dnsig *mine;

		nx_dnsig_close(c);
		close(d.fd);
		if (!is_dfl(nx_dnsig_default_signal()) || !is_dfl(SIGIO))
			_exit(2);
		if (nx_dnsig_open(0, &mine) < 0)
			_exit(3);
		raise(SIGIO);
		nx_dnsig_close(mine);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* The parent's registration and routing are intact. */
	assert_false(is_dfl(nx_dnsig_default_signal()));
	touch(&d, "after-fork");
	assert_int_equal(drain_wait(c, &g, &ov), 1);
	assert_int_equal(g.fd[0], d.fd);
	assert_false(ov); /* the child's SIGIO was not ours */
	nx_dnsig_close(c);
	dir_remove(&d);
}

/* ---- many directories, churn ---- */

#define MANY 17000 /* more than a default 64 KiB pipe holds (16384 ints) */

static void test_many_directories(void **state)
{
	struct rlimit rl;
	struct nx_dnsig *c;
	struct dir top;
	int *fds;
	struct got g;
	bool ov = false;
	sigset_t set, old;
	int reports = 0, n;
	char name[32];

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < MANY + 64) {
		print_message("skipped: RLIMIT_NOFILE allows %lu descriptors, %d needed\n",
			      (unsigned long)rl.rlim_max, MANY + 64);
		skip();
	}
	rl.rlim_cur = rl.rlim_max;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	dir_make(&top);
	c = chan(0);
	fds = calloc(MANY, sizeof(*fds));
	assert_non_null(fds);
	for (int i = 0; i < MANY; i++) {
		snprintf(name, sizeof(name), "%d", i);
		assert_int_equal(mkdirat(top.fd, name, 0755), 0);
		fds[i] = openat(top.fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		assert_true(fds[i] >= 0);
		assert_int_equal(nx_dnsig_watch(c, fds[i], DN_CREATE), 0);
	}
	/* Every directory signalled before the first drain: they all fit. */
	sigemptyset(&set);
	sigaddset(&set, nx_dnsig_signal(c));
	assert_int_equal(pthread_sigmask(SIG_BLOCK, &set, &old), 0);
	for (int i = 0; i < MANY; i++)
		assert_int_equal(mkdirat(fds[i], "d", 0755), 0);
	assert_int_equal(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
	while (readable(c, QUIET_MS)) {
		g.n = 0;
		n = nx_dnsig_drain(c, collect, &g, &ov);
		assert_true(n >= 0);
		if (ov)
			break;
		reports += n;
	}
	print_message("%d directories: %d reports, overflow %d\n", MANY, reports, ov);
	assert_false(ov);
	assert_int_equal(reports, MANY);
	for (int i = 0; i < MANY; i++) {
		nx_dnsig_unwatch(c, fds[i]);
		assert_int_equal(unlinkat(fds[i], "d", AT_REMOVEDIR), 0);
		close(fds[i]);
		snprintf(name, sizeof(name), "%d", i);
		assert_int_equal(unlinkat(top.fd, name, AT_REMOVEDIR), 0);
	}
	free(fds);
	nx_dnsig_close(c);
	dir_remove(&top);
}

/* Channels opened, used and closed in two threads, while a third raises
 * SIGIO (its handler walks the list of channels being changed) and the main
 * thread's channel keeps receiving: the handlers never touch freed memory
 * (run under ASan or valgrind to see it) and nothing is misrouted. */
#define CHURN_ROUNDS 300

static atomic_bool churn_stop;

/* Whether c, just fed a change of d, becomes readable and its drain reports
 * d (and nothing else) or an overflow. */
static bool drained_own(struct nx_dnsig *c, const struct dir *d, struct got *g)
{
	bool ov = false, mine = false;

	if (drain_wait(c, g, &ov) < 0)
		return false;
	for (int k = 0; k < g->n && k < 64; k++) {
		if (g->fd[k] != d->fd)
			return false;
		mine = true;
	}
	return mine || ov;
}

static void *churner(void *arg)
{
	int *bad = arg;
	struct dir d;

	strcpy(d.path, "/tmp/nx-dnsig-XXXXXX");
	if (!mkdtemp(d.path) || (d.fd = open(d.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		(*bad)++;
		return NULL;
	}
	for (int i = 0; i < CHURN_ROUNDS; i++) {
		struct nx_dnsig *c;
		struct got g;
		int fd;

		if (nx_dnsig_open(i % 2 ? 0 : SIGRTMIN + 9, &c) < 0 ||
		    nx_dnsig_watch(c, d.fd, ALL_DN) < 0) {
			(*bad)++;
			break;
		}
		if ((fd = openat(d.fd, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0)
			close(fd);
		/* The creation is reported, or covered by a SIGIO overflow. */
		if (i % 3 && !drained_own(c, &d, &g))
			(*bad)++;
		if (i % 2)
			nx_dnsig_unwatch(c, d.fd);
		nx_dnsig_close(c); /* with or without the directory still watched */
		unlinkat(d.fd, "f", 0);
	}
	close(d.fd);
	rmdir(d.path);
	return NULL;
}

static void *sigio_raiser(void *arg)
{
	while (!atomic_load(&churn_stop)) {
		kill(getpid(), SIGIO);
		sched_yield();
	}
	return NULL;
}

static void test_churn(void **state)
{
	struct nx_dnsig *c = chan(0); /* keeps SIGIO the library's throughout */
	pthread_t t[3];
	int bad[2] = { 0, 0 }, missing = 0;
	struct dir d;
	struct got g;

	dir_make(&d);
	assert_int_equal(nx_dnsig_watch(c, d.fd, ALL_DN), 0);
	atomic_store(&churn_stop, false);
	assert_int_equal(pthread_create(&t[0], NULL, churner, &bad[0]), 0);
	assert_int_equal(pthread_create(&t[1], NULL, churner, &bad[1]), 0);
	assert_int_equal(pthread_create(&t[2], NULL, sigio_raiser, NULL), 0);
	for (int i = 0; i < 200; i++) {
		touch(&d, "main");
		missing += !drained_own(c, &d, &g);
	}
	assert_int_equal(pthread_join(t[0], NULL), 0);
	assert_int_equal(pthread_join(t[1], NULL), 0);
	atomic_store(&churn_stop, true);
	assert_int_equal(pthread_join(t[2], NULL), 0);
	print_message("main channel: %d changes not reported; churn errors %d, %d\n", missing,
		      bad[0], bad[1]);
	assert_int_equal(bad[0], 0);
	assert_int_equal(bad[1], 0);
	assert_int_equal(missing, 0);
	nx_dnsig_close(c);
	assert_true(is_dfl(SIGIO));
	assert_true(is_dfl(SIGRTMIN + 9));
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
		cmocka_unit_test(test_sigio_default),
		cmocka_unit_test(test_sigio_chained),
		cmocka_unit_test(test_sigio_app_flags),
		cmocka_unit_test(test_no_descriptor_kept),
		cmocka_unit_test(test_fork_child_closes),
		cmocka_unit_test(test_many_directories),
		cmocka_unit_test(test_churn),
	};

	if (nx_dnsig_probe() < 0) {
		printf("SKIP: dnotify is not available here: %s\n", strerror(errno));
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
