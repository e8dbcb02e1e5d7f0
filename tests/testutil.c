/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers shared by the cmocka test programs; see testutil.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

uint32_t tu_backend = NOTIFYX_BACKEND_AUTO;
uint32_t tu_interval_ms = 50;

static const struct {
	uint32_t bit;
	const char *name;
} mask_names[] = {
	{ NOTIFYX_ACCESS, "ACCESS" },
	{ NOTIFYX_MODIFY, "MODIFY" },
	{ NOTIFYX_ATTRIB, "ATTRIB" },
	{ NOTIFYX_CLOSE_WRITE, "CLOSE_WRITE" },
	{ NOTIFYX_CLOSE_NOWRITE, "CLOSE_NOWRITE" },
	{ NOTIFYX_OPEN, "OPEN" },
	{ NOTIFYX_CREATE, "CREATE" },
	{ NOTIFYX_DELETE, "DELETE" },
	{ NOTIFYX_RENAME, "RENAME" },
	{ NOTIFYX_MOVED_OUT, "MOVED_OUT" },
	{ NOTIFYX_MOVED_IN, "MOVED_IN" },
	{ NOTIFYX_DELETE_SELF, "DELETE_SELF" },
	{ NOTIFYX_MOVE_SELF, "MOVE_SELF" },
	{ NOTIFYX_OVERFLOW, "OVERFLOW" },
	{ NOTIFYX_UNMOUNT, "UNMOUNT" },
	{ NOTIFYX_ERROR, "ERROR" },
	{ NOTIFYX_IGNORED, "IGNORED" },
	{ NOTIFYX_SYNC, "SYNC" },
};

uint32_t tu_backend_from_name(const char *name)
{
	if (!name || !strcmp(name, "auto"))
		return NOTIFYX_BACKEND_AUTO;
	if (!strcmp(name, "inotify"))
		return NOTIFYX_BACKEND_INOTIFY;
	if (!strcmp(name, "fanotify"))
		return NOTIFYX_BACKEND_FANOTIFY;
	if (!strcmp(name, "dnotify"))
		return NOTIFYX_BACKEND_DNOTIFY;
	if (!strcmp(name, "poll"))
		return NOTIFYX_BACKEND_POLL;
	return UINT32_MAX;
}

const char *tu_mask_str(uint32_t mask)
{
	static char buf[4][200];
	static int k;
	char *b = buf[k++ & 3];
	size_t i;

	b[0] = 0;
	if (mask == 0)
		return "0";
	for (i = 0; i < sizeof mask_names / sizeof mask_names[0]; i++)
		if (mask & mask_names[i].bit) {
			if (b[0])
				strcat(b, "|");
			strcat(b, mask_names[i].name);
			mask &= ~mask_names[i].bit;
		}
	if (mask)
		snprintf(b + strlen(b), 40, "%s%#x", b[0] ? "|" : "", mask);
	return b;
}

const char *tu_flags_str(uint32_t flags)
{
	static char buf[4][100];
	static int k;
	char *b = buf[k++ & 3];

	snprintf(b, 100, "%s%s%s%s",
		 flags & NOTIFYX_EVENT_ISDIR ? "ISDIR " : "",
		 flags & NOTIFYX_EVENT_SYNTHETIC ? "SYNTHETIC " : "",
		 flags & NOTIFYX_EVENT_EXCHANGE ? "EXCHANGE " : "",
		 (flags & ~7u) ? "UNKNOWN " : "");
	if (!b[0])
		strcpy(b, "-");
	else
		b[strlen(b) - 1] = 0;
	return b;
}

long tu_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

void tu_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

struct notifyx *tu_open(uint32_t flags, uint32_t queue_max)
{
	struct notifyx_config cfg;

	memset(&cfg, 0, sizeof cfg);
	cfg.size = sizeof cfg;
	cfg.backend = tu_backend;
	cfg.flags = flags;
	cfg.poll_interval_ms = tu_interval_ms;
	cfg.queue_max = queue_max;
	return notifyx_open(&cfg);
}

int tu_is_scanning(const struct notifyx *nx)
{
	uint32_t b = notifyx_backend(nx);

	return b == NOTIFYX_BACKEND_DNOTIFY || b == NOTIFYX_BACKEND_POLL;
}

int tu_quiet_ms(const struct notifyx *nx)
{
	if (tu_is_scanning(nx))
		return (int)(4 * tu_interval_ms + 150);
	return 150;
}

void tu_log_init(struct tu_log *log, struct notifyx *nx)
{
	memset(log, 0, sizeof *log);
	log->nx = nx;
	log->scanning = nx ? tu_is_scanning(nx) : 0;
}

void tu_log_clear(struct tu_log *log)
{
	size_t i;

	for (i = 0; i < log->n; i++) {
		free(log->ev[i].path);
		free(log->ev[i].old_path);
	}
	log->n = 0;
}

void tu_log_free(struct tu_log *log)
{
	tu_log_clear(log);
	free(log->ev);
	free(log->w);
	memset(log, 0, sizeof *log);
}

void tu_track(struct tu_log *log, int wd, uint32_t events, uint32_t flags)
{
	size_t i;

	for (i = 0; i < log->nw; i++)
		if (log->w[i].wd == wd)
			fail_msg("wd %d returned twice by notifyx_add_watch (wds are never reused)", wd);
	if (log->nw == log->wcap) {
		log->wcap = log->wcap ? 2 * log->wcap : 16;
		log->w = realloc(log->w, log->wcap * sizeof *log->w);
		assert_non_null(log->w);
	}
	log->w[log->nw].wd = wd;
	log->w[log->nw].events = events;
	log->w[log->nw].flags = flags;
	log->w[log->nw].ended = 0;
	log->nw++;
}

int tu_add_at(struct tu_log *log, const char *path, uint32_t events, uint32_t flags,
	      const char *file, int line)
{
	int wd = notifyx_add_watch(log->nx, path, events, flags);

	if (wd < 0) {
		print_error("notifyx_add_watch(\"%s\", %s, %#x) failed: %s (%s)\n", path,
			    tu_mask_str(events), flags, strerrorname_np(errno), strerror(errno));
		_fail(file, line);
	}
	if (wd == 0) {
		print_error("notifyx_add_watch(\"%s\") returned wd 0; wds are positive\n", path);
		_fail(file, line);
	}
	tu_track(log, wd, events, flags);
	return wd;
}

static struct tu_watch *find_watch(const struct tu_log *log, int wd)
{
	size_t i;

	for (i = 0; i < log->nw; i++)
		if (log->w[i].wd == wd)
			return &log->w[i];
	return NULL;
}

int tu_ended(const struct tu_log *log, int wd)
{
	struct tu_watch *w = find_watch(log, wd);

	return w && w->ended;
}

static void print_ev(const struct tu_ev *e, size_t i)
{
	print_error("  [%zu] wd=%d %-13s path=\"%s\"%s%s%s flags=%s cookie=%u error=%d\n", i, e->wd,
		    tu_mask_str(e->mask), e->path, e->old_path ? " old_path=\"" : "",
		    e->old_path ? e->old_path : "", e->old_path ? "\"" : "", tu_flags_str(e->flags),
		    e->cookie, e->error);
}

void tu_dump(const struct tu_log *log, const char *title)
{
	size_t i;

	print_error("%s: %zu event(s) read:\n", title, log->n);
	for (i = 0; i < log->n; i++)
		print_ev(&log->ev[i], i);
}

static int is_one_known_bit(uint32_t m)
{
	return m && !(m & (m - 1)) && (m & (NOTIFYX_ALL_EVENTS | TU_ALWAYS | NOTIFYX_SYNC));
}

/* Check one record against the rules of API.md and append it. */
static void take(struct tu_log *log, const struct notifyx_event *ev, size_t room)
{
	const char *names = ev->names;
	size_t need, i;
	struct tu_watch *w;
	struct tu_ev *e;

	if (room < sizeof *ev)
		fail_msg("record header cut: %zu bytes left in the read", room);
	if (ev->size < sizeof *ev || ev->size % 8 != 0 || ev->size > room)
		fail_msg("record size %u: expected a multiple of 8, >= %zu, <= %zu bytes left",
			 ev->size, sizeof *ev, room);
	need = sizeof *ev + ev->path_len + 1 + (ev->old_path_len ? ev->old_path_len + 1 : 0);
	if (ev->size < need)
		fail_msg("record size %u too small for path_len %u and old_path_len %u", ev->size,
			 ev->path_len, ev->old_path_len);
	if (strnlen(names, ev->path_len + 1) != ev->path_len)
		fail_msg("path_len %u but strlen(path) %zu", ev->path_len,
			 strnlen(names, ev->path_len + 1));
	if (ev->old_path_len &&
	    strnlen(names + ev->path_len + 1, ev->old_path_len + 1) != ev->old_path_len)
		fail_msg("old_path_len %u but strlen(old_path) differs", ev->old_path_len);
	for (i = need; i < ev->size; i++)
		if (((const char *)ev)[i] != 0)
			fail_msg("record (size %u, path \"%s\") has non-zero padding byte at offset %zu",
				 ev->size, names, i);
	if (!is_one_known_bit(ev->mask))
		fail_msg("mask %#x (%s) is not exactly one known type bit (path \"%s\")", ev->mask,
			 tu_mask_str(ev->mask), names);
	if (ev->flags & ~(NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_SYNTHETIC | NOTIFYX_EVENT_EXCHANGE))
		fail_msg("unknown flags %#x on %s \"%s\"", ev->flags, tu_mask_str(ev->mask), names);
	if ((ev->flags & NOTIFYX_EVENT_EXCHANGE) && ev->mask != NOTIFYX_RENAME)
		fail_msg("EXCHANGE flag on %s \"%s\" (only RENAME may carry it)",
			 tu_mask_str(ev->mask), names);
	if (ev->cookie && ev->mask != NOTIFYX_MOVED_OUT && ev->mask != NOTIFYX_MOVED_IN)
		fail_msg("cookie %u on %s \"%s\": expected 0 (only move halves carry one)",
			 ev->cookie, tu_mask_str(ev->mask), names);
	if ((ev->error != 0) != (ev->mask == NOTIFYX_ERROR))
		fail_msg("error %d on %s \"%s\": expected an errno on ERROR only", ev->error,
			 tu_mask_str(ev->mask), names);
	if ((ev->old_path_len != 0) != (ev->mask == NOTIFYX_RENAME))
		fail_msg("old_path_len %u on %s \"%s\": RENAME has an old_path, nothing else has",
			 ev->old_path_len, tu_mask_str(ev->mask), names);
	if ((ev->mask & (NOTIFYX_UNMOUNT | NOTIFYX_IGNORED | NOTIFYX_OVERFLOW | NOTIFYX_SYNC |
			 NOTIFYX_DELETE_SELF | NOTIFYX_MOVE_SELF)) && ev->path_len != 0)
		fail_msg("%s with path \"%s\": expected path \"\"", tu_mask_str(ev->mask), names);
	if (ev->mask == NOTIFYX_RENAME && ev->old_path_len &&
	    !strcmp(names, names + ev->path_len + 1))
		fail_msg("RENAME with path == old_path \"%s\"", names);
	if (ev->wd <= 0)
		fail_msg("event %s \"%s\" with wd %d: wds are positive", tu_mask_str(ev->mask),
			 names, ev->wd);
	if (log->scanning && !(ev->flags & NOTIFYX_EVENT_SYNTHETIC))
		fail_msg("scanning backend: %s \"%s\" without SYNTHETIC (every event of a scanning "
			 "backend is SYNTHETIC)", tu_mask_str(ev->mask), names);

	w = find_watch(log, ev->wd);
	if (!w) {
		tu_dump(log, "before the bad event");
		fail_msg("event %s \"%s\" for wd %d that this handle never returned",
			 tu_mask_str(ev->mask), names, ev->wd);
	}
	if (w->ended) {
		tu_dump(log, "before the bad event");
		fail_msg("event %s \"%s\" for wd %d after its IGNORED (IGNORED is the last event)",
			 tu_mask_str(ev->mask), names, ev->wd);
	}
	if (ev->mask == NOTIFYX_SYNC && !(w->flags & (NOTIFYX_WATCH_LIST | NOTIFYX_WATCH_RESCAN))) {
		tu_dump(log, "before the bad event");
		fail_msg("wd %d received SYNC without NOTIFYX_WATCH_LIST or NOTIFYX_WATCH_RESCAN",
			 ev->wd);
	}
	if (!(ev->mask & (w->events | TU_ALWAYS | NOTIFYX_SYNC))) {
		tu_dump(log, "before the bad event");
		fail_msg("wd %d received %s \"%s\" but requested only %s", ev->wd,
			 tu_mask_str(ev->mask), names, tu_mask_str(w->events));
	}
	if (ev->mask == NOTIFYX_IGNORED)
		w->ended = 1;

	if (log->n == log->cap) {
		log->cap = log->cap ? 2 * log->cap : 64;
		log->ev = realloc(log->ev, log->cap * sizeof *log->ev);
		assert_non_null(log->ev);
	}
	e = &log->ev[log->n++];
	e->wd = ev->wd;
	e->mask = ev->mask;
	e->flags = ev->flags;
	e->cookie = ev->cookie;
	e->error = ev->error;
	e->path = strdup(names);
	e->old_path = ev->old_path_len ? strdup(names + ev->path_len + 1) : NULL;
	assert_non_null(e->path);
}

size_t tu_pull(struct tu_log *log)
{
	static union {
		struct notifyx_event ev;
		char b[65536];
	} buf;
	size_t before = log->n;

	for (;;) {
		ssize_t r = notifyx_read(log->nx, buf.b, sizeof buf.b);
		size_t off = 0;

		if (r < 0) {
			if (errno == EAGAIN)
				break;
			if (errno == EINTR)
				continue;
			fail_msg("notifyx_read failed: %s (%s)", strerrorname_np(errno), strerror(errno));
		}
		if (r == 0)
			fail_msg("notifyx_read returned 0 (it never does)");
		if ((size_t)r > sizeof buf.b)
			fail_msg("notifyx_read returned %zd > len %zu", r, sizeof buf.b);
		while (off < (size_t)r) {
			const struct notifyx_event *ev = (const void *)(buf.b + off);

			take(log, ev, (size_t)r - off);
			off += ev->size;
		}
	}
	return log->n - before;
}

static int wait_readable(struct tu_log *log, int ms)
{
	struct pollfd p = { .fd = notifyx_fd(log->nx), .events = POLLIN };
	int r;

	if (ms < 0)
		ms = 0;
	r = poll(&p, 1, ms);
	if (r < 0 && errno != EINTR)
		fail_msg("poll on notifyx_fd: %s", strerror(errno));
	return r > 0;
}

static int ev_match(const struct tu_ev *e, int wd, uint32_t mask, const char *path)
{
	return (wd == TU_ANY_WD || e->wd == wd) && (mask == 0 || (e->mask & mask)) &&
	       (!path || !strcmp(path, e->path));
}

ssize_t tu_find(const struct tu_log *log, size_t from, int wd, uint32_t mask, const char *path)
{
	size_t i;

	for (i = from; i < log->n; i++)
		if (ev_match(&log->ev[i], wd, mask, path))
			return (ssize_t)i;
	return -1;
}

size_t tu_count(const struct tu_log *log, int wd, uint32_t mask, const char *path)
{
	size_t i, c = 0;

	for (i = 0; i < log->n; i++)
		c += ev_match(&log->ev[i], wd, mask, path);
	return c;
}

size_t tu_count_wd(const struct tu_log *log, int wd)
{
	return tu_count(log, wd, 0, NULL);
}

ssize_t tu_wait_from(struct tu_log *log, size_t from, int wd, uint32_t mask, const char *path,
		     int timeout_ms)
{
	long deadline = tu_now_ms() + timeout_ms;
	ssize_t i;

	for (;;) {
		tu_pull(log);
		i = tu_find(log, from, wd, mask, path);
		if (i >= 0)
			return i;
		if (tu_now_ms() >= deadline)
			return -1;
		wait_readable(log, (int)(deadline - tu_now_ms()));
	}
}

void tu_settle_ms(struct tu_log *log, int quiet_ms, int max_ms)
{
	long end = tu_now_ms() + max_ms;

	tu_pull(log);
	for (;;) {
		long quiet_end = tu_now_ms() + quiet_ms;
		size_t got = 0;

		while (!got && tu_now_ms() < quiet_end) {
			if (wait_readable(log, (int)(quiet_end - tu_now_ms())))
				got = tu_pull(log);
		}
		if (!got || tu_now_ms() >= end)
			return;
	}
}

void tu_settle(struct tu_log *log)
{
	tu_settle_ms(log, tu_quiet_ms(log->nx), 10000);
}

static const char *pat(int wd, uint32_t mask, const char *path)
{
	return tu_fmt("wd=%d %s path=%s%s%s", wd, mask ? tu_mask_str(mask) : "(any type)",
		      path ? "\"" : "", path ? path : "(any)", path ? "\"" : "");
}

size_t tu_must_wait(struct tu_log *log, size_t from, int wd, uint32_t mask, const char *path,
		    int timeout_ms, const char *file, int line)
{
	ssize_t i = tu_wait_from(log, from, wd, mask, path, timeout_ms);

	if (i < 0) {
		print_error("expected within %d ms (from event #%zu): %s\n", timeout_ms, from,
			    pat(wd, mask, path));
		tu_dump(log, "actual");
		_fail(file, line);
	}
	return (size_t)i;
}

size_t tu_must_once(const struct tu_log *log, int wd, uint32_t mask, const char *path,
		    uint32_t fmask, uint32_t fwant, const char *file, int line)
{
	size_t c = tu_count(log, wd, mask, path);
	ssize_t i = tu_find(log, 0, wd, mask, path);

	if (c != 1) {
		print_error("expected exactly one %s, actual %zu\n", pat(wd, mask, path), c);
		tu_dump(log, "actual");
		_fail(file, line);
	}
	if ((log->ev[i].flags & fmask) != fwant) {
		print_error("%s: expected flags %s (of %s), actual %s\n", pat(wd, mask, path),
			    tu_flags_str(fwant), tu_flags_str(fmask), tu_flags_str(log->ev[i].flags));
		tu_dump(log, "actual");
		_fail(file, line);
	}
	return (size_t)i;
}

void tu_must_none(const struct tu_log *log, int wd, uint32_t mask, const char *path,
		  const char *file, int line)
{
	size_t c = tu_count(log, wd, mask, path);

	if (c != 0) {
		print_error("expected no %s, actual %zu\n", pat(wd, mask, path), c);
		tu_dump(log, "actual");
		_fail(file, line);
	}
}

void tu_must_seq(const struct tu_log *log, int wd, const char *file, int line, ...)
{
	va_list ap;
	size_t i = 0, k = 0;
	int ok = 1;
	char want[2048] = "";

	va_start(ap, line);
	for (;;) {
		uint32_t mask = va_arg(ap, uint32_t);
		const char *path;

		if (!mask)
			break;
		path = va_arg(ap, const char *);
		snprintf(want + strlen(want), sizeof want - strlen(want), " %s \"%s\",",
			 tu_mask_str(mask), path);
		while (i < log->n && log->ev[i].wd != wd)
			i++;
		if (i >= log->n || log->ev[i].mask != mask || strcmp(log->ev[i].path, path))
			ok = 0;
		i++;
		k++;
	}
	va_end(ap);
	while (i < log->n && log->ev[i].wd != wd)
		i++;
	if (i < log->n)
		ok = 0;
	if (!ok) {
		print_error("expected for wd %d exactly the sequence:%s\n", wd, want);
		tu_dump(log, "actual");
		_fail(file, line);
	}
}

void tu_must_before(const struct tu_log *log, ssize_t a, ssize_t b, const char *what,
		    const char *file, int line)
{
	if (a < 0 || b < 0 || a >= b) {
		print_error("expected %s (event #%zd before event #%zd)\n", what, a, b);
		tu_dump(log, "actual");
		_fail(file, line);
	}
}

/* ---- filesystem ---- */

char *tu_mkdtemp(void)
{
	char *d = strdup("/tmp/notifyx-test.XXXXXX");

	assert_non_null(d);
	if (!mkdtemp(d))
		fail_msg("mkdtemp: %s", strerror(errno));
	return d;
}

static int rm_one(const char *p, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)type;
	(void)f;
	if (remove(p) < 0 && errno != ENOENT)
		print_error("warning: cannot remove %s: %s\n", p, strerror(errno));
	return 0;
}

void tu_rm_rf(const char *path)
{
	nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS);
}

void tu_mkdir(const char *path)
{
	if (mkdir(path, 0755) < 0)
		fail_msg("mkdir %s: %s", path, strerror(errno));
}

void tu_touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	if (fd < 0)
		fail_msg("create %s: %s", path, strerror(errno));
	close(fd);
}

void tu_write(const char *path, const char *data)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (fd < 0)
		fail_msg("open %s: %s", path, strerror(errno));
	if (write(fd, data, strlen(data)) != (ssize_t)strlen(data))
		fail_msg("write %s: %s", path, strerror(errno));
	close(fd);
}

void tu_rename(const char *from, const char *to)
{
	if (rename(from, to) < 0)
		fail_msg("rename %s -> %s: %s", from, to, strerror(errno));
}

void tu_unlink(const char *path)
{
	if (unlink(path) < 0)
		fail_msg("unlink %s: %s", path, strerror(errno));
}

void tu_rmdir(const char *path)
{
	if (rmdir(path) < 0)
		fail_msg("rmdir %s: %s", path, strerror(errno));
}

void tu_symlink(const char *target, const char *path)
{
	if (symlink(target, path) < 0)
		fail_msg("symlink %s -> %s: %s", path, target, strerror(errno));
}

static char *next_buf(void)
{
	/* Many: callers keep results across a few other calls. */
	static char bufs[64][PATH_MAX];
	static unsigned k;

	return bufs[k++ % 64];
}

const char *tu_path(const char *dir, const char *rel)
{
	char *b = next_buf();

	if (!rel || !*rel)
		snprintf(b, PATH_MAX, "%s", dir);
	else
		snprintf(b, PATH_MAX, "%s/%s", dir, rel);
	return b;
}

const char *tu_fmt(const char *fmt, ...)
{
	char *b = next_buf();
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b, PATH_MAX, fmt, ap);
	va_end(ap);
	return b;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

int *tu_fds(size_t *n)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int *v = NULL;
	size_t c = 0, cap = 0;

	if (!d)
		fail_msg("opendir /proc/self/fd: %s", strerror(errno));
	while ((de = readdir(d))) {
		int fd;

		if (de->d_name[0] == '.')
			continue;
		fd = atoi(de->d_name);
		if (fd == dirfd(d))
			continue;
		if (c == cap) {
			cap = cap ? 2 * cap : 64;
			v = realloc(v, cap * sizeof *v);
			assert_non_null(v);
		}
		v[c++] = fd;
	}
	closedir(d);
	qsort(v, c, sizeof *v, cmp_int);
	*n = c;
	return v;
}

/* ---- fixtures ---- */

int tu_setup(void **state)
{
	struct tu_fix *f = calloc(1, sizeof *f);

	assert_non_null(f);
	f->dir = tu_mkdtemp();
	f->nx = tu_open(NOTIFYX_NONBLOCK, 0);
	if (!f->nx) {
		print_error("notifyx_open failed: %s (%s)\n", strerrorname_np(errno), strerror(errno));
		tu_rm_rf(f->dir);
		free(f->dir);
		free(f);
		return -1;
	}
	tu_log_init(&f->log, f->nx);
	*state = f;
	return 0;
}

int tu_teardown(void **state)
{
	struct tu_fix *f = *state;
	int i;

	if (!f)
		return 0;
	tu_log_free(&f->log);
	if (f->nx)
		notifyx_close(f->nx);
	tu_watches_restore();
	for (i = f->nmnt - 1; i >= 0; i--)
		umount2(f->mnt[i], MNT_DETACH); /* EINVAL if the test unmounted it */
	tu_rm_rf(f->dir);
	free(f->dir);
	free(f);
	*state = NULL;
	return 0;
}

void tu_require_events(struct notifyx *nx, uint32_t mask)
{
	uint32_t sup = notifyx_supported_events(nx);

	if ((mask & sup) != mask) {
		print_message("[ SKIP     ] the %s backend does not deliver %s\n",
			      notifyx_backend_name(notifyx_backend(nx)), tu_mask_str(mask & ~sup));
		skip();
	}
}

void tu_require_root(const char *why)
{
	if (geteuid() != 0) {
		print_message("[ SKIP     ] needs root: %s\n", why);
		skip();
	}
}

void tu_require_inotify(struct notifyx *nx, const char *why)
{
	if (notifyx_backend(nx) != NOTIFYX_BACKEND_INOTIFY) {
		print_message("[ SKIP     ] inotify only (backend is %s): %s\n",
			      notifyx_backend_name(notifyx_backend(nx)), why);
		skip();
	}
}

const char *tu_mount_tmpfs(struct tu_fix *f, const char *rel)
{
	char *m;

	assert_true(f->nmnt < 4);
	m = f->mnt[f->nmnt];
	snprintf(m, sizeof f->mnt[0], "%s/%s", f->dir, rel);
	if (mkdir(m, 0755) < 0 && errno != EEXIST)
		fail_msg("mkdir %s: %s", m, strerror(errno));
	if (mount("notifyx-test", m, "tmpfs", 0, "size=4m") < 0) {
		print_message("[ SKIP     ] cannot mount a tmpfs on %s: %s\n", m, strerror(errno));
		skip();
	}
	f->nmnt++;
	/* Keep the mount to ourselves: nothing propagates to other namespaces. */
	mount("none", m, "none", MS_PRIVATE, NULL); /* source and type are ignored here */
	return m;
}

#define WATCHES_FILE "/proc/sys/fs/inotify/max_user_watches"
static long saved_watches = -1;

long tu_watches_get(void)
{
	FILE *fp = fopen(WATCHES_FILE, "re");
	long v = -1;

	if (!fp)
		fail_msg("%s: %s", WATCHES_FILE, strerror(errno));
	if (fscanf(fp, "%ld", &v) != 1)
		v = -1;
	fclose(fp);
	return v;
}

static int watches_write(long v)
{
	FILE *fp = fopen(WATCHES_FILE, "we");
	int ok;

	if (!fp)
		return -1;
	ok = fprintf(fp, "%ld\n", v) > 0;
	ok = (fclose(fp) == 0) && ok;
	return ok ? 0 : -1;
}

static void watches_atexit(void)
{
	tu_watches_restore();
}

void tu_watches_set(long v)
{
	static int registered;

	if (saved_watches < 0) {
		saved_watches = tu_watches_get();
		if (!registered) {
			atexit(watches_atexit);
			registered = 1;
		}
	}
	if (watches_write(v) < 0)
		fail_msg("cannot write %ld to %s: %s", v, WATCHES_FILE, strerror(errno));
}

void tu_watches_restore(void)
{
	if (saved_watches >= 0) {
		if (watches_write(saved_watches) < 0)
			fprintf(stderr, "warning: cannot restore %s to %ld: %s\n", WATCHES_FILE,
				saved_watches, strerror(errno));
		saved_watches = -1;
	}
}

long tu_inotify_usage(void)
{
	DIR *proc = opendir("/proc");
	struct dirent *pe;
	long n = 0;
	uid_t me = geteuid();

	if (!proc)
		fail_msg("opendir /proc: %s", strerror(errno));
	while ((pe = readdir(proc))) {
		char p[300], line[512];
		DIR *fdd;
		struct dirent *fe;
		struct stat st;

		if (pe->d_name[0] < '0' || pe->d_name[0] > '9')
			continue;
		snprintf(p, sizeof p, "/proc/%s", pe->d_name);
		if (stat(p, &st) < 0 || st.st_uid != me)
			continue;
		snprintf(p, sizeof p, "/proc/%s/fdinfo", pe->d_name);
		if (!(fdd = opendir(p)))
			continue;
		while ((fe = readdir(fdd))) {
			char q[600];
			FILE *fp;

			if (fe->d_name[0] == '.')
				continue;
			snprintf(q, sizeof q, "%s/%s", p, fe->d_name);
			if (!(fp = fopen(q, "re")))
				continue;
			while (fgets(line, sizeof line, fp))
				if (!strncmp(line, "inotify wd:", 11))
					n++;
			fclose(fp);
		}
		closedir(fdd);
	}
	closedir(proc);
	return n;
}
