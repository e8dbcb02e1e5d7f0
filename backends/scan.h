/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef NX_SCAN_H
#define NX_SCAN_H

#include <stddef.h>

/* Called for each entry; type is a DT_* value (never DT_UNKNOWN).  A non-zero
 * return stops the scan and is returned by nx_scan_dir. */
typedef int (*nx_scan_fn)(void *ctx, const char *name, size_t len, unsigned char type);

/* Lists the directory open at fd, without "." and "..", with as few system
 * calls as the kernel allows (getdents64 into a large buffer).  Returns 0,
 * fn's non-zero value, or -1 with errno.  *calls (if not NULL) receives the
 * number of getdents64 calls made (each one is an ACCESS to inotify). */
int nx_scan_dir(int fd, nx_scan_fn fn, void *ctx, unsigned *calls);

#endif
