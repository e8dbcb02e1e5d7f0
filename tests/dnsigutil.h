/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the unit tests of dnotify's signal routing (backends/dnsig.c) share,
 * tests/unit-dnsig.c and tests/unit-dnsig-sigio.c: temporary directories
 * with a descriptor, files made in them, channels opened and drained, the
 * dispositions of signals.  Header only (each program is one file).
 */
#ifndef NX_DNSIGUTIL_H
#define NX_DNSIGUTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dnsig.h"

#define WAIT_MS 3000  /* for what must come */
#define QUIET_MS 200  /* for what must not */
#define ALL_DN (DN_MODIFY | DN_CREATE | DN_DELETE | DN_RENAME | DN_ATTRIB)

struct dir {
	char path[64];
	int fd;
};

static inline void dir_make(struct dir *d)
{
	strcpy(d->path, "/tmp/nx-dnsig-XXXXXX");
	assert_non_null(mkdtemp(d->path));
	d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(d->fd >= 0);
}

static inline void dir_remove(struct dir *d)
{
	DIR *dp = opendir(d->path);
	struct dirent *e;

	assert_non_null(dp);
	while ((e = readdir(dp))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(dp), e->d_name, 0);
	}
	closedir(dp);
	if (d->fd >= 0)
		close(d->fd);
	assert_int_equal(rmdir(d->path), 0);
}

/* Creates (or rewrites) the file name in d: a DN_CREATE or DN_MODIFY. */
static inline void touch(const struct dir *d, const char *name)
{
	int fd = openat(d->fd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
}

static inline bool readable(const struct nx_dnsig *c, int ms)
{
	struct pollfd p = { .fd = nx_dnsig_fd(c), .events = POLLIN };
	int r;

	while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR)
		;
	return r == 1;
}

struct got {
	int fd[64];
	int n;
};

static inline void collect(void *ctx, int fd)
{
	struct got *g = ctx;

	if (g->n < 64)
		g->fd[g->n] = fd;
	g->n++;
}

/* Waits for c to become readable, then drains it into *g. */
static inline int drain_wait(struct nx_dnsig *c, struct got *g, bool *overflow)
{
	g->n = 0;
	if (!readable(c, WAIT_MS))
		return -2;
	return nx_dnsig_drain(c, collect, g, overflow);
}

static inline struct nx_dnsig *chan(int sig)
{
	struct nx_dnsig *c = NULL;

	assert_int_equal(nx_dnsig_open(sig, &c), 0);
	assert_non_null(c);
	return c;
}

static inline struct sigaction disposition(int sig)
{
	struct sigaction sa;

	assert_int_equal(sigaction(sig, NULL, &sa), 0);
	return sa;
}

static inline bool is_dfl(int sig)
{
	struct sigaction sa = disposition(sig);

	return !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL;
}

static inline void set_handler(int sig, void (*fn)(int), int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(sig, &sa, NULL), 0);
}

static volatile sig_atomic_t app_hits;

static inline void app_handler(int sig)
{
	app_hits++;
}

#endif /* NX_DNSIGUTIL_H */
