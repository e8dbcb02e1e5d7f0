/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tree machinery of the backends that keep a path table of the kernel's
 * objects (inotify, fanotify): the errors a tree gives, the graveyard of
 * nodes taken out of the table, the counts of events the library caused
 * itself, the listing of a directory, and moves inside a recursive watch.
 * What differs between the two stays in each: decoding records, pairing the
 * halves of a move, and placing a kernel watch or mark.
 */
#ifndef NX_KTREE_H
#define NX_KTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nx.h"

/* ---- errors ---- */

/* An ERROR of w about the directory at rel (relative to w's root). */
void nx_kt_error(struct notifyx *nx, struct nx_watch *w, const char *rel, int err);

/* The path of n's entry name relative to the watch root, in buf (PATH_MAX
 * bytes); its length, or SIZE_MAX when it does not fit. */
size_t nx_kt_entry_path(char *buf, const struct nx_node *n, const char *name, size_t nlen);

/* An entry of directory n whose path relative to the root does not fit: it
 * is not watched, and the ERROR (ENAMETOOLONG) names n, the deepest directory
 * that fits.  buf: PATH_MAX bytes of scratch. */
void nx_kt_too_long(struct notifyx *nx, const struct nx_node *n, char *buf);

/* ---- the graveyard ----
 * A node taken out of the table may still be named by records read but not
 * handled yet, by deferred work, or by a list of subscribers being walked:
 * it is marked dead and freed later, when nothing can name it any more. */

/* Takes n and its subtree out of the table: detach(ctx, node) for each node
 * first (while paths still lead to them), then each is dead and n goes on
 * the list *grave.  Nothing when n is NULL or dead already. */
void nx_kt_bury(struct notifyx *nx, struct nx_node *n,
		void (*detach)(void *ctx, struct nx_node *n), void *ctx, struct nx_node **grave);

/* Frees the subtrees on the list *grave and empties it. */
void nx_kt_free_grave(struct notifyx *nx, struct nx_node **grave);

/* ---- counts of events already reported or caused by the library ----
 * Keyed by (object, name, kind); a map value is a count.  Failing to count
 * costs a duplicate event, never a lost one. */

uint64_t nx_kt_key(const void *obj, const char *name, size_t len, int kind);
void nx_kt_count(struct nx_map *m, uint64_t key, unsigned n);
/* Takes one off key's count; false when it had none. */
bool nx_kt_take(struct nx_map *m, uint64_t key);

/* ---- listing a directory ---- */

/* What nx_kt_list_entry needs and gathers; given to nx_scan_dir(). */
struct nx_kt_list {
	struct notifyx *nx;
	struct nx_node *dir;
	const char *rel;      /* dir's path relative to the root */
	size_t rel_len;
	char *scratch;        /* PATH_MAX bytes */
	bool report;          /* report entries as SYNTHETIC CREATEs... */
	struct nx_map *reported; /* ...counted here, key (dir, name, reported_kind) */
	int reported_kind;
	int64_t made_from;    /* see struct nx_kt_walk */
	bool all_subdirs;     /* name subdirectories even when not recursive */
	bool too_long;        /* out: an entry's path relative to the root did not fit */
	char *subdirs;        /* out: names of subdirectories, NUL-separated (free it) */
	size_t sub_len, sub_cap;
};

/* nx_scan_dir()'s callback: an entry not excluded from the watch is reported
 * (with report), and a subdirectory is remembered for the walk to enter. */
int nx_kt_list_entry(void *ctx, const char *name, size_t len, unsigned char type);

/* ---- walking a tree ---- */

/* Deeper than this, a walk closes each directory before entering its
 * subdirectories and opens them by path, so it cannot run out of descriptors. */
#define NX_KT_FD_DEPTH 128

/* enter() has dealt with the directory itself (deferred it, or buried it). */
#define NX_KT_SKIP (-2)

/* A repair's made_from (struct nx_kt_walk), read on the clock as it begins,
 * before the records it drops end. */
int64_t nx_kt_repair_from(void);

/* Copies the subscribers in subs that stale(ctx, s) does not drop into the
 * scratch list *v (of *cap, grown as needed); out of memory, the rest lose
 * the event (nx_lost).  Returns how many it copied. */
size_t nx_kt_subscribers(struct notifyx *nx, nx_subs subs,
			 bool (*stale)(const void *ctx, const struct nx_node *s), const void *ctx,
			 struct nx_node ***v, size_t *cap);

/* Waits until a rename out of directory dfd whose old name was name is
 * over, so that every record it queues (the two halves of an exchange
 * included) is in the kernel queue.  A rename queues them while it holds
 * the directory's lock, and a lookup that misses the dentry cache takes that
 * lock.  The old name, which d_move() left out of the cache, is such a
 * lookup; after an exchange it is in the cache, found without the lock:
 * then a name never looked up before is (".notifyx-sync-PID-N", N counted
 * for the whole process, as a name another handle looked up is in the
 * cache too; one negative dentry for each exchange a read splits, and for
 * each move in a read ends on; a lookup makes no inotify or fanotify
 * event).  name NULL: a rename into dfd, whose new name is in the cache,
 * so that only the second lookup tells.  False when neither lookup could
 * tell (an error other than ENOENT).  PID is nx's (a handle is used only
 * by the process that opened it: no getpid() call per sync). */
bool nx_kt_rename_over(const struct notifyx *nx, int dfd, const char *name);

/* One walk: what the backend does at each directory, and how. */
struct nx_kt_walk {
	struct notifyx *nx;
	bool report;          /* report entries as SYNTHETIC CREATEs (LIST) */
	/* A watch being set up: running out of kernel watches or marks,
	 * memory or descriptors fails it (-1) instead of being an ERROR. */
	bool fatal;
	struct nx_map *reported; /* where the CREATEs reported are counted */
	int reported_kind;
	/* Nonzero: the backend drops every record queued before this time
	 * (ns since the epoch; a RESCAN repair's): an entry that the model
	 * found unchanged since before it (nx_rescan_listed_before) had its
	 * CREATE, if any, queued before, and is not counted. */
	int64_t made_from;
	char *scratch;        /* PATH_MAX bytes */
	/* Opens directory node n (name, relative to pfd; by its path rel
	 * below the root when pfd is -1) and watches or marks it.  Returns
	 * its descriptor, -1 with errno, or NX_KT_SKIP. */
	int (*enter)(struct nx_kt_walk *wk, struct nx_node *n, int pfd, const char *name,
		     const char *rel);
	/* Optional: n was listed, with calls getdents calls. */
	void (*listed)(struct nx_kt_walk *wk, struct nx_node *n, unsigned calls);
	/* Optional: subdirectory name of n in a watch that is not recursive
	 * (fd: n's), named but not entered.  Without it, none is named. */
	void (*shallow)(struct nx_kt_walk *wk, struct nx_node *n, int fd, const char *name,
			size_t len);
	/* Optional: an error of enter() that is not reported (beside ENOENT,
	 * ENOTDIR and ELOOP: the directory went, its parent reports that). */
	bool (*quiet)(struct nx_kt_walk *wk, struct nx_node *n, int err);
	void (*bury)(struct notifyx *nx, struct nx_node *n);
};

/*
 * Enters directory node n (name, relative to pfd, the directory of n's
 * parent, or by path when pfd is -1), lists it and does the same for its
 * subdirectories (recursive watches) or names them (wk->shallow).  rel holds
 * n's path relative to the root (rel_len bytes, in a PATH_MAX buffer that the
 * walk extends in place).  A directory is opened relative to its parent's
 * descriptor, never by a path built from the table: the table lags behind
 * the filesystem by the records not read yet.  Failures that concern one
 * directory become ERROR events (a directory that went away is reported by
 * its parent); only the fatal ones of wk->fatal return -1 with errno.
 */
int nx_kt_walk(struct nx_kt_walk *wk, struct nx_node *n, int pfd, const char *name, char *rel,
	       size_t rel_len, int depth);

/* True when the directory open at fd is not on w's filesystem although w
 * asked for NOTIFYX_WATCH_XDEV (n, inside the tree, is then left out). */
bool nx_kt_other_dev(const struct nx_node *n, int fd);

/* ---- moves ---- */

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
	/* On return: the table was out of step with the filesystem (the
	 * rename would move a directory below itself); the watch had a loss
	 * (nx_lost) and nothing moved. */
	bool lost;
};

/* Moves the nodes of the table as the rename says: what it replaces and what
 * leaves the watch are given to bury(); so are the directories moved, when
 * the table is out of step with the filesystem (see lost). */
void nx_treemove(struct notifyx *nx, struct nx_treemove *t,
		 void (*bury)(struct notifyx *nx, struct nx_node *n));

/* A rename inside one watch, entry fname of directory node a to tname of b
 * (an exchange: the two entries swap), as a kernel backend read it. */
struct nx_kt_rename {
	struct nx_node *a, *b;
	const char *fname, *tname;
	size_t flen, tlen;
	bool isdir;           /* what left fname is a directory */
	bool to_isdir;        /* an exchange: what left tname is a directory */
	bool exchange;
	char *scratch[2];     /* PATH_MAX bytes each */
	/* A directory the table does not know is now at n/name: it enters
	 * the table.  theirs: it is the one that was at tname (an exchange);
	 * unseen: it came from a name the watch does not see. */
	void (*arrived)(struct nx_kt_rename *r, struct nx_node *n, const char *name, size_t len,
			bool theirs, bool unseen);
	void (*bury)(struct notifyx *nx, struct nx_node *n);
	struct notifyx *nx;
	const void *ctx;      /* the backend's, for arrived() */
};

/* Reports the rename and applies it to the table.  An exchange with a name
 * the watch does not see (an exclude pattern hides it) is a departure, then
 * an arrival, of the name it sees, each with the type of the entry it
 * describes (API.md). */
void nx_kt_rename(struct nx_kt_rename *r);

#endif
