/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The poll backend: poll_interval_ms after the end of the previous scan (a
 * one-shot timerfd in the handle's epoll set) each watch's tree is read again and diffed against what was reported
 * (backends/snapshot.c).  It needs nothing from the kernel but directory
 * listings, so it works on any filesystem: network filesystems, FUSE,
 * /proc-like trees.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "nx.h"
#include "scanner.h"

struct pollb {
	int timerfd;
	struct itimerspec interval; /* one shot, armed again after each scan */
	struct nx_scanner scanner;
};

static uint32_t poll_supported(const struct notifyx *nx)
{
	(void)nx;
	return NX_SCAN_EVENTS;
}

static int poll_open(struct notifyx *nx, const struct notifyx_config *cfg)
{
	struct pollb *pb = calloc(1, sizeof(*pb));
	int err;

	if (!pb)
		return -1;
	pb->interval.it_value.tv_sec = cfg->poll_interval_ms / 1000;
	pb->interval.it_value.tv_nsec = (long)(cfg->poll_interval_ms % 1000) * 1000000;
	/* Periodic too: were a re-arm to fail, the scans would go on. */
	pb->interval.it_interval = pb->interval.it_value;
	pb->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (pb->timerfd < 0 || timerfd_settime(pb->timerfd, 0, &pb->interval, NULL) < 0 ||
	    nx_epoll_add(nx, pb->timerfd) < 0) {
		err = errno;
		if (pb->timerfd >= 0)
			close(pb->timerfd);
		free(pb);
		errno = err;
		return -1;
	}
	nx->bdata = pb;
	return 0;
}

static void poll_close(struct notifyx *nx)
{
	struct pollb *pb = nx->bdata;

	close(pb->timerfd);
	nx_scanner_free(&pb->scanner);
	free(pb);
}

static int poll_add_watch(struct notifyx *nx, struct nx_watch *w)
{
	struct pollb *pb = nx->bdata;

	return nx_scanner_add(nx, &pb->scanner, w);
}

static void poll_rm_watch(struct notifyx *nx, struct nx_watch *w)
{
	struct pollb *pb = nx->bdata;

	nx_scanner_rm(&pb->scanner, w);
}

static int poll_repair(struct notifyx *nx, struct nx_watch *w)
{
	struct pollb *pb = nx->bdata;

	return nx_scanner_repair(nx, &pb->scanner, w);
}

static int poll_process(struct notifyx *nx, unsigned flags)
{
	struct pollb *pb = nx->bdata;
	uint64_t ticks;

	/* Scans run when the interval has passed, whoever asks; the next
	 * interval counts from the end of this scan, so that a scan longer
	 * than the interval is not followed by another at once. */
	if (read(pb->timerfd, &ticks, sizeof(ticks)) != sizeof(ticks))
		return 0;
	nx_scanner_run(nx, &pb->scanner, true);
	/* A failure leaves the periodic timer as it was: the next scan is at
	 * most one interval early. */
	(void)timerfd_settime(pb->timerfd, 0, &pb->interval, NULL);
	return 0;
}

const struct nx_backend nx_backend_poll = {
	.name = "poll",
	.id = NOTIFYX_BACKEND_POLL,
	.event_flags = NOTIFYX_EVENT_SYNTHETIC,
	.supported = poll_supported,
	.open = poll_open,
	.close = poll_close,
	.add_watch = poll_add_watch,
	.rm_watch = poll_rm_watch,
	.process = poll_process,
	.repair = poll_repair,
};
