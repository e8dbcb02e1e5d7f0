/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The fault-injection scenario (tests/fault/sweep.sh runs it under the shim,
 * tests/fault/shim.c, once for each N).
 *
 * The backend is named by argv[1] or else $SWEEP_BACKEND ("inotify",
 * "fanotify", "dnotify", "poll"; default inotify).  "scenario BACKEND probe"
 * only opens and closes a handle: exit 77, with the reason, when the backend
 * cannot start here.  The scanning backends (dnotify, poll) scan every
 * SCAN_MS; every event of theirs must carry NOTIFYX_EVENT_SYNTHETIC.
 *
 * Phase A, with injection enabled: open a handle (non-blocking),
 * exclude "*.skip", add a recursive watch with NOTIFYX_WATCH_LIST on a tree
 * (by a relative path, so that getcwd is involved), make creations, renames, moves in and
 * out and deletions in it, read the events until a sentinel file's CREATE
 * arrives, check that the events describe the tree (the "Mirroring a tree"
 * rules of notifyx(7)), remove the watch and read up to its IGNORED.
 *
 * Every failure of a public function must carry an errno its man page
 * documents; the call is then retried once with injection disabled and must
 * succeed.  NOTIFYX_OVERFLOW and NOTIFYX_ERROR may appear only once a fault
 * was injected (ERROR with the injected errno); they make the mirror check
 * of that watch moot.
 *
 * Phase B, injection disabled: the handle must still be usable and
 * consistent: a new watch of the same tree lists exactly what is there, a
 * fresh file's CREATE is read, rm_watch ends with IGNORED, nothing is heard
 * of the first watch after its IGNORED; notifyx_close leaves as many
 * descriptors open as before notifyx_open, and no block the library
 * allocated is still live (the shim counts them).
 *
 * The last line on stdout is "RESULT ok|FAIL surfaced=WHERE" where WHERE
 * tells in which public call the injected fault showed and how
 * ("add_watch:ENOMEM", "read:ok", "read:ok+OVERFLOW", "none" when no fault
 * was injected).  Details of failures go to stderr.  Exit status 0 or 1.
 * Runs without the shim too (then nothing is injected).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <notifyx.h>

#define EVENTS (NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME | NOTIFYX_MOVED_OUT | \
		NOTIFYX_MOVED_IN | NOTIFYX_DELETE_SELF)
/* SWEEP_RESCAN=1 adds NOTIFYX_WATCH_RESCAN: repairs under injection. */
#define WFLAGS (NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST | (rescan ? NOTIFYX_WATCH_RESCAN : 0))
static bool rescan; /* getenv("SWEEP_RESCAN") */
#define WAIT_MS 3000   /* for an event that must come */
#define STALL_MS 1000  /* descriptor not readable this long: look anyway */
#define SCAN_MS 10     /* poll_interval_ms of the scanning backends */

static uint32_t backend = NOTIFYX_BACKEND_INOTIFY;
static bool scanning; /* dnotify, poll: states, not operations */

/* ---- the shim's controls (no-ops without it) ---- */

static void (*f_disable)(void);
static void (*f_enable)(void);
static unsigned long (*f_injected)(void);
static int (*f_last_errno)(void);
static const char *(*f_last_kind)(void);
static int (*f_errno_injected)(int);
static unsigned long (*f_live)(void);

static void shim_bind(void)
{
	*(void **)&f_disable = dlsym(RTLD_DEFAULT, "fault_disable");
	*(void **)&f_enable = dlsym(RTLD_DEFAULT, "fault_enable");
	*(void **)&f_injected = dlsym(RTLD_DEFAULT, "fault_injected");
	*(void **)&f_last_errno = dlsym(RTLD_DEFAULT, "fault_last_errno");
	*(void **)&f_last_kind = dlsym(RTLD_DEFAULT, "fault_last_kind");
	*(void **)&f_live = dlsym(RTLD_DEFAULT, "fault_live");
	*(void **)&f_errno_injected = dlsym(RTLD_DEFAULT, "fault_errno_injected");
}

static void disable(void) { if (f_disable) f_disable(); }
static void enable(void) { if (f_enable) f_enable(); }
static unsigned long injected(void) { return f_injected ? f_injected() : 0; }
static int last_errno(void) { return f_last_errno ? f_last_errno() : 0; }
static const char *last_kind(void) { const char *k = f_last_kind ? f_last_kind() : NULL; return k ? k : ""; }

/* ---- reporting ---- */

static bool failed;
static char surfaced[128] = "none";
static bool surfaced_set;
static char phase[32] = "A";

static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL [%s]: ", phase);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	failed = true;
}

static const char *ename(int e)
{
	static const struct { int e; const char *n; } t[] = {
		{ ENOMEM, "ENOMEM" }, { EMFILE, "EMFILE" }, { ENFILE, "ENFILE" },
		{ ENOSPC, "ENOSPC" }, { EINTR, "EINTR" }, { EAGAIN, "EAGAIN" },
		{ EIO, "EIO" }, { EACCES, "EACCES" }, { EPERM, "EPERM" },
		{ EINVAL, "EINVAL" }, { ENOENT, "ENOENT" }, { ENOTDIR, "ENOTDIR" },
		{ ELOOP, "ELOOP" }, { EBADF, "EBADF" }, { ENOSYS, "ENOSYS" },
		{ ENAMETOOLONG, "ENAMETOOLONG" }, { ECHILD, "ECHILD" }, { ENODEV, "ENODEV" },
		{ EOPNOTSUPP, "EOPNOTSUPP" }, { E2BIG, "E2BIG" }, { EBUSY, "EBUSY" },
	};
	static char buf[16];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].e == e)
			return t[i].n;
	snprintf(buf, sizeof(buf), "E%d", e);
	return buf;
}

/* Notes where the injected fault first showed: the public call during
 * which the shim's injection counter moved. */
static unsigned long inj_before;

static void call_begin(void)
{
	inj_before = injected();
}

static void call_end(const char *fn, bool ok, int err)
{
	if (!surfaced_set && injected() > inj_before) {
		snprintf(surfaced, sizeof(surfaced), "%s:%s", fn, ok ? "ok" : ename(err));
		surfaced_set = true;
	}
}

static bool in_list(int e, const int *list)
{
	for (; *list; list++)
		if (*list == e)
			return true;
	return false;
}

/* notifyx_open(3), notifyx_add_watch(3), notifyx_read(3): ERRORS, as far as
 * a fault can cause them. */
static const int open_errs[] = { EMFILE, ENFILE, ENOMEM, ENOSYS, EPERM, 0 };
static const int add_errs[] = { EACCES, EIO, ELOOP, EMFILE, ENAMETOOLONG, ENFILE, ENODEV,
				ENOENT, ENOMEM, ENOSPC, ENOTDIR, 0 };
static const int read_errs[] = { EAGAIN, EINTR, ENOMEM, 0 };

/* ---- the mirror: what the events say the tree holds ---- */

struct entry {
	char *path;
	bool dir;
};

struct mirror {
	struct entry *e;
	size_t n, cap;
	int wd;
	bool lossy;      /* an OVERFLOW or ERROR was read */
	bool ended;      /* its IGNORED was read */
	bool synced;     /* its SYNC (the end of its listing) was read */
	unsigned events;
};

static bool below(const char *p, const char *root)
{
	size_t n = strlen(root);

	return !strncmp(p, root, n) && (p[n] == '\0' || p[n] == '/');
}

static struct entry *m_find(struct mirror *m, const char *p)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->e[i].path, p))
			return &m->e[i];
	return NULL;
}

static void m_remove(struct mirror *m, const char *p)
{
	char *root = strdup(p);

	for (size_t i = 0; i < m->n;) {
		if (below(m->e[i].path, root)) {
			free(m->e[i].path);
			m->e[i] = m->e[--m->n];
		} else {
			i++;
		}
	}
	free(root);
}

static void m_add(struct mirror *m, const char *p, bool dir)
{
	struct entry *e = m_find(m, p);

	if (e) {
		if (e->dir != dir) {
			m_remove(m, p);
			m_add(m, p, dir);
		}
		return;
	}
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 64;
		m->e = realloc(m->e, m->cap * sizeof(*m->e));
	}
	m->e[m->n].path = strdup(p);
	m->e[m->n].dir = dir;
	m->n++;
}

/* Moves from and all below it to to (to is replaced). */
static void m_move(struct mirror *m, const char *from, const char *to)
{
	size_t fl = strlen(from);
	char *f = strdup(from), *t = strdup(to);

	m_remove(m, t);
	for (size_t i = 0; i < m->n; i++) {
		if (below(m->e[i].path, f)) {
			char *np = malloc(strlen(t) + strlen(m->e[i].path) - fl + 1);
			strcpy(stpcpy(np, t), m->e[i].path + fl);
			free(m->e[i].path);
			m->e[i].path = np;
		}
	}
	free(f);
	free(t);
}

static void m_clear(struct mirror *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->e[i].path);
	free(m->e);
	m->e = NULL;
	m->n = m->cap = 0;
}

/* Entries matching the handle's exclude pattern "*.skip" (any component). */
static bool skipped(const char *p)
{
	const char *s = strstr(p, ".skip");

	return s && (s[5] == '\0' || s[5] == '/');
}

/* ---- the tree on disk ---- */

static struct mirror disk;
static size_t disk_skip;

static int disk_entry(const char *p, const struct stat *sb, int type, struct FTW *ftw)
{
	if (ftw->level > 0 && !skipped(p + disk_skip))
		m_add(&disk, p + disk_skip, S_ISDIR(sb->st_mode));
	return 0;
}

static int rm_entry(const char *p, const struct stat *sb, int type, struct FTW *ftw)
{
	return remove(p);
}

/* Compares the mirror of a watch of "t" with what t holds. */
static void compare(struct mirror *m, const char *what)
{
	bool same = true;

	m_clear(&disk);
	disk_skip = strlen("t/");
	nftw("t", disk_entry, 16, FTW_PHYS);
	for (size_t i = 0; i < disk.n; i++) {
		struct entry *e = m_find(m, disk.e[i].path);
		if (!e || e->dir != disk.e[i].dir) {
			fail("%s: %s %s is in the tree, the events say %s", what,
			     disk.e[i].dir ? "directory" : "file", disk.e[i].path,
			     !e ? "nothing" : e->dir ? "a directory" : "a file");
			same = false;
		}
	}
	for (size_t i = 0; i < m->n; i++) {
		if (!m_find(&disk, m->e[i].path)) {
			fail("%s: the events say %s exists; it does not", what, m->e[i].path);
			same = false;
		}
	}
	if (!same)
		fprintf(stderr, "  (%zu entries on disk, %zu in the mirror)\n", disk.n, m->n);
}

/* ---- reading events ---- */

static struct notifyx *nx;
static struct mirror mA, mB;
static int retired[8]; /* wds whose IGNORED was read */
static size_t nretired;
static const char *sentinel; /* the CREATE awaited */
static bool sentinel_seen;
static bool overflow_seen, error_seen;

static struct mirror *mirror_of(int wd)
{
	if (mA.wd == wd)
		return &mA;
	if (mB.wd == wd)
		return &mB;
	return NULL;
}

static void apply(const struct notifyx_event *ev)
{
	struct mirror *m = mirror_of(ev->wd);
	const char *p = notifyx_event_path(ev);
	bool dir = ev->flags & NOTIFYX_EVENT_ISDIR;

	for (size_t i = 0; i < nretired; i++)
		if (retired[i] == ev->wd)
			fail("event %#x (%s) of wd %d after its IGNORED", ev->mask, p, ev->wd);
	if (!m) {
		fail("event %#x (%s) of unknown wd %d", ev->mask, p, ev->wd);
		return;
	}
	if (m->ended) {
		fail("event %#x (%s) of wd %d after its IGNORED", ev->mask, p, ev->wd);
		return;
	}
	m->events++;
	if (scanning && (ev->mask & EVENTS) && !(ev->flags & NOTIFYX_EVENT_SYNTHETIC))
		fail("event %#x (%s) on wd %d of a scanning backend without NOTIFYX_EVENT_SYNTHETIC",
		     ev->mask, p, ev->wd);
	if (skipped(p) || (ev->old_path_len && skipped(notifyx_event_old_path(ev))))
		fail("event %#x of %s on wd %d: excluded by \"*.skip\"", ev->mask, p, ev->wd);
	switch (ev->mask) {
	case NOTIFYX_CREATE:
	case NOTIFYX_MOVED_IN:
		if (ev->mask == NOTIFYX_CREATE && m_find(m, p) && !m->lossy)
			fail("CREATE of %s on wd %d: reported before, and not gone since", p, ev->wd);
		m_add(m, p, dir);
		if (sentinel && !strcmp(p, sentinel))
			sentinel_seen = true;
		break;
	case NOTIFYX_DELETE:
	case NOTIFYX_MOVED_OUT:
		m_remove(m, p);
		break;
	case NOTIFYX_RENAME:
		if (ev->flags & NOTIFYX_EVENT_EXCHANGE) {
			m_move(m, notifyx_event_old_path(ev), "\x01tmp");
			m_move(m, p, notifyx_event_old_path(ev));
			m_move(m, "\x01tmp", p);
		} else if (m_find(m, notifyx_event_old_path(ev))) {
			m_move(m, notifyx_event_old_path(ev), p);
		} else {
			m_add(m, p, dir);
		}
		if (sentinel && !strcmp(p, sentinel))
			sentinel_seen = true;
		break;
	case NOTIFYX_DELETE_SELF:
		m_clear(m);
		break;
	case NOTIFYX_OVERFLOW:
		overflow_seen = true;
		m->lossy = true;
		if (!injected())
			fail("OVERFLOW on wd %d without any injected fault", ev->wd);
		break;
	case NOTIFYX_ERROR:
		error_seen = true;
		m->lossy = true;
		if (!injected())
			fail("ERROR (%s, %s) on wd %d without any injected fault", p,
			     ename(ev->error), ev->wd);
		else if (!(f_errno_injected && (f_errno_injected(ev->error) ||
						/* fanotify: no file handle is ENODEV */
						(ev->error == ENODEV &&
						 (f_errno_injected(EOPNOTSUPP) ||
						  f_errno_injected(EOVERFLOW))))))
			fail("ERROR (%s) carries %s; the injected fault was %s %s", p,
			     ename(ev->error), last_kind(), ename(last_errno()));
		break;
	case NOTIFYX_SYNC: /* once after the listing, and after each repair (RESCAN) */
		if (*p || (m->synced && !rescan))
			fail("SYNC on wd %d: path \"%s\", %s", ev->wd, p,
			     m->synced ? "a second one" : "not the root");
		m->synced = true;
		break;
	case NOTIFYX_IGNORED:
		m->ended = true;
		if (nretired < sizeof(retired) / sizeof(retired[0]))
			retired[nretired++] = ev->wd;
		break;
	default:
		fail("unexpected event %#x (%s) on wd %d", ev->mask, p, ev->wd);
	}
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One notifyx_read; returns the number of events, 0 on EAGAIN, -1 on a
 * failure (checked and reported). */
static int read_once(void)
{
	static _Alignas(8) char buf[64 * 1024];
	ssize_t n;
	int err, count = 0;

	call_begin();
	n = notifyx_read(nx, buf, sizeof(buf));
	err = errno;
	call_end("read", n >= 0, err);
	if (n < 0) {
		if (err == EAGAIN)
			return 0;
		if (!in_list(err, read_errs) &&
		    !(injected() > inj_before && err == last_errno() && !strcmp(last_kind(), "read")))
			fail("notifyx_read: undocumented errno %s (injected: %s %s)", ename(err),
			     last_kind(), ename(last_errno()));
		return -1;
	}
	for (const struct notifyx_event *ev = (const void *)buf; (const char *)ev < buf + n;
	     ev = notifyx_event_next(ev), count++)
		apply(ev);
	return count;
}

/* Reads until done() holds.  The descriptor must become readable whenever
 * events can be read: one that stays unreadable while a read finds events
 * is a failure. */
static void read_until(bool (*done)(void), const char *what)
{
	int64_t start = now_ms(), quiet_since = now_ms();
	struct pollfd pfd = { .fd = notifyx_fd(nx), .events = POLLIN };

	while (!done()) {
		int r = poll(&pfd, 1, 50);
		if (r > 0) {
			int got = read_once();
			if (got != 0)
				quiet_since = now_ms();
			/* The scanning backends' descriptor is readable at every
			 * scan, whether the scan finds anything or not. */
			if (got <= 0 && now_ms() - start > WAIT_MS) {
				if (!overflow_seen && !error_seen)
					fail("%s: not seen within %d ms", what, WAIT_MS);
				return;
			}
			continue;
		}
		if (now_ms() - quiet_since < STALL_MS)
			continue;
		/* Not readable for STALL_MS: look anyway. */
		int got = read_once();
		if (got > 0) {
			fail("%s: notifyx_fd stayed unreadable for %d ms while %d event(s) could be read",
			     what, STALL_MS, got);
			quiet_since = now_ms();
			continue;
		}
		if (now_ms() - start > WAIT_MS) {
			if (!overflow_seen && !error_seen)
				fail("%s: not seen within %d ms", what, WAIT_MS);
			return;
		}
	}
}

static bool got_sentinel(void) { return sentinel_seen; }
static bool a_ended(void) { return mA.ended; }
static bool b_ended(void) { return mB.ended; }

/* ---- steps ---- */

static void touch(const char *p)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (fd < 0) {
		perror(p);
		exit(2);
	}
	close(fd);
}

static void must(int r, const char *what)
{
	if (r < 0) {
		perror(what);
		exit(2);
	}
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own */
}

static struct notifyx *open_handle(void)
{
	struct notifyx_config cfg = {
		.size = sizeof(cfg), .backend = backend, .flags = NOTIFYX_NONBLOCK,
		.poll_interval_ms = scanning ? SCAN_MS : 0,
	};
	struct notifyx *h;
	int err;

	call_begin();
	h = notifyx_open(&cfg);
	err = errno;
	call_end("open", h != NULL, err);
	if (h)
		return h;
	/* notifyx_open(3): "A backend may also fail with another error its
	 * kernel interface gives": the injected one. */
	if (!in_list(err, open_errs) && !(injected() > inj_before && err == last_errno()))
		fail("notifyx_open: undocumented errno %s (injected: %s %s)", ename(err),
		     last_kind(), ename(last_errno()));
	disable();
	h = notifyx_open(&cfg);
	err = errno;
	enable();
	if (!h) {
		fail("notifyx_open fails again with injection disabled: %s", ename(err));
		exit(1);
	}
	return h;
}

static const int exclude_errs[] = { ENOMEM, 0 };

static void exclude(const char *pattern)
{
	int r, err;

	call_begin();
	r = notifyx_exclude(nx, pattern);
	err = errno;
	call_end("exclude", r == 0, err);
	if (r == 0)
		return;
	if (!in_list(err, exclude_errs))
		fail("notifyx_exclude: undocumented errno %s (injected: %s %s)", ename(err),
		     last_kind(), ename(last_errno()));
	disable();
	r = notifyx_exclude(nx, pattern);
	err = errno;
	enable();
	if (r < 0)
		fail("notifyx_exclude fails again with injection disabled: %s", ename(err));
}

static int add_watch(struct mirror *m, bool counted)
{
	int wd, err;

	call_begin();
	wd = notifyx_add_watch(nx, "t", EVENTS, WFLAGS);
	err = errno;
	if (counted)
		call_end("add_watch", wd > 0, err);
	if (wd > 0)
		goto done;
	if (!in_list(err, add_errs))
		fail("notifyx_add_watch: undocumented errno %s (injected: %s %s)", ename(err),
		     last_kind(), ename(last_errno()));
	if (!counted)
		fail("notifyx_add_watch fails with injection disabled: %s", ename(err));
	disable();
	wd = notifyx_add_watch(nx, "t", EVENTS, WFLAGS);
	err = errno;
	enable();
	if (wd <= 0) {
		fail("notifyx_add_watch fails again with injection disabled: %s", ename(err));
		return -1;
	}
done:
	m->wd = wd;
	return wd;
}

static void rm_watch(int wd, const char *fn)
{
	int r, err;

	call_begin();
	r = notifyx_rm_watch(nx, wd);
	err = errno;
	call_end(fn, r == 0, err);
	if (r < 0)
		fail("notifyx_rm_watch(%d): %s (it documents only EINVAL and ECHILD, for bad arguments)",
		     wd, ename(err));
}

static uint32_t backend_of(const char *name)
{
	static const char *const names[] = {
		[NOTIFYX_BACKEND_INOTIFY] = "inotify", [NOTIFYX_BACKEND_FANOTIFY] = "fanotify",
		[NOTIFYX_BACKEND_DNOTIFY] = "dnotify", [NOTIFYX_BACKEND_POLL] = "poll",
	};

	for (uint32_t b = NOTIFYX_BACKEND_INOTIFY; b <= NOTIFYX_BACKEND_POLL; b++)
		if (!strcmp(name, names[b]))
			return b;
	fprintf(stderr, "unknown backend \"%s\" (inotify, fanotify, dnotify, poll)\n", name);
	exit(2);
}

int main(int argc, char **argv)
{
	char base[] = "/tmp/nxfault.XXXXXX";
	const char *tmp = getenv("TMPDIR");
	const char *bname = argc > 1 ? argv[1] : getenv("SWEEP_BACKEND");
	char basebuf[PATH_MAX];
	int fds_before;

	shim_bind();
	disable(); /* nothing of the set-up is counted */
	if (bname && *bname)
		backend = backend_of(bname);
	scanning = backend == NOTIFYX_BACKEND_DNOTIFY || backend == NOTIFYX_BACKEND_POLL;
	rescan = getenv("SWEEP_RESCAN") && !strcmp(getenv("SWEEP_RESCAN"), "1");
	if (argc > 2 && !strcmp(argv[2], "probe")) {
		struct notifyx_config cfg = { .size = sizeof(cfg), .backend = backend };
		struct notifyx *h = notifyx_open(&cfg);

		if (!h) {
			printf("SKIP: the %s backend cannot start here: notifyx_open failed with %s (%s)\n",
			       notifyx_backend_name(backend), ename(errno), strerror(errno));
			return 77;
		}
		notifyx_close(h);
		return 0;
	}
	if (tmp && *tmp) {
		snprintf(basebuf, sizeof(basebuf), "%s/nxfault.XXXXXX", tmp);
		must(mkdtemp(basebuf) ? 0 : -1, "mkdtemp");
		must(chdir(basebuf), "chdir");
	} else {
		must(mkdtemp(base) ? 0 : -1, "mkdtemp");
		must(chdir(base), "chdir");
	}
	must(mkdir("t", 0755), "mkdir");
	must(mkdir("t/a", 0755), "mkdir");
	must(mkdir("t/a/b", 0755), "mkdir");
	must(mkdir("t/c", 0755), "mkdir");
	touch("t/a/b/f0");
	touch("t/c/f1");
	touch("t/top");
	touch("t/a/x.skip");
	must(mkdir("t/r1", 0755), "mkdir");
	touch("t/r1/k");
	must(mkdir("out", 0755), "mkdir");
	must(mkdir("out/in1", 0755), "mkdir");
	touch("out/in1/g");
	fds_before = count_fds();

	/* ---- phase A: under injection ---- */
	enable();
	nx = open_handle();
	exclude("*.skip");
	if (add_watch(&mA, true) < 0) {
		/* Phase B still checks the handle. */
		mA.ended = true;
	} else {
		struct pollfd pfd = { .fd = notifyx_fd(nx), .events = POLLIN };
		/* Its NOTIFYX_WATCH_LIST events are queued: the descriptor says so. */
		if (poll(&pfd, 1, 0) != 1)
			fail("notifyx_fd is not readable after add_watch queued its LIST events");
		disable(); /* the test's own file operations are not the library's */
		sentinel = ".s0";
		touch("t/.s0");
		enable();
		read_until(got_sentinel, "CREATE .s0 after add_watch");

		disable();
		touch("t/n1");
		must(mkdir("t/d1", 0755), "mkdir");
		touch("t/d1/g1");
		must(mkdir("t/d1/e", 0755), "mkdir");
		touch("t/d1/e/g2");
		touch("t/y.skip");
		must(mkdir("t/d.skip", 0755), "mkdir");
		touch("t/d.skip/h");
		must(rename("t/y.skip", "t/a/y.skip"), "rename");
		must(rename("t/r1", "t/a/r2"), "rename"); /* a directory the library knows */
		must(rename("t/n1", "t/a/n2"), "rename");
		must(rename("t/d1", "t/a/b/d2"), "rename");
		must(rename("out/in1", "t/in1"), "rename");
		must(rename("t/c", "out/c_out"), "rename");
		must(unlink("t/top"), "unlink");
		must(unlink("t/a/b/f0"), "unlink");
		must(unlink("t/a/b/d2/e/g2"), "unlink");
		must(rmdir("t/a/b/d2/e"), "rmdir");
		sentinel = ".s1";
		sentinel_seen = false;
		touch("t/.s1");
		enable();
		read_until(got_sentinel, "CREATE .s1 after the changes");
		if (!mA.lossy && !mA.ended)
			compare(&mA, "watch A after the changes");
		else
			fprintf(stderr, "note: watch A lossy (OVERFLOW/ERROR): tree not compared\n");

		if (mA.ended) {
			/* Only a root deleted or unmounted ends a watch by itself. */
			fail("watch A ended (IGNORED read) before notifyx_rm_watch");
		} else {
			rm_watch(mA.wd, "rm_watch");
			read_until(a_ended, "IGNORED of watch A");
		}
	}

	/* ---- phase B: injection off; the handle must work ---- */
	disable();
	snprintf(phase, sizeof(phase), "B");
	if (add_watch(&mB, false) > 0) {
		struct pollfd pfd = { .fd = notifyx_fd(nx), .events = POLLIN };
		if (poll(&pfd, 1, 0) != 1)
			fail("notifyx_fd is not readable after add_watch queued its LIST events");
		sentinel = ".s2";
		sentinel_seen = false;
		touch("t/.s2");
		read_until(got_sentinel, "CREATE .s2 on a new watch");
		if (mB.lossy)
			fail("watch B, added after the fault, got an OVERFLOW or ERROR");
		compare(&mB, "watch B (new, after the fault)");
		sentinel = "fresh";
		sentinel_seen = false;
		touch("t/fresh");
		read_until(got_sentinel, "CREATE of a fresh file on watch B");
		rm_watch(mB.wd, "rm_watch B");
		read_until(b_ended, "IGNORED of watch B");
		/* Anything still to come of either watch is a failure. */
		while (read_once() > 0)
			;
	}
	notifyx_close(nx);
	if (count_fds() != fds_before)
		fail("descriptors: %d before notifyx_open, %d after notifyx_close", fds_before,
		     count_fds());
	if (f_live && f_live())
		fail("leak: %lu block(s) allocated by the library still live after notifyx_close",
		     f_live());
	if (surfaced_set && overflow_seen)
		strncat(surfaced, "+OVERFLOW", sizeof(surfaced) - strlen(surfaced) - 1);
	if (surfaced_set && error_seen)
		strncat(surfaced, "+ERROR", sizeof(surfaced) - strlen(surfaced) - 1);
	if (!surfaced_set && injected())
		snprintf(surfaced, sizeof(surfaced), "outside-calls");

	m_clear(&mA);
	m_clear(&mB);
	m_clear(&disk);
	must(chdir("/"), "chdir");
	nftw(tmp && *tmp ? basebuf : base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	printf("RESULT %s surfaced=%s\n", failed ? "FAIL" : "ok", surfaced);
	return failed ? 1 : 0;
}
