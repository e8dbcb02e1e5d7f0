/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A filesystem mark hears the whole filesystem.  While another process
 * changes files beside the watched tree as fast as it can, for longer than
 * the test waits, a non-blocking notifyx_read must still return (API.md: an
 * event loop never hangs in notifyx_read), and the watch's own events must
 * still come.
 *
 * As root, on a tmpfs of its own in a mount namespace of its own, with
 * NOTIFYX_FANOTIFY_INODE_MAX=0 (a filesystem mark whenever allowed).  Exit 77
 * without root, fanotify or mount namespaces.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <notifyx.h>

/* The flood lasts longer than any read may take; more processes make it than
 * one reader can follow on this machine's cores. */
#define FLOOD_S 20
#define FLOODERS 4
#define READ_MAX_MS 5000

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int skip(const char *why)
{
	printf("SKIP: fanotify-flood: %s\n", why);
	return 77;
}

/* Makes, writes and removes files in dir until killed or FLOOD_S passed. */
static void flood(const char *dir, int k)
{
	char p[256];
	long long end = now_ms() + FLOOD_S * 1000;

	for (unsigned i = 0; now_ms() < end; i++) {
		snprintf(p, sizeof(p), "%s/f%d.%u", dir, k, i % 64);
		int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd >= 0) {
			(void)!write(fd, "x", 1);
			close(fd);
		}
		unlink(p);
	}
	_exit(0);
}

static void stop(const pid_t *child)
{
	for (int k = 0; k < FLOODERS; k++)
		kill(child[k], SIGKILL);
	for (int k = 0; k < FLOODERS; k++)
		waitpid(child[k], NULL, 0);
}

int main(void)
{
	static _Alignas(8) char buf[NOTIFYX_EVENT_MAX * 16];
	struct notifyx_config c = { .size = sizeof(c), .backend = NOTIFYX_BACKEND_FANOTIFY,
				    .flags = NOTIFYX_NONBLOCK };
	struct notifyx *nx;
	long long t0, longest = 0;
	int wd, found = 0, reads = 0;
	pid_t child[FLOODERS];

	if (geteuid() != 0)
		return skip("needs root (a filesystem mark)");
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return skip("no mount namespace");
	if (mount("tmpfs", "/mnt", "tmpfs", 0, "size=16m") < 0)
		return skip("cannot mount a tmpfs");
	if (mkdir("/mnt/tree", 0755) < 0 || mkdir("/mnt/beside", 0755) < 0) {
		perror("mkdir");
		return 1;
	}
	setenv("NOTIFYX_FANOTIFY_INODE_MAX", "0", 1);
	if (!(nx = notifyx_open(&c)))
		return skip("fanotify backend not available");
	if ((wd = notifyx_add_watch(nx, "/mnt/tree", NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE)) < 0) {
		perror("notifyx_add_watch");
		return 1;
	}
	for (int k = 0; k < FLOODERS; k++)
		if ((child[k] = fork()) == 0)
			flood("/mnt/beside", k);
	usleep(200000); /* the kernel queue fills */
	/* Reads while the flood goes on: each returns in time, and the file
	 * made in the tree midway is reported. */
	for (long long start = now_ms(); !found && now_ms() - start < 30000; reads++) {
		if (reads == 3)
			close(open("/mnt/tree/mine", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
		t0 = now_ms();
		ssize_t n = notifyx_read(nx, buf, sizeof(buf));
		long long took = now_ms() - t0;
		if (took > longest)
			longest = took;
		if (took > READ_MAX_MS) {
			printf("FAIL: fanotify-flood: a non-blocking read took %lld ms\n", took);
			stop(child);
			return 1;
		}
		if (n < 0 && errno != EAGAIN) {
			perror("notifyx_read");
			stop(child);
			return 1;
		}
		for (const struct notifyx_event *e = (const void *)buf;
		     n > 0 && (const char *)e < buf + n; e = notifyx_event_next(e))
			found |= e->wd == wd && e->mask == NOTIFYX_CREATE &&
				 !strcmp(notifyx_event_path(e), "mine");
	}
	stop(child);
	notifyx_close(nx);
	if (!found) {
		printf("FAIL: fanotify-flood: the watch's CREATE \"mine\" never came (%d reads)\n",
		       reads);
		return 1;
	}
	printf("PASS: fanotify-flood: %d non-blocking reads under the flood, the longest %lld ms\n",
	       reads, longest);
	return 0;
}
