/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libnotifyx: one file-descriptor-based interface to Linux file-change
 * notification (inotify, fanotify, dnotify, polling).  See notifyx(7).
 */
#ifndef NOTIFYX_H
#define NOTIFYX_H

#include <limits.h>
#ifndef PATH_MAX /* strict ISO C: <limits.h> has no POSIX limits; take the kernel's */
#include <linux/limits.h>
#endif
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- versions ------------------------------------------------------------ */

#define NOTIFYX_VERSION_MAJOR 0
#define NOTIFYX_VERSION_MINOR 2
#define NOTIFYX_VERSION_PATCH 0

/* True when this header is at least version major.minor.patch. */
#define NOTIFYX_CHECK_VERSION(major, minor, patch)                              \
	(NOTIFYX_VERSION_MAJOR > (major) ||                                     \
	 (NOTIFYX_VERSION_MAJOR == (major) && NOTIFYX_VERSION_MINOR > (minor)) || \
	 (NOTIFYX_VERSION_MAJOR == (major) && NOTIFYX_VERSION_MINOR == (minor) && \
	  NOTIFYX_VERSION_PATCH >= (patch)))

/* ---- handle and configuration -------------------------------------------- */

struct notifyx; /* opaque handle */

#define NOTIFYX_BACKEND_AUTO     0u /* inotify; else fanotify; else poll; never dnotify */
#define NOTIFYX_BACKEND_INOTIFY  1u
#define NOTIFYX_BACKEND_FANOTIFY 2u
#define NOTIFYX_BACKEND_DNOTIFY  3u
#define NOTIFYX_BACKEND_POLL     4u

/* notifyx_config.flags */
#define NOTIFYX_NONBLOCK 0x1u /* notifyx_read fails with EAGAIN instead of blocking
				 (so does O_NONBLOCK set on notifyx_fd) */

struct notifyx_config {
	uint32_t size;             /* sizeof(struct notifyx_config) as the caller compiled it */
	uint32_t backend;          /* NOTIFYX_BACKEND_* */
	uint32_t flags;            /* NOTIFYX_NONBLOCK */
	uint32_t poll_interval_ms; /* scanning backends: 0 means the default, 1000 */
	int32_t  signal;           /* dnotify backend: 0 means the default, SIGRTMIN+5 */
	uint32_t queue_max;        /* events held in the library before NOTIFYX_OVERFLOW; 0: 16384 */
};

/* ---- events -------------------------------------------------------------- */

/* requestable event types: each event carries exactly one type bit */
#define NOTIFYX_ACCESS        0x00000001u /* file read */
#define NOTIFYX_MODIFY        0x00000002u /* file content written or truncated */
#define NOTIFYX_ATTRIB        0x00000004u /* metadata: mode, owner, times, xattrs, link count */
#define NOTIFYX_CLOSE_WRITE   0x00000008u /* file opened for writing was closed */
#define NOTIFYX_CLOSE_NOWRITE 0x00000010u
#define NOTIFYX_OPEN          0x00000020u
#define NOTIFYX_CREATE        0x00000040u /* entry created in a watched directory */
#define NOTIFYX_DELETE        0x00000080u /* entry removed from a watched directory */
#define NOTIFYX_RENAME        0x00000100u /* renamed inside one watch: path is new, old_path is old */
#define NOTIFYX_MOVED_OUT     0x00000200u /* moved from this watch to somewhere else */
#define NOTIFYX_MOVED_IN      0x00000400u /* moved into this watch from somewhere else */
#define NOTIFYX_DELETE_SELF   0x00000800u /* the watched root itself was deleted */
#define NOTIFYX_MOVE_SELF     0x00001000u /* the watched root itself was moved */
#define NOTIFYX_ALL_EVENTS    0x00001fffu

/* always delivered, never requested (passing them to add_watch is EINVAL) */
#define NOTIFYX_OVERFLOW      0x00010000u /* events of this watch were lost: rescan it */
#define NOTIFYX_UNMOUNT       0x00020000u /* the filesystem holding the root was unmounted */
#define NOTIFYX_ERROR         0x00040000u /* part of the tree is no longer watched; see error */
#define NOTIFYX_IGNORED       0x00080000u /* the watch is gone: the last event of its wd */
#define NOTIFYX_SYNC          0x00100000u /* 0.2: the listing (LIST) or repair (RESCAN) of this watch is complete */

/* notifyx_event.flags */
#define NOTIFYX_EVENT_ISDIR     0x1u /* the entry is a directory */
#define NOTIFYX_EVENT_SYNTHETIC 0x2u /* found by the library (a scan or a diff), not reported by the kernel */
#define NOTIFYX_EVENT_EXCHANGE  0x4u /* RENAME: the entries at path and old_path swapped names */

/* notifyx_add_watch flags */
#define NOTIFYX_WATCH_RECURSIVE 0x1u  /* the whole tree, including directories created later */
#define NOTIFYX_WATCH_ONESHOT   0x2u  /* remove the watch after its first event */
#define NOTIFYX_WATCH_NOFOLLOW  0x4u  /* do not follow a symbolic link at path itself */
#define NOTIFYX_WATCH_ONLYDIR   0x8u  /* fail with ENOTDIR unless path is a directory */
#define NOTIFYX_WATCH_XDEV      0x10u /* recursive: do not enter other mounted filesystems */
#define NOTIFYX_WATCH_LIST      0x20u /* report what the tree holds, and what moves in, as SYNTHETIC CREATEs */
#define NOTIFYX_WATCH_RESCAN    0x40u /* 0.2: after an OVERFLOW, rescan and report only what changed */

struct notifyx_event {
	uint32_t size;         /* bytes in this record, names and zero padding included; multiple of 8 */
	int32_t  wd;           /* the watch, as notifyx_add_watch returned it */
	uint32_t mask;         /* exactly one event type */
	uint32_t flags;        /* NOTIFYX_EVENT_* */
	uint32_t cookie;       /* the same non-zero value on the two halves of one move; else 0 */
	int32_t  error;        /* an errno value for NOTIFYX_ERROR; else 0 */
	uint32_t path_len;     /* strlen(path) */
	uint32_t old_path_len; /* strlen(old_path); 0 when there is none */
	char     names[];      /* path NUL, then old_path NUL when old_path_len > 0, then zero padding */
};

/* The record is plain data, identical on 32- and 64-bit systems; every field
 * offset is pinned by tests/abi/layout.c. */
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(struct notifyx_event) == 32, "notifyx_event header is 32 bytes");
_Static_assert(_Alignof(struct notifyx_event) == 4, "notifyx_event alignment");
_Static_assert(sizeof(struct notifyx_config) == 24, "notifyx_config version 0 is 24 bytes");
_Static_assert(_Alignof(struct notifyx_config) == 4, "notifyx_config alignment");
#endif

/* one event is never larger than this; a buffer of this size always makes progress */
#define NOTIFYX_EVENT_MAX (sizeof(struct notifyx_event) + 2 * PATH_MAX)
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(NOTIFYX_EVENT_MAX == 32 + 2 * 4096, "NOTIFYX_EVENT_MAX: a 32-byte header and two PATH_MAX names");
_Static_assert(NOTIFYX_EVENT_MAX % 8 == 0, "the largest record, padded to 8, fits NOTIFYX_EVENT_MAX exactly");
#endif

/*
 * Every function fails as the system calls do: -1 (or NULL) and errno;
 * unknown bits in a flags or events argument are EINVAL.  After fork(2),
 * every call on an inherited handle but notifyx_close fails with ECHILD.
 */

/* ---- lifecycle ----------------------------------------------------------- */

/* NULL config: all defaults (AUTO, blocking reads).  A backend that cannot
 * start fails with the errno that says why; AUTO with the last one's. */
struct notifyx *notifyx_open(const struct notifyx_config *config);
/* Releases every descriptor and all memory; NULL does nothing.  The one call
 * allowed on a handle inherited through fork(2): the parent's goes on. */
int      notifyx_close(struct notifyx *nx);
/* Readable when notifyx_read may return events; owned by the handle. */
int      notifyx_fd(const struct notifyx *nx);
/* The backend in use, never AUTO; 0 for NULL. */
uint32_t notifyx_backend(const struct notifyx *nx);
/* The event types notifyx_add_watch accepts (others: EOPNOTSUPP); 0 for NULL. */
uint32_t notifyx_supported_events(const struct notifyx *nx);

/* ---- watches ------------------------------------------------------------- */

/* A new positive wd, never reused by the handle. */
int      notifyx_add_watch(struct notifyx *nx, const char *path, uint32_t events, uint32_t flags);
/* Events already queued stay readable; then the wd's IGNORED, its last event. */
int      notifyx_rm_watch(struct notifyx *nx, int wd);
/* fnmatch(3) pattern for the watches added after this call. */
int      notifyx_exclude(struct notifyx *nx, const char *pattern);
/* The root as given to notifyx_add_watch, until the wd's IGNORED is read. */
const char *notifyx_watch_path(const struct notifyx *nx, int wd);

/* ---- reading ------------------------------------------------------------- */

/* Whole events, at most len bytes, never 0.  Blocks until one comes, unless
 * NOTIFYX_NONBLOCK or O_NONBLOCK on notifyx_fd: then -1 with EAGAIN.  When
 * the next event does not fit in len: -1 with EINVAL, nothing consumed.
 * IGNORED is the last event of a wd.  Records are read in place: align buf
 * for struct notifyx_event (an array of uint64_t is). */
ssize_t  notifyx_read(struct notifyx *nx, void *buf, size_t len);

/* The record after ev in a buffer filled by notifyx_read. */
static inline const struct notifyx_event *
notifyx_event_next(const struct notifyx_event *ev)
{
	return (const struct notifyx_event *)(const void *)((const char *)ev + ev->size);
}

/* Relative to the watch root: "" is the root itself. */
static inline const char *notifyx_event_path(const struct notifyx_event *ev)
{
	return ev->names;
}

/* NULL when the event has no old path. */
static inline const char *notifyx_event_old_path(const struct notifyx_event *ev)
{
	return ev->old_path_len ? ev->names + ev->path_len + 1 : NULL;
}

/*
 * A loop over the events of the n bytes notifyx_read put in buf (none when
 * n <= 0, so its -1 needs no test first), as io_uring_for_each_cqe:
 *	const struct notifyx_event *ev;
 *	notifyx_for_each_event(ev, buf, n)
 *		puts(notifyx_event_path(ev));
 * ev is the caller's const struct notifyx_event *; buf and n are evaluated at
 * each step.
 */
#define notifyx_for_each_event(ev, buf, n)                                          \
	for ((ev) = (const struct notifyx_event *)(const void *)(buf);               \
	     (n) > 0 && (size_t)((const char *)(ev) - (const char *)(const void *)(buf)) < \
			    (size_t)(n);                                             \
	     (ev) = notifyx_event_next(ev))

/* ---- names --------------------------------------------------------------- */

const char *notifyx_backend_name(uint32_t backend);   /* "inotify", ...; NULL if unknown */
const char *notifyx_event_name(uint32_t mask);        /* "create", ...; NULL unless one known bit */
const char *notifyx_version(void);                    /* "MAJOR.MINOR.PATCH" of the library */

#ifdef __cplusplus
}
#endif

#endif /* NOTIFYX_H */
