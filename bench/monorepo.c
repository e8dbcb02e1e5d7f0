/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The monorepo case: a recursive watch of a tree larger than the kernel lets
 * one user watch with inotify (max_user_watches) or with fanotify's inode
 * marks (max_user_marks).
 *
 *   inotify: notifyx_add_watch fails with ENOSPC: how long until it fails,
 *     and what is left behind (kernel watches counted in /proc/self/fdinfo,
 *     which must be none, and the RSS kept).
 *   fanotify as root: with the library's policy (a filesystem mark beyond
 *     half of max_user_marks directories, which it counts first): time
 *     until ready, RSS per directory, marks held; the filesystem mark
 *     without the count (NOTIFYX_FANOTIFY_INODE_MAX=0), where a watch that
 *     does not list does not walk the tree.  With inode marks forced
 *     (NOTIFYX_FANOTIFY_INODE_MAX above the tree): ENOSPC, as inotify.
 *
 * Each in a forked process of its own, RUNS times, medians.  Meant for a
 * private tmpfs (bench/run mounts one in a mount namespace of its own, so
 * that the filesystem mark hears this benchmark only):
 *
 *   bench/monorepo [DIRS [RUNS]]   (default 1000000 directories, 1 run)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <notifyx.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define MAX_RUNS 16

/* Kernel watches and marks of this process: "inotify wd:" and "fanotify "
 * lines of every descriptor's fdinfo. */
static long kernel_marks(void)
{
	DIR *d = opendir("/proc/self/fdinfo");
	struct dirent *e;
	long n = 0;

	while (d && (e = readdir(d))) {
		char file[300], line[512];
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "/proc/self/fdinfo/%s", e->d_name);
		if (!(f = fopen(file, "r")))
			continue;
		while (fgets(line, sizeof(line), f))
			n += !strncmp(line, "inotify wd:", 11) || !strncmp(line, "fanotify ", 9);
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

struct result {
	double secs;
	int err;      /* errno of a failure, 0 when ready */
	long rss_kb;  /* after (minus before) */
	long marks;   /* kernel watches or marks held after */
	int seen;     /* of the PROBES files made once ready, CREATEs read */
	double probe_secs; /* from the first made to the last read */
	long probe_kb;     /* RSS after them (minus before the watch) */
};

/* Once the watch is ready, another process makes a file in each of PROBES
 * directories spread over the tree (a name of this watcher's own: the
 * others' files are there already): what a watch that meets directories as
 * events name them (fanotify's filesystem mark, notifyx_add_watch(3))
 * costs as they come, in time and memory, and that it reports them all. */
#define PROBES 1000

static void probe(struct notifyx *nx, const char *root, int dirs, struct result *r)
{
	static uint64_t buf[65536 / sizeof(uint64_t)];
	struct pollfd pfd = { .fd = notifyx_fd(nx), .events = POLLIN };
	char name[32];
	double t0 = now();
	pid_t pid;

	snprintf(name, sizeof(name), "probe.%ld", (long)getpid());
	if ((pid = fork()) == 0) {
		for (int k = 0; k < PROBES; k++) {
			char *dir = tree_path(root, (int)((long)k * dirs / PROBES));
			touch(dir, name);
			free(dir);
		}
		_exit(0);
	}
	while (pid > 0 && r->seen < PROBES && poll(&pfd, 1, 10000) > 0) {
		const struct notifyx_event *ev;
		ssize_t n = notifyx_read(nx, buf, sizeof(buf));

		notifyx_for_each_event(ev, buf, n > 0 ? n : 0) {
			const char *p = strrchr(notifyx_event_path(ev), '/');
			if (ev->mask == NOTIFYX_CREATE && p && !strcmp(p + 1, name))
				r->seen++;
		}
	}
	r->probe_secs = now() - t0;
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static struct result run_one(uint32_t backend, const char *env, const char *root, int dirs)
{
	struct result r = { 0 };
	int fds[2];
	pid_t pid;

	if (pipe(fds) < 0)
		exit(1);
	fflush(stdout);
	if ((pid = fork()) == 0) {
		struct notifyx_config c = { .size = sizeof(c), .backend = backend,
					    .flags = NOTIFYX_NONBLOCK };
		struct notifyx *nx;
		long before;
		double t0;

		if (env)
			putenv((char *)env);
		nx = notifyx_open(&c);
		before = self_field_kb("/proc/self/status", "VmRSS:");
		t0 = now();
		r.err = nx && notifyx_add_watch(nx, root, NOTIFYX_CREATE | NOTIFYX_DELETE |
						NOTIFYX_MOVED_IN | NOTIFYX_RENAME,
						NOTIFYX_WATCH_RECURSIVE) >= 0 ? 0 : errno;
		r.secs = now() - t0;
		r.rss_kb = self_field_kb("/proc/self/status", "VmRSS:") - before;
		r.marks = kernel_marks();
		if (!r.err) {
			probe(nx, root, dirs, &r);
			r.probe_kb = self_field_kb("/proc/self/status", "VmRSS:") - before;
		}
		if (write(fds[1], &r, sizeof(r)) != sizeof(r))
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	if (pid < 0 || read(fds[0], &r, sizeof(r)) != sizeof(r))
		r.err = -1;
	close(fds[0]);
	waitpid(pid, NULL, 0);
	return r;
}

static long sysctl(const char *file)
{
	long v = -1;
	FILE *f = fopen(file, "r");

	if (f && fscanf(f, "%ld", &v) != 1)
		v = -1;
	if (f)
		fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	int dirs = argc > 1 ? atoi(argv[1]) : 1000000, runs = argc > 2 ? atoi(argv[2]) : 1;
	static const struct {
		const char *name;
		uint32_t backend;
		const char *env;
	} cases[] = {
		{ "inotify", NOTIFYX_BACKEND_INOTIFY, NULL },
		{ "fanotify (policy)", NOTIFYX_BACKEND_FANOTIFY, NULL },
		{ "fanotify fs mark", NOTIFYX_BACKEND_FANOTIFY, "NOTIFYX_FANOTIFY_INODE_MAX=0" },
		{ "fanotify inode marks", NOTIFYX_BACKEND_FANOTIFY, "NOTIFYX_FANOTIFY_INODE_MAX=2000000000" },
	};
	enum { NC = sizeof(cases) / sizeof(cases[0]) };
	double secs[NC][MAX_RUNS], rss[NC][MAX_RUNS], marks[NC][MAX_RUNS];
	double psecs[NC][MAX_RUNS], prss[NC][MAX_RUNS];
	int err[NC] = { 0 }, seen[NC] = { 0 };
	char *root = mktemp_dir();
	double t0;

	if (dirs < 1 || runs < 1 || runs > MAX_RUNS)
		return fprintf(stderr, "usage: %s [DIRS [RUNS<=%d]]\n", argv[0], MAX_RUNS), 2;
	t0 = now();
	free(make_tree(root, dirs));
	printf("monorepo: tree of %d directories (10 per directory, a file in each) made in %.1f s "
	       "on %s; max_user_watches %ld, max_user_marks %ld; median of %d runs\n", dirs,
	       now() - t0, getenv("NXBENCH_FS") ? getenv("NXBENCH_FS") : "NXBENCH_DIR",
	       sysctl("/proc/sys/fs/inotify/max_user_watches"),
	       sysctl("/proc/sys/fs/fanotify/max_user_marks"), runs);
	for (int r = 0; r < runs; r++)
		for (int i = 0; i < NC; i++) {
			struct result x = run_one(cases[i].backend, cases[i].env, root, dirs);

			secs[i][r] = x.secs;
			rss[i][r] = x.rss_kb;
			marks[i][r] = x.marks;
			psecs[i][r] = x.probe_secs;
			prss[i][r] = x.probe_kb;
			err[i] = x.err;
			seen[i] = x.seen;
		}
	rm_tree(root);
	printf("  %-22s %-10s %12s %12s %10s %14s\n", "watcher", "result", "time ms", "RSS MB",
	       "bytes/dir", "marks left");
	for (int i = 0; i < NC; i++) {
		double s = median(secs[i], runs), m = median(rss[i], runs), k = median(marks[i], runs);

		printf("  %-22s %-10s %12.1f %12.1f %10.0f %14.0f\n", cases[i].name,
		       err[i] ? strerrorname_np(err[i]) ? strerrorname_np(err[i]) : "failed" : "ready",
		       s * 1e3, m / 1024, m * 1024 / dirs, k);
		tsv("monorepo", dirs, cases[i].name, err[i] ? "fail_ms" : "ready_ms", s * 1e3);
		tsv("monorepo", dirs, cases[i].name, "bytes_per_dir", m * 1024 / dirs);
		tsv("monorepo", dirs, cases[i].name, "marks_left", k);
	}
	printf("  (time: notifyx_add_watch until it returned; RSS: the process's after it minus\n"
	       "   before; marks left: inotify watches and fanotify marks in its fdinfo after it,\n"
	       "   none after a failure, one per filesystem for a filesystem mark, plus the\n"
	       "   library's own)\n");
	printf("  once ready, a file made in each of %d directories spread over the tree:\n"
	       "  %-22s %10s %12s %12s\n", PROBES, "watcher", "reported", "time ms", "RSS MB");
	for (int i = 0; i < NC; i++) {
		if (err[i])
			continue;
		printf("  %-22s %10d %12.1f %12.1f\n", cases[i].name, seen[i],
		       median(psecs[i], runs) * 1e3, median(prss[i], runs) / 1024);
		tsv("monorepo", dirs, cases[i].name, "probe_ms", median(psecs[i], runs) * 1e3);
	}
	printf("  (time: from the first file made to the last CREATE read, the files made by\n"
	       "   another process; RSS: after them, minus before the watch; reported: of\n"
	       "   the last run)\n");
	return 0;
}
