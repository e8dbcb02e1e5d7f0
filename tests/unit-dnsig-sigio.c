/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of dnotify's signal routing (backends/dnsig.c) on the real
 * kernel, SIGIO and load: SIGIO never kills and is chained to the
 * application's handler (with its flags and mask); no descriptor is kept
 * and a forked child's close leaves the parent working; more directories
 * than a pipe holds signals for; directories changed by threads while
 * SIGIO is raised.  (Routing and dispositions: unit-dnsig.c.)  Exits 77
 * when dnotify is disabled or missing. */
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
