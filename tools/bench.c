/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * notifyx bench [DIR]: the backend comparison of bench/ (issue 6) in small
 * sizes, on the user's own filesystem, so that one can see which backend
 * suits it.  Every backend that starts here, and the raw inotify interface
 * as the reference, measured in the same run (medians, ratios):
 *   throughput  a burst of files created, written and deleted in a scratch
 *               directory inside DIR while nothing reads; then the time and
 *               CPU to read it all (events/s, CPU per event);
 *   latency     a file created to its event read, many times (median, p99);
 *   setup       a recursive watch of DIR itself until notifyx_add_watch
 *               returns (raw: nftw + inotify_add_watch).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <notifyx.h>

#include "bench.h"
#include "stats.h" /* bench/stats.h: now, median, pctl, rm_tree, shared with bench/ */

#define MAX_RUNS 32
#define WAIT_S 10.0

static const uint32_t backends[] = { 0 /* raw inotify */, NOTIFYX_BACKEND_INOTIFY,
				     NOTIFYX_BACKEND_FANOTIFY, NOTIFYX_BACKEND_DNOTIFY,
				     NOTIFYX_BACKEND_POLL };
#define NB (sizeof(backends) / sizeof(backends[0]))

static double cpu_now(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

/* One watcher: the raw inotify interface or a libnotifyx handle. */
struct watcher {
	uint32_t backend; /* 0: raw */
	struct notifyx *nx;
	int fd;           /* raw: the inotify descriptor; else notifyx_fd */
};

static int w_open(struct watcher *w, uint32_t backend)
{
	struct notifyx_config c = { .size = sizeof(c), .backend = backend,
				    .flags = NOTIFYX_NONBLOCK, .poll_interval_ms = 100 };

	w->backend = backend;
	w->nx = NULL;
	w->fd = -1;
	if (!backend) {
		w->fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
		return w->fd < 0 ? -1 : 0;
	}
	w->nx = notifyx_open(&c);
	if (!w->nx)
		return -1;
	w->fd = notifyx_fd(w->nx);
	return 0;
}

static void w_close(struct watcher *w)
{
	if (w->nx)
		notifyx_close(w->nx);
	else if (w->fd >= 0)
		close(w->fd);
	w->nx = NULL;
	w->fd = -1;
}

static int w_add(struct watcher *w, const char *dir, uint32_t events)
{
	uint32_t m = (events & NOTIFYX_CREATE ? IN_CREATE : 0) |
		     (events & NOTIFYX_MODIFY ? IN_MODIFY : 0) |
		     (events & NOTIFYX_DELETE ? IN_DELETE : 0);

	if (w->nx)
		return notifyx_add_watch(w->nx, dir, events, 0);
	return inotify_add_watch(w->fd, dir, m | IN_ONLYDIR);
}

/*
 * Reads until an event names `until` (or WAIT_S passes): returns how many
 * events were read, or -1 on a timeout or an error.
 */
static long w_read_until(struct watcher *w, const char *until)
{
	static char buf[65536] __attribute__((aligned(8)));
	double end = now() + WAIT_S;
	long count = 0;

	for (;;) {
		struct pollfd pfd = { .fd = w->fd, .events = POLLIN };
		double left = end - now();
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, (int)(left * 1000) + 1) < 0)
			return -1;
		n = w->nx ? notifyx_read(w->nx, buf, sizeof(buf)) : read(w->fd, buf, sizeof(buf));
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		for (char *p = buf; n > 0 && p < buf + n;) {
			const char *name;

			if (w->nx) {
				const struct notifyx_event *ev = (const void *)p;

				name = notifyx_event_path(ev);
				p += ev->size;
			} else {
				const struct inotify_event *ev = (const void *)p;

				name = ev->len ? ev->name : "";
				p += sizeof(*ev) + ev->len;
			}
			count++;
			if (strcmp(name, until) == 0)
				return count;
		}
	}
}

static int touch(int dfd, const char *name, int bytes)
{
	static const char data[64];
	int fd = openat(dfd, name, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

	if (fd < 0)
		return -1;
	if (bytes && write(fd, data, (size_t)bytes) != bytes) {
		close(fd);
		return -1;
	}
	return close(fd);
}

/* ---- the raw reference of the setup ---- */

static int raw_fd;

static int raw_add(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_D && inotify_add_watch(raw_fd, path, IN_CREATE | IN_DELETE | IN_MOVED_TO |
				       IN_MOVED_FROM | IN_ONLYDIR) < 0 && errno == ENOSPC)
		return -1;
	return 0;
}

/* ---- the command ---- */

static void usage(FILE *f)
{
	fprintf(f,
"Usage: notifyx bench [OPTION]... [DIR]\n"
"\n"
"Compare the backends that work here on DIR's filesystem (default: the\n"
"current directory), against the raw inotify interface measured in the same\n"
"run.  Writes and deletes files in a scratch directory made inside DIR (and\n"
"removed); watches DIR itself recursively for the setup time.\n"
"\n"
"Options:\n"
"  -n, --files=N    files in the throughput burst (default 2000; 3 events each)\n"
"  -l, --latency=N  changes timed for the latency (default 200)\n"
"  -r, --runs=N     runs of throughput and setup, the median is shown\n"
"                   (default 3, at most %d)\n"
"  -h, --help       show this help\n"
"\n"
"Output: one line per backend:\n"
"  events/s, x raw   throughput, and its ratio to raw inotify\n"
"  CPU us/ev         CPU time per event of the reading process\n"
"  lat med, lat p99  microseconds from a file created to its event read\n"
"  setup ms, x raw   recursive watch of DIR until it is ready\n"
"A backend that cannot start says why (\"not available\" when the kernel or\n"
"this libnotifyx lacks it).  Scanning backends (dnotify, poll) see states,\n"
"not operations: a burst of files created and deleted between two scans\n"
"shows as almost nothing (their \"events\" column says how many they saw).\n"
"Figures vary with the load of the machine: compare ratios, not times.\n"
"Exit status: 0 success, 1 failure, 2 usage error.\n", MAX_RUNS);
}

int tool_bench(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "files", required_argument, NULL, 'n' },
		{ "latency", required_argument, NULL, 'l' },
		{ "runs", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int files = 2000, nlat = 200, runs = 3, opt;
	const char *dir;
	char *scratch = NULL;
	struct stat st;
	double ref_rate = 0, ref_setup = 0;
	int status = EXIT_SUCCESS;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "n:l:r:h", longopts, NULL)) != -1) {
		char *end;
		long v = optarg ? strtol(optarg, &end, 10) : 0;

		if (opt == 'h') {
			usage(stdout);
			return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
		}
		if (opt == '?' || *end || v < 1 || (opt == 'r' && v > MAX_RUNS) || v > 1000000) {
			if (opt != '?')
				fprintf(stderr, "notifyx: bench: bad value '%s' for -%c\n", optarg, opt);
			fprintf(stderr, "Try 'notifyx bench --help' for more information.\n");
			return 2;
		}
		if (opt == 'n')
			files = (int)v;
		else if (opt == 'l')
			nlat = (int)v;
		else
			runs = (int)v;
	}
	if (argc - optind > 1) {
		fprintf(stderr, "notifyx: bench: one DIR at most\n"
			"Try 'notifyx bench --help' for more information.\n");
		return 2;
	}
	dir = optind < argc ? argv[optind] : ".";
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "notifyx: %s: %s\n", dir, strerror(S_ISDIR(st.st_mode) ? errno : ENOTDIR));
		return EXIT_FAILURE;
	}
	if (asprintf(&scratch, "%s/.notifyx-bench.XXXXXX", dir) < 0 || !mkdtemp(scratch)) {
		fprintf(stderr, "notifyx: %s: cannot make a scratch directory: %s\n", dir,
			strerror(errno));
		free(scratch);
		return EXIT_FAILURE;
	}

	printf("notifyx bench %s: throughput %d files x %d runs, latency %d changes, setup x %d "
	       "runs\n", dir, files, runs, nlat, runs);
	printf("%-9s %10s %6s %9s %7s %9s %9s %9s %6s\n", "backend", "events/s", "x raw",
	       "CPU us/ev", "events", "lat med", "lat p99", "setup ms", "x raw");
	fflush(stdout);
	for (size_t b = 0; b < NB; b++) {
		const char *name = backends[b] ? notifyx_backend_name(backends[b]) : "raw";
		double rate[MAX_RUNS], cpu[MAX_RUNS], setup[MAX_RUNS];
		double *lat = calloc((size_t)nlat, sizeof(double));
		long seen = 0;
		int nrate = 0, nl = 0, nsetup = 0;
		struct watcher w;

		if (!lat || w_open(&w, backends[b]) < 0) {
			printf("%-9s %s\n", name, errno == ENOSYS ? "not available" : strerror(errno));
			free(lat);
			continue;
		}
		w_close(&w);
		for (int r = 0; r < runs; r++) {
			/* setup: DIR itself, recursively */
			double t0 = now();

			if (w_open(&w, backends[b]) == 0) {
				int ok;

				if (backends[b]) {
					ok = notifyx_add_watch(w.nx, dir, NOTIFYX_CREATE | NOTIFYX_DELETE,
							       NOTIFYX_WATCH_RECURSIVE) > 0;
				} else {
					raw_fd = w.fd;
					ok = nftw(dir, raw_add, 64, FTW_PHYS) == 0;
				}
				if (ok)
					setup[nsetup++] = now() - t0;
				w_close(&w);
			}

			/* throughput: the burst is made while nobody reads */
			int dfd = open(scratch, O_PATH | O_DIRECTORY | O_CLOEXEC);
			char fname[32];

			if (dfd < 0)
				continue;
			if (w_open(&w, backends[b]) < 0 ||
			    w_add(&w, scratch, NOTIFYX_CREATE | NOTIFYX_MODIFY | NOTIFYX_DELETE) < 0) {
				w_close(&w);
				close(dfd);
				continue;
			}
			for (int i = 0; i < files; i++) {
				snprintf(fname, sizeof(fname), "f%d", i);
				touch(dfd, fname, 64);
			}
			for (int i = 0; i < files; i++) {
				snprintf(fname, sizeof(fname), "f%d", i);
				unlinkat(dfd, fname, 0);
			}
			touch(dfd, "STOP", 0);
			double c0 = cpu_now();
			t0 = now();
			long n = w_read_until(&w, "STOP");
			if (n > 0) {
				rate[nrate] = (3.0 * files + 1) / (now() - t0);
				cpu[nrate++] = (cpu_now() - c0) / (3.0 * files + 1) * 1e6;
				seen = n;
			}
			unlinkat(dfd, "STOP", 0);

			/* latency, spread over the runs */
			for (int k = r * nlat / runs; k < (r + 1) * nlat / runs; k++) {
				snprintf(fname, sizeof(fname), "L%d", k);
				t0 = now();
				touch(dfd, fname, 0);
				if (w_read_until(&w, fname) > 0)
					lat[nl++] = now() - t0;
				unlinkat(dfd, fname, 0);
			}
			w_close(&w);
			close(dfd);
		}

		double rm = nrate ? median(rate, nrate) : 0, sm = nsetup ? median(setup, nsetup) : 0;
		if (!backends[b]) {
			ref_rate = rm;
			ref_setup = sm;
		}
		printf("%-9s", name);
		if (nrate)
			printf(" %10.0f %6.2f %9.3f %7ld", rm, ref_rate ? rm / ref_rate : 0,
			       median(cpu, nrate), seen);
		else
			printf(" %10s %6s %9s %7s", "failed", "-", "-", "-");
		if (nl)
			printf(" %9.1f %9.1f", pctl(lat, nl, 0.5) * 1e6, pctl(lat, nl, 0.99) * 1e6);
		else
			printf(" %9s %9s", "failed", "-");
		if (nsetup)
			printf(" %9.1f %6.2f\n", sm * 1e3, ref_setup ? sm / ref_setup : 0);
		else
			printf(" %9s %6s\n", "failed", "-");
		if (!nrate || !nl || !nsetup)
			status = EXIT_FAILURE;
		fflush(stdout);
		free(lat);
	}
	rm_tree(scratch);
	free(scratch);
	if (fflush(stdout) != 0 || ferror(stdout))
		return EXIT_FAILURE;
	return status;
}
