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

#include "snapshot.h"

/* A node named name (copied with it), zeroed otherwise; NULL, ENOMEM. */
struct nx_snode *nx_snode_new(const char *name, size_t len);
/* memcmp order of names, the shorter first on a tie. */
int nx_snode_cmp_name(const char *a, size_t alen, const char *b, size_t blen);
/* Room for more kids in dir; -1 (ENOMEM) when not. */
int nx_snode_reserve(struct nx_snode *dir, uint32_t more);
/* Puts n into dir at its sorted place; -1 with EEXIST or ENOMEM. */
int nx_snode_insert(struct nx_snode *dir, struct nx_snode *n);
/* Takes n out of its directory (found by pointer: its name may be changing). */
void nx_snode_detach(struct nx_snode *n);
/* The same file: inode, device and type, and birth time or generation where
 * both sides know it (an inode number the filesystem reused has another). */
bool nx_sattr_same_id(const struct nx_sattr *a, const struct nx_sattr *b);

#endif /* NX_SNAPNODE_H */
