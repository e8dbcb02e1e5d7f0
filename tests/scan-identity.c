/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The scanning backends (poll, dnotify) on real files: what they can only
 * know by comparing states.
 *  - renames found by inode: a file and a directory renamed between two
 *    scans are RENAMEs, and the directory's entries come along unreported;
 *  - an inode number reused by a new file is not a rename (ext4 hands a
 *    freed number to the next new file; the backends compare birth times);
 *  - a change within the same second, of the same size, is still MODIFY
 *    (nanosecond times);
 *  - self events: a watched file renamed is MOVE_SELF, deleted DELETE_SELF;
 *    a directory root's carry ISDIR, a file's do not;
 *  - deep paths: a tree whose absolute paths are longer than PATH_MAX is
 *    watched to where its paths relative to the root fit; an entry whose
 *    relative path would not fit is an ERROR (ENAMETOOLONG) naming its
 *    directory, never silence;
 *  - a moved root: after a directory above the root is renamed, directories
 *    made later in the tree are read (through the held root, not its old
 *    path).
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
	int32_t error, wd;
	char path[4096], old[256];
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
				evs[nev].error = e->error;
				evs[nev].wd = e->wd;
				snprintf(evs[nev].path, sizeof(evs[nev].path), "%s",
					 notifyx_event_path(e));
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

/* The flags of the one event of wd with this type, or -1 (none or several). */
static int flags_of(int wd, uint32_t mask)
{
	int found = -1;

	for (int i = 0; i < nev; i++) {
		if (evs[i].mask != mask || evs[i].wd != wd)
			continue;
		if (found >= 0)
			return -1;
		found = (int)evs[i].flags;
	}
	return found;
}

static void self_events(struct notifyx *nx, const char *dir)
{
	uint32_t ev = NOTIFYX_MOVE_SELF | NOTIFYX_DELETE_SELF | NOTIFYX_MODIFY;
	int d, f;

	mkdir(at(dir, "sd"), 0755);
	mkdir(at(dir, "elsewhere"), 0755);
	put(at(dir, "sf"), "x");
	d = notifyx_add_watch(nx, at(dir, "sd"), ev, 0);
	f = notifyx_add_watch(nx, at(dir, "sf"), ev, 0);
	CHECK(d > 0 && f > 0, "add_watch: %s", strerror(errno));
	settle(nx);
	CHECK(rename(at(dir, "sd"), at(dir, "sd2")) == 0 &&
		      rename(at(dir, "sf"), at(dir, "elsewhere/sf2")) == 0,
	      "rename");
	settle(nx);
	CHECK(flags_of(d, NOTIFYX_MOVE_SELF) == (NOTIFYX_EVENT_SYNTHETIC | NOTIFYX_EVENT_ISDIR),
	      "a directory root renamed: expected one MOVE_SELF with ISDIR");
	CHECK(flags_of(f, NOTIFYX_MOVE_SELF) == NOTIFYX_EVENT_SYNTHETIC,
	      "a file root renamed: expected one MOVE_SELF without ISDIR");
	if (failures)
		dump();
	/* The watch goes on where the file went, another directory. */
	put(at(dir, "elsewhere/sf2"), "longer");
	settle(nx);
	CHECK(flags_of(f, NOTIFYX_MODIFY) == NOTIFYX_EVENT_SYNTHETIC,
	      "a file root moved to another directory, then written: expected one MODIFY");
	if (failures)
		dump();
	CHECK(rmdir(at(dir, "sd2")) == 0 && unlink(at(dir, "elsewhere/sf2")) == 0, "remove");
	settle(nx);
	CHECK(flags_of(d, NOTIFYX_DELETE_SELF) == (NOTIFYX_EVENT_SYNTHETIC | NOTIFYX_EVENT_ISDIR),
	      "a directory root removed: expected one DELETE_SELF with ISDIR");
	CHECK(flags_of(f, NOTIFYX_DELETE_SELF) == NOTIFYX_EVENT_SYNTHETIC,
	      "a file root removed: expected one DELETE_SELF without ISDIR");
	CHECK(flags_of(d, NOTIFYX_IGNORED) >= 0 && flags_of(f, NOTIFYX_IGNORED) >= 0,
	      "removed roots: expected IGNORED");
	if (failures)
		dump();
}

/* mkdirat + openat down a chain: the absolute paths get longer than PATH_MAX. */
static int down(int fd, const char *name)
{
	int nfd;

	if (mkdirat(fd, name, 0755) < 0 ||
	    (nfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		perror(name);
		exit(1);
	}
	close(fd);
	return nfd;
}

static void deep_paths(struct notifyx *nx, const char *dir)
{
	char name[251], rel[4096] = "", longname[101];
	size_t len = 0;
	int fd, wd, err = 0;

	memset(name, 'n', 250);
	name[250] = '\0';
	memset(longname, 'L', 100);
	longname[100] = '\0';
	/* 8 levels above the root, 16 below: the deepest directory's path
	 * relative to the root is 16 * 251 - 1 = 4015 bytes. */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fd = down(fd, "deep");
	for (int i = 0; i < 8; i++)
		fd = down(fd, name);
	fd = down(fd, "root");
	wd = -1;
	{
		char proc[64];
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		/* The root's own path fits; add it by its real path. */
		char root[4096];
		ssize_t n = readlink(proc, root, sizeof(root) - 1);
		CHECK(n > 0, "readlink: %s", strerror(errno));
		root[n > 0 ? n : 0] = '\0';
		wd = notifyx_add_watch(nx, root, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
		CHECK(wd > 0, "add_watch of a root %zd bytes long: %s", n, strerror(errno));
	}
	for (int i = 0; i < 16; i++) {
		fd = down(fd, name);
		len += (size_t)snprintf(rel + len, sizeof(rel) - len, "%s%s", i ? "/" : "", name);
	}
	settle(nx);
	CHECK(count(NOTIFYX_CREATE, rel) == 1, "the directory %zu bytes below the root: not reported",
	      len);
	/* One that fits, one that does not. */
	close(openat(fd, "ok", O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
	close(openat(fd, longname, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
	close(fd);
	settle(nx);
	for (int i = 0; i < nev; i++)
		if (evs[i].mask == NOTIFYX_ERROR && !strcmp(evs[i].path, rel))
			err = evs[i].error;
	strcat(rel, "/ok");
	CHECK(count(NOTIFYX_CREATE, rel) == 1, "an entry %zu bytes below the root: not reported",
	      strlen(rel));
	CHECK(err == ENAMETOOLONG,
	      "an entry whose path below the root is too long: ERROR %s naming its directory, "
	      "expected ENAMETOOLONG", err ? strerror(err) : "(none)");
	if (failures)
		dump();
	notifyx_rm_watch(nx, wd);
	settle(nx);
}

static void moved_root(struct notifyx *nx, const char *dir)
{
	int wd;

	mkdir(at(dir, "above"), 0755);
	mkdir(at(dir, "above/root"), 0755);
	wd = notifyx_add_watch(nx, at(dir, "above/root"), NOTIFYX_CREATE | NOTIFYX_MOVE_SELF,
			       NOTIFYX_WATCH_RECURSIVE);
	CHECK(wd > 0, "add_watch: %s", strerror(errno));
	settle(nx);
	CHECK(rename(at(dir, "above"), at(dir, "above2")) == 0, "rename");
	settle(nx);
	CHECK(flags_of(wd, NOTIFYX_MOVE_SELF) == (NOTIFYX_EVENT_SYNTHETIC | NOTIFYX_EVENT_ISDIR),
	      "a directory above the root renamed: expected one MOVE_SELF with ISDIR");
	mkdir(at(dir, "above2/root/new"), 0755);
	settle(nx);
	put(at(dir, "above2/root/new/f"), "x");
	settle(nx);
	CHECK(count(NOTIFYX_CREATE, "new/f") == 1 && count(NOTIFYX_ERROR, NULL) == 0,
	      "after the root moved: a file in a new directory not reported (or an ERROR)");
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
	self_events(nx, tmpl);
	deep_paths(nx, tmpl);
	moved_root(nx, tmpl);
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
