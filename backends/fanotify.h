/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The parts of the fanotify backend that are pure functions over memory:
 * decoding the kernel's records and splitting a merged mask into single
 * events.  Unit-tested and fuzzed. */
#ifndef NX_FANOTIFY_H
#define NX_FANOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A file identifier as the kernel reports it: fsid, then a struct
 * file_handle (handle_bytes, handle_type, f_handle[]).  Points into the
 * record; key hashes all of it. */
struct fanid {
	const unsigned char *data; /* fsid (8 bytes) + handle header (8) + handle bytes */
	size_t len;
	uint64_t key;
};

struct fanname {
	const char *name; /* NUL-terminated inside the record */
	size_t len;
};

/* One decoded kernel record.  Absent parts have len 0. */
struct fanrec {
	uint64_t mask;
	size_t size;          /* bytes of the record (event_len) */
	struct fanid fid;     /* FAN_EVENT_INFO_TYPE_FID: the object itself */
	struct fanid dfid;    /* DFID_NAME or DFID: the directory */
	struct fanname name;  /* with dfid (DFID_NAME); "." for the directory itself */
	struct fanid odfid, ndfid;      /* FAN_RENAME: old and new directory */
	struct fanname oname, nname;
	int32_t pid;          /* of the process that caused it, as this one sees it */
};

/* Decodes the record at buf[pos]: false when it is incomplete, its lengths
 * lie, or its version is unknown (the caller then skips r->size bytes if it
 * is non-zero, else stops).  Unknown info types are skipped; a FID record
 * whose handle does not fit its length is ignored.  Reads nothing outside
 * buf[pos..len). */
bool nx_fan_decode(const char *buf, size_t len, size_t pos, struct fanrec *r);

/* The position of the second half of an exchange whose first FAN_RENAME
 * is r, at buf[pos]: the next FAN_RENAME of the same process (one system
 * call queues both, but with filesystem marks other processes' records can
 * come between, renames too, such as those of a program mirroring the tree
 * on the same filesystem).  len when there is none in the next 1024
 * records; SIZE_MAX when buf ends before them. */
size_t nx_fan_next_rename(const char *buf, size_t len, size_t pos, const struct fanrec *r);

/* Builds the key of an identifier made by name_to_handle_at (fsid, then
 * the handle as struct file_handle lays it out). */
uint64_t nx_fan_key(const void *data, size_t len);

/* Splits the FAN_* bits of a merged event on one entry into NOTIFYX_*
 * types, in an order consistent with the entry's state: exists says whether
 * the name is there now.  A creation comes before what was done to the new
 * entry and a deletion after it, unless the entry exists now, which means
 * it was deleted and made again: then the deletion comes first.  Renames
 * are never merged (FAN_RENAME) and are not handled here; the _SELF bits
 * are ignored.  Writes at most 8 types to out; returns how many. */
size_t nx_fan_split(uint64_t mask, bool exists, uint32_t out[8]);

/* NOTIFYX_* requested events to the FAN_* bits that deliver them. */
uint64_t nx_fan_mask(uint32_t events);

#endif
