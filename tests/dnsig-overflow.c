/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SIGIO on real-time signal queue overflow, in child processes.
 *
 * Each child lowers RLIMIT_SIGPENDING, watches directories, blocks the
 * routing signal (its own mask: the library changes none) and makes many
 * changes, so that the kernel's queue fills and the kernel falls back to
 * SIGIO, whose default action would kill the process.  The child must
 * survive, the next drain must report the overflow, and routing must work
 * again afterwards.  Run with SIGIO at SIG_DFL, with an application SIGIO
 * handler installed before the channel opened (it must still be called),
 * (SA_ONSTACK, with an alternate stack: it must run there), and with
 * SIG_IGN.  SIGIO the library handles itself is counted by
 * nx_dnsig_thread_signals; a chained one is not.  Exit 77 when dnotify is
 * not available.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dnsig.h"

#define NDIRS 4
#define CHANGES 400
#define LIMIT 16

static volatile sig_atomic_t app_sigio, app_off_stack;

static void on_app_sigio(int sig)
{
	stack_t ss;

	app_sigio++;
	/* Installed with SA_ONSTACK: called from the library's handler, it
	 * still runs on the alternate stack. */
	if (sigaltstack(NULL, &ss) < 0 || !(ss.ss_flags & SS_ONSTACK))
		app_off_stack++;
}

struct counts {
	int reports;
	int dfd;
};

static void count(void *ctx, int dfd)
{
	struct counts *n = ctx;

	n->reports++;
	n->dfd = dfd;
}

static int child_fail(int code, const char *what)
{
	fprintf(stderr, "child: %s: %s\n", what, strerror(errno));
	return code;
}

enum mode { APP_DFL, APP_HANDLER, APP_IGN };

static int child(enum mode mode)
{
	char paths[NDIRS][64], name[32];
	int dfds[NDIRS];
	struct rlimit rl = { LIMIT, LIMIT };
	struct nx_dnsig *c;
	struct counts n = { 0, -1 };
	sigset_t block, old, pend;
	struct pollfd p;
	unsigned long hits, lib_sigio;
	bool ov;
	int ret = 0;

	if (mode != APP_DFL) {
		static char alt[1 << 16];
		stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) };
		struct sigaction sa;

		if (sigaltstack(&ss, NULL) < 0)
			return child_fail(10, "sigaltstack");
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = mode == APP_HANDLER ? on_app_sigio : SIG_IGN;
		sa.sa_flags = SA_RESTART | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGIO, &sa, NULL) < 0)
			return child_fail(10, "sigaction");
	}
	if (setrlimit(RLIMIT_SIGPENDING, &rl) < 0)
		return child_fail(11, "setrlimit");
	if (nx_dnsig_open(0, &c) < 0)
		return child_fail(12, "nx_dnsig_open");
	for (int i = 0; i < NDIRS; i++) {
		strcpy(paths[i], "/tmp/nx-dnsig-ovf-XXXXXX");
		if (!mkdtemp(paths[i]) ||
		    (dfds[i] = open(paths[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			return child_fail(13, "mkdtemp");
		if (nx_dnsig_watch(c, dfds[i], DN_CREATE | DN_DELETE) < 0)
			return child_fail(14, "nx_dnsig_watch");
	}

	sigemptyset(&block);
	sigaddset(&block, nx_dnsig_signal(c));
	sigprocmask(SIG_BLOCK, &block, &old);
	hits = nx_dnsig_thread_signals();
	for (int k = 0; k < CHANGES; k++) {
		int i = k % NDIRS;

		snprintf(name, sizeof(name), "f%d", k / NDIRS);
		close(openat(dfds[i], name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	}
	/* SIGIO is not blocked: handled by now.  The queued routing signals
	 * stay pending until the mask comes back. */
	sigpending(&pend);
	/* Before the unblocking: the routing signals handled then count too. */
	lib_sigio = nx_dnsig_thread_signals() - hits;
	printf("child %d: %lu SIGIO handled by the library, %d by the application "
	       "(%d off its stack), routing signal %spending\n", mode, lib_sigio,
	       (int)app_sigio, (int)app_off_stack,
	       sigismember(&pend, nx_dnsig_signal(c)) == 1 ? "" : "not ");
	sigprocmask(SIG_SETMASK, &old, NULL);

	p.fd = nx_dnsig_fd(c);
	p.events = POLLIN;
	if (poll(&p, 1, 3000) != 1)
		return child_fail(15, "not readable after the overflow");
	if (nx_dnsig_drain(c, count, &n, &ov) < 0)
		return child_fail(16, "nx_dnsig_drain");
	printf("child %d: drain: overflow %s, %d directories reported\n", mode, ov ? "true" : "false",
	       n.reports);
	if (!ov)
		ret = 17;
	if (mode == APP_HANDLER && (!app_sigio || app_off_stack || lib_sigio))
		ret = 18; /* not chained, or not on the application's stack */
	if (mode != APP_HANDLER && !lib_sigio)
		ret = 19; /* the library's SIGIO handler did not run */

	/* Routing goes on once the queue has room. */
	rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
	setrlimit(RLIMIT_SIGPENDING, &rl);
	nx_dnsig_drain(c, count, &n, &ov);
	n.reports = 0;
	close(openat(dfds[2], "after", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	if (poll(&p, 1, 3000) != 1 || nx_dnsig_drain(c, count, &n, &ov) != 1 || n.dfd != dfds[2] ||
	    ov)
		ret = ret ? ret : 20;

	for (int i = 0; i < NDIRS; i++) {
		nx_dnsig_unwatch(c, dfds[i]);
		for (int k = 0; k < CHANGES / NDIRS; k++) {
			snprintf(name, sizeof(name), "f%d", k);
			unlinkat(dfds[i], name, 0);
		}
		unlinkat(dfds[i], "after", 0);
		close(dfds[i]);
		rmdir(paths[i]);
	}
	nx_dnsig_close(c);
	fflush(stdout); /* the child ends with _exit */
	return ret;
}

int main(void)
{
	static const char *const names[] = { "SIGIO at SIG_DFL", "an application SIGIO handler",
					      "SIGIO at SIG_IGN" };
	int failed = 0;

	if (nx_dnsig_probe() < 0) {
		printf("SKIP: dnotify is not available here: %s\n", strerror(errno));
		return 77;
	}
	for (int mode = APP_DFL; mode <= APP_IGN; mode++) {
		pid_t pid;
		int status;

		fflush(stdout);
		if ((pid = fork()) < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0)
			_exit(child(mode));
		if (waitpid(pid, &status, 0) != pid) {
			perror("waitpid");
			return 1;
		}
		if (WIFSIGNALED(status)) {
			printf("FAIL: %s: the child was killed by %s\n", names[mode],
			       strsignal(WTERMSIG(status)));
			failed = 1;
		} else if (WEXITSTATUS(status)) {
			printf("FAIL: %s: the child exited with %d\n", names[mode], WEXITSTATUS(status));
			failed = 1;
		} else {
			printf("ok: %s: survived the overflow, which the drain reported\n", names[mode]);
		}
	}
	return failed;
}
