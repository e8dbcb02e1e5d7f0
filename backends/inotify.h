/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The parts of the inotify backend that are pure functions over memory, and
 * hooks for tests and fuzzing. */
#ifndef NX_INOTIFY_H
#define NX_INOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct notifyx;

/* One decoded kernel record. */
struct inrec {
	int wd;
	uint32_t mask, cookie;
	const char *name; /* not NUL-terminated when name_len fills the record */
	size_t name_len;
	size_t size;      /* bytes of the record */
};

/* Decodes the record at buf[pos]; false when it is incomplete or its length
 * points past len.  Reads nothing outside buf[pos..len). */
bool nx_inotify_decode(const char *buf, size_t len, size_t pos, struct inrec *r);
/* NOTIFYX_* requested events to the IN_* bits that deliver them. */
uint32_t nx_inotify_mask(uint32_t events);
/* The NOTIFYX_* type of a kernel event other than a move half, or 0. */
uint32_t nx_inotify_event(uint32_t mask);

/* Tests and fuzzing: processes kernel records as if read from the inotify
 * descriptor of nx (drained: nothing more is to come now).  -1 ENOBUFS when
 * they do not fit in what is left of the read buffer. */
int nx_inotify_feed(struct notifyx *nx, const void *data, size_t len, bool drained);
/* The i-th kernel watch descriptor of nx that serves a watched directory (in
 * no particular order; not those that only guard a root's parent), or -1. */
int nx_inotify_kwd(const struct notifyx *nx, int i);

#endif
