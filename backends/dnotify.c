/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The dnotify backend: F_NOTIFY (DN_MULTISHOT) on every watched directory,
 * its signals routed into the handle by backends/dnsig.c, and names found by
 * diffing snapshots (backends/snapshot.c).
 *
 * dnotify says only "something changed in this directory": a signal marks
 * the watch that holds the directory, and the watch's tree is read again
 * and diffed.  Each read opens the tree's directories anew and registers
 * them before the previous read's descriptors are released, so no change
 * falls between two registrations.  A file is watched through its
 * directory.  No signal tells that a watched root was renamed or removed:
 * the roots are checked every poll_interval_ms (a timerfd), as on poll.
 * SIGIO, which the kernel sends when the real-time signal queue is full,
 * is an OVERFLOW of every watch and a read of every tree.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "dnsig.h"
#include "nx.h"
#include "snapshot.h"

#define DN_EVENTS (DN_CREATE | DN_DELETE | DN_RENAME | DN_MODIFY | DN_ATTRIB)

struct dnb {
	int timerfd;
	struct nx_dnsig *sig;
	struct nx_scanner scanner;
	struct nx_map fds; /* directory descriptor -> struct nx_swatch */
};

/* The descriptors of one watch. */
struct dnw {
	int *fds;        /* of the snapshot the watch holds */
	size_t nfds, cap;
	int *pend;       /* of the read in progress */
	size_t npend, pcap;
	int parentfd;    /* a file watch: its directory, or -1 */
};

static struct dnw *dnw_of(struct nx_swatch *sw)
{
	if (!sw->bdata) {
		struct dnw *d = calloc(1, sizeof(*d));
		if (!d)
			return NULL;
		d->parentfd = -1;
		sw->bdata = d;
	}
	return sw->bdata;
}

static int add_fd(struct dnb *b, struct nx_swatch *sw, int fd)
{
	if (nx_dnsig_watch(b->sig, fd, DN_EVENTS) < 0)
		return -1;
	if (nx_map_put(&b->fds, (uint64_t)fd, sw) < 0) {
		nx_dnsig_unwatch(b->sig, fd);
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

static void release(struct dnb *b, int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		nx_map_del(&b->fds, (uint64_t)fds[i]);
		/* Before close: any close of a registered descriptor would
		 * cancel the registration anyway, but the routing stays. */
		nx_dnsig_unwatch(b->sig, fds[i]);
		close(fds[i]);
	}
}

static int on_dir(void *ctx, struct nx_snode *n, int fd, const char *path)
{
	struct dnb *b = ctx;
	struct nx_swatch *sw = b->scanner.reading;
	struct dnw *d = dnw_of(sw);

	(void)n;
	(void)path;
	if (!d)
		return -1;
	if (d->npend == d->pcap) {
		size_t cap = d->pcap ? 2 * d->pcap : 16;
		int *v = realloc(d->pend, cap * sizeof(*v));
		if (!v)
			return -1;
		d->pend = v;
		d->pcap = cap;
	}
	if (add_fd(b, sw, fd) < 0)
		return -1;
	d->pend[d->npend++] = fd;
	return 1;
}

static void on_read(void *ctx, struct nx_swatch *sw, struct nx_snode *old, struct nx_snode *cur)
{
	struct dnb *b = ctx;
	struct dnw *d = sw->bdata;

	(void)old;
	if (!d)
		return;
	if (!cur) { /* the read failed: the previous descriptors stay */
		release(b, d->pend, d->npend);
		d->npend = 0;
		return;
	}
	release(b, d->fds, d->nfds);
	free(d->fds);
	d->fds = d->pend;
	d->nfds = d->npend;
	d->cap = d->pcap;
	d->pend = NULL;
	d->npend = d->pcap = 0;
}

static void on_free(void *ctx, struct nx_swatch *sw)
{
	struct dnb *b = ctx;
	struct dnw *d = sw->bdata;

	if (!d)
		return;
	release(b, d->fds, d->nfds);
	release(b, d->pend, d->npend);
	if (d->parentfd >= 0)
		release(b, &d->parentfd, 1);
	free(d->fds);
	free(d->pend);
	free(d);
	sw->bdata = NULL;
}

static uint32_t dn_supported(const struct notifyx *nx)
{
	(void)nx;
	return NX_SCAN_EVENTS;
}

static int dn_open(struct notifyx *nx)
{
	struct dnb *b;
	struct itimerspec its = { 0 };
	int err;

	if (nx_dnsig_probe() < 0)
		return -1;
	if (!(b = calloc(1, sizeof(*b))))
		return -1;
	b->timerfd = -1;
	if (nx_dnsig_open(nx->signal, &b->sig) < 0)
		goto fail;
	its.it_value.tv_sec = nx->poll_interval_ms / 1000;
	its.it_value.tv_nsec = (long)(nx->poll_interval_ms % 1000) * 1000000;
	its.it_interval = its.it_value;
	b->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (b->timerfd < 0 || timerfd_settime(b->timerfd, 0, &its, NULL) < 0 ||
	    nx_epoll_add(nx, b->timerfd) < 0 || nx_epoll_add(nx, nx_dnsig_fd(b->sig)) < 0)
		goto fail;
	b->scanner.on_dir = on_dir;
	b->scanner.on_read = on_read;
	b->scanner.on_free = on_free;
	b->scanner.ctx = b;
	nx->bdata = b;
	return 0;
fail:
	err = errno;
	if (b->timerfd >= 0)
		close(b->timerfd);
	nx_dnsig_close(b->sig);
	free(b);
	errno = err;
	return -1;
}

static void dn_close(struct notifyx *nx)
{
	struct dnb *b = nx->bdata;

	nx_scanner_free(&b->scanner);
	nx_dnsig_close(b->sig);
	close(b->timerfd);
	nx_map_free(&b->fds);
	free(b);
}

/* A file is watched through its directory (dnotify watches nothing else). */
static int watch_parent(struct dnb *b, struct nx_swatch *sw)
{
	const char *path = sw->w->abspath;
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	size_t len = slash && slash != path ? (size_t)(slash - path) : 1;
	struct dnw *d = dnw_of(sw);
	int fd;

	if (!d)
		return -1;
	if (len >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, path, len);
	dir[len] = '\0';
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (add_fd(b, sw, fd) < 0) {
		int err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	d->parentfd = fd;
	return 0;
}

static int dn_add_watch(struct notifyx *nx, struct nx_watch *w)
{
	struct dnb *b = nx->bdata;
	struct nx_swatch *sw;

	if (nx_scanner_add(nx, &b->scanner, w) < 0)
		return -1;
	sw = nx_scanner_find(&b->scanner, w);
	if (!nx_snode_isdir(sw->snap) && watch_parent(b, sw) < 0) {
		int err = errno;
		nx_scanner_rm(&b->scanner, w);
		errno = err;
		return -1;
	}
	return 0;
}

static void dn_rm_watch(struct notifyx *nx, struct nx_watch *w)
{
	struct dnb *b = nx->bdata;

	nx_scanner_rm(&b->scanner, w);
}

static void signalled(void *ctx, int dfd)
{
	struct dnb *b = ctx;
	struct nx_swatch *sw = nx_map_get(&b->fds, (uint64_t)dfd);

	if (sw)
		sw->dirty = true;
}

static int dn_process(struct notifyx *nx)
{
	struct dnb *b = nx->bdata;
	bool overflow = false, due;
	uint64_t ticks;

	due = read(b->timerfd, &ticks, sizeof(ticks)) == sizeof(ticks);
	if (nx_dnsig_drain(b->sig, signalled, b, &overflow) < 0)
		return -1;
	if (overflow) {
		/* Signals were lost: every tree is read again. */
		nx_lost_all(nx);
		for (struct nx_swatch *sw = b->scanner.list; sw; sw = sw->next)
			sw->dirty = true;
	}
	for (struct nx_swatch *sw = b->scanner.list; sw && !due; sw = sw->next)
		due = sw->dirty;
	if (due)
		nx_scanner_run(nx, &b->scanner, false);
	return 0;
}

const struct nx_backend nx_backend_dnotify = {
	.name = "dnotify",
	.id = NOTIFYX_BACKEND_DNOTIFY,
	.event_flags = NOTIFYX_EVENT_SYNTHETIC,
	.supported = dn_supported,
	.open = dn_open,
	.close = dn_close,
	.add_watch = dn_add_watch,
	.rm_watch = dn_rm_watch,
	.process = dn_process,
	.own_signals = nx_dnsig_thread_signals,
};
