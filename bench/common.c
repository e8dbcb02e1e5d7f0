/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The watchers the benchmarks compare, and how each one is run: see common.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <ftw.h>
#include <notifyx.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static void leave_cpu(void);

/* ---- the watchers ---------------------------------------------------------------- */

static char *find_prog(const char *name)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save, *found = NULL;

	if (strchr(name, '/'))
		return access(name, X_OK) == 0 ? strdup(name) : NULL;
	copy = strdup(path ? path : "/usr/bin:/bin");
	for (dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
		char *p;

		if (asprintf(&p, "%s/%s", dir, name) < 0)
			break;
		if (access(p, X_OK) == 0)
			found = p;
		else
			free(p);
	}
	free(copy);
	return found;
}

int bench_extras;

static int named(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == 0))
			return 1;
	return 0;
}

static int wanted(const char *name)
{
	const char *list = getenv("NXBENCH_WATCHERS");

	if (!list || !*list)
		return 1;
	return named(list, name);
}

static int wanted_x(const char *name)
{
	const char *list = getenv("NXBENCH_WATCHERS");

	return list && *list ? named(list, name) : bench_extras;
}

/* An extra that runs the library as watcher base does, under its own name:
 * there when the backend is (left out of the selection or not), the extra
 * is asked for, and nothing it needs is missing (unless: why not). */
static struct watcher extra(const struct watcher *base, const char *name, const char *unless)
{
	struct watcher x = *base;

	x.name = name;
	if (!base->absent || strcmp(base->absent, "not selected") == 0)
		x.absent = unless ? unless : wanted_x(name) ? NULL : "not selected";
	return x;
}

int watchers_all(struct watcher **out)
{
	static const uint32_t backends[] = { NOTIFYX_BACKEND_INOTIFY, NOTIFYX_BACKEND_FANOTIFY,
					     NOTIFYX_BACKEND_DNOTIFY, NOTIFYX_BACKEND_POLL };
	static const char *const tools[][2] = {
		{ "notifyx watch", "notifyx" }, { "inotifywait", "inotifywait" }, { "fswatch", "fswatch" },
	};
	struct watcher *w = calloc(12, sizeof(*w));
	int n = 0;

	w[n++] = (struct watcher){ .name = "raw", .kind = W_RAW };
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		struct notifyx_config c = { .size = sizeof(c), .backend = backends[i] };
		struct notifyx *nx = notifyx_open(&c);

		w[n] = (struct watcher){ .name = notifyx_backend_name(backends[i]), .kind = W_LIB,
					 .backend = backends[i] };
		if (!nx)
			w[n].absent = errno == ENOSYS ? "not available" : strdup(strerror(errno));
		notifyx_close(nx);
		n++;
	}
	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		const char *prog = tools[i][1];

		if (strcmp(prog, "notifyx") == 0 && getenv("NXBENCH_NOTIFYX"))
			prog = getenv("NXBENCH_NOTIFYX");
		w[n] = (struct watcher){ .name = tools[i][0], .kind = W_CMD, .prog = find_prog(prog) };
		if (!w[n].prog)
			w[n].absent = "not installed";
		n++;
	}
	for (int i = 0; i < n; i++)
		if (!wanted(w[i].name))
			w[i].absent = "not selected";
	/* The extras: the tool with its progress thread, fanotify's inode marks
	 * (as user nobody), its filesystem mark whatever the tree's size
	 * (root: the library's policy takes inode marks for smaller trees),
	 * and the inotify backend read from an event loop. */
	w[n] = w[5];
	w[n].name = "notifyx watch tty";
	w[n].tty = 1;
	if (!w[n].prog)
		w[n].absent = "not installed";
	else
		w[n].absent = wanted_x(w[n].name) ? NULL : "not selected";
	n++;
	w[n] = extra(&w[2], "fanotify inode", NULL);
	w[n++].unpriv = 1;
	w[n] = extra(&w[2], "fanotify fs mark", geteuid() ? "needs root" : NULL);
	w[n++].env = "NOTIFYX_FANOTIFY_INODE_MAX=0";
	w[n] = extra(&w[1], "inotify loop", NULL);
	w[n++].evloop = 1;
	*out = w;
	return n;
}

/* ---- the watchers' own loops (in forked children) ------------------------------- */

static FILE *child_out;

static void child_ready(double t0)
{
	fprintf(child_out, "ready %.9f\n", now() - t0);
	fflush(child_out);
}

static bool child_stopped;

/* One event seen: prints it or counts it; at STOP, says so at once. */
static void child_event(const struct wopts *o, const char *path, unsigned long *count)
{
	if (child_stopped && !o->lines)
		return;
	++*count;
	if (o->lines)
		fprintf(child_out, "%s\n", path);
	if (strcmp(path, "STOP") == 0 && !child_stopped) {
		if (!o->lines)
			fprintf(child_out, "end %lu\n", *count);
		fflush(child_out);
		child_stopped = true;
	}
}

/* The end of one read: after STOP, the rest of the batch that held it is
 * printed too (a scanning backend reports what one scan found in no
 * particular order), then the watcher waits to be killed. */
static void child_batch_done(const struct wopts *o)
{
	if (o->lines || child_stopped)
		fflush(child_out);
	while (child_stopped)
		pause();
}

/* The raw reader: what a minimal C program does with inotify (nftw and one
 * inotify_add_watch per directory; a directory created later is watched when
 * its CREATE is read, with no look inside it). */
static int raw_fd;
static uint32_t raw_mask;
static char **raw_path;
static size_t raw_cap;
static size_t raw_root_len;

static int raw_add(const char *path, const char *rel)
{
	int wd = inotify_add_watch(raw_fd, path, raw_mask | IN_ONLYDIR);

	if (wd < 0)
		return -1;
	if ((size_t)wd >= raw_cap) {
		size_t cap = raw_cap ? raw_cap * 2 : 1024;

		while (cap <= (size_t)wd)
			cap *= 2;
		raw_path = realloc(raw_path, cap * sizeof(*raw_path));
		memset(raw_path + raw_cap, 0, (cap - raw_cap) * sizeof(*raw_path));
		raw_cap = cap;
	}
	free(raw_path[wd]);
	raw_path[wd] = strdup(rel);
	return 0;
}

static int raw_add_ftw(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type != FTW_D)
		return 0;
	return raw_add(path, path[raw_root_len] ? path + raw_root_len + 1 : "");
}

static void raw_child(const struct wopts *o)
{
	static char buf[65536] __attribute__((aligned(8)));
	unsigned long count = 0;
	char *full = malloc(2 * 4096 + 2), *rel = malloc(2 * 4096 + 2);
	double t0 = now();
	ssize_t n;

	raw_mask = (o->events & B_CREATE ? IN_CREATE : 0) | (o->events & B_MODIFY ? IN_MODIFY : 0) |
		   (o->events & B_DELETE ? IN_DELETE : 0) | (o->events & B_MOVED ? IN_MOVED_TO : 0) |
		   (o->events & B_MOVED_OUT ? IN_MOVED_FROM : 0);
	if (o->recursive)
		raw_mask |= IN_CREATE;
	raw_fd = inotify_init1(IN_CLOEXEC);
	raw_root_len = strlen(o->dir);
	if (raw_fd < 0 || (o->recursive ? nftw(o->dir, raw_add_ftw, 64, FTW_PHYS)
					: raw_add(o->dir, "")) < 0)
		_exit(3);
	child_ready(t0);
	while ((n = read(raw_fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;
			const char *dir = ev->wd > 0 && (size_t)ev->wd < raw_cap ? raw_path[ev->wd] : NULL;

			p += sizeof(*ev) + ev->len;
			if (!dir || !ev->len)
				continue;
			if (!o->lines && !o->recursive) { /* counting: no path to make */
				if (ev->mask & raw_mask)
					child_event(o, *dir ? "" : ev->name, &count);
				continue;
			}
			if (*dir)
				snprintf(rel, 2 * 4096 + 2, "%s/%s", dir, ev->name);
			else
				snprintf(rel, 2 * 4096 + 2, "%s", ev->name);
			if (o->recursive && (ev->mask & (IN_CREATE | IN_MOVED_TO)) &&
			    (ev->mask & IN_ISDIR)) {
				snprintf(full, 2 * 4096 + 2, "%s/%s", o->dir, rel);
				raw_add(full, rel);
			}
			if (ev->mask & raw_mask & ~(o->recursive && !(o->events & B_CREATE) ? IN_CREATE : 0))
				child_event(o, rel, &count);
		}
		child_batch_done(o);
	}
	_exit(3);
}

static void lib_child(const struct watcher *w, const struct wopts *o)
{
	static char buf[65536] __attribute__((aligned(8)));
	struct notifyx_config c = { .size = sizeof(c), .backend = w->backend,
				    .flags = w->evloop ? NOTIFYX_NONBLOCK : 0 };
	uint32_t events = (o->events & B_CREATE ? NOTIFYX_CREATE : 0) |
			  (o->events & B_MODIFY ? NOTIFYX_MODIFY : 0) |
			  (o->events & B_DELETE ? NOTIFYX_DELETE : 0) |
			  (o->events & B_MOVED ? NOTIFYX_MOVED_IN | NOTIFYX_RENAME : 0) |
			  (o->events & B_MOVED_OUT ? NOTIFYX_MOVED_OUT : 0);
	unsigned long count = 0;
	double t0;
	struct notifyx *nx;
	ssize_t n;

	/* Without privilege (fanotify: inode marks, not a filesystem mark). */
	if (w->unpriv && (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)) {
		fprintf(stderr, "%s: setuid: %s\n", w->name, strerror(errno));
		_exit(3);
	}
	t0 = now();
	nx = notifyx_open(&c);

	if (!nx || notifyx_add_watch(nx, o->dir, events,
				     o->recursive ? NOTIFYX_WATCH_RECURSIVE : 0) < 0) {
		fprintf(stderr, "%s: %s\n", w->name, strerror(errno));
		_exit(3);
	}
	child_ready(t0);
	for (;;) {
		struct pollfd pfd = { .fd = notifyx_fd(nx), .events = POLLIN };

		if (w->evloop && poll(&pfd, 1, -1) < 0)
			break;
		n = notifyx_read(nx, buf, sizeof(buf));
		if (n < 0 && w->evloop && errno == EAGAIN)
			continue;
		if (n <= 0)
			break;
		for (const struct notifyx_event *ev = (const void *)buf; (const char *)ev < buf + n;
		     ev = notifyx_event_next(ev))
			if (ev->mask & events)
				child_event(o, notifyx_event_path(ev), &count);
		child_batch_done(o);
	}
	fprintf(stderr, "%s: notifyx_read: %s\n", w->name, strerror(errno));
	_exit(3);
}

/* ---- the tools' command lines ------------------------------------------------------- */

static char **tool_argv(const struct watcher *w, const struct wopts *o)
{
	char **a = calloc(32, sizeof(*a)), list[64] = "";
	const char *base = strrchr(w->prog, '/') ? strrchr(w->prog, '/') + 1 : w->prog;
	int n = 0;

	a[n++] = w->prog;
	if (strcmp(base, "notifyx") == 0 || strncmp(base, "lt-notifyx", 10) == 0) {
		/* the same events as the others; the tool's default backend (AUTO) */
		snprintf(list, sizeof(list), "%s%s%s%s%s", o->events & B_CREATE ? ",create" : "",
			 o->events & B_MODIFY ? ",modify" : "", o->events & B_DELETE ? ",delete" : "",
			 o->events & B_MOVED ? ",moved_in,rename" : "",
			 o->events & B_MOVED_OUT ? ",moved_out" : "");
		a[n++] = "watch";
		a[n++] = "-e";
		a[n++] = strdup(list + 1);
		if (o->recursive)
			a[n++] = "-r";
	} else if (strcmp(base, "inotifywait") == 0) {
		a[n++] = "-m";
		a[n++] = "-q";
		static const char *const ev[] = { "create", "modify", "delete", "moved_to", "moved_from" };
		for (int i = 0; i < 5; i++)
			if (o->events & (1u << i)) {
				a[n++] = "-e";
				a[n++] = (char *)ev[i];
			}
		if (o->recursive)
			a[n++] = "-r";
		a[n++] = "--format";
		a[n++] = "%e %w%f";
	} else { /* fswatch: its inotify monitor, the shortest latency it takes */
		static const char *const ev[] = { "Created", "Updated", "Removed", "MovedTo", "MovedFrom" };
		a[n++] = "-m";
		a[n++] = "inotify_monitor";
		a[n++] = "-l";
		a[n++] = "0.01";
		a[n++] = "-x";
		/* its kernel watches ask for every event, so a burst or its own
		 * scan of a tree overflows the kernel queue: go on after that */
		a[n++] = "--allow-overflow";
		for (int i = 0; i < 5; i++)
			if (o->events & (1u << i)) {
				a[n++] = "--event";
				a[n++] = (char *)ev[i];
			}
		if (o->recursive)
			a[n++] = "-r";
	}
	a[n++] = (char *)o->dir;
	return a;
}

/* ---- running one ----------------------------------------------------------------------- */

int wp_start(struct wproc *p, const struct watcher *w, const struct wopts *o)
{
	int fds[2];

	memset(p, 0, sizeof(*p));
	p->w = w;
	p->ptyfd = -1;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	if (w->tty) {
		p->ptyfd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (p->ptyfd < 0 || grantpt(p->ptyfd) < 0 || unlockpt(p->ptyfd) < 0)
			return -1;
		fcntl(p->ptyfd, F_SETFL, O_NONBLOCK);
	}
	fflush(stdout);
	p->started = now();
	p->pid = fork();
	if (p->pid < 0)
		return -1;
	if (p->pid == 0) {
		if (o->own_cpu)
			leave_cpu();
		dup2(fds[1], 1);
		int null = open("/dev/null", O_WRONLY);
		if (w->env)
			putenv((char *)w->env);
		if (w->kind == W_CMD) {
			int tty = p->ptyfd >= 0 ? open(ptsname(p->ptyfd), O_WRONLY | O_NOCTTY) : -1;
			dup2(tty >= 0 ? tty : null, 2);
			execv(w->prog, tool_argv(w, o));
			_exit(127);
		}
		child_out = fdopen(1, "w");
		setvbuf(child_out, NULL, _IOFBF, 65536);
		if (w->kind == W_RAW)
			raw_child(o);
		lib_child(w, o);
	}
	close(fds[1]);
	p->fd = fds[0];
	return 0;
}

char *wp_line(struct wproc *p, double timeout)
{
	static char line[65536];
	double end = now() + timeout;

	for (;;) {
		char *nl = memchr(p->buf, '\n', p->have);

		if (nl) {
			size_t len = nl - p->buf;

			memcpy(line, p->buf, len);
			line[len] = 0;
			memmove(p->buf, nl + 1, p->have - len - 1);
			p->have -= len + 1;
			return line;
		}
		if (p->have == sizeof(p->buf))
			p->have = 0; /* a line longer than any path: drop it */
		double left = end - now();
		struct pollfd pfd = { .fd = p->fd, .events = POLLIN };

		if (p->ptyfd >= 0) { /* what the tool wrote to its terminal: dropped */
			char junk[4096];

			while (read(p->ptyfd, junk, sizeof(junk)) > 0)
				;
			if (left > 0.05)
				left = 0.05; /* back soon to drain it again */
		}
		if (left <= 0 || poll(&pfd, 1, (int)(left * 1000) + 1) <= 0) {
			if (p->ptyfd >= 0 && end - now() > 0)
				continue;
			return NULL;
		}
		ssize_t n = read(p->fd, p->buf + p->have, sizeof(p->buf) - p->have);
		if (n <= 0) {
			p->eof = 1;
			return NULL;
		}
		p->have += n;
	}
}

int wp_ready(struct wproc *p, const char *probe_dir, double timeout)
{
	double end = p->started + timeout;
	char *l;

	if (p->w->kind != W_CMD) {
		l = wp_line(p, timeout);
		if (!l || sscanf(l, "ready %lf", &p->ready_s) != 1)
			return -1;
		return 0;
	}
	for (int k = 0; now() < end && !p->eof; k++) {
		char name[32];

		snprintf(name, sizeof(name), "nxprobe%d", k);
		touch(probe_dir, name);
		while ((l = wp_line(p, 0.02)))
			if (strstr(l, "nxprobe")) {
				p->ready_s = now() - p->started;
				while (wp_line(p, 0.3)) /* the other probes */
					;
				return 0;
			}
	}
	return -1;
}

double wp_cpu(const struct wproc *p)
{
	char path[64], line[256];
	double total = 0;
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)p->pid);
	dir = opendir(path);
	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		char file[600];
		FILE *f;

		if (d->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s/sched", path, d->d_name);
		if (!(f = fopen(file, "r")))
			continue;
		while (fgets(line, sizeof(line), f)) {
			double ms;

			if (strncmp(line, "se.sum_exec_runtime", 19) == 0 &&
			    sscanf(strchr(line, ':') + 1, "%lf", &ms) == 1)
				total += ms / 1e3;
		}
		fclose(f);
	}
	closedir(dir);
	return total;
}

long wp_rss_kb(const struct wproc *p)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)p->pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

long self_field_kb(const char *file, const char *field)
{
	char line[256];
	size_t n = strlen(field);
	long kb = -1;
	FILE *f = fopen(file, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, n) == 0 && sscanf(line + n, "%ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

void wp_stop(struct wproc *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
	}
	if (p->fd > 0)
		close(p->fd);
	if (p->ptyfd >= 0)
		close(p->ptyfd);
	p->pid = 0;
	p->fd = -1;
	p->ptyfd = -1;
}

/* The CPUs online beside the one this process runs on (pin_cpu). */
static cpu_set_t other_set(void)
{
	cpu_set_t set;
	long n = sysconf(_SC_NPROCESSORS_ONLN), self = sched_getcpu();

	CPU_ZERO(&set);
	for (long i = 0; i < n && i < CPU_SETSIZE; i++)
		if (i != self)
			CPU_SET(i, &set);
	return set;
}

int other_cpus(void)
{
	cpu_set_t set = other_set();

	return CPU_COUNT(&set);
}

/* Moves a watcher off the CPU of the program that makes the changes. */
static void leave_cpu(void)
{
	cpu_set_t set = other_set();

	if (CPU_COUNT(&set))
		sched_setaffinity(0, sizeof(set), &set);
}

void pin_cpu(void)
{
	cpu_set_t set;
	int cpu = sched_getcpu();

	if (getenv("NXBENCH_NOPIN") || cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* ---- results and files ------------------------------------------------------------ */

void tsv(const char *workload, long size, const char *watcher, const char *metric, double value)
{
	const char *name = getenv("NXBENCH_TSV");
	FILE *f;

	if (!name || !*name || !(f = fopen(name, "a")))
		return;
	fprintf(f, "%s\t%ld\t%s\t%s\t%.6g\n", workload, size, watcher, metric, value);
	fclose(f);
}

char *mktemp_dir(void)
{
	const char *base = getenv("NXBENCH_DIR");
	char *d;

	if (asprintf(&d, "%s/nxbench.XXXXXX", base && *base ? base : "/tmp") < 0 || !mkdtemp(d)) {
		perror("mkdtemp");
		exit(1);
	}
	return d;
}

void touch(const char *dir, const char *name)
{
	int fd = openat(AT_FDCWD, dir, O_PATH | O_DIRECTORY);
	int f = openat(fd, name, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

	if (f >= 0)
		close(f);
	close(fd);
}

char *tree_path(const char *root, int i)
{
	char *up, *p;

	if (i < 0)
		return strdup(root);
	up = tree_path(root, i ? (i - 1) / 10 : -1);
	if (asprintf(&p, "%s/d%d", up, i) < 0)
		exit(1);
	free(up);
	return p;
}

char *make_tree(const char *root, int n)
{
	pid_t pid;

	/* In a child of its own: the watchers are forked from this process, and
	 * memory it freed would be reused by them without showing in their RSS. */
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char **path = calloc(n, sizeof(*path));

		for (int i = 0; i < n; i++) {
			const char *parent = i ? path[(i - 1) / 10] : root;

			if (asprintf(&path[i], "%s/d%d", parent, i) < 0 || mkdir(path[i], 0755) < 0) {
				perror(path[i]);
				_exit(1);
			}
			touch(path[i], "f");
		}
		_exit(0);
	}
	int status;
	if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
		exit(1);
	return tree_path(root, n - 1);
}
