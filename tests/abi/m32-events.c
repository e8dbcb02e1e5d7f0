/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A plain-C API test (no cmocka: it has to build for i386 too), run by
 * m32.sh once against the x86_64 library and once against the same sources
 * built with gcc -m32.  It checks the API's argument rules where sizes and
 * signedness matter (size_t, ssize_t, the config's size field), then watches
 * a directory, makes changes whose events are deterministic, and writes:
 *   DIR/layout   sizeof and offsetof of the public structs, as text;
 *   DIR/events   the raw bytes of every record notifyx_read returned;
 *   DIR/results  one line per check.
 * m32.sh compares the three files of the two builds byte for byte.
 *
 * Usage: m32-events OUTDIR WATCHDIR (WATCHDIR empty, WATCHDIR.outside free)
 * Exit status: 0 passed, 1 failed, 77 no inotify here.
 */
#define _GNU_SOURCE
#include <notifyx.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static FILE *results;
static int failures;
static const char *watchdir;

#define CHECK(cond)                                                        \
	do {                                                               \
		int ok_ = (cond);                                          \
		fprintf(results, "%s: %s\n", ok_ ? "ok" : "FAIL", #cond);  \
		if (!ok_) {                                                \
			fprintf(stderr, "%s:%d: FAIL: %s (errno %d)\n",    \
				__FILE__, __LINE__, #cond, errno);         \
			failures++;                                        \
		}                                                          \
	} while (0)

/* Fails with errno e and returns r. */
#define FAILS(call, r, e) (errno = 0, (call) == (r) && errno == (e))

static FILE *open_out(const char *dir, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	return f;
}

#define LAYOUT(f, type, field)                                             \
	fprintf(f, "%s.%s offset %u size %u\n", #type, #field,             \
		(unsigned)offsetof(struct type, field),                    \
		(unsigned)sizeof(((struct type *)0)->field))

static void write_layout(FILE *f)
{
	fprintf(f, "notifyx_event size %u\n", (unsigned)sizeof(struct notifyx_event));
	LAYOUT(f, notifyx_event, size);
	LAYOUT(f, notifyx_event, wd);
	LAYOUT(f, notifyx_event, mask);
	LAYOUT(f, notifyx_event, flags);
	LAYOUT(f, notifyx_event, cookie);
	LAYOUT(f, notifyx_event, error);
	LAYOUT(f, notifyx_event, path_len);
	LAYOUT(f, notifyx_event, old_path_len);
	fprintf(f, "notifyx_event.names offset %u\n",
		(unsigned)offsetof(struct notifyx_event, names));
	fprintf(f, "NOTIFYX_EVENT_MAX %u\n", (unsigned)NOTIFYX_EVENT_MAX);
	fprintf(f, "notifyx_config size %u\n", (unsigned)sizeof(struct notifyx_config));
	LAYOUT(f, notifyx_config, size);
	LAYOUT(f, notifyx_config, backend);
	LAYOUT(f, notifyx_config, flags);
	LAYOUT(f, notifyx_config, poll_interval_ms);
	LAYOUT(f, notifyx_config, signal);
	LAYOUT(f, notifyx_config, queue_max);
}

/* The argument rules, where a 32-bit build could differ. */
static void check_api(void)
{
	struct notifyx_config cfg = { sizeof(cfg), NOTIFYX_BACKEND_INOTIFY, 0, 0, 0, 0 };
	struct { struct notifyx_config c; uint32_t extra[2]; } big;
	char buf[64];
	struct notifyx *nx;

	char version[32];

	snprintf(version, sizeof(version), "%d.%d.%d", NOTIFYX_VERSION_MAJOR,
		 NOTIFYX_VERSION_MINOR, NOTIFYX_VERSION_PATCH);
	CHECK(strcmp(notifyx_version(), version) == 0);
	CHECK(notifyx_backend_name(NOTIFYX_BACKEND_INOTIFY) != NULL &&
	      strcmp(notifyx_backend_name(NOTIFYX_BACKEND_INOTIFY), "inotify") == 0);
	CHECK(notifyx_backend_name(99) == NULL);
	CHECK(notifyx_event_name(NOTIFYX_CREATE) != NULL &&
	      strcmp(notifyx_event_name(NOTIFYX_CREATE), "create") == 0);
	CHECK(notifyx_event_name(NOTIFYX_CREATE | NOTIFYX_DELETE) == NULL);
	CHECK(notifyx_close(NULL) == 0);
	CHECK(notifyx_backend(NULL) == 0);
	CHECK(notifyx_supported_events(NULL) == 0);

	/* The config's own size: too small, larger with zeros, larger with a
	 * non-zero byte (E2BIG), unknown flags and backend. */
	cfg.size = sizeof(cfg) - 4;
	CHECK(FAILS(notifyx_open(&cfg), NULL, EINVAL));
	memset(&big, 0, sizeof(big));
	big.c = (struct notifyx_config){ sizeof(big), NOTIFYX_BACKEND_INOTIFY, 0, 0, 0, 0 };
	nx = notifyx_open(&big.c);
	CHECK(nx != NULL);
	notifyx_close(nx);
	big.extra[1] = 1;
	CHECK(FAILS(notifyx_open(&big.c), NULL, E2BIG));
	cfg = (struct notifyx_config){ sizeof(cfg), NOTIFYX_BACKEND_INOTIFY, 0x80000000u, 0, 0, 0 };
	CHECK(FAILS(notifyx_open(&cfg), NULL, EINVAL));
	cfg = (struct notifyx_config){ sizeof(cfg), 0x80000000u, 0, 0, 0, 0 };
	CHECK(FAILS(notifyx_open(&cfg), NULL, EINVAL));

	cfg = (struct notifyx_config){ sizeof(cfg), NOTIFYX_BACKEND_INOTIFY, NOTIFYX_NONBLOCK, 0, 0, 0 };
	nx = notifyx_open(&cfg);
	CHECK(nx != NULL);
	if (!nx)
		return;
	CHECK(notifyx_backend(nx) == NOTIFYX_BACKEND_INOTIFY);
	CHECK(notifyx_fd(nx) >= 0);
	CHECK(FAILS(notifyx_add_watch(nx, NULL, NOTIFYX_CREATE, 0), -1, EINVAL));
	CHECK(FAILS(notifyx_add_watch(nx, watchdir, 0, 0), -1, EINVAL));
	CHECK(FAILS(notifyx_add_watch(nx, watchdir, 0x80000000u, 0), -1, EINVAL));
	CHECK(FAILS(notifyx_add_watch(nx, watchdir, NOTIFYX_IGNORED, 0), -1, EINVAL));
	CHECK(FAILS(notifyx_add_watch(nx, watchdir, NOTIFYX_CREATE, 0x80000000u), -1, EINVAL));
	CHECK(FAILS(notifyx_rm_watch(nx, 12345), -1, EINVAL));
	CHECK(FAILS(notifyx_rm_watch(nx, -1), -1, EINVAL));
	CHECK(FAILS(notifyx_watch_path(nx, 12345), NULL, EINVAL));
	CHECK(FAILS(notifyx_read(nx, buf, 0), -1, EINVAL));
	CHECK(FAILS(notifyx_read(nx, buf, sizeof(buf)), -1, EAGAIN));
	CHECK(FAILS(notifyx_read(NULL, buf, sizeof(buf)), -1, EINVAL));
	CHECK(FAILS(notifyx_exclude(nx, NULL), -1, EINVAL));
	CHECK(notifyx_close(nx) == 0);
}

/* Reads, appending the raw records to out, until the event of wd with that
 * mask and path; returns the number of events read, or -1. */
static int read_until(struct notifyx *nx, FILE *out, int wd, uint32_t mask, const char *path)
{
	static char buf[4 * NOTIFYX_EVENT_MAX];
	static int n;
	int seen = 0, before = n;

	while (!seen) {
		struct pollfd p = { notifyx_fd(nx), POLLIN, 0 };
		const struct notifyx_event *ev;
		ssize_t len;

		if (poll(&p, 1, 5000) != 1) {
			fprintf(stderr, "timed out waiting for events\n");
			return -1;
		}
		len = notifyx_read(nx, buf, sizeof(buf));
		if (len < 0 && errno == EAGAIN)
			continue;
		if (len <= 0) {
			perror("notifyx_read");
			return -1;
		}
		fwrite(buf, 1, (size_t)len, out);
		for (ev = (const void *)buf; (const char *)ev < buf + len; ev = notifyx_event_next(ev)) {
			size_t need = sizeof(*ev) + ev->path_len + 1 +
				      (ev->old_path_len ? ev->old_path_len + 1 : 0);

			CHECK(ev->size % 8 == 0 && ev->size >= need && ev->size < need + 8);
			CHECK(strlen(notifyx_event_path(ev)) == ev->path_len);
			fprintf(results, "event %d wd %d %s flags %u cookie %u \"%s\" \"%s\"\n", n++,
				ev->wd, notifyx_event_name(ev->mask), ev->flags, ev->cookie,
				notifyx_event_path(ev),
				notifyx_event_old_path(ev) ? notifyx_event_old_path(ev) : "");
			if (ev->wd == wd && ev->mask == mask && strcmp(notifyx_event_path(ev), path) == 0)
				seen = 1;
		}
	}
	return n - before;
}

static void path_in(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", watchdir, name);
}

static int touch(const char *name)
{
	char p[4096];
	int fd;

	path_in(p, sizeof(p), name);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	return fd < 0 ? -1 : close(fd);
}

int main(int argc, char **argv)
{
	const uint32_t events = NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME |
				NOTIFYX_MOVED_IN | NOTIFYX_MOVED_OUT | NOTIFYX_DELETE_SELF;
	struct notifyx_config cfg = { sizeof(cfg), NOTIFYX_BACKEND_INOTIFY, NOTIFYX_NONBLOCK, 0, 0, 0 };
	char a[4096], b[4096];
	struct notifyx *nx;
	FILE *out;
	int wd, n;

	if (argc != 3) {
		fprintf(stderr, "usage: %s OUTDIR WATCHDIR\n", argv[0]);
		return 2;
	}
	watchdir = argv[2];
	out = open_out(argv[1], "layout");
	write_layout(out);
	fclose(out);
	results = open_out(argv[1], "results");

	nx = notifyx_open(&cfg);
	if (!nx && (errno == ENOSYS || errno == EMFILE)) {
		printf("SKIP: inotify cannot start here: %s\n", strerror(errno));
		return 77;
	}
	notifyx_close(nx);

	check_api();

	/* The events: names of several lengths, so that the zero padding of
	 * every size modulo 8 is compared; a rename inside the watch (cookie
	 * 0, old_path set); a move out and back in; a directory (ISDIR); then
	 * rm_watch's IGNORED. */
	nx = notifyx_open(&cfg);
	CHECK(nx != NULL);
	if (!nx)
		return 1;
	wd = notifyx_add_watch(nx, watchdir, events, NOTIFYX_WATCH_ONLYDIR);
	CHECK(wd > 0);
	CHECK(notifyx_watch_path(nx, wd) != NULL && strcmp(notifyx_watch_path(nx, wd), watchdir) == 0);
	CHECK(touch("a") == 0);
	CHECK(touch("seven77") == 0);
	CHECK(touch("eight888") == 0);
	CHECK(touch("a-name-of-twenty-one") == 0);
	path_in(a, sizeof(a), "dir");
	CHECK(mkdir(a, 0700) == 0);
	path_in(a, sizeof(a), "a");
	path_in(b, sizeof(b), "renamed-a");
	CHECK(rename(a, b) == 0);
	path_in(a, sizeof(a), "seven77");
	path_in(b, sizeof(b), "s7");
	CHECK(rename(a, b) == 0);
	path_in(a, sizeof(a), "renamed-a");
	CHECK(unlink(a) == 0);
	path_in(a, sizeof(a), "s7");
	CHECK(unlink(a) == 0);
	path_in(a, sizeof(a), "eight888");
	CHECK(unlink(a) == 0);
	/* Out of the watch and back: lone halves, cookie 0. */
	path_in(a, sizeof(a), "a-name-of-twenty-one");
	snprintf(b, sizeof(b), "%s.outside", watchdir);
	CHECK(rename(a, b) == 0);
	CHECK(rename(b, a) == 0);
	CHECK(unlink(a) == 0);
	path_in(a, sizeof(a), "dir");
	CHECK(rmdir(a) == 0);

	/* All of them read before rm_watch, whose IGNORED comes last: what
	 * rm_watch does to events still queued is not what this compares. */
	out = open_out(argv[1], "events");
	n = read_until(nx, out, wd, NOTIFYX_DELETE, "dir");
	CHECK(n == 14);
	CHECK(notifyx_rm_watch(nx, wd) == 0);
	n = read_until(nx, out, wd, NOTIFYX_IGNORED, "");
	CHECK(n == 1);
	fclose(out);
	CHECK(notifyx_close(nx) == 0);

	fclose(results);
	printf("%d-bit: %d failures\n", (int)sizeof(void *) * 8, failures);
	return failures ? 1 : 0;
}
