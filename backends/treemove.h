/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the backends that keep a path table of the kernel's objects (inotify,
 * fanotify) share for moves inside a recursive watch.
 */
#ifndef NX_TREEMOVE_H
#define NX_TREEMOVE_H

#include <stdbool.h>
#include <stddef.h>

#include "nx.h"

/* True when n is c or lies below it. */
bool nx_within(const struct nx_node *n, const struct nx_node *c);

/* A rename inside one watch: entry fname of directory node a goes to tname
 * of b (an exchange: the two entries swap). */
struct nx_treemove {
	struct nx_node *a, *b;
	const char *fname, *tname;
	size_t flen, tlen;
	bool isdir, exchange;
	/* Given: the new name is excluded from the watch.  On return: the
	 * directory moved has no node any more (it left the table). */
	bool out;
	/* On return: the nodes moved, the directory that left fname (c) and,
	 * in an exchange, the one that left tname (d); NULL when the table did
	 * not know it or it went. */
	struct nx_node *c, *d;
};

/* Moves the nodes of the table as the rename says: what it replaces, what
 * leaves the watch, and what would make a cycle of a table out of step with
 * the filesystem are given to bury(). */
void nx_treemove(struct notifyx *nx, struct nx_treemove *t,
		 void (*bury)(struct notifyx *nx, struct nx_node *n));

#endif
