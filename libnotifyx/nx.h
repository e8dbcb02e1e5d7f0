/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal interfaces of libnotifyx: the handle, the event queue, the watch
 * table, the path table and the backend operations table.  Nothing here is
 * visible to applications.
 */
#ifndef NX_H
#define NX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "notifyx.h"

#define NX_EXPORT __attribute__((visibility("default")))

#define NX_ALWAYS_EVENTS (NOTIFYX_OVERFLOW | NOTIFYX_UNMOUNT | NOTIFYX_ERROR | NOTIFYX_IGNORED | NOTIFYX_SYNC)
/* The requestable events but the end of the root: what a listing or a
 * scan is made of. */
#define NX_ENTRY_EVENTS (NOTIFYX_ALL_EVENTS & ~(NOTIFYX_DELETE_SELF | NOTIFYX_MOVE_SELF))
#define NX_WATCH_FLAGS                                                          \
	(NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_ONESHOT | NOTIFYX_WATCH_NOFOLLOW | \
	 NOTIFYX_WATCH_ONLYDIR | NOTIFYX_WATCH_XDEV | NOTIFYX_WATCH_LIST | NOTIFYX_WATCH_RESCAN)
#define NX_DEFAULT_QUEUE_MAX 16384u
#define NX_DEFAULT_POLL_MS   1000u
/* How long the first half of a move waits for its second half (as GLib). */
#define NX_HOLD_NS (10 * 1000 * 1000)

/* ---- hash map: 64-bit key to pointer (open addressing, linear probing) ---- */

struct nx_map {
	struct nx_map_slot *slots;
	size_t cap; /* power of two, or 0 */
	size_t len;
};

void *nx_map_get(const struct nx_map *m, uint64_t key);
int nx_map_put(struct nx_map *m, uint64_t key, void *val); /* replaces; -1 ENOMEM */
void *nx_map_del(struct nx_map *m, uint64_t key);          /* the old value or NULL */
/* Iteration: start with *pos = 0; returns false at the end. */
bool nx_map_next(const struct nx_map *m, size_t *pos, uint64_t *key, void **val);
void nx_map_free(struct nx_map *m);
uint64_t nx_hash(const void *data, size_t len, uint64_t seed);

/* ---- pointer tables: allocated objects by a 64-bit hash of their key ----
 *
 * Open addressing over the objects' pointers themselves (allocated, so
 * aligned to 8): the 3 low bits of a slot carry a tag from the hash, so most
 * slots of a probe run are passed over without reading their object; an
 * object costs 8 bytes of table at most 80% full where an nx_map entry
 * costs 16 at most 75% (memory of large trees, issue "No stalls at scale").
 * The path table and the index below are two; a caller probes with
 * nx_ptab_home/nx_ptab_tagged and compares its own key. */

struct nx_ptab {
	uintptr_t *slots; /* object pointer | hash tag; 0: empty */
	size_t cap;       /* power of two, or 0 */
	size_t len;
};

/* The first slot of the probe run of hash h (t->cap not 0). */
static inline size_t nx_ptab_home(const struct nx_ptab *t, uint64_t h)
{
	return (size_t)(h >> 3) & (t->cap - 1);
}

/* The object of slot s when its tag is h's, else NULL. */
static inline void *nx_ptab_tagged(uintptr_t s, uint64_t h)
{
	return (s & 7) == (h & 7) ? (void *)(s & ~(uintptr_t)7) : NULL;
}

/* Adds obj, hash(obj) its key's hash; -1 ENOMEM (t unchanged). */
int nx_ptab_add(struct nx_ptab *t, void *obj, uint64_t (*hash)(const void *obj));
/* Takes out the object of slot i. */
void nx_ptab_remove(struct nx_ptab *t, size_t i, uint64_t (*hash)(const void *obj));
/* Iteration: start with *pos = 0; returns false at the end. */
bool nx_ptab_next(const struct nx_ptab *t, size_t *pos, void **obj);
void nx_ptab_free(struct nx_ptab *t);

/* ---- index: objects whose first member is their int32_t key, by key ---- */

struct nx_index {
	struct nx_ptab t;
};

void *nx_index_get(const struct nx_index *x, int32_t key);
/* Adds obj, whose key is not in x yet; -1 ENOMEM. */
int nx_index_add(struct nx_index *x, void *obj);
void *nx_index_del(struct nx_index *x, int32_t key); /* the object or NULL */
/* Iteration: start with *pos = 0; returns false at the end. */
bool nx_index_next(const struct nx_index *x, size_t *pos, void **obj);
void nx_index_free(struct nx_index *x);

/* ---- event queue: records stored already encoded, in chunks ---- */

struct nx_chunk;

struct nx_queue {
	struct nx_chunk *head, *tail;
	struct nx_chunk *spare; /* one emptied chunk kept to avoid malloc churn */
	size_t count;           /* records in the queue */
	size_t exempt;          /* of which in chunks not counted against queue_max */
};

/* Bytes of the record for names of these lengths (a multiple of 8). */
size_t nx_event_size(size_t path_len, size_t old_len);
/* Appends one record; path and old may be NULL when their length is 0.
 * Returns the record (valid until the next queue operation) or NULL, ENOMEM. */
struct notifyx_event *nx_queue_push(struct nx_queue *q, int32_t wd, uint32_t mask, uint32_t flags,
				    uint32_t cookie, int32_t error, const char *path,
				    size_t path_len, const char *old, size_t old_len);
const struct notifyx_event *nx_queue_peek(const struct nx_queue *q);
void nx_queue_pop(struct nx_queue *q);
/* Moves every record of src to the end of dst; with exempt, the moved
 * records do not count against queue_max. */
void nx_queue_splice(struct nx_queue *dst, struct nx_queue *src, bool exempt);
void nx_queue_clear(struct nx_queue *q);

/* ---- path table: the directories of recursive trees ----
 *
 * Each node knows its parent and its own name only, so the path of a node is
 * built by walking up (O(depth)) and renaming a directory is O(1) whatever
 * lies below it.  Children are found through one hash table of the handle
 * keyed by (parent, name), an nx_ptab: a directory costs its node and 8
 * bytes of table at most 80% full.
 *
 * A node is one allocation, its name inline after it, and what can be had
 * otherwise is not stored: the name's length (strlen), the watch (its
 * root's: nx_node_watch), the other nodes of its kernel object (nx_subs,
 * in the backend's object), so that a node with a name of up to 14 bytes
 * is a 64-byte malloc chunk (5 pointers, a byte of flags, the name). */

struct nx_watch;

struct nx_node {
	struct nx_node *parent;   /* NULL for a watch root and the top of an unlinked subtree */
	struct nx_node *child;    /* first child directory */
	struct nx_node *next;     /* sibling */
	union {
		struct nx_node *prev;   /* sibling, of a node with a parent */
		struct nx_watch *top_watch; /* of one without: its watch (see nx_node_watch) */
	};
	void *kref;               /* the backend's kernel object for this directory */
	bool dead : 1;            /* unlinked, waiting to be freed */
	bool long_name : 1;       /* the name outgrew the node: name_[] holds its pointer */
	char name_[];             /* the name, NUL-terminated ("" for a root): nx_node_name */
};

/* The watch n belongs to: its root's (an unlinked subtree keeps the watch
 * it was unlinked from).  O(depth), as its path. */
static inline struct nx_watch *nx_node_watch(const struct nx_node *n)
{
	while (n->parent)
		n = n->parent;
	return n->top_watch;
}

const char *nx_node_name(const struct nx_node *n);
size_t nx_node_name_len(const struct nx_node *n);

/* The nodes of one kernel object of a backend (a directory reached at more
 * than one place: overlapping watches, bind mounts).  Nearly always one:
 * the set is then that node's pointer, with no allocation and no link in
 * every node; else (low bit set) an array.  Newest first. */
typedef uintptr_t nx_subs;

struct nx_subs_array {
	size_t n, cap;
	struct nx_node *v[];
};

static inline struct nx_subs_array *nx_subs_array(nx_subs s)
{
	return s & 1 ? (struct nx_subs_array *)(s & ~(uintptr_t)1) : NULL;
}

/* The i-th node of s, NULL past the last: for (i = 0; (n = nx_subs_get(s, i)); i++).
 * Inline: every event of a directory goes through it. */
static inline struct nx_node *nx_subs_get(nx_subs s, size_t i)
{
	struct nx_subs_array *a = nx_subs_array(s);

	if (a)
		return i < a->n ? a->v[i] : NULL;
	return i == 0 ? (struct nx_node *)s : NULL;
}
int nx_subs_add(nx_subs *s, struct nx_node *n); /* -1 ENOMEM, s unchanged */
void nx_subs_del(nx_subs *s, const struct nx_node *n); /* nothing when n is not in s */
void nx_subs_free(nx_subs *s);

struct nx_paths {
	struct nx_ptab t; /* the nodes, by (parent, name) */
};

struct nx_node *nx_node_new_root(struct nx_watch *w);
/* A new child directory of parent; NULL with ENOMEM. */
struct nx_node *nx_node_add(struct nx_paths *t, struct nx_node *parent, const char *name, size_t len);
struct nx_node *nx_node_find(const struct nx_paths *t, const struct nx_node *parent,
			     const char *name, size_t len);
/* Moves n under new_parent with a new name: O(1) in the size of its subtree. */
int nx_node_rename(struct nx_paths *t, struct nx_node *n, struct nx_node *new_parent,
		   const char *name, size_t len);
/* Takes n (not a root) out of its parent and the name table. */
void nx_node_unlink(struct nx_paths *t, struct nx_node *n);
/* Calls fn on n and every node below it, parents first. */
void nx_node_foreach(struct nx_node *n, void (*fn)(void *ctx, struct nx_node *n), void *ctx);
/* Frees n and everything below it; drop(ctx, node) is called on each node
 * first, children before parents. */
void nx_node_free_tree(struct nx_paths *t, struct nx_node *n,
		       void (*drop)(void *ctx, struct nx_node *n), void *ctx);
/* Writes the path of n relative to its watch root ("" for the root) into
 * buf; returns its length, or SIZE_MAX when it does not fit in size-1. */
size_t nx_node_path(const struct nx_node *n, char *buf, size_t size);
/* Builds "dirpath/name" (or "name" when dirpath is ""); SIZE_MAX when too long. */
size_t nx_join(char *buf, size_t size, const char *dir, size_t dir_len, const char *name, size_t len);
void nx_paths_free(struct nx_paths *t);

/* ---- watches ---- */

struct nx_watch {
	int32_t wd;
	uint32_t events;    /* requested NOTIFYX_* types */
	uint32_t flags;     /* NOTIFYX_WATCH_* */
	uint32_t nexclude;  /* exclude patterns that apply: the first nexclude of the handle */
	bool overflowed;    /* the last event queued for this watch was an OVERFLOW */
	bool lost;          /* a loss whose OVERFLOW could not be queued (no memory) yet */
	bool ended;         /* IGNORED is queued: no more events, rm_watch is EINVAL */
	bool staging;       /* being set up: events go to the handle's stage queue */
	dev_t dev;          /* device of the root, for XDEV */
	char *path;         /* as the application passed it */
	char *abspath;      /* absolute, for the kernel */
	size_t abspath_len;
	struct nx_node *root;
	void *bdata;        /* backend data */
	struct nx_rescan *rescan; /* NOTIFYX_WATCH_RESCAN: the model (backends/rescan.c) */
	bool repair_due;    /* RESCAN: events were lost, a repair is to run */
	uint32_t losses;    /* losses so far (nx_lost): a scanner tells its own apart */
	bool quiet;         /* a scanner catches up for a repair: only ERROR and self events pass */
	bool rebuild;       /* RESCAN: the backend lists the tree into the model, not the queue */
	bool repairing;     /* RESCAN: the repair's diff is queued: the model is being replaced */
	bool detach_due;    /* ended during process(): the backend lets go of it after */
};

/* ---- backends ---- */

struct notifyx;

/* process(): end every hold now: a first half of a move that waits for its
 * second half goes out alone (notifyx_rm_watch, and before a repair). */
#define NX_PROCESS_FLUSH 1u

struct nx_backend {
	const char *name;
	uint32_t id;
	/* NOTIFYX_EVENT_* flags on every event of this backend, IGNORED and
	 * OVERFLOW included (SYNTHETIC for the scanning backends). */
	uint32_t event_flags;
	/* The events this backend delivers on this handle. */
	uint32_t (*supported)(const struct notifyx *nx);
	/* Sets up kernel objects and adds their descriptors to nx->epfd.
	 * cfg is the application's configuration, checked, with the defaults
	 * filled in (poll_interval_ms is never 0); only valid during the call. */
	int (*open)(struct notifyx *nx, const struct notifyx_config *cfg);
	/* Releases everything; after fork (nx->forked) only closes descriptors
	 * and frees memory, touching no kernel state shared with the parent. */
	void (*close)(struct notifyx *nx);
	/* Sets up w (w->root exists, w->wd assigned).  On failure leaves nothing
	 * behind and returns -1 with errno. */
	int (*add_watch)(struct notifyx *nx, struct nx_watch *w);
	/* Detaches w from the kernel; w stays allocated.  Never called
	 * from inside process() or repair(): a watch that ends there (ONESHOT,
	 * DELETE_SELF, UNMOUNT, ERROR) is only marked ended, and detached once
	 * they return, so a backend never has its state freed under it. */
	void (*rm_watch)(struct notifyx *nx, struct nx_watch *w);
	/* Reads what the kernel has without blocking and queues events;
	 * returns 0, or -1 with errno on a hard failure.  flags: NX_PROCESS_*.
	 * All that it leaves to do must be announced by nx->epfd (a kernel
	 * descriptor, a timer), or by setting nx->again: a read waits for
	 * epfd before it calls process() again. */
	int (*process)(struct notifyx *nx, unsigned flags);
	/* Optional, for NOTIFYX_WATCH_RESCAN: after a loss of events of w,
	 * makes the kernel side whole again, as a new watch of the tree as it
	 * is now would be: every directory watched, the path table (w->root
	 * and below) rebuilt to match the disk, what is gone dropped, and the
	 * tree listed as a NOTIFYX_WATCH_LIST watch lists it (w->flags has
	 * LIST during the call; the listing fills the core's new model, it is
	 * not queued; only ERROR and self events reach the application).  It
	 * reaches the root through the descriptor it holds, never w->abspath
	 * (the root may have moved).  Called outside process().  Returns 1
	 * when it listed the tree, 0 when it lost nothing and listed nothing
	 * (the core reads the tree itself), -1 with errno: the core then ends
	 * the watch with an ERROR.  A scanning backend brings its snapshot up
	 * to the disk and lists that, so that its next scans report from
	 * where the repair leaves the application. */
	int (*repair)(struct notifyx *nx, struct nx_watch *w);
	/* Optional: how many of the backend's own signals the calling thread
	 * has handled; a blocking read that one of them interrupted goes on. */
	unsigned long (*own_signals)(void);
};

/* The registry (backends/registry.c): the backend whose id is a
 * NOTIFYX_BACKEND_* other than AUTO, or NULL when there is none. */
const struct nx_backend *nx_backend(uint32_t id);
/* The i-th backend NOTIFYX_BACKEND_AUTO tries (from 0), or NULL past the last. */
const struct nx_backend *nx_backend_auto(size_t i);

/* ---- the handle ---- */

struct notifyx {
	int epfd;             /* what notifyx_fd returns */
	int readyfd;          /* eventfd in epfd: readable while the queue holds events */
	bool ready;           /* readyfd is signalled */
	bool again;           /* process() stopped with work it can do at once:
				 readyfd is signalled, a blocking read does not wait */
	bool forked;          /* set in a child after fork: close only */
	pid_t pid;
	unsigned long forks;  /* see inherited() in handle.c */
	uint32_t flags;
	uint32_t queue_max;
	const struct nx_backend *ops;
	void *bdata;
	struct nx_queue queue;
	struct nx_queue stage; /* events of a watch being set up */
	struct nx_map watches; /* wd -> struct nx_watch */
	int32_t next_wd;
	struct nx_paths paths;
	char **exclude;
	uint32_t nexclude;
	bool repairs_due;      /* some watch has repair_due */
	bool dispatching;      /* inside process(): ends of watches wait (detach_due) */
	bool detaches_due;     /* some watch has detach_due */
};

/* Queues an event for w, applying the watch's event mask, its exclude
 * patterns, ONESHOT, queue_max and the OVERFLOW rules.  old may be NULL.
 * Returns true when the event was queued. */
bool nx_emit(struct notifyx *nx, struct nx_watch *w, uint32_t mask, uint32_t flags,
	     uint32_t cookie, int32_t error, const char *path, size_t path_len,
	     const char *old, size_t old_len);
/* Events of w were lost. */
void nx_lost(struct notifyx *nx, struct nx_watch *w);
/* Events of every watch were lost. */
void nx_lost_all(struct notifyx *nx);
/* Ends w: queues its IGNORED and detaches it from the backend (at once, or
 * when called while the backend dispatches, once process() returns). */
void nx_end_watch(struct notifyx *nx, struct nx_watch *w);
/* True when the entry at path (relative to w's root; name is its last
 * component) matches one of w's exclude patterns. */
bool nx_excluded(const struct notifyx *nx, const struct nx_watch *w, const char *path,
		 const char *name);
/* The same over a list of patterns (a pure function): a pattern with a slash
 * matches path with FNM_PATHNAME, one without matches name. */
bool nx_match_exclude(char *const *patterns, uint32_t n, const char *path, const char *name);
/* Adds fd to the handle's epoll set (level-triggered, readable). */
int nx_epoll_add(struct notifyx *nx, int fd);
uint64_t nx_now_ns(void);

/* ---- NOTIFYX_WATCH_RESCAN (backends/rescan.c) ---- */

/* Holds w's root, with an empty model: before the backend sets w up
 * (with NOTIFYX_WATCH_LIST and rebuild when the application did not ask
 * for a listing, which then fills the model alone). */
int nx_rescan_start(struct notifyx *nx, struct nx_watch *w);
/* False when an application's copy that follows "Mirroring a tree"
 * (notifyx(7)), and so the model, could not apply this event of w's: see
 * rescan.c. */
bool nx_rescan_applies(const struct nx_watch *w, uint32_t mask, uint32_t flags, const char *path,
		       size_t path_len, const char *old, size_t old_len);
/* True when w's model has an entry at path (w without RESCAN: false). */
bool nx_rescan_has(const struct nx_watch *w, const char *path, size_t path_len);
/* The model follows ev, just queued for w. */
void nx_rescan_apply(struct notifyx *nx, struct nx_watch *w, uint32_t mask, uint32_t flags,
		     const char *path, size_t path_len, const char *old, size_t old_len);
/* A kernel backend's walk lists the directory open at fd (borrowed; -1:
 * the listing is over), whose path below w's root is rel_len bytes long:
 * the model stats the entries it reports through fd, not by path. */
void nx_rescan_listing(struct nx_watch *w, int fd, size_t rel_len);
/* True when the entry that a listing of w's has just reported (through
 * nx_emit) was stat'ed by the model, and its inode last changed (ctime, ns
 * since the epoch) before t: it was neither made nor linked there since. */
bool nx_rescan_listed_before(const struct nx_watch *w, int64_t t);
/* Repairs every watch that lost events (outside the backend's process). */
void nx_rescan_run(struct notifyx *nx);
void nx_rescan_free(struct nx_watch *w);

#endif /* NX_H */
