/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * epoll: two libnotifyx handles with different backends and a signalfd in
 * one epoll loop.
 *
 *   epoll DIR1 DIR2
 *
 * DIR1 is watched with inotify, DIR2 with a scanning backend (dnotify, else
 * poll), each on its own handle; both descriptors and a signalfd for SIGINT
 * and SIGTERM go into one epoll set.  When no second backend starts here,
 * DIR2 gets a second inotify handle, and stderr says why.
 * Standard output: one line per event, "BACKEND EVENT DIR/PATH".
 * Standard error: "epoll: watching DIR1 (BACKEND) and DIR2 (BACKEND)" once
 * both watches are in place.
 * Exit status: 0 after SIGINT or SIGTERM, 1 on an error, 77 when inotify
 * cannot start here (so that it can run as an automake test).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <notifyx.h>

#define EVENTS (NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME | NOTIFYX_MOVED_IN | \
		NOTIFYX_MOVED_OUT | NOTIFYX_MODIFY)

struct source {
	struct notifyx *nx;
	const char *dir;
};

static struct notifyx *open_backend(uint32_t backend)
{
	struct notifyx_config cfg = {
		.size = sizeof(cfg),
		.backend = backend,
		.flags = NOTIFYX_NONBLOCK, /* read until EAGAIN, never block the loop */
	};

	return notifyx_open(&cfg);
}

/* Reads every queued event of src; 0, or -1 on an error. */
static int drain(const struct source *src)
{
	const char *backend = notifyx_backend_name(notifyx_backend(src->nx));
	/* union: the records need the alignment of struct notifyx_event */
	static union {
		struct notifyx_event ev;
		char bytes[NOTIFYX_EVENT_MAX];
	} buf;
	const struct notifyx_event *ev;
	ssize_t n;

	while ((n = notifyx_read(src->nx, buf.bytes, sizeof(buf.bytes))) > 0) {
		notifyx_for_each_event(ev, buf.bytes, n) {
			const char *name = notifyx_event_name(ev->mask);

			printf("%s %s %s/%s\n", backend, name ? name : "?", src->dir,
			       notifyx_event_path(ev));
		}
	}
	/* EAGAIN: nothing more now (readiness may be spurious: that is fine) */
	return n < 0 && errno != EAGAIN && errno != EINTR ? -1 : 0;
}

int main(int argc, char **argv)
{
	static const uint32_t scanning[] = { NOTIFYX_BACKEND_DNOTIFY, NOTIFYX_BACKEND_POLL };
	struct source src[2] = { { NULL, NULL }, { NULL, NULL } };
	struct epoll_event ev;
	sigset_t mask;
	int ep = -1, sfd = -1, status = 1, i;

	if (argc != 3) {
		fprintf(stderr, "usage: %s DIR1 DIR2\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0); /* each line reaches a pipe at once */

	src[0].dir = argv[1];
	src[0].nx = open_backend(NOTIFYX_BACKEND_INOTIFY);
	if (!src[0].nx) {
		fprintf(stderr, "epoll: inotify: %s\n", strerror(errno));
		return errno == ENOSYS || errno == EPERM ? 77 : 1;
	}
	src[1].dir = argv[2];
	for (i = 0; i < 2 && !src[1].nx; i++) {
		src[1].nx = open_backend(scanning[i]);
		if (!src[1].nx)
			fprintf(stderr, "epoll: %s does not start here (%s)\n",
				notifyx_backend_name(scanning[i]), strerror(errno));
	}
	if (!src[1].nx) {
		fprintf(stderr, "epoll: %s gets a second inotify handle\n", src[1].dir);
		src[1].nx = open_backend(NOTIFYX_BACKEND_INOTIFY);
		if (!src[1].nx) {
			fprintf(stderr, "epoll: inotify: %s\n", strerror(errno));
			goto out;
		}
	}

	/* The signals come through the signalfd only: block them first. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0 ||
	    (sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0 ||
	    (ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		perror("epoll");
		goto out;
	}
	for (i = 0; i < 2; i++) {
		if (notifyx_add_watch(src[i].nx, src[i].dir, EVENTS, 0) < 0) {
			fprintf(stderr, "epoll: %s: %s\n", src[i].dir, strerror(errno));
			goto out;
		}
		ev.events = EPOLLIN;
		ev.data.ptr = &src[i];
		if (epoll_ctl(ep, EPOLL_CTL_ADD, notifyx_fd(src[i].nx), &ev) < 0) {
			perror("epoll_ctl");
			goto out;
		}
	}
	ev.events = EPOLLIN;
	ev.data.ptr = NULL; /* the signalfd */
	if (epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev) < 0) {
		perror("epoll_ctl");
		goto out;
	}
	fprintf(stderr, "epoll: watching %s (%s) and %s (%s)\n",
		src[0].dir, notifyx_backend_name(notifyx_backend(src[0].nx)),
		src[1].dir, notifyx_backend_name(notifyx_backend(src[1].nx)));

	for (;;) {
		struct epoll_event ready[3];
		int n = epoll_wait(ep, ready, 3, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			perror("epoll_wait");
			goto out;
		}
		for (i = 0; i < n; i++) {
			struct signalfd_siginfo si;

			if (ready[i].data.ptr) {
				if (drain(ready[i].data.ptr) < 0) {
					perror("notifyx_read");
					goto out;
				}
			} else if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				fprintf(stderr, "epoll: %s, stopping\n", strsignal((int)si.ssi_signo));
				status = 0;
				goto out;
			}
		}
	}

out:
	if (ep >= 0)
		close(ep);
	if (sfd >= 0)
		close(sfd);
	notifyx_close(src[0].nx);
	notifyx_close(src[1].nx);
	return status;
}
