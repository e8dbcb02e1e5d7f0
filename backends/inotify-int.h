/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The inotify backend's own header: its state and what its files share
 * (inotify.c, inotify-tree.c, inotify-move.c, inotify-hold.c).  No other file includes it.
 */
#ifndef NX_INOTIFY_INT_H
#define NX_INOTIFY_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/inotify.h>
#include <sys/types.h>

#include "inotify.h"
#include "ktree.h"
#include "nx.h"

#define READ_BUF (64 * 1024)
/* What one read(2) takes from the kernel at most; the rest of READ_BUF is
 * for records held meanwhile.  A burst then goes through the same few pages
 * of buf and of the event queue, read after read: a page fault costs far
 * more than the extra reads (NEWS 0.2, bench/throughput). */
#define READ_STEP (16 * 1024)
/* A first half is given up once this many later records were read without
 * its second half (GLib's rule); its second half is not looked for further. */
#define HOLD_DISTANCE 128
/* The changes of a directory's entries: each is queued while the directory's
 * lock is held (see sync_holds). */
#define DIR_CHANGES (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)

struct kwatch {
	int32_t kwd;          /* first: its key in in->kwatches (an nx_index) */
	uint32_t kmask;       /* what the kernel watch asks for (never narrowed) */
	nx_subs subs;         /* nodes of this inode */
	uint64_t born;        /* stream offset of the first record queued after it was added */
};

/* A watch's own state (its bdata). */
struct iwatch {
	/* Recursive: the root, O_PATH, held; or, when the root is the root of
	 * a mount, its parent (so that the library does not keep that
	 * filesystem busy) and rootname its name there.  Else -1. */
	int rootfd;
	char *rootname;
	dev_t dev;              /* the root's */
	ino_t ino;
	uint64_t mnt_id;        /* the mount the root was reached through; 0: unknown */
	bool isdir;
	struct kwatch *guard;   /* recursive: the kernel watch of the root's parent */
	struct nx_watch *gnext; /* next watch of in->guards of guard's wd */
	uint64_t since;         /* records before this stream offset are not its own (see stale()) */
};

/* When the bytes of buf up to end were read. */
struct read_mark {
	size_t end;
	uint64_t ns;
};

/* A directory that is in the table but not watched yet (see add_subdir). */
struct deferred {
	struct nx_node *node;
	bool report;
	int tries;    /* times its parent could not be reached */
};

struct ino {
	int fd;
	int timerfd;
	int mnt_wake;         /* /proc/self/mountinfo in the epoll set: wakes the application */
	int mnt_check;        /* a private one, polled by process() itself */
	bool proc_fd;         /* /proc/self/fd/N works for inotify_add_watch */
	bool holding;         /* a record in buf waits for a later one (a hold) */
	bool no_wait;         /* end every hold now (the timer cannot be armed) */
	bool flush;           /* this process() ends every hold (NX_PROCESS_FLUSH) */
	bool timer_armed;
	uint64_t timer_at;    /* when the armed timer fires (nx_now_ns) */
	bool retrying;        /* in retry_deferred(): conflicts are settled, not deferred */
	bool block_all;       /* this pass: every later record waits */
	bool repairing;       /* in ino_repair(): no watch ends (see check_root) */
	int64_t repair_from;  /* in ino_repair(): its walk's made_from (see struct nx_kt_walk) */
	bool recheck;         /* a repair found a root gone: check the roots when dry */
	uint64_t hold_until;  /* the earliest end of the holds of the last pass */
	/* This pass over buf: the watches whose later events wait behind a
	 * record that waits, and the cookies of the MOVED_FROMs that wait. */
	struct nx_watch **blocked;
	size_t nblocked, blocked_cap;
	uint32_t wait_cookie[64];
	size_t nwait_cookie;
	/* This pass: the kernel watches of the moves held (MOVED_FROMs, and
	 * lone MOVED_TOs, which may be an exchange's first half), and the name
	 * of the last one of each, empty for a MOVED_TO (see sync_holds). */
	int held_kwd[16];
	char held_name[16][NAME_MAX + 1];
	size_t nheld_kwd;
	/* The last sync: what the records before sync_end in these kernel
	 * watches wait for is in the kernel queue, or not coming. */
	int sync_kwd[16];
	size_t nsync_kwd, sync_end;
	/* The directory sync_holds() opened last, kept open while holds
	 * last (a move out a read would otherwise cost an open, the check
	 * that it is still that kernel watch's directory, and a close each);
	 * -1 when none. */
	int sync_fd, sync_fd_kwd;
	bool fed;             /* records came from nx_inotify_feed: never sync */
	/* When the records in buf were read, oldest first (the last mark
	 * grows when they are all taken: those records then end their holds
	 * sooner, never later). */
	struct read_mark reads[256];
	size_t nreads;
	/* The kernel drops a record equal to the last one it holds unread
	 * (see dropped_arrival): the stream offsets of the last MOVED_FROMs
	 * read right after a MOVED_TO of the same name and type (a ring;
	 * UINT64_MAX: taken), the key of the last record read when it is a
	 * MOVED_TO (else 0), and the stream offset up to which the records
	 * read were looked at.  A ring that overflows loses its oldest marks:
	 * those records are then taken as they come, as before the marks. */
	uint64_t after_to[64];
	size_t nafter_to;
	uint64_t last_to;
	uint64_t scanned;
	/* The same for departures (see dropped_departure): the last record
	 * read when it is a MOVED_FROM, and the last MOVED_TOs read right
	 * after a MOVED_FROM of another cookie, with that MOVED_FROM. */
	struct from_mark {
		uint64_t at;      /* the MOVED_TO's stream offset; UINT64_MAX: none */
		int wd;           /* the MOVED_FROM's */
		uint32_t mask, cookie;
		size_t len;
		char name[NAME_MAX + 1];
	} last_from, after_from[32];
	size_t nafter_from;
	size_t len;           /* bytes in buf not processed yet */
	size_t next;          /* where the records after the one being handled start */
	uint64_t stream;      /* bytes read from fd so far */
	uint64_t cur;         /* stream offset of the record being handled */
	struct nx_node *conflict; /* attach(): the node that has the directory already */
	struct nx_index kwatches; /* kernel wd -> struct kwatch */
	struct kwatch *last_kw;   /* the one nx_ino_kwatch() found last */
	struct kwblock *kwblocks; /* where they are (inotify-tree.c) */
	struct kwatch *kwfree;    /* released ones, for the next */
	/* Kept apart from struct kwatch, which one directory of a recursive
	 * watch costs (24 bytes); few have these. */
	struct nx_map guards;   /* wd -> the first watch whose root is in it (see guard()) */
	struct nx_map kept;     /* wd -> 1: a repair may use it again (see ino_repair) */
	/* Events already reported or caused by the library itself:
	 * hash(kwatch or node, name, kind) -> count. */
	struct nx_map suppress[2]; /* [0]: this generation, [1]: the one before */
	struct nx_map mounts;      /* node where a mount begins inside a tree -> its mount id */
	struct nx_node *graveyard[2]; /* unlinked subtrees, of these generations */
	uint64_t generation_start;
	struct nx_node **vec[2];   /* scratch lists of subscribers */
	size_t vec_cap[2];
	struct deferred *deferred;
	size_t ndeferred, deferred_cap;
	/* [0], [1]: event paths; [2]: a walk's relative path; [3]: open_node() */
	char path[4][PATH_MAX];
	_Alignas(8) char buf[READ_BUF];
};

static inline struct ino *ino_of(const struct notifyx *nx)
{
	return nx->bdata;
}

static inline struct iwatch *iw_of(const struct nx_watch *w)
{
	return w->bdata;
}

/* The kernel watch wd, or NULL.  The last one found is kept: the records of
 * a burst are mostly of one directory. */
static inline struct kwatch *nx_ino_kwatch(struct ino *in, int32_t wd)
{
	if (!in->last_kw || in->last_kw->kwd != wd)
		in->last_kw = nx_index_get(&in->kwatches, wd);
	return in->last_kw;
}

enum { SUP_CREATE = 1, SUP_OPEN, SUP_ACCESS, SUP_CLOSE };

struct move {
	const struct kwatch *from, *to;
	const char *fname, *tname;
	size_t flen, tlen;
	bool isdir, exchange;
	bool to_isdir; /* exchange: the type of the entry that was at tname */
	uint32_t cookie;
	int only;      /* 0: the whole move; ONLY_DEPARTURES or ONLY_ARRIVALS of it */
};

enum { ONLY_DEPARTURES = 1, ONLY_ARRIVALS };

/* ---- inotify-tree.c: kernel watches, held roots, suppression, walking new directories ---- */

void nx_ino_add_subdir(struct notifyx *nx, struct nx_node *n, const char *name, size_t nlen,
	bool report);
int nx_ino_attach(struct ino *in, struct nx_node *n, const char *kpath, uint32_t extra);
void nx_ino_bury(struct notifyx *nx, struct nx_node *n);
bool nx_ino_check_root(struct notifyx *nx, struct nx_watch *w);
void nx_ino_detach(struct ino *in, struct nx_node *n);
void nx_ino_dry_point(struct notifyx *nx);
size_t nx_ino_entry_path(struct ino *in, const struct nx_node *n, const char *name, size_t nlen,
	int i);
int nx_ino_guard(struct notifyx *nx, struct nx_watch *w, bool at_add);
void nx_ino_hold_mount_parent(struct ino *in, struct iwatch *iw);
void nx_ino_kwatch_release(struct ino *in, struct kwatch *kw);
void nx_ino_kwatch_free_all(struct ino *in);
int nx_ino_open_node(struct notifyx *nx, struct nx_node *n);
bool nx_ino_read_more(struct ino *in);
void nx_ino_retry_deferred(struct notifyx *nx, bool final);
bool nx_ino_sup_take(struct ino *in, const void *obj, const char *name, size_t len, int kind);
void nx_ino_too_long(struct notifyx *nx, struct nx_node *n);
void nx_ino_unguard(struct ino *in, struct nx_watch *w);
int nx_ino_walk(struct notifyx *nx, struct nx_node *n, int pfd, const char *name, char *rel,
	size_t rel_len, bool report, bool fatal);

/* ---- inotify-move.c: moves ---- */

void nx_ino_consume(struct ino *in, size_t pos);
void nx_ino_do_move(struct notifyx *nx, const struct move *m);
size_t nx_ino_find_exchange(struct notifyx *nx, size_t pos, const struct inrec *from,
	const struct inrec *to, size_t *incomplete, bool *to_isdir, uint32_t *cookie);
size_t nx_ino_find_moved_to(const struct ino *in, size_t pos, const struct inrec *from,
	struct inrec *out);
bool nx_ino_peek(const struct ino *in, size_t pos, struct inotify_event *ev);
int nx_ino_there_at(struct notifyx *nx, const struct kwatch *kw, const char *name, size_t len,
	size_t pos);
bool nx_ino_within_watches(struct notifyx *nx, const struct kwatch *a, const struct kwatch *b);

/* ---- inotify-hold.c: reading the kernel queue, the hold, process() ---- */

struct from_mark *nx_ino_after_from(struct ino *in, size_t pos);
void nx_ino_sync_done(struct ino *in);
int nx_ino_process(struct notifyx *nx, unsigned flags);
void nx_ino_note_read(struct ino *in);

/* ---- inotify.c: masks, dispatching, the backend operations ---- */

void nx_ino_check_mounts(struct notifyx *nx);
void nx_ino_plain_event(struct notifyx *nx, const struct inrec *r);
size_t nx_ino_subscribers(struct notifyx *nx, const struct kwatch *kw, int i);
uint32_t nx_ino_node_mask(const struct nx_node *n);

#endif
