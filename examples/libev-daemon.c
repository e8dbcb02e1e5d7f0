/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libev-daemon: a daemon on libev that logs one line per event.
 *
 *   libev-daemon LISTFILE
 *
 * LISTFILE names the paths to watch, one per line (empty lines and lines
 * starting with '#' are skipped); directories are watched recursively.
 *   ev_io     on notifyx_fd: read and log the events
 *   ev_signal SIGHUP: read LISTFILE again; watches of paths no longer listed
 *             are removed, new paths are added, the others go on untouched
 *   ev_signal SIGTERM, SIGINT: a clean shutdown
 * Standard output: "EVENT ROOT/PATH" (ROOT as listed); standard error:
 * "libev-daemon: watching N paths" after each (re)load, errors, and
 * "libev-daemon: stopped" at the end.
 * Exit status: 0 after SIGTERM or SIGINT, 1 on an error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ev.h>
#include <notifyx.h>

#define EVENTS (NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME | NOTIFYX_MOVED_IN | \
		NOTIFYX_MOVED_OUT | NOTIFYX_CLOSE_WRITE | NOTIFYX_DELETE_SELF)
#define MAX_PATHS 256

struct watch {
	char *path;
	int wd;
	int removed; /* rm_watch done: kept until its IGNORED, for the log line */
};

struct daemon {
	struct notifyx *nx;
	const char *listfile;
	struct watch watches[MAX_PATHS];
	int nwatch;
	int status;
};

/* Reads listfile into paths (malloc'd); the number of paths, or -1. */
static int read_list(const char *listfile, char **paths)
{
	FILE *f = fopen(listfile, "re");
	char *line = NULL;
	size_t size = 0;
	ssize_t len;
	int n = 0;

	if (!f) {
		fprintf(stderr, "libev-daemon: %s: %s\n", listfile, strerror(errno));
		return -1;
	}
	while ((len = getline(&line, &size, f)) >= 0 && n < MAX_PATHS) {
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len == 0 || line[0] == '#')
			continue;
		paths[n] = strdup(line);
		if (paths[n])
			n++;
	}
	free(line);
	fclose(f);
	return n;
}

static int listed(char **paths, int n, const char *path)
{
	int i;

	for (i = 0; i < n; i++)
		if (paths[i] && strcmp(paths[i], path) == 0)
			return 1;
	return 0;
}

/* Makes the watches follow listfile. */
static void load(struct daemon *d)
{
	char *paths[MAX_PATHS];
	int n = read_list(d->listfile, paths), i, j;

	if (n < 0)
		return; /* keep what is watched */
	/* paths that are gone from the list: their watches end */
	for (i = 0; i < d->nwatch; i++) {
		if (!d->watches[i].removed && !listed(paths, n, d->watches[i].path)) {
			notifyx_rm_watch(d->nx, d->watches[i].wd);
			d->watches[i].removed = 1;
		}
	}
	/* new paths: new watches */
	for (i = 0; i < n; i++) {
		struct stat st;
		int known = 0, wd;

		for (j = 0; j < d->nwatch; j++)
			known |= !d->watches[j].removed && strcmp(d->watches[j].path, paths[i]) == 0;
		if (known || d->nwatch == MAX_PATHS) {
			free(paths[i]);
			continue;
		}
		/* the scanning backends cannot report CLOSE_WRITE: ask only for what is there */
		wd = notifyx_add_watch(d->nx, paths[i], EVENTS & notifyx_supported_events(d->nx),
				       stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode) ?
				       NOTIFYX_WATCH_RECURSIVE : 0);
		if (wd < 0) {
			fprintf(stderr, "libev-daemon: %s: %s\n", paths[i], strerror(errno));
			free(paths[i]);
			continue;
		}
		d->watches[d->nwatch].path = paths[i];
		d->watches[d->nwatch].wd = wd;
		d->watches[d->nwatch].removed = 0;
		d->nwatch++;
	}
	for (i = 0, j = 0; i < d->nwatch; i++)
		j += !d->watches[i].removed;
	fprintf(stderr, "libev-daemon: watching %d paths\n", j);
}

/*
 * The path a watch was added with.  The application keeps its own table:
 * notifyx_watch_path stops answering once the wd's IGNORED has been read,
 * and that may be in the very batch being logged.
 */
static struct watch *find(struct daemon *d, int wd)
{
	int i;

	for (i = 0; i < d->nwatch; i++)
		if (d->watches[i].wd == wd)
			return &d->watches[i];
	return NULL;
}

/* IGNORED: the watch is over, whether removed or ended by itself. */
static void forget(struct daemon *d, struct watch *w)
{
	free(w->path);
	*w = d->watches[--d->nwatch];
}

static void on_events(struct ev_loop *loop, ev_io *w, int revents)
{
	struct daemon *d = w->data;
	/* union: the records need the alignment of struct notifyx_event */
	static union {
		struct notifyx_event ev;
		char bytes[NOTIFYX_EVENT_MAX];
	} buf;
	const struct notifyx_event *ev;
	ssize_t n;

	(void)revents;
	while ((n = notifyx_read(d->nx, buf.bytes, sizeof(buf.bytes))) > 0) {
		notifyx_for_each_event(ev, buf.bytes, n) {
			struct watch *wt = find(d, ev->wd);
			const char *name = notifyx_event_name(ev->mask);
			const char *path = notifyx_event_path(ev);

			printf("%s %s%s%s\n", name ? name : "?", wt ? wt->path : "?",
			       path[0] ? "/" : "", path);
			if (wt && ev->mask == NOTIFYX_IGNORED)
				forget(d, wt);
		}
	}
	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		perror("libev-daemon: notifyx_read");
		d->status = 1;
		ev_break(loop, EVBREAK_ALL);
	}
}

static void on_hup(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	load(w->data);
}

static void on_stop(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

int main(int argc, char **argv)
{
	struct notifyx_config cfg = { .size = sizeof(cfg), .flags = NOTIFYX_NONBLOCK };
	struct daemon d = { .status = 0 };
	struct ev_loop *loop;
	ev_io io;
	ev_signal hup, term, intr;
	int i;

	if (argc != 2) {
		fprintf(stderr, "usage: %s LISTFILE\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0); /* a log line is written when it happens */
	d.listfile = argv[1];
	d.nx = notifyx_open(&cfg);
	loop = ev_default_loop(EVFLAG_AUTO);
	if (!d.nx || !loop) {
		fprintf(stderr, "libev-daemon: %s\n", d.nx ? "no libev loop" : strerror(errno));
		notifyx_close(d.nx);
		return 1;
	}
	ev_io_init(&io, on_events, notifyx_fd(d.nx), EV_READ);
	io.data = &d;
	ev_io_start(loop, &io);
	ev_signal_init(&hup, on_hup, SIGHUP);
	hup.data = &d;
	ev_signal_start(loop, &hup);
	ev_signal_init(&term, on_stop, SIGTERM);
	ev_signal_start(loop, &term);
	ev_signal_init(&intr, on_stop, SIGINT);
	ev_signal_start(loop, &intr);
	/* after the signal watchers: "watching" means a signal is handled now */
	load(&d);

	ev_run(loop, 0);

	/* a clean shutdown: every watch, descriptor and byte goes back */
	notifyx_close(d.nx);
	for (i = 0; i < d.nwatch; i++)
		free(d.watches[i].path);
	ev_loop_destroy(loop);
	fprintf(stderr, "libev-daemon: stopped\n");
	return d.status;
}
