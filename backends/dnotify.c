/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The dnotify backend: F_NOTIFY (DN_MULTISHOT) on every watched directory,
 * its signals routed into the handle by backends/dnsig.c, and names found by
 * diffing snapshots (backends/snapshot.c).
 *
 * dnotify says only "something changed in this directory": the signal
 * names the directory (si_fd), which is listed again at once, alone, and
 * diffed (nx_snap_relist); directories that are new in it are read whole and
 * registered before they are listed, so no change falls between
 * registration and listing.  Each directory's descriptor is held from one
 * snapshot to the next (struct dndir, an nx_sref).  A file is watched
 * through its directory.  No signal tells that a watched root was renamed or removed:
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
#include <stdio.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "dnsig.h"
#include "nx.h"
#include "scanner.h"

#define DN_EVENTS (DN_CREATE | DN_DELETE | DN_RENAME | DN_MODIFY | DN_ATTRIB)

struct dnb {
	int timerfd;
	struct nx_dnsig *sig;
	struct nx_scanner scanner;
	struct nx_map fds; /* directory descriptor -> struct dndir */
	bool marked;       /* a directory was marked to be listed again */
};

/* A registered directory: one of a snapshot (ref.node), or the directory of
 * a file watch (ref.node NULL, in the watch's bdata). */
struct dndir {
	struct nx_sref ref;
	struct dnb *b;
	struct nx_swatch *sw;
};

static void dndir_release(struct nx_sref *ref)
{
	struct dndir *dd = (struct dndir *)ref;

	nx_map_del(&dd->b->fds, (uint64_t)ref->fd);
	/* Before close: any close of a registered descriptor would cancel the
	 * registration anyway, but the routing stays. */
	nx_dnsig_unwatch(dd->b->sig, ref->fd);
	close(ref->fd);
	free(dd);
}

/* Registers fd; on failure the caller still owns fd. */
static struct dndir *dndir_new(struct dnb *b, struct nx_swatch *sw, int fd)
{
	struct dndir *dd = calloc(1, sizeof(*dd));

	if (!dd)
		return NULL;
	dd->ref.fd = fd;
	dd->ref.release = dndir_release;
	dd->b = b;
	dd->sw = sw;
	if (nx_dnsig_watch(b->sig, fd, DN_EVENTS) < 0) {
		free(dd);
		return NULL;
	}
	if (nx_map_put(&b->fds, (uint64_t)fd, dd) < 0) {
		nx_dnsig_unwatch(b->sig, fd);
		free(dd);
		errno = ENOMEM;
		return NULL;
	}
	return dd;
}

/* Each directory read is registered and held: the snapshot engine moves the
 * hold from snapshot to snapshot, and releases it with the directory. */
static int on_dir(void *ctx, struct nx_snode *n, int fd, const char *path)
{
	struct dnb *b = ctx;
	struct dndir *dd = dndir_new(b, b->scanner.reading, fd);

	(void)path;
	if (!dd)
		return -1;
	dd->ref.node = n;
	n->ref = &dd->ref;
	return 1;
}

static void on_free(void *ctx, struct nx_swatch *sw)
{
	(void)ctx;
	if (sw->bdata)
		dndir_release(sw->bdata);
	sw->bdata = NULL;
}

/* Each watched directory holds a descriptor: the soft RLIMIT_NOFILE is
 * raised as far as the hard limit allows (a hard limit above fs.nr_open, or
 * infinite, cannot be the soft one: then fs.nr_open).  Never lowered. */
static void raise_nofile(void)
{
	struct rlimit rl;
	unsigned long long nr_open = 0;
	rlim_t cur;
	FILE *f;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
		return;
	cur = rl.rlim_cur;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
		return;
	if ((f = fopen("/proc/sys/fs/nr_open", "re"))) {
		if (fscanf(f, "%llu", &nr_open) != 1)
			nr_open = 0;
		fclose(f);
	}
	if (nr_open > cur && nr_open < rl.rlim_max) {
		rl.rlim_cur = (rlim_t)nr_open;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static uint32_t dn_supported(const struct notifyx *nx)
{
	(void)nx;
	return NX_SCAN_EVENTS;
}

static int dn_open(struct notifyx *nx, const struct notifyx_config *cfg)
{
	struct dnb *b;
	struct itimerspec its = { 0 };
	int err;

	if (nx_dnsig_probe() < 0)
		return -1;
	raise_nofile();
	if (!(b = calloc(1, sizeof(*b))))
		return -1;
	b->timerfd = -1;
	if (nx_dnsig_open(cfg->signal, &b->sig) < 0)
		goto fail;
	its.it_value.tv_sec = cfg->poll_interval_ms / 1000;
	its.it_value.tv_nsec = (long)(cfg->poll_interval_ms % 1000) * 1000000;
	its.it_interval = its.it_value;
	b->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (b->timerfd < 0 || timerfd_settime(b->timerfd, 0, &its, NULL) < 0 ||
	    nx_epoll_add(nx, b->timerfd) < 0 || nx_epoll_add(nx, nx_dnsig_fd(b->sig)) < 0)
		goto fail;
	b->scanner.on_dir = on_dir;
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

/* A file is watched through its directory (dnotify watches nothing else),
 * opened by the path given to notifyx_add_watch, while it still leads there. */
static int watch_parent(struct dnb *b, struct nx_swatch *sw)
{
	const char *path = sw->w->abspath;
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	size_t len = slash && slash != path ? (size_t)(slash - path) : 1;
	struct dndir *dd;
	int fd;

	if (len >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, path, len);
	dir[len] = '\0';
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (!(dd = dndir_new(b, sw, fd))) {
		int err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	sw->bdata = dd;
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

static int dn_repair(struct notifyx *nx, struct nx_watch *w)
{
	struct dnb *b = nx->bdata;

	return nx_scanner_repair(nx, &b->scanner, w);
}

/* The kernel's signal names the directory: only that one is listed again
 * (a file watch's directory: the file is checked). */
static void signalled(void *ctx, int dfd)
{
	struct dnb *b = ctx;
	struct dndir *dd = nx_map_get(&b->fds, (uint64_t)dfd);

	if (!dd)
		return;
	if (dd->ref.node)
		nx_snap_mark(dd->ref.node);
	else
		dd->sw->dirty = true;
	b->marked = true;
}

static int dn_process(struct notifyx *nx, unsigned flags)
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
	for (struct nx_swatch *sw = b->scanner.list; sw; sw = sw->next) {
		/* A file moved out of the directory that is registered for it
		 * raises no signal there any more: it is read at every check. */
		if (due && sw->away && !nx_snode_isdir(sw->snap))
			sw->dirty = true;
		due |= sw->dirty;
	}
	if (due || b->marked) {
		b->marked = false;
		nx_scanner_run(nx, &b->scanner, false);
	}
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
	.repair = dn_repair,
	.own_signals = nx_dnsig_thread_signals,
};
