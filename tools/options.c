/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The options that notifyx watch and notifyx run share: what to watch
 * (PATHs, --fromfile, -r, --xdev, --no-follow), which events (-e), and which
 * entries (-x, --include, --ext).  Also --signal's names.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <notifyx.h>

#include "tool.h"

/* ---- PATHs --------------------------------------------------------------- */

static int paths_add(struct paths *p, const char *s, size_t len)
{
	char *copy;

	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		char **v = realloc(p->v, cap * sizeof(*v));

		if (!v)
			return -1;
		p->v = v;
		p->cap = cap;
	}
	copy = strndup(s, len);
	if (!copy)
		return -1;
	p->v[p->n++] = copy;
	return 0;
}

/* One path a line; empty lines are skipped; "-" is standard input. */
static int paths_from_file(struct paths *p, const char *file)
{
	FILE *f = strcmp(file, "-") == 0 ? stdin : fopen(file, "re");
	char *line = NULL;
	size_t size = 0;
	ssize_t n;
	int err = 0;

	if (!f) {
		report_error(file, errno, 0, 0);
		return -1;
	}
	while ((n = getline(&line, &size, f)) >= 0) {
		if (n > 0 && line[n - 1] == '\n')
			n--;
		if (n > 0 && paths_add(p, line, (size_t)n) < 0) {
			err = ENOMEM;
			break;
		}
	}
	if (!err && ferror(f))
		err = errno ? errno : EIO;
	free(line);
	if (f != stdin)
		fclose(f);
	if (err) {
		report_error(file, err, 0, 0);
		return -1;
	}
	return 0;
}

/* ---- --include and --ext ---------------------------------------------------- */

/* Matches name (the entry's path below its watched PATH) as notifyx_exclude(3)
 * matches its patterns: with a slash, the whole path, else the last name. */
static int glob_match(const char *glob, const char *path)
{
	const char *base = strrchr(path, '/');

	if (strchr(glob, '/'))
		return fnmatch(glob, path, FNM_PATHNAME) == 0;
	return fnmatch(glob, base ? base + 1 : path, 0) == 0;
}

static int ext_match(const char *ext, const char *path)
{
	const char *base = strrchr(path, '/');
	size_t n, e = strlen(ext);

	base = base ? base + 1 : path;
	n = strlen(base);
	/* "NAME.EXT", with something before the dot */
	return n > e + 1 && base[n - e - 1] == '.' && strcmp(base + n - e, ext) == 0;
}

static int filter_path(const struct watch_opts *o, const char *path)
{
	size_t i;

	for (i = 0; i < o->ninclude; i++)
		if (glob_match(o->includes[i], path))
			return 1;
	for (i = 0; i < o->next; i++)
		if (ext_match(o->exts[i], path))
			return 1;
	return 0;
}

int opts_filter(const struct watch_opts *o, const struct notifyx_event *ev)
{
	const char *old = notifyx_event_old_path(ev);

	if (o->ninclude == 0 && o->next == 0)
		return 1;
	/* the watched PATHs themselves, and errors, are never filtered out */
	if (ev->path_len == 0 || ev->mask == NOTIFYX_ERROR)
		return 1;
	return filter_path(o, notifyx_event_path(ev)) || (old && filter_path(o, old));
}

/* "c,h" or ".c,.h": adds each extension (list is cut up in place); -1 after
 * a message. */
static int add_exts(struct watch_opts *o, char *list)
{
	char *e = list, *comma;

	do {
		comma = strchr(e, ',');
		if (comma)
			*comma = '\0';
		if (*e == '.')
			e++;
		if (*e == '\0' || strchr(e, '/')) {
			fprintf(stderr, "%s: --ext: '%s' is not an extension\n", progname, e);
			return -1;
		}
		o->exts[o->next++] = e;
		e = comma + 1;
	} while (comma);
	return 0;
}

/* ---- parsing ------------------------------------------------------------------ */

int opts_init(struct watch_opts *o, int argc)
{
	memset(o, 0, sizeof(*o));
	o->backend = NOTIFYX_BACKEND_AUTO;
	/* each option adds at most one glob, and --ext at most one
	 * extension per character of its argument */
	o->excludes = calloc((size_t)argc + 1, sizeof(*o->excludes));
	o->includes = calloc((size_t)argc + 1, sizeof(*o->includes));
	if (!o->excludes || !o->includes) {
		fprintf(stderr, "%s: %s\n", progname, strerror(ENOMEM));
		return -1;
	}
	return 0;
}

void opts_free(struct watch_opts *o)
{
	size_t i;

	for (i = 0; i < o->paths.n; i++)
		free(o->paths.v[i]);
	free(o->paths.v);
	free(o->excludes);
	free(o->includes);
	free(o->exts);
	for (i = 0; i < o->nextarg; i++)
		free(o->extargs[i]);
	free(o->extargs);
}

int opts_parse(struct watch_opts *o, int opt, const char *arg)
{
	switch (opt) {
	case 'r':
		o->flags |= NOTIFYX_WATCH_RECURSIVE;
		return 1;
	case 'b':
		if (parse_backend(arg, &o->backend) < 0) {
			fprintf(stderr, "%s: unknown backend '%s' (known: auto, "
				"inotify, fanotify, dnotify, poll)\n", progname, arg);
			return -1;
		}
		return 1;
	case 'e':
		return parse_events(arg, &o->events, &o->want_all) < 0 ? -1 : 1;
	case 'x':
		o->excludes[o->nexclude++] = arg;
		return 1;
	case OPT_INCLUDE:
		o->includes[o->ninclude++] = arg;
		return 1;
	case OPT_EXT: {
		size_t len = strlen(arg);
		char **args = realloc(o->extargs, (o->nextarg + 1) * sizeof(*args));
		const char **exts = realloc(o->exts, (o->next + len + 1) * sizeof(*exts));
		char *copy;

		if (args)
			o->extargs = args;
		if (exts)
			o->exts = exts;
		copy = args && exts ? strdup(arg) : NULL;
		if (!copy) {
			fprintf(stderr, "%s: %s\n", progname, strerror(ENOMEM));
			return -2;
		}
		o->extargs[o->nextarg++] = copy;
		return add_exts(o, copy) < 0 ? -1 : 1;
	}
	case OPT_XDEV:
		o->flags |= NOTIFYX_WATCH_XDEV;
		return 1;
	case OPT_NOFOLLOW:
		o->flags |= NOTIFYX_WATCH_NOFOLLOW;
		return 1;
	case OPT_FROMFILE:
		return paths_from_file(&o->paths, arg) < 0 ? -2 : 1;
	case OPT_RESCAN:
		o->flags |= NOTIFYX_WATCH_RESCAN;
		return 1;
	case OPT_QUEUE_MAX: {
		char *end;
		unsigned long n;

		errno = 0;
		n = strtoul(arg, &end, 10);
		if (errno || *end || end == arg || arg[0] == '-' || n == 0 || n > UINT32_MAX) {
			fprintf(stderr, "%s: --queue-max: '%s' is not a whole number from 1\n",
				progname, arg);
			return -1;
		}
		o->queue_max = (uint32_t)n;
		return 1;
	}
	default:
		return 0;
	}
}

int opts_add_paths(struct watch_opts *o, char **v, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (paths_add(&o->paths, v[i], strlen(v[i])) < 0) {
			fprintf(stderr, "%s: %s\n", progname, strerror(ENOMEM));
			return -1;
		}
	}
	return 0;
}

/* ---- the handle ------------------------------------------------------------------ */

struct notifyx *opts_open(struct watch_opts *o)
{
	struct notifyx_config cfg;
	struct notifyx *nx;
	uint32_t supported;
	size_t i;

	memset(&cfg, 0, sizeof(cfg));
	cfg.size = sizeof(cfg);
	cfg.backend = o->backend;
	cfg.flags = NOTIFYX_NONBLOCK;
	cfg.queue_max = o->queue_max;
	nx = notifyx_open(&cfg);
	if (!nx) {
		int err = errno;
		char what[64];

		snprintf(what, sizeof(what), "backend %s", backend_name(o->backend));
		report_error(what, err, o->backend, 1);
		return NULL;
	}
	/* by default, not what a reader of the tree causes (ls, a compiler) */
	supported = notifyx_supported_events(nx) & NOTIFYX_ALL_EVENTS;
	if (o->want_all)
		o->events |= supported;
	else if (o->events == 0)
		o->events = supported & ~(uint32_t)READ_EVENTS;
	for (i = 0; i < o->nexclude; i++) {
		if (notifyx_exclude(nx, o->excludes[i]) < 0) {
			report_error(o->excludes[i], errno, notifyx_backend(nx), 0);
			notifyx_close(nx);
			return NULL;
		}
	}
	return nx;
}

void opts_add_failed(struct notifyx *nx, const struct watch_opts *o, const char *path, int err)
{
	uint32_t b = notifyx_backend(nx), missing = o->events & ~notifyx_supported_events(nx);

	report_error(path, err, b, 0);
	if (err == EOPNOTSUPP && missing) {
		fprintf(stderr, "%s: the %s backend cannot report: ", progname, backend_name(b));
		put_event_list(stderr, missing);
		fputc('\n', stderr);
	}
}

/* ---- signals -------------------------------------------------------------------- */

static const struct {
	const char *name;
	int sig;
} signals[] = {
	{ "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT }, { "ILL", SIGILL },
	{ "TRAP", SIGTRAP }, { "ABRT", SIGABRT }, { "BUS", SIGBUS }, { "FPE", SIGFPE },
	{ "KILL", SIGKILL }, { "USR1", SIGUSR1 }, { "SEGV", SIGSEGV }, { "USR2", SIGUSR2 },
	{ "PIPE", SIGPIPE }, { "ALRM", SIGALRM }, { "TERM", SIGTERM }, { "CHLD", SIGCHLD },
	{ "CONT", SIGCONT }, { "STOP", SIGSTOP }, { "TSTP", SIGTSTP }, { "TTIN", SIGTTIN },
	{ "TTOU", SIGTTOU }, { "URG", SIGURG }, { "XCPU", SIGXCPU }, { "XFSZ", SIGXFSZ },
	{ "VTALRM", SIGVTALRM }, { "PROF", SIGPROF }, { "WINCH", SIGWINCH }, { "IO", SIGIO },
	{ "PWR", SIGPWR }, { "SYS", SIGSYS },
};

int parse_signal(const char *s, int *sig)
{
	const char *name = strncasecmp(s, "SIG", 3) == 0 ? s + 3 : s;
	char *end;
	long v;
	size_t i;

	for (i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
		if (strcasecmp(name, signals[i].name) == 0) {
			*sig = signals[i].sig;
			return 0;
		}
	}
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 1 || v > SIGRTMAX)
		return -1;
	*sig = (int)v;
	return 0;
}
