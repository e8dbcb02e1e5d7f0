/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Output of notifyx watch (format.c): the formats described in notifyx(1),
 * OUTPUT.
 */
#ifndef NOTIFYX_TOOLS_FORMAT_H
#define NOTIFYX_TOOLS_FORMAT_H

#include <stdio.h>
#include <time.h>

#include <notifyx.h>

enum format { FORMAT_TEXT, FORMAT_JSON, FORMAT_NUL, FORMAT_TEMPLATE };

struct output {
	enum format format;
	const char *template; /* FORMAT_TEMPLATE */
	const char *timefmt;  /* --timefmt: strftime(3) format of %T, and of the
			       * time before each text line; NULL: none given */
};

/* The argument of --format into o: 0, or -1 after a message. */
int fmt_parse(struct output *o, const char *arg);

/* --timefmt with o's format: 0, or -1 after a message (json and nul have
 * no place for it). */
int fmt_check_timefmt(const struct output *o);

/* Writes ev, an event of the watch of root, read at now, as o says. */
void fmt_print(FILE *f, const struct output *o, const struct notifyx_event *ev,
	       const char *root, const struct timespec *now);

/* root joined with the relative path rel ("" is root itself); the result
 * stays valid until the next call. */
const char *fmt_join(const char *root, const char *rel);

/* s escaped as in the text format, without the quotes; valid until the next
 * call. */
const char *fmt_escape(const char *s);

#endif /* NOTIFYX_TOOLS_FORMAT_H */
