/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The fanotify mark limit: a recursive watch that needs more inode marks than
 * are left fails with ENOSPC and leaves nothing behind (no mark, no event),
 * so that a smaller watch still fits in what is left.
 *
 * The limit is lowered in a user namespace of a child process only
 * (/proc/sys/user/max_fanotify_marks is per namespace), so that nothing else
 * on the machine is affected; there, without CAP_SYS_ADMIN in the initial
 * namespace, the backend uses inode marks.  Exit 77 when user namespaces are
 * not available.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <notifyx.h>

#ifndef LIMIT
#define LIMIT 10
#endif

static char dir[] = "/tmp/nx-fanlimits.XXXXXX";

static int put(const char *file, const char *text)
{
	int fd = open(file, O_WRONLY | O_CLOEXEC);
	ssize_t n = -1;

	if (fd >= 0) {
		n = write(fd, text, strlen(text));
		close(fd);
	}
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static const char *at(const char *rel)
{
	static char buf[8][4096];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, rel);
	return buf[i];
}

static void mkdirs(const char *top, int n)
{
	char rel[64];

	mkdir(at(top), 0755);
	for (int i = 0; i < n; i++) {
		snprintf(rel, sizeof(rel), "%s/d%02d", top, i);
		mkdir(at(rel), 0755);
	}
}

#define FAIL(...) do { printf("FAIL: " __VA_ARGS__); printf("\n"); return 1; } while (0)

static int child(void)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	struct notifyx_config c = { .size = sizeof(c), .backend = NOTIFYX_BACKEND_FANOTIFY,
				    .flags = NOTIFYX_NONBLOCK };
	struct notifyx *nx;
	char buf[NOTIFYX_EVENT_MAX * 4];
	int big, small, seen = 0;
	struct timespec t0, t;

	if (unshare(CLONE_NEWUSER) < 0) {
		printf("SKIP: unshare(CLONE_NEWUSER): %s\n", strerror(errno));
		return 77;
	}
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	if (put("/proc/self/uid_map", map) < 0 || put("/proc/self/setgroups", "deny") < 0 ||
	    (snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid), put("/proc/self/gid_map", map)) < 0) {
		printf("SKIP: cannot map ids in the new user namespace: %s\n", strerror(errno));
		return 77;
	}
	snprintf(map, sizeof(map), "%d", LIMIT);
	if (put("/proc/sys/user/max_fanotify_marks", map) < 0) {
		printf("SKIP: cannot set max_fanotify_marks in the namespace: %s\n", strerror(errno));
		return 77;
	}
	if (!(nx = notifyx_open(&c))) {
		printf("SKIP: the fanotify backend cannot start here: %s\n", strerror(errno));
		return 77;
	}
	/* 31 directories, 10 marks. */
	errno = 0;
	big = notifyx_add_watch(nx, at("big"), NOTIFYX_CREATE | NOTIFYX_DELETE,
				NOTIFYX_WATCH_RECURSIVE);
	if (big >= 0 || errno != ENOSPC)
		FAIL("recursive watch on 31 directories with %d marks allowed: %d, errno %s (want "
		     "-1 ENOSPC)", LIMIT, big, strerrorname_np(errno));
	/* 9 directories: fits only if the failed watch left at most one mark. */
	small = notifyx_add_watch(nx, at("small"), NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	if (small < 0)
		FAIL("the small watch after ENOSPC: %s (marks of the failed watch stayed?)",
		     strerrorname_np(errno));
	close(open(at("big/d00/x"), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
	close(open(at("big/y"), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
	rmdir(at("big/d01"));
	close(open(at("small/d07/z"), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		ssize_t n = notifyx_read(nx, buf, sizeof(buf));
		for (const struct notifyx_event *e = (const void *)buf; n > 0 && (const char *)e < buf + n;
		     e = notifyx_event_next(e)) {
			if (e->wd != small)
				FAIL("an event of wd %d (%s \"%s\"): only the small watch exists",
				     e->wd, notifyx_event_name(e->mask), notifyx_event_path(e));
			if (e->mask != NOTIFYX_CREATE || strcmp(notifyx_event_path(e), "d07/z"))
				FAIL("unexpected event %s \"%s\"", notifyx_event_name(e->mask),
				     notifyx_event_path(e));
			seen++;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > 300)
			break;
		usleep(10000);
	}
	if (seen != 1)
		FAIL("CREATE \"d07/z\" of the small watch read %d times, want once", seen);
	notifyx_close(nx);
	printf("ok: ENOSPC at %d marks, nothing left behind\n", LIMIT);
	return 0;
}

static int rm_one(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return type == FTW_DP ? rmdir(p) : unlink(p);
}

int main(void)
{
	int status;
	pid_t pid;

	if (!mkdtemp(dir))
		return perror("mkdtemp"), 1;
	mkdirs("big", 30);
	mkdirs("small", 8);
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit((status = child(), fflush(stdout), status));
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return perror("fork"), 1;
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
