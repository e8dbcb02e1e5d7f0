/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The dnotify backend through the public interface, each case in a child
 * process (they change resource limits):
 *  - SIGIO on real-time queue overflow (RLIMIT_SIGPENDING lowered, the
 *    routing signal blocked by the application while it makes changes):
 *    the process lives, the watch gets NOTIFYX_OVERFLOW, then events again;
 *  - the descriptor limit: a recursive watch that needs more descriptors
 *    than RLIMIT_NOFILE allows fails with EMFILE and leaves nothing behind
 *    (descriptors, events); directories that appear later beyond the limit
 *    give one NOTIFYX_ERROR with EMFILE;
 *  - a signal lists again only the directory it names: a change that only
 *    a listing of a sibling would see (made through a hard link from
 *    outside the watch, which signals nothing) is not reported until that
 *    sibling is signalled;
 *  - notifyx_open raises the soft RLIMIT_NOFILE to the hard limit;
 *  - two handles in two threads each get their own events;
 *  - with /proc/sys/fs/dir-notify-enable at 0 (root only; set back at once:
 *    it is system-wide), the backend cannot start: ENOSYS.
 * Exit 0 pass, 1 fail, 77 when the dnotify backend cannot start here.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <notifyx.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FAIL(...)                                   \
	do {                                        \
		printf("FAIL %s: ", __func__);      \
		printf(__VA_ARGS__);                \
		putchar('\n');                      \
		exit(1);                            \
	} while (0)

static char base[] = "/tmp/notifyx-dnotify.XXXXXX";

static struct notifyx *open_dn(void)
{
	struct notifyx_config c = { .size = sizeof(c), .backend = NOTIFYX_BACKEND_DNOTIFY,
				    .flags = NOTIFYX_NONBLOCK, .poll_interval_ms = 50 };

	return notifyx_open(&c);
}

/* dir/PREFIXi, or dir/PREFIXi/leaf when leaf is not NULL. */
static const char *at(const char *dir, const char *prefix, int i, const char *leaf)
{
	static char buf[8][4096];
	static int k;
	char *b = buf[k++ % 8];

	if (snprintf(b, 4096, "%s/%s%d%s%s", dir, prefix, i, leaf ? "/" : "", leaf ? leaf : "") >=
	    4096)
		FAIL("path too long");
	return b;
}

static void touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

	if (fd < 0)
		FAIL("%s: %s", path, strerror(errno));
	close(fd);
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* Reads for up to ms; counts events of type mask (any wd); stores the first
 * error of an ERROR event. */
static int collect(struct notifyx *nx, int ms, uint32_t mask, int *error)
{
	static uint64_t buf[NOTIFYX_EVENT_MAX / 8 * 4];
	struct pollfd p = { .fd = notifyx_fd(nx), .events = POLLIN };
	int n = 0;

	for (int waited = 0; waited < ms; waited += 20) {
		ssize_t len;
		while ((len = notifyx_read(nx, buf, sizeof(buf))) > 0) {
			const struct notifyx_event *e = (const void *)buf;
			for (; (const char *)e < (const char *)buf + len; e = notifyx_event_next(e)) {
				n += e->mask == mask;
				if (e->mask == NOTIFYX_ERROR && error && !*error)
					*error = e->error;
			}
		}
		if (errno != EAGAIN)
			FAIL("notifyx_read: %s", strerror(errno));
		poll(&p, 1, 20);
	}
	return n;
}

static void sigio_overflow(const char *dir)
{
	struct rlimit rl = { 16, 16 };
	struct notifyx *nx;
	sigset_t rt, old;
	int wd;

	for (int i = 0; i < 8; i++)
		mkdir(at(dir, "d", i, NULL), 0755);
	if (setrlimit(RLIMIT_SIGPENDING, &rl) < 0)
		FAIL("setrlimit: %s", strerror(errno));
	if (!(nx = open_dn()))
		FAIL("notifyx_open: %s", strerror(errno));
	wd = notifyx_add_watch(nx, dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	if (wd < 0)
		FAIL("add_watch: %s", strerror(errno));
	collect(nx, 200, 0, NULL);
	/* The application blocks the routing signal a while (its own mask):
	 * the kernel's queue fills and it falls back to SIGIO. */
	sigemptyset(&rt);
	sigaddset(&rt, SIGRTMIN + 5);
	pthread_sigmask(SIG_BLOCK, &rt, &old);
	for (int i = 0; i < 400; i++)
		{
		touch(at(dir, "d", i % 8, "f"));
		unlink(at(dir, "d", i % 8, "f"));
	}
	for (int i = 0; i < 8; i++)
		touch(at(dir, "d", i, "kept"));
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (collect(nx, 500, NOTIFYX_OVERFLOW, NULL) < 1)
		FAIL("no OVERFLOW after the real-time signal queue overflowed");
	touch(at(dir, "d", 0, "after"));
	if (collect(nx, 1000, NOTIFYX_CREATE, NULL) < 1)
		FAIL("no event after the overflow");
	notifyx_close(nx);
}

static void descriptor_limit(const char *dir)
{
	struct rlimit rl;
	struct notifyx *nx;
	int before, err = 0, wd;
	char path[4096];

	for (int i = 0; i < 60; i++)
		mkdir(at(dir, "big", i, NULL), 0755);
	if (snprintf(path, sizeof(path), "%s/small", dir) >= (int)sizeof(path))
		FAIL("path too long");
	mkdir(path, 0755);
	if (!(nx = open_dn()))
		FAIL("notifyx_open: %s", strerror(errno));
	before = open_fds();
	rl.rlim_cur = rl.rlim_max = (rlim_t)before + 20;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		FAIL("setrlimit: %s", strerror(errno));
	errno = 0;
	wd = notifyx_add_watch(nx, dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	if (wd != -1 || errno != EMFILE)
		FAIL("add_watch of %d directories with 20 descriptors: %d, %s (expected EMFILE)", 61,
		     wd, strerror(errno));
	if (open_fds() != before)
		FAIL("descriptors before the failed add_watch %d, after %d", before, open_fds());
	if (collect(nx, 200, 0, NULL) || notifyx_read(nx, path, sizeof(path)) != -1)
		FAIL("events queued by a failed add_watch");
	/* A watch that fits, and directories that do not, later. */
	wd = notifyx_add_watch(nx, path, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	if (wd < 0)
		FAIL("add_watch of one directory: %s", strerror(errno));
	for (int i = 0; i < 40; i++)
		mkdir(at(path, "n", i, NULL), 0755);
	collect(nx, 500, NOTIFYX_ERROR, &err);
	if (err != EMFILE)
		FAIL("directories beyond the limit: ERROR with %s, expected EMFILE",
		     err ? strerror(err) : "no ERROR");
	notifyx_close(nx);
}

static void append(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);

	if (fd < 0 || write(fd, "more", 4) != 4)
		FAIL("%s: %s", path, strerror(errno));
	close(fd);
}

static void only_signalled(const char *dir)
{
	char w[4096], out[4096];
	struct notifyx *nx;
	int wd, n;

	snprintf(w, sizeof(w), "%s/w", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	if (mkdir(w, 0755) < 0 || mkdir(out, 0755) < 0 || mkdir(at(w, "a", 0, NULL), 0755) < 0 ||
	    mkdir(at(w, "b", 0, NULL), 0755) < 0)
		FAIL("mkdir: %s", strerror(errno));
	touch(at(w, "b", 0, "f"));
	if (link(at(w, "b", 0, "f"), at(out, "f", 0, NULL)) < 0)
		FAIL("link: %s", strerror(errno));
	if (!(nx = open_dn()))
		FAIL("notifyx_open: %s", strerror(errno));
	wd = notifyx_add_watch(nx, w, NOTIFYX_MODIFY | NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	if (wd < 0)
		FAIL("add_watch: %s", strerror(errno));
	collect(nx, 200, 0, NULL);
	append(at(out, "f", 0, NULL)); /* b0/f changes; no directory of the watch is signalled */
	if ((n = collect(nx, 300, NOTIFYX_MODIFY, NULL)))
		FAIL("%d MODIFY without any signal", n);
	touch(at(w, "a", 0, "new"));
	if ((n = collect(nx, 500, NOTIFYX_MODIFY, NULL)))
		FAIL("a signal for a0 listed b0 again (%d MODIFY of b0/f)", n);
	touch(at(w, "b", 0, "g"));
	if ((n = collect(nx, 500, NOTIFYX_MODIFY, NULL)) != 1)
		FAIL("a signal for b0: %d MODIFY of b0/f, expected 1", n);
	notifyx_close(nx);
}

static void raised_nofile(const char *dir)
{
	struct rlimit rl;
	struct notifyx *nx;

	(void)dir;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		FAIL("getrlimit: %s", strerror(errno));
	if (rl.rlim_max < 512 || rl.rlim_max == RLIM_INFINITY) {
		printf("  note: hard RLIMIT_NOFILE %llu: not checked\n", (unsigned long long)rl.rlim_max);
		return;
	}
	rl.rlim_cur = 256;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		FAIL("setrlimit: %s", strerror(errno));
	if (!(nx = open_dn()))
		FAIL("notifyx_open: %s", strerror(errno));
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur <= 256)
		FAIL("soft RLIMIT_NOFILE %llu after notifyx_open, expected it raised toward %llu",
		     (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
	notifyx_close(nx);
}

struct th {
	char dir[4096];
	int own, other;
};

static void *thread_main(void *arg)
{
	struct th *t = arg;
	struct notifyx *nx = open_dn();
	/* Each thread its own buffers: at()'s are shared (static). */
	uint64_t buf[NOTIFYX_EVENT_MAX / 8 * 4];
	char path[sizeof t->dir + 16];

	if (!nx || notifyx_add_watch(nx, t->dir, NOTIFYX_CREATE, 0) < 0)
		return NULL;
	for (int i = 0; i < 20; i++) {
		snprintf(path, sizeof path, "%s/f%d", t->dir, i);
		touch(path);
	}
	for (int waited = 0; waited < 1500; waited += 20) {
		ssize_t len;
		while ((len = notifyx_read(nx, buf, sizeof(buf))) > 0) {
			const struct notifyx_event *e = (const void *)buf;
			for (; (const char *)e < (const char *)buf + len; e = notifyx_event_next(e))
				if (e->mask == NOTIFYX_CREATE)
					t->own++;
		}
		struct pollfd p = { .fd = notifyx_fd(nx), .events = POLLIN };
		poll(&p, 1, 20);
	}
	notifyx_close(nx);
	return NULL;
}

static void two_threads(const char *dir)
{
	struct th t[2];
	pthread_t id[2];

	for (int i = 0; i < 2; i++) {
		memset(&t[i], 0, sizeof(t[i]));
		if (snprintf(t[i].dir, sizeof(t[i].dir), "%s/t%d", dir, i) >= (int)sizeof(t[i].dir))
			FAIL("path too long");
		mkdir(t[i].dir, 0755);
		pthread_create(&id[i], NULL, thread_main, &t[i]);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(id[i], NULL);
		if (t[i].own != 20)
			FAIL("thread %d: %d CREATEs, expected its own 20", i, t[i].own);
	}
}

static const char *const enable = "/proc/sys/fs/dir-notify-enable";

static bool write_enable(const char *v)
{
	int fd = open(enable, O_WRONLY | O_CLOEXEC);
	bool ok = fd >= 0 && write(fd, v, 1) == 1;

	if (fd >= 0)
		close(fd);
	return ok;
}

static void disabled(const char *dir)
{
	struct notifyx *nx;
	char old = '1';
	int fd, err;

	(void)dir;
	fd = open(enable, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, &old, 1) != 1 || !write_enable("0")) {
		printf("  note: cannot set %s (%s): not checked\n", enable, strerror(errno));
		return;
	}
	close(fd);
	nx = open_dn();
	err = errno;
	write_enable(old == '0' ? "0" : "1");
	if (nx)
		FAIL("the dnotify backend started with %s at 0", enable);
	if (err != ENOSYS)
		FAIL("with %s at 0: %s, expected ENOSYS", enable, strerror(err));
}

static int in_child(void (*fn)(const char *), const char *name)
{
	char dir[4096];
	int status;
	pid_t pid;

	if (snprintf(dir, sizeof(dir), "%s/%s", base, name) >= (int)sizeof(dir))
		return 1;
	mkdir(dir, 0755);
	fflush(stdout);
	if (!(pid = fork())) {
		fn(dir);
		printf("ok %s\n", name);
		exit(0);
	}
	waitpid(pid, &status, 0);
	if (WIFSIGNALED(status)) {
		printf("FAIL %s: killed by signal %d (%s)\n", name, WTERMSIG(status),
		       strsignal(WTERMSIG(status)));
		return 1;
	}
	return WEXITSTATUS(status) != 0;
}

int main(void)
{
	struct notifyx *nx;
	int bad = 0;
	char cmd[128];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!(nx = open_dn())) {
		printf("SKIP: the dnotify backend cannot start here: %s\n", strerror(errno));
		return 77;
	}
	notifyx_close(nx);
	if (!mkdtemp(base))
		return 1;
	bad |= in_child(sigio_overflow, "sigio");
	bad |= in_child(descriptor_limit, "emfile");
	bad |= in_child(only_signalled, "only-signalled");
	bad |= in_child(raised_nofile, "nofile");
	bad |= in_child(two_threads, "threads");
	bad |= in_child(disabled, "disabled");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	if (system(cmd) != 0)
		bad = 1;
	printf("%s: dnotify-backend\n", bad ? "FAIL" : "PASS");
	return bad;
}
