/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the backends that hold a tree's root (inotify, fanotify) share to
 * reach the tree through descriptors, never again through an absolute path:
 * a path longer than PATH_MAX from "/" is fine as long as the part below the
 * root fits, and a root that was moved is reached where it now is.
 */
#ifndef NX_TREEPATH_H
#define NX_TREEPATH_H

#include <stdbool.h>
#include <stdint.h>

#include "nx.h"

/* Opens rel, a path relative to the directory open at dirfd ("" for that
 * directory itself), with open(2) flags, following no symbolic link on the
 * way and never leaving the tree (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS, or one openat per component where the kernel lacks
 * openat2).  ELOOP when a component is a symbolic link. */
int nx_open_below(int dirfd, const char *rel, int flags);

/* The mount id of the object open at fd, or 0 when the kernel cannot say. */
uint64_t nx_mount_id(int fd);

/* Undoes mountinfo's octal escapes in place (it writes space, tab, newline
 * and backslash as \ooo). */
void nx_mountinfo_unescape(char *s);

/* Reads the mount ids of the mountinfo file open at fd into set (key: id+1);
 * false on failure. */
bool nx_mounts_read(int fd, struct nx_map *set);

#endif
