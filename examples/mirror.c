/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mirror: keep a copy of a directory tree's shape, following the pattern of
 * notifyx(7), "Mirroring a tree", to the letter.
 *
 *   mirror [-q|-v] [-R] [-b BACKEND] [-Q QUEUE_MAX] [-i POLL_MS] [-w QUIET_MS] [-e PATTERN]... SRC DST
 *
 * -e PATTERN: notifyx_exclude(PATTERN) (the copy leaves out what it hides).
 * -R: the watch has NOTIFYX_WATCH_RESCAN too: an OVERFLOW is only counted
 * (the library repairs the watch and ends the repair with a SYNC).
 * DST must be an empty or nonexistent directory outside SRC.  The copy holds
 * an empty directory for every directory of SRC and an empty regular file
 * for every other entry (files, symbolic links, devices...): contents are not
 * part of the mirror, only names and "directory or not".
 *
 * One watch, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST, for CREATE,
 * DELETE, RENAME, MOVED_OUT, MOVED_IN and DELETE_SELF; the copy starts empty
 * and every event is applied as the rules say:
 *   CREATE, MOVED_IN  path exists now, with the type ISDIR says; what the
 *                     copy held below it stays if the type is unchanged
 *   DELETE, MOVED_OUT path and all below it go (missing: nothing to do)
 *   RENAME            old_path and all below it move to path, replacing what
 *                     path held (old_path missing: as CREATE of path);
 *                     with NOTIFYX_EVENT_EXCHANGE the two are swapped
 *   DELETE_SELF       the tree is gone: clear the copy
 *   OVERFLOW          remove the watch, clear the copy, add the watch again;
 *                     with -R (RESCAN) nothing: the copy is exact at the SYNC
 *
 * Control:
 *   SIGTERM, SIGINT  print the counts of events to stderr and exit 0
 *   SIGUSR1          read until the handle is quiescent (no unread event and
 *                    none held: a non-blocking read fails with EAGAIN and the
 *                    descriptor then stays unreadable for QUIET_MS), then
 *                    print one line "synced events=N overflows=N
 *                    anomalies=N errors=N resyncs=N syncs=N" on stdout.  At that moment the
 *                    copy equals SRC, if nothing changes SRC meanwhile.
 * "started" is printed on stdout once the watch is set up and the signals are
 * handled.  Events are logged on stderr unless -q; -v also logs what is done
 * to the copy.  Anomalies are events that cannot be applied as they are
 * (a CREATE whose parent is missing in the copy, for example): they mean the
 * events did not describe the tree, and are logged even with -q.
 *
 * Exit status: 0 after SIGTERM/SIGINT, 1 on errors, 2 on bad usage, 3 when
 * the backend cannot run here (ENOSYS, EPERM, EOPNOTSUPP, ENODEV).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <time.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <notifyx.h>

#define MIRROR_EVENTS (NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME | \
		       NOTIFYX_MOVED_OUT | NOTIFYX_MOVED_IN | NOTIFYX_DELETE_SELF)
#define MIRROR_FLAGS (NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST)

static struct notifyx *nx;
static const char *src;
static int dst_fd = -1;  /* the copy's root */
static int wd = -1;      /* the current watch; -1 when there is none */
static int verbose = 1;  /* 0: -q, 1: events, 2: -v, events and actions */
static uint32_t rescan;  /* -R: NOTIFYX_WATCH_RESCAN */

/* counts, for the sync line and the summary */
static unsigned long count_by_bit[32];
static unsigned long events, overflows, anomalies, errors, exchanges, resyncs, stale, syncs;

/* signals, through a self-pipe */
static int sig_pipe[2] = { -1, -1 };
static volatile sig_atomic_t got_term, got_sync;

static void on_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;

	if (sig == SIGUSR1)
		got_sync = 1;
	else
		got_term = 1;
	if (write(sig_pipe[1], &c, 1) < 0) {
		/* the pipe is full: a wakeup is already pending */
	}
	errno = saved;
}

static void fatal(const char *what)
{
	fprintf(stderr, "mirror: %s: %s\n", what, strerror(errno));
	fflush(stderr);
	exit(1);
}

static void anomaly(const char *fmt, ...)
{
	va_list ap;

	anomalies++;
	fprintf(stderr, "mirror: anomaly: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void action(const char *fmt, ...)
{
	va_list ap;

	if (verbose < 2)
		return;
	fprintf(stderr, "  -> ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- the copy ------------------------------------------------------------ */

/* 0 when the copy has no entry at path, 'd' for a directory, 'f' otherwise */
static int kind(const char *path)
{
	struct stat st;

	if (fstatat(dst_fd, path, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			anomaly("stat %s: %s", path, strerror(errno));
		return 0;
	}
	return S_ISDIR(st.st_mode) ? 'd' : 'f';
}

/* Remove name (relative to parent) and all below it, as rm -rf does. */
static int remove_tree(int parent, const char *name)
{
	struct stat st;

	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	if (S_ISDIR(st.st_mode)) {
		int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct dirent *de;
		DIR *d;

		if (fd < 0)
			return -1;
		d = fdopendir(fd);
		if (!d) {
			close(fd);
			return -1;
		}
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			if (remove_tree(dirfd(d), de->d_name) < 0) {
				closedir(d);
				return -1;
			}
		}
		closedir(d);
		return unlinkat(parent, name, AT_REMOVEDIR);
	}
	return unlinkat(parent, name, 0);
}

static void drop(const char *path)
{
	if (remove_tree(dst_fd, path) < 0)
		anomaly("remove %s: %s", path, strerror(errno));
}

static void clear_copy(void)
{
	int fd = openat(dst_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	DIR *d;

	action("clear the copy");
	if (fd < 0 || !(d = fdopendir(fd)))
		fatal("open the copy");
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
		    remove_tree(dst_fd, de->d_name) < 0)
			fatal("clear the copy");
	closedir(d);
}

/* A path the copy can take: relative, no "." or ".." component, no "//". */
static int valid_path(const char *path)
{
	const char *p = path;

	if (!*p || *p == '/')
		return 0;
	for (;;) {
		size_t n = strcspn(p, "/");

		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		if (!p[n])
			return 1;
		p += n + 1;
	}
}

/* CREATE or MOVED_IN: path exists now, a directory or not as isdir says. */
static void apply_exists(const char *path, int isdir)
{
	int want = isdir ? 'd' : 'f', have = kind(path), fd;

	if (have == want)
		return; /* keep what it holds */
	if (have) {
		action("replace %s (type changed)", path);
		drop(path);
	}
	action("make %s %s", isdir ? "directory" : "file", path);
	if (isdir) {
		if (mkdirat(dst_fd, path, 0755) < 0)
			anomaly("mkdir %s: %s", path, strerror(errno));
		return;
	}
	fd = openat(dst_fd, path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		anomaly("create %s: %s", path, strerror(errno));
	else
		close(fd);
}

/* DELETE or MOVED_OUT: path and all below it go; missing is a no-op. */
static void apply_gone(const char *path)
{
	if (kind(path)) {
		action("remove %s", path);
		drop(path);
	}
}

/* Is a a proper ancestor of b? */
static int below(const char *a, const char *b)
{
	size_t n = strlen(a);

	return strncmp(a, b, n) == 0 && b[n] == '/';
}

/* RENAME: old moves to path, replacing what path held. */
static void apply_rename(const char *path, const char *old, int isdir, int exchange)
{
	int have_old = kind(old), have_new = kind(path);

	if (below(path, old) || below(old, path)) {
		anomaly("rename %s -> %s: one is below the other", old, path);
		return;
	}
	if (exchange) {
		exchanges++;
		if (have_old && have_new) {
			action("exchange %s and %s", old, path);
			if (renameat2(dst_fd, old, dst_fd, path, RENAME_EXCHANGE) < 0)
				anomaly("exchange %s %s: %s", old, path, strerror(errno));
			return;
		}
		/* An exchange of two entries the copy knows; swap what there is. */
		anomaly("exchange %s and %s: %s is missing in the copy", old, path,
			have_old ? path : old);
		if (have_old && renameat(dst_fd, old, dst_fd, path) < 0)
			anomaly("rename %s -> %s: %s", old, path, strerror(errno));
		if (have_new && renameat(dst_fd, path, dst_fd, old) < 0)
			anomaly("rename %s -> %s: %s", path, old, strerror(errno));
		return;
	}
	if (!have_old) {
		action("%s missing: as create", old);
		apply_exists(path, isdir);
		return;
	}
	if (strcmp(path, old) == 0)
		return;
	if (have_new) {
		action("replace %s", path);
		drop(path);
	}
	action("move %s -> %s", old, path);
	if (renameat(dst_fd, old, dst_fd, path) < 0)
		anomaly("rename %s -> %s: %s", old, path, strerror(errno));
}

/* ---- the watch ------------------------------------------------------------- */

static int backend_unavailable(int err)
{
	return err == ENOSYS || err == EPERM || err == EOPNOTSUPP || err == ENODEV;
}

static void add_watch(void)
{
	wd = notifyx_add_watch(nx, src, MIRROR_EVENTS, MIRROR_FLAGS | rescan);
	if (wd < 0) {
		int err = errno;

		fprintf(stderr, "mirror: watch %s: %s\n", src, strerror(err));
		if (err == ENOENT || err == ENOTDIR)
			return; /* the tree is gone: the copy stays empty */
		fflush(stderr);
		exit(backend_unavailable(err) ? 3 : 1);
	}
}

static void log_event(const struct notifyx_event *ev, const char *note)
{
	const char *name = notifyx_event_name(ev->mask);
	const char *old = notifyx_event_old_path(ev);

	if (verbose < 1)
		return;
	fprintf(stderr, "%d %s%s%s%s %u \"%s\"", ev->wd, name ? name : "?",
		ev->flags & NOTIFYX_EVENT_ISDIR ? " dir" : "",
		ev->flags & NOTIFYX_EVENT_SYNTHETIC ? " synthetic" : "",
		ev->flags & NOTIFYX_EVENT_EXCHANGE ? " exchange" : "",
		ev->cookie, notifyx_event_path(ev));
	if (old)
		fprintf(stderr, " <- \"%s\"", old);
	if (ev->error)
		fprintf(stderr, " error %s", strerror(ev->error));
	fprintf(stderr, "%s\n", note);
}

static void apply(const struct notifyx_event *ev)
{
	const char *path = notifyx_event_path(ev);
	const char *old = notifyx_event_old_path(ev);
	int isdir = (ev->flags & NOTIFYX_EVENT_ISDIR) != 0;
	int bit;

	if (ev->wd != wd) {
		/* Left over from the watch an OVERFLOW replaced (up to its IGNORED). */
		stale++;
		log_event(ev, " (stale wd)");
		return;
	}
	events++;
	for (bit = 0; bit < 32; bit++)
		if (ev->mask & (1u << bit))
			count_by_bit[bit]++;
	log_event(ev, "");

	switch (ev->mask) {
	case NOTIFYX_CREATE:
	case NOTIFYX_MOVED_IN:
		if (!valid_path(path))
			anomaly("bad path \"%s\"", path);
		else
			apply_exists(path, isdir);
		break;
	case NOTIFYX_DELETE:
	case NOTIFYX_MOVED_OUT:
		if (!valid_path(path))
			anomaly("bad path \"%s\"", path);
		else
			apply_gone(path);
		break;
	case NOTIFYX_RENAME:
		if (!valid_path(path) || !old || !valid_path(old))
			anomaly("bad rename \"%s\" <- \"%s\"", path, old ? old : "(none)");
		else
			apply_rename(path, old, isdir, (ev->flags & NOTIFYX_EVENT_EXCHANGE) != 0);
		break;
	case NOTIFYX_DELETE_SELF:
	case NOTIFYX_UNMOUNT:
		/* The tree is gone (or left this mount namespace); IGNORED follows. */
		clear_copy();
		break;
	case NOTIFYX_OVERFLOW:
		/* Events were lost: start again from an empty copy, unless
		 * the library repairs the watch (RESCAN): then keep applying. */
		overflows++;
		if (rescan)
			break;
		resyncs++;
		action("resync");
		if (notifyx_rm_watch(nx, wd) < 0)
			fatal("notifyx_rm_watch");
		clear_copy();
		add_watch();
		break;
	case NOTIFYX_ERROR:
		/* Part of the tree is not watched: the copy may go wrong there. */
		errors++;
		fprintf(stderr, "mirror: not watched: \"%s\": %s\n", path, strerror(ev->error));
		break;
	case NOTIFYX_SYNC:
		/* The listing, or a repair, is complete: nothing to apply. */
		syncs++;
		break;
	case NOTIFYX_IGNORED:
		fprintf(stderr, "mirror: the watch of %s is over\n", src);
		wd = -1;
		break;
	default:
		anomaly("unexpected event mask %#x", ev->mask);
		break;
	}
}

/* Read and apply until a read fails with EAGAIN. */
static void drain(void)
{
	static union { struct notifyx_event ev; char bytes[256 * 1024]; } buf;

	for (;;) {
		const struct notifyx_event *ev;
		ssize_t n = notifyx_read(nx, buf.bytes, sizeof buf.bytes);

		if (n < 0) {
			if (errno == EAGAIN)
				return;
			if (errno == EINTR)
				continue;
			fatal("notifyx_read");
		}
		notifyx_for_each_event(ev, buf.bytes, n)
			apply(ev);
	}
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* Drain until no event has come for quiet_ms.  Readiness alone does not
 * tell: it can be spurious (a scanning backend's timer makes the
 * descriptor readable at each interval, whether anything changed or not). */
static void sync_copy(int quiet_ms)
{
	struct pollfd pfd = { .fd = notifyx_fd(nx), .events = POLLIN };
	long since = now_ms(), left;
	unsigned long before;

	while (!got_term) {
		before = events;
		drain();
		if (events != before)
			since = now_ms();
		left = since + quiet_ms - now_ms();
		if (left <= 0)
			break;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			fatal("poll");
	}
	fflush(stderr);
	printf("synced events=%lu overflows=%lu anomalies=%lu errors=%lu resyncs=%lu syncs=%lu\n",
	       events, overflows, anomalies, errors, resyncs, syncs);
	fflush(stdout);
}

static void summary(void)
{
	int bit;

	fprintf(stderr, "mirror: %lu events:", events);
	for (bit = 0; bit < 32; bit++)
		if (count_by_bit[bit])
			fprintf(stderr, " %s %lu", notifyx_event_name(1u << bit), count_by_bit[bit]);
	fprintf(stderr, "\nmirror: exchanges %lu overflows %lu resyncs %lu stale %lu "
		"anomalies %lu errors %lu\n", exchanges, overflows, resyncs, stale,
		anomalies, errors);
	fflush(stderr);
}

/* ---- setup ------------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr, "usage: mirror [-q|-v] [-R] [-b BACKEND] [-Q QUEUE_MAX] [-i POLL_MS] "
		"[-w QUIET_MS] [-e PATTERN]... SRC DST\n");
	exit(2);
}

static unsigned long number(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > UINT32_MAX)
		usage();
	return v;
}

/* Open DST, making it if needed; it must be empty and outside SRC. */
static int open_dst(const char *dst)
{
	char rs[PATH_MAX], rd[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int fd;

	if (mkdir(dst, 0755) < 0 && errno != EEXIST)
		fatal(dst);
	fd = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		fatal(dst);
	if (!realpath(src, rs))
		fatal(src);
	if (!realpath(dst, rd))
		fatal(dst);
	if (strcmp(rs, rd) == 0 || below(rs, rd) || (strcmp(rs, "/") == 0)) {
		fprintf(stderr, "mirror: %s is inside %s\n", dst, src);
		exit(2);
	}
	d = opendir(dst);
	if (!d)
		fatal(dst);
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
			fprintf(stderr, "mirror: %s is not empty\n", dst);
			exit(2);
		}
	closedir(d);
	return fd;
}

int main(int argc, char **argv)
{
	struct notifyx_config cfg = { .size = sizeof cfg };
	struct sigaction sa;
	int quiet_ms = -1, opt, nexcl = 0;
	const char *excl[8];

	while ((opt = getopt(argc, argv, "b:e:i:qQ:Rvw:")) != -1) {
		switch (opt) {
		case 'e':
			if (nexcl == 8)
				usage();
			excl[nexcl++] = optarg;
			break;
		case 'b': {
			uint32_t b;

			if (strcmp(optarg, "auto") == 0) {
				cfg.backend = NOTIFYX_BACKEND_AUTO;
				break;
			}
			for (b = 1; notifyx_backend_name(b); b++)
				if (strcmp(optarg, notifyx_backend_name(b)) == 0)
					break;
			if (!notifyx_backend_name(b)) {
				fprintf(stderr, "mirror: unknown backend %s\n", optarg);
				usage();
			}
			cfg.backend = b;
			break;
		}
		case 'i': cfg.poll_interval_ms = (uint32_t)number(optarg); break;
		case 'q': verbose = 0; break;
		case 'R': rescan = NOTIFYX_WATCH_RESCAN; break;
		case 'Q': cfg.queue_max = (uint32_t)number(optarg); break;
		case 'v': verbose = 2; break;
		case 'w': quiet_ms = (int)number(optarg); break;
		default: usage();
		}
	}
	if (argc - optind != 2)
		usage();
	src = argv[optind];
	dst_fd = open_dst(argv[optind + 1]);

	/* The log goes to a file in tests: buffer it, flush it at each sync. */
	if (!isatty(STDERR_FILENO))
		setvbuf(stderr, NULL, _IOFBF, 1 << 16);

	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		fatal("pipe2");
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGINT, &sa, NULL) < 0 ||
	    sigaction(SIGUSR1, &sa, NULL) < 0)
		fatal("sigaction");

	cfg.flags = NOTIFYX_NONBLOCK;
	nx = notifyx_open(&cfg);
	if (!nx) {
		int err = errno;

		fprintf(stderr, "mirror: notifyx_open: %s\n", strerror(err));
		return backend_unavailable(err) || err == EMFILE ? 3 : 1;
	}
	for (int i = 0; i < nexcl; i++)
		if (notifyx_exclude(nx, excl[i]) < 0)
			fatal("notifyx_exclude");
	/* Quiescent: nothing readable for longer than a held move (10 ms), or
	 * than a scan interval on the scanning backends. */
	if (quiet_ms < 0) {
		uint32_t b = notifyx_backend(nx);

		quiet_ms = 50;
		if (b == NOTIFYX_BACKEND_POLL || b == NOTIFYX_BACKEND_DNOTIFY)
			quiet_ms = 2 * (int)(cfg.poll_interval_ms ? cfg.poll_interval_ms : 1000) + 100;
	}
	add_watch();
	if (verbose)
		fprintf(stderr, "mirror: %s -> %s, backend %s, wd %d\n", src, argv[optind + 1],
			notifyx_backend_name(notifyx_backend(nx)), wd);
	printf("started\n");
	fflush(stdout);

	while (!got_term) {
		struct pollfd pfd[2] = {
			{ .fd = notifyx_fd(nx), .events = POLLIN },
			{ .fd = sig_pipe[0], .events = POLLIN },
		};
		char junk[64];

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			fatal("poll");
		}
		if (pfd[1].revents) {
			while (read(sig_pipe[0], junk, sizeof junk) > 0)
				;
		}
		if (pfd[0].revents)
			drain();
		if (got_sync && !got_term) {
			got_sync = 0;
			sync_copy(quiet_ms);
		}
	}
	summary();
	notifyx_close(nx);
	close(dst_fd);
	return 0;
}
