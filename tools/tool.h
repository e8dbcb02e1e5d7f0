/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the subcommands of notifyx(1) share: option parsing of backends and
 * events, and error messages.  Defined in notifyx.c.
 */
#ifndef NOTIFYX_TOOLS_TOOL_H
#define NOTIFYX_TOOLS_TOOL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <getopt.h>

#include <notifyx.h>

/* Exit statuses common to every subcommand (notifyx.1, EXIT STATUS). */
#define EXIT_USAGE 2   /* bad command line */
#define EXIT_TIMEOUT 3 /* watch -t: the time ran out first */

extern const char *progname;

/* "Try 'notifyx CMD --help' ..." on stderr. */
void try_help(const char *cmd);

/* The library's name of backend b, or a fallback. */
const char *backend_name(uint32_t b);

/* auto, inotify, fanotify, dnotify, poll (any case): 0, else -1. */
int parse_backend(const char *s, uint32_t *out);

/* The event name of mask (one bit), or 0x and 8 hex digits. */
void put_event_name(FILE *f, uint32_t mask);

/* Comma-separated event names of mask ("none" for 0). */
void put_event_list(FILE *f, uint32_t mask);

/* Adds the comma-separated events of list to *mask ("all" sets *want_all);
 * 0, or -1 after a message. */
int parse_events(const char *list, uint32_t *mask, int *want_all);

/* "notifyx: WHAT: strerror(err)", and which limit to raise for ENOSPC and
 * EMFILE; opening: the error came from notifyx_open. */
void report_error(const char *what, int err, uint32_t backend, int opening);

/* sigaction(sig, sa), unless sig was ignored when the tool started. */
bool catch_signal(int sig, const struct sigaction *sa);

/* ---- options.c: what watch and run share ---- */

/* Events that a reader of the tree causes (ls, a compiler, the command of
 * run): left out unless asked for. */
#define READ_EVENTS (NOTIFYX_ACCESS | NOTIFYX_OPEN | NOTIFYX_CLOSE_NOWRITE)

/* Long options without a short one (values above any character). */
enum {
	OPT_INCLUDE = 256,
	OPT_EXT,
	OPT_XDEV,
	OPT_NOFOLLOW,
	OPT_FROMFILE,
	OPT_RESCAN,
	OPT_QUEUE_MAX,
	OPT_FIRST_OWN /* each command's own from here */
};

/* The entries of struct option for the options of opts_parse (short ones:
 * "rb:e:x:"). */
#define OPTS_LONG_OPTIONS \
	{ "recursive", no_argument,       NULL, 'r' }, \
	{ "backend",   required_argument, NULL, 'b' }, \
	{ "event",     required_argument, NULL, 'e' }, \
	{ "events",    required_argument, NULL, 'e' }, \
	{ "exclude",   required_argument, NULL, 'x' }, \
	{ "include",   required_argument, NULL, OPT_INCLUDE }, \
	{ "ext",       required_argument, NULL, OPT_EXT }, \
	{ "exts",      required_argument, NULL, OPT_EXT }, \
	{ "xdev",      no_argument,       NULL, OPT_XDEV }, \
	{ "no-follow", no_argument,       NULL, OPT_NOFOLLOW }, \
	{ "fromfile",  required_argument, NULL, OPT_FROMFILE }, \
	{ "rescan",    no_argument,       NULL, OPT_RESCAN }, \
	{ "queue-max", required_argument, NULL, OPT_QUEUE_MAX }

struct paths {
	char **v;
	size_t n, cap;
};

struct watch_opts {
	uint32_t backend, events, flags;
	uint32_t queue_max; /* --queue-max, 0: the library's default */
	int want_all;
	const char **excludes, **includes, **exts;
	size_t nexclude, ninclude, next;
	char **extargs; /* copies of the --ext arguments that exts points into */
	size_t nextarg;
	struct paths paths; /* --fromfile's, then the command line's */
};

/* 0, or -1 after a message. */
int opts_init(struct watch_opts *o, int argc);
void opts_free(struct watch_opts *o);

/* One option of getopt_long: 1 taken, 0 not one of these, -1 usage error
 * (after a message), -2 another error: --fromfile, memory (after a
 * message). */
int opts_parse(struct watch_opts *o, int opt, const char *arg);

/* Adds the PATHs of the command line; 0, or -1 after a message. */
int opts_add_paths(struct watch_opts *o, char **v, int n);

/* Opens the handle, completes o->events with the default or "all", and adds
 * the excludes; NULL after a message. */
struct notifyx *opts_open(struct watch_opts *o);

/* The message for a failed notifyx_add_watch(path) (errno err). */
void opts_add_failed(struct notifyx *nx, const struct watch_opts *o, const char *path, int err);

/* Whether ev passes --include and --ext (always, without them). */
int opts_filter(const struct watch_opts *o, const struct notifyx_event *ev);

/* TERM, SIGTERM, term, 15 ...: 0, else -1. */
int parse_signal(const char *s, int *sig);

/* ---- changes.c: the changes of a burst, for notifyx run ---- */

struct change {
	char *path; /* the watched PATH joined with the entry's path */
	uint32_t mask;
};

struct changes {
	struct change *v; /* in the order of each path's first event */
	size_t n;
	size_t *table;    /* open addressing: index + 1 into v, 0 free */
	size_t tsize;
	unsigned long dropped; /* paths beyond what is kept */
};

/* Notes that path had the event mask (added to its others). */
int changes_add(struct changes *c, const char *path, uint32_t mask);
void changes_clear(struct changes *c);
void changes_free(struct changes *c);

/* Sets NOTIFYX_PATHS, NOTIFYX_EVENTS and NOTIFYX_DROPPED (in the process of
 * the command, after fork); 0, or -1 when out of memory. */
int changes_setenv(const struct changes *c);

/* notifyx run (run.c): 0, 1, 2 as documented in notifyx(1). */
int tool_run(int argc, char **argv);

/* notifyx_add_watch with a progress line on stderr while it runs (a
 * terminal on stderr only; tools/progress.c). */
int add_watch_progress(struct notifyx *nx, const char *path, uint32_t events, uint32_t flags);

#endif
