/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the subcommands of notifyx(1) share: option parsing of backends and
 * events, and error messages.  Defined in notifyx.c.
 */
#ifndef NOTIFYX_TOOLS_TOOL_H
#define NOTIFYX_TOOLS_TOOL_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

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

/* Comma-separated event names of mask ("none" for 0). */
void put_event_list(FILE *f, uint32_t mask);

/* Adds the comma-separated events of list to *mask ("all" sets *want_all);
 * 0, or -1 after a message. */
int parse_events(const char *list, uint32_t *mask, int *want_all);

/* "notifyx: WHAT: strerror(err)", and which limit to raise for ENOSPC and
 * EMFILE; opening: the error came from notifyx_open. */
void report_error(const char *what, int err, uint32_t backend, int opening);

/* sigaction(sig, sa), unless sig was ignored when the tool started. */
void catch_signal(int sig, const struct sigaction *sa);

/* notifyx run (run.c): 0, 1, 2 as documented in notifyx(1). */
int tool_run(int argc, char **argv);

#endif
