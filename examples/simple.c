/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * simple: the smallest complete libnotifyx program.
 *
 *   simple DIR    watch DIR and print its events until interrupted
 *   simple        make a temporary directory, watch it, create a file in it,
 *                 read the CREATE event, clean up and exit 0 (a self-test)
 *
 * The backend is chosen by libnotifyx (NOTIFYX_BACKEND in the environment
 * selects one).  Exit status: 0 success, 1 failure, 77 when no backend can
 * start here (so that it can run as an automake test).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <notifyx.h>

static void print_event(const struct notifyx_event *ev)
{
	const char *name = notifyx_event_name(ev->mask);
	const char *old = notifyx_event_old_path(ev);

	printf("%-12s %s%s%s%s%s\n", name ? name : "?",
	       notifyx_event_path(ev)[0] ? notifyx_event_path(ev) : ".",
	       old ? " <- " : "", old ? old : "",
	       ev->flags & NOTIFYX_EVENT_ISDIR ? " (dir)" : "",
	       ev->flags & NOTIFYX_EVENT_SYNTHETIC ? " (synthetic)" : "");
}

int main(int argc, char **argv)
{
	char tmpl[] = "/tmp/notifyx-simple.XXXXXX";
	char file[sizeof tmpl + 16] = "";
	const char *dir = argc > 1 ? argv[1] : NULL;
	union { struct notifyx_event ev; char bytes[64 * 1024]; } buf;
	struct notifyx *nx;
	int selftest = dir == NULL, seen = 0, status = 1;

	if (selftest) {
		dir = mkdtemp(tmpl);
		if (!dir) {
			perror("mkdtemp");
			return 1;
		}
	}

	nx = notifyx_open(NULL); /* defaults: AUTO backend, blocking reads */
	if (!nx) {
		perror("notifyx_open");
		status = errno == ENOSYS || errno == EPERM ? 77 : 1;
		goto out;
	}
	/* Everything this backend can report, for the directory and its entries. */
	if (notifyx_add_watch(nx, dir, notifyx_supported_events(nx) & NOTIFYX_ALL_EVENTS, 0) < 0) {
		perror(dir);
		goto out;
	}
	printf("watching %s with the %s backend\n", dir, notifyx_backend_name(notifyx_backend(nx)));
	fflush(stdout);

	if (selftest) {
		int fd;

		snprintf(file, sizeof file, "%s/hello", dir);
		fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 || close(fd) < 0) {
			perror(file);
			goto out;
		}
	}

	while (!seen) {
		struct pollfd pfd = { .fd = notifyx_fd(nx), .events = POLLIN };
		const struct notifyx_event *ev;
		ssize_t n;

		/* The self-test gives up after 10 s (the poll backend scans every second). */
		if (selftest && poll(&pfd, 1, 10000) == 0) {
			fprintf(stderr, "simple: no CREATE event for %s within 10 s\n", file);
			goto out;
		}
		n = notifyx_read(nx, buf.bytes, sizeof buf.bytes);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("notifyx_read");
			goto out;
		}
		notifyx_for_each_event(ev, buf.bytes, n) {
			print_event(ev);
			if (selftest && ev->mask == NOTIFYX_CREATE &&
			    strcmp(notifyx_event_path(ev), "hello") == 0)
				seen = 1;
		}
		fflush(stdout);
	}
	status = 0;
out:
	notifyx_close(nx);
	if (selftest) {
		if (file[0])
			unlink(file);
		rmdir(tmpl);
	}
	return status;
}
