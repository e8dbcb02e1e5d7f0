/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A signal storm around dnotify's signal routing (backends/dnsig.c).
 *
 * One thread renames a file round robin in NDIRS watched directories
 * (v0 -> v1 -> ...), a second floods the process with the application's own
 * signals: SIGUSR1 (handler with SA_RESTART), SIGUSR2 (handler without),
 * and a queued real-time signal (SA_SIGINFO handler), aimed at the process
 * and at each thread.  The main thread waits in poll(2) on the channel
 * (EINTR is expected and counted), drains it and lists each reported
 * directory, as the dnotify backend does; after an overflow it lists them
 * all.  Passes when, after the changes stop, every directory's last listing
 * shows its last name (nothing lost), names only ever went forward, no
 * drain reported a directory twice, directories were reported (not only
 * rescanned after overflows), the application's handlers all ran, and
 * nothing crashed.  Exit 77 when dnotify
 * is not available.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dnsig.h"

#define NDIRS 16
#define RENAMES 20000
#define SETTLE_MS 5000 /* after the last rename, for the last reports */

static char paths[NDIRS][64];
static int dfds[NDIRS];
static long last[NDIRS];   /* the changer's last name in each directory */
static long seen[NDIRS];   /* the newest name a listing found, -1 for none */
static atomic_bool done, stop_storm;
static pthread_t main_thread, changer_thread;
static int app_rt;

static volatile sig_atomic_t hits_usr1, hits_usr2, hits_rt;

static void on_usr1(int sig)
{
	hits_usr1++;
}

static void on_usr2(int sig)
{
	hits_usr2++;
}

static void on_rt(int sig, siginfo_t *si, void *uc)
{
	hits_rt++;
}

static int fail(const char *what)
{
	fprintf(stderr, "FAIL: %s: %s\n", what, strerror(errno));
	return 1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void *changer(void *arg)
{
	char from[32], to[32];

	for (long n = 0; n < RENAMES; n++) {
		int i = (int)(n % NDIRS);

		snprintf(from, sizeof(from), "v%ld", last[i]);
		snprintf(to, sizeof(to), "v%ld", last[i] + 1);
		if (renameat(dfds[i], from, dfds[i], to) < 0) {
			perror("FAIL: rename");
			exit(1);
		}
		last[i]++;
	}
	atomic_store(&done, true);
	return NULL;
}

static void *storm(void *arg)
{
	union sigval v = { .sival_int = 0 };
	unsigned long k = 0;

	while (!atomic_load(&stop_storm)) {
		kill(getpid(), SIGUSR1);
		kill(getpid(), SIGUSR2);
		pthread_kill(main_thread, k & 1 ? SIGUSR1 : SIGUSR2);
		if (!atomic_load(&done))
			pthread_kill(changer_thread, k & 1 ? SIGUSR2 : SIGUSR1);
		/* Queued, so a few at a time: the queue is shared with the
		 * library's signals (an overflow is allowed, a loss is not). */
		if (k++ % 8 == 0)
			sigqueue(getpid(), app_rt, v);
	}
	return NULL;
}

/* Lists directory i as the backend would, through a descriptor of its own
 * (closing it does not touch the registration of dfds[i]). */
static int list(int i)
{
	int fd = openat(dfds[i], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	long v = -1;

	if (!d)
		return fail("list");
	while ((e = readdir(d))) {
		if (e->d_name[0] == 'v' && atol(e->d_name + 1) > v)
			v = atol(e->d_name + 1);
	}
	closedir(d);
	/* A listing made while the file is renamed may miss it: the rename's
	 * signal comes after, and so does the listing that counts. */
	if (v < 0)
		return 0;
	if (v < seen[i]) {
		fprintf(stderr, "FAIL: directory %d went back from v%ld to v%ld\n", i, seen[i], v);
		return 1;
	}
	seen[i] = v;
	return 0;
}

static int reports, overflows, list_failed, twice;
static long drains, drained[NDIRS]; /* the drain that last reported each */

static void reported(void *ctx, int dfd)
{
	for (int i = 0; i < NDIRS; i++) {
		if (dfds[i] == dfd) {
			/* A directory is in the pipe once between two drains. */
			if (drained[i] == drains) {
				fprintf(stderr, "FAIL: directory %d reported twice in a drain\n", i);
				twice++;
			}
			drained[i] = drains;
			reports++;
			list_failed |= list(i);
			return;
		}
	}
	fprintf(stderr, "FAIL: descriptor %d reported, not watched\n", dfd);
	list_failed = 1;
}

static void set(int sig, void (*fn)(int), int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

int main(void)
{
	struct sigaction sa;
	struct nx_dnsig *c;
	pthread_t st;
	long eintr = 0, polls = 0;
	uint64_t deadline = 0;
	bool ov, all_seen = false;

	if (nx_dnsig_probe() < 0) {
		printf("SKIP: dnotify is not available here: %s\n", strerror(errno));
		return 77;
	}
	set(SIGUSR1, on_usr1, SA_RESTART);
	set(SIGUSR2, on_usr2, 0);
	app_rt = SIGRTMIN + 2;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_rt;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(app_rt, &sa, NULL);

	if (nx_dnsig_open(0, &c) < 0)
		return fail("nx_dnsig_open");
	for (int i = 0; i < NDIRS; i++) {
		strcpy(paths[i], "/tmp/nx-dnsig-storm-XXXXXX");
		if (!mkdtemp(paths[i]) ||
		    (dfds[i] = open(paths[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			return fail("mkdtemp");
		close(openat(dfds[i], "v0", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
		if (nx_dnsig_watch(c, dfds[i], DN_CREATE | DN_DELETE | DN_RENAME) < 0)
			return fail("nx_dnsig_watch");
		seen[i] = 0;
	}

	main_thread = pthread_self();
	if (pthread_create(&changer_thread, NULL, changer, NULL) ||
	    pthread_create(&st, NULL, storm, NULL))
		return fail("pthread_create");

	while (!all_seen && !list_failed) {
		struct pollfd p = { .fd = nx_dnsig_fd(c), .events = POLLIN };

		if (atomic_load(&done)) {
			if (!deadline) {
				deadline = now_ms() + SETTLE_MS;
				atomic_store(&stop_storm, true);
			}
			all_seen = true;
			for (int i = 0; i < NDIRS; i++)
				all_seen &= seen[i] == last[i];
			if (all_seen || now_ms() > deadline)
				break;
		}
		polls++;
		if (poll(&p, 1, 100) < 0) {
			if (errno != EINTR)
				return fail("poll");
			eintr++;
			continue;
		}
		drains++;
		if (nx_dnsig_drain(c, reported, NULL, &ov) < 0)
			return fail("nx_dnsig_drain");
		if (ov) {
			overflows++;
			for (int i = 0; i < NDIRS; i++)
				list_failed |= list(i);
		}
	}
	atomic_store(&stop_storm, true);
	pthread_join(changer_thread, NULL);
	pthread_join(st, NULL);

	printf("%d renames in %d directories; %d reports, %d overflows; %ld polls, %ld ended by "
	       "EINTR; application handlers: SIGUSR1 %d, SIGUSR2 %d, real-time %d\n",
	       RENAMES, NDIRS, reports, overflows, polls, eintr, (int)hits_usr1, (int)hits_usr2,
	       (int)hits_rt);
	for (int i = 0; i < NDIRS; i++) {
		char name[32];

		if (seen[i] != last[i]) {
			fprintf(stderr, "FAIL: directory %d: last listed v%ld, last made v%ld\n", i,
				seen[i], last[i]);
			list_failed = 1;
		}
		nx_dnsig_unwatch(c, dfds[i]);
		snprintf(name, sizeof(name), "v%ld", last[i]);
		unlinkat(dfds[i], name, 0);
		close(dfds[i]);
		rmdir(paths[i]);
	}
	nx_dnsig_close(c);
	/* Not the wait: how many polls a signal ends depends on timing (none in
	 * 39 polls of a sanitizer build), so EINTR is counted, not required. */
	if (!hits_usr1 || !hits_usr2 || !hits_rt) {
		fprintf(stderr, "FAIL: the storm did not reach every handler\n");
		return 1;
	}
	/* Not everything through overflows' rescans. */
	if (!reports) {
		fprintf(stderr, "FAIL: no directory was reported\n");
		return 1;
	}
	return list_failed || twice;
}
