/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Two recursive watches of one tree in one fanotify handle with a
 * filesystem mark: one with NOTIFYX_WATCH_RESCAN, which walks the tree (as
 * a listing watch does), and a plain one, which does not (a "lazy" watch:
 * notifyx_add_watch(3) NOTES).  Both hear the same records; what each
 * reports goes to a file of its own, one line per event ("name isdir path
 * old_path"), until SIGTERM and a quiet 200 ms.  bench/lazy-walk.sh runs it
 * under tests/churn and compares the two (notifyx(7) BUGS quotes it).
 *
 *   bench/lazy-walk TREE WALKED-OUT LAZY-OUT
 */
#define _GNU_SOURCE
#include <errno.h>
#include <notifyx.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	static uint64_t buf[65536 / sizeof(uint64_t)];
	struct notifyx_config c = { .size = sizeof(c), .backend = NOTIFYX_BACKEND_FANOTIFY,
				    .flags = NOTIFYX_NONBLOCK };
	uint32_t events = NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME | NOTIFYX_MOVED_IN |
			  NOTIFYX_MOVED_OUT;
	struct notifyx *nx;
	FILE *out[2];
	int wd[2];
	bool quiet = false;

	if (argc != 4)
		return fprintf(stderr, "usage: %s TREE WALKED-OUT LAZY-OUT\n", argv[0]), 2;
	setenv("NOTIFYX_FANOTIFY_INODE_MAX", "0", 1); /* the filesystem mark, whatever the size */
	if (!(nx = notifyx_open(&c)) ||
	    (wd[0] = notifyx_add_watch(nx, argv[1], events,
				       NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_RESCAN)) < 0 ||
	    (wd[1] = notifyx_add_watch(nx, argv[1], events, NOTIFYX_WATCH_RECURSIVE)) < 0)
		return perror("lazy-walk: notifyx"), 1;
	if (!(out[0] = fopen(argv[2], "w")) || !(out[1] = fopen(argv[3], "w")))
		return perror("lazy-walk: output"), 1;
	signal(SIGTERM, on_term);
	fprintf(stderr, "lazy-walk: ready\n");
	while (!(stop && quiet)) {
		struct pollfd p = { .fd = notifyx_fd(nx), .events = POLLIN };
		const struct notifyx_event *ev;
		ssize_t n;

		quiet = poll(&p, 1, 200) == 0;
		while ((n = notifyx_read(nx, buf, sizeof(buf))) > 0) {
			notifyx_for_each_event(ev, buf, n) {
				const char *old = notifyx_event_old_path(ev);
				if (ev->mask == NOTIFYX_SYNC || (ev->wd != wd[0] && ev->wd != wd[1]))
					continue;
				fprintf(out[ev->wd == wd[1]], "%s %d %s %s\n",
					notifyx_event_name(ev->mask),
					!!(ev->flags & NOTIFYX_EVENT_ISDIR), notifyx_event_path(ev),
					old ? old : "");
			}
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return perror("lazy-walk: notifyx_read"), 1;
	}
	fclose(out[0]);
	fclose(out[1]);
	notifyx_close(nx);
	return 0;
}
