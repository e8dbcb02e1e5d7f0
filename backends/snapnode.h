/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Node primitives that the snapshot reader (snapshot.c) and the diff
 * (snapdiff.c) share; nothing else uses them.
 */
#ifndef NX_SNAPNODE_H
#define NX_SNAPNODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "snapshot.h"

/* A node named name (copied with it), zeroed otherwise; NULL, ENOMEM. */
struct nx_snode *nx_snode_new(const char *name, size_t len);
/* memcmp order of names, the shorter first on a tie.  Inline, as the
 * next one: a diff or a listing calls them once or twice per entry. */
static inline int nx_snode_cmp_name(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c ? c : (alen > blen) - (alen < blen);
}
/* Index of name in dir's kids, or of where it would go (*found false). */
uint32_t nx_snode_pos(const struct nx_snode *dir, const char *name, size_t len, bool *found);
/* nx_snap_take, but o is left for the caller to put into cur_dir (whose
 * node it is as of now: o->parent is cur_dir). */
struct nx_snode *nx_snode_take(struct nx_stake *t, struct nx_snode *cur_dir, const char *name,
			       size_t len, const struct nx_sattr *a);
/* Room for more kids in dir; -1 (ENOMEM) when not. */
int nx_snode_reserve(struct nx_snode *dir, uint32_t more);
/* Puts n into dir at its sorted place; -1 with EEXIST or ENOMEM. */
int nx_snode_insert(struct nx_snode *dir, struct nx_snode *n);
/* Takes n out of its directory (found by pointer: its name may be changing). */
void nx_snode_detach(struct nx_snode *n);
/* The same file: inode, device and type, and birth time or generation where
 * both sides know it (an inode number the filesystem reused has another). */
static inline bool nx_sattr_same_id(const struct nx_sattr *a, const struct nx_sattr *b)
{
	return a->ino == b->ino && a->dev == b->dev && (a->mode & S_IFMT) == (b->mode & S_IFMT) &&
	       (!a->has_id2 || !b->has_id2 || a->id2 == b->id2);
}

#endif /* NX_SNAPNODE_H */
