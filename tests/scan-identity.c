/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The scanning backends (poll, dnotify) on real files: what they can only
 * know by comparing states.
 *  - renames found by inode: a file and a directory renamed between two
 *    scans are RENAMEs, and the directory's entries come along unreported;
 *  - an inode number reused by a new file is not a rename (ext4 hands a
 *    freed number to the next new file; the backends compare birth times);
 *  - a change within the same second, of the same size, is still MODIFY
 *    (nanosecond times).
 * A scan happens only when the handle is read, so whatever is done between
 * two reads is one change of state.  Exit 0 pass, 1 fail, 77 when neither
 * backend can run here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <notifyx.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int failures;
static const char *bname;

#define CHECK(cond, ...)                                                          \
	do {                                                                     \
		if (!(cond)) {                                                   \
			printf("FAIL [%s] %s:%d: ", bname, __FILE__, __LINE__);  \
			printf(__VA_ARGS__);                                     \
			putchar('\n');                                           \
			failures++;                                              \
		}                                                                \
	} while (0)

struct ev {
	uint32_t mask, flags;
	char path[256], old[256];
};

static struct ev evs[256];
static int nev;

/* Reads until nothing has come for 300 ms (the interval is 50 ms). */
static void settle(struct notifyx *nx)
{
	static uint64_t buf[NOTIFYX_EVENT_MAX / 8 * 4];
	struct pollfd p = { .fd = notifyx_fd(nx), .events = POLLIN };
	struct timespec t0, t;

	nev = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		ssize_t n = notifyx_read(nx, buf, sizeof(buf));
		if (n > 0) {
			const struct notifyx_event *e = (const void *)buf;
			for (; (const char *)e < (const char *)buf + n; e = notifyx_event_next(e)) {
				if (nev == 256)
					break;
				evs[nev].mask = e->mask;
				evs[nev].flags = e->flags;
				snprintf(evs[nev].path, 256, "%s", notifyx_event_path(e));
				snprintf(evs[nev].old, 256, "%s",
					 notifyx_event_old_path(e) ? notifyx_event_old_path(e) : "");
				nev++;
			}
			clock_gettime(CLOCK_MONOTONIC, &t0);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > 300)
			break;
		poll(&p, 1, 50);
	}
}

static int count(uint32_t mask, const char *path)
{
	int k = 0;

	for (int i = 0; i < nev; i++)
		k += evs[i].mask == mask && (!path || !strcmp(evs[i].path, path));
	return k;
}

static void dump(void)
{
	for (int i = 0; i < nev; i++)
		printf("  %s%s \"%s\"%s%s\n", notifyx_event_name(evs[i].mask),
		       evs[i].flags & NOTIFYX_EVENT_SYNTHETIC ? " SYNTHETIC" : "", evs[i].path,
		       evs[i].old[0] ? " <- " : "", evs[i].old);
}

static void put(const char *path, const char *data)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, data, strlen(data)) != (ssize_t)strlen(data) || close(fd) < 0) {
		perror(path);
		exit(1);
	}
}

static const char *at(const char *dir, const char *name)
{
	static char buf[8][4096];
	static int k;
	char *b = buf[k++ % 8];

	snprintf(b, 4096, "%s/%s", dir, name);
	return b;
}

static void renames_by_inode(struct notifyx *nx, const char *dir)
{
	int wd;

	mkdir(at(dir, "d"), 0755);
	put(at(dir, "d/inside"), "x");
	put(at(dir, "f"), "x");
	wd = notifyx_add_watch(nx, dir, NOTIFYX_ALL_EVENTS & notifyx_supported_events(nx),
			       NOTIFYX_WATCH_RECURSIVE);
	CHECK(wd > 0, "add_watch: %s", strerror(errno));
	settle(nx);
	/* Between two scans: both renamed. */
	CHECK(rename(at(dir, "f"), at(dir, "g")) == 0, "rename");
	CHECK(rename(at(dir, "d"), at(dir, "e")) == 0, "rename");
	settle(nx);
	CHECK(count(NOTIFYX_RENAME, "g") == 1 && count(NOTIFYX_RENAME, "e") == 1 &&
		      count(NOTIFYX_CREATE, NULL) == 0 && count(NOTIFYX_DELETE, NULL) == 0 && nev == 2,
	      "renames between two scans: expected RENAME g <- f and RENAME e <- d only");
	for (int i = 0; i < nev; i++)
		CHECK(evs[i].flags & NOTIFYX_EVENT_SYNTHETIC, "an event without SYNTHETIC");
	if (failures)
		dump();
	notifyx_rm_watch(nx, wd);
	settle(nx);
}

static void inode_reuse(struct notifyx *nx, const char *dir)
{
	struct stat a, b;
	int wd, tries;

	wd = notifyx_add_watch(nx, dir, NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME, 0);
	CHECK(wd > 0, "add_watch: %s", strerror(errno));
	for (tries = 0; tries < 50; tries++) {
		put(at(dir, "old"), "x");
		settle(nx);
		stat(at(dir, "old"), &a);
		/* Between two scans: the file goes and a new one comes, which
		 * the filesystem may give the freed inode number. */
		unlink(at(dir, "old"));
		put(at(dir, "new"), "y");
		stat(at(dir, "new"), &b);
		settle(nx);
		if (a.st_ino == b.st_ino)
			break;
		unlink(at(dir, "new"));
		settle(nx);
	}
	if (a.st_ino != b.st_ino) {
		printf("  note [%s]: the filesystem of %s never reused an inode number in %d tries: "
		       "inode reuse not checked\n", bname, dir, tries);
	} else {
		CHECK(count(NOTIFYX_RENAME, NULL) == 0 && count(NOTIFYX_DELETE, "old") == 1 &&
			      count(NOTIFYX_CREATE, "new") == 1,
		      "inode %lu reused: expected DELETE old and CREATE new, no RENAME",
		      (unsigned long)a.st_ino);
		if (failures)
			dump();
		unlink(at(dir, "new"));
	}
	notifyx_rm_watch(nx, wd);
	settle(nx);
}

static void same_second(struct notifyx *nx, const char *dir)
{
	struct stat a, b;
	int wd, tries;

	put(at(dir, "m"), "aaaa");
	wd = notifyx_add_watch(nx, dir, NOTIFYX_MODIFY, 0);
	CHECK(wd > 0, "add_watch: %s", strerror(errno));
	settle(nx);
	for (tries = 0; tries < 20; tries++) {
		stat(at(dir, "m"), &a);
		put(at(dir, "m"), "bbbb"); /* the same size */
		stat(at(dir, "m"), &b);
		if (a.st_mtim.tv_sec == b.st_mtim.tv_sec)
			break;
		settle(nx); /* crossed a second boundary: again */
	}
	CHECK(a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec != b.st_mtim.tv_nsec,
	      "could not write twice within one second with distinct mtimes");
	settle(nx);
	CHECK(count(NOTIFYX_MODIFY, "m") == 1,
	      "a same-size write within the same second: expected one MODIFY m, got %d",
	      count(NOTIFYX_MODIFY, "m"));
	if (failures)
		dump();
	notifyx_rm_watch(nx, wd);
	settle(nx);
}

static int run(uint32_t backend)
{
	struct notifyx_config c = { .size = sizeof(c), .backend = backend,
				    .flags = NOTIFYX_NONBLOCK, .poll_interval_ms = 50 };
	char tmpl[] = "/tmp/notifyx-scan-identity.XXXXXX";
	struct notifyx *nx;
	char cmd[128];

	bname = notifyx_backend_name(backend);
	if (!(nx = notifyx_open(&c))) {
		printf("SKIP [%s]: notifyx_open: %s\n", bname, strerror(errno));
		return 77;
	}
	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		return 1;
	}
	renames_by_inode(nx, tmpl);
	inode_reuse(nx, tmpl);
	same_second(nx, tmpl);
	notifyx_close(nx);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpl);
	if (system(cmd) != 0)
		return 1;
	printf("%s [%s]\n", failures ? "FAIL" : "PASS", bname);
	return failures ? 1 : 0;
}

int main(void)
{
	int p, d;

	setvbuf(stdout, NULL, _IOLBF, 0);
	p = run(NOTIFYX_BACKEND_POLL);
	failures = 0;
	d = run(NOTIFYX_BACKEND_DNOTIFY);
	if (p == 1 || d == 1)
		return 1;
	return p == 77 && d == 77 ? 77 : 0;
}
