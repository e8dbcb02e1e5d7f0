/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The snapshot/diff engine of the scanning backends (poll, dnotify) and of
 * NOTIFYX_WATCH_RESCAN (rescan.c).
 *
 * A snapshot is a tree of nodes, one per directory entry, each with what
 * stat tells about it.  Reading a snapshot touches the filesystem; the diff
 * is a pure function over memory: given, for each watch of a handle, its
 * last snapshot and a new one, it reports the events that turn the first
 * into the second (in an order a mirror can apply one by one), moves
 * matched by identity: inode number plus birth time or generation, so that
 * a freed inode number handed to a new file is never taken for a rename.
 */
#ifndef NX_SNAPSHOT_H
#define NX_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

struct nx_sattr {
	uint64_t ino;
	uint64_t dev;
	uint64_t id2;    /* birth time in ns, or the inode generation; see has_id2 */
	uint64_t size;
	int64_t mtime;   /* ns */
	int64_t ctime;   /* ns */
	uint32_t mode;   /* with the type bits */
	uint32_t uid, gid;
	bool has_id2;
};

struct nx_snode;

/* A backend's hold on one directory (dnotify: its registered descriptor),
 * which follows the directory from each snapshot to the next: the diff
 * moves it from a node of the old tree to the node of the same directory in
 * the new one (and keeps node up to date); freeing the node that has it
 * calls release. */
struct nx_sref {
	struct nx_snode *node;
	int fd;                /* open on the directory (O_RDONLY), for listing it again */
	void (*release)(struct nx_sref *ref);
};

struct nx_snode {
	struct nx_snode *parent;
	struct nx_snode **kids; /* sorted by name (memcmp order) */
	uint32_t nkids, cap;
	bool entered;           /* a directory whose entries were read (kids is its listing) */
	bool name_alloc;        /* name was allocated apart from the node */
	bool relist;            /* to be listed again by nx_snap_relist */
	bool relist_below;      /* a directory below it is */
	struct nx_sref *ref;    /* the backend's hold on this directory, or NULL */
	uint8_t state;          /* diff scratch */
	struct nx_snode *pair;  /* diff scratch: the other side of a move */
	struct nx_snode *hnext; /* diff scratch: chain of one identity */
	uint32_t widx;          /* diff scratch, roots only: the watch's index */
	struct nx_sattr a;
	uint32_t name_len;
	char *name;             /* "" for a root */
	char name_buf[];
};

static inline bool nx_snode_isdir(const struct nx_snode *n)
{
	return (n->a.mode & 0170000) == 0040000;
}

/* How a tree is read. */
struct nx_sread {
	bool recursive;    /* enter subdirectories (else only the root's listing) */
	bool xdev;         /* do not enter directories of another device than the root */
	/* Called with the path relative to the root and the name of each
	 * entry listed; true keeps it out of the snapshot. May be NULL. */
	bool (*skip)(void *ctx, const char *path, const char *name);
	void *ctx;
	/* The previous snapshot, if any: lets an unchanged entry keep an
	 * identity that is costly to read (the generation), and lends its
	 * unchanged files (nx_snap_take): after a read that worked, they are
	 * the new tree's, and prev, without them, is only to be diffed
	 * against it, then freed.  May be NULL. */
	struct nx_snode *prev;
	/* Statistics, added to. */
	uint64_t entries;
	uint64_t syscalls;
	uint64_t listings; /* directories listed */
	/* Called with each directory descriptor just opened (and its node,
	 * and its path relative to the root): returns 1 when it keeps fd open
	 * (the reader then never closes it), 0 when not, -1 to stop the read
	 * with errno (the tree is then freed).  May be NULL. */
	int (*on_dir)(void *ctx, struct nx_snode *n, int fd, const char *path);
	/* After a failure: the directory (relative path) where it happened,
	 * or "" for the root, or when it would not fit. */
	char failed_path[PATH_MAX];
	/* After a read that worked: the first error that left part of the tree
	 * out (0: none), and the directory where it happened, as above. */
	int partial_err;
	uint64_t partial_key; /* of every error that left something out, and where */
	char partial_path[PATH_MAX];
};

/* Whether the place of a failed read (r->failed_path) is a directory, for
 * the ISDIR of its ERROR: any place below the root is; the root ("") is
 * when the tree read before (old, may be NULL) says so. */
static inline bool nx_sread_failed_isdir(const struct nx_sread *r, const struct nx_snode *old)
{
	return r->failed_path[0] || (old && nx_snode_isdir(old));
}

/* Reads the tree at fd (any descriptor of the root, O_PATH included).  The
 * root is a directory (listed, and entered below when recursive) or any
 * other file (no listing).  Returns NULL with errno on failure; entries that
 * vanish while being read are left out, directories that cannot be opened
 * or listed are kept without a listing, entries that cannot be stat'ed are
 * left out (both noted in partial_err), except for EMFILE, ENFILE and
 * ENOMEM, which fail the read. */
struct nx_snode *nx_snap_read(int fd, struct nx_sread *r);
/* Marks directory n (of a tree that nx_snap_relist will read) to be listed
 * again; only directories with a ref can be. */
void nx_snap_mark(struct nx_snode *n);
/* Reads again, through their refs' descriptors, only the directories of prev
 * marked by nx_snap_mark, and the directories that are new in them (entered
 * as nx_snap_read does, on_dir included).  Every other directory is in the
 * result without a listing (not entered), so that the diff against prev
 * hands it prev's listing.  Returns NULL with errno as nx_snap_read does;
 * a new directory that cannot be read is kept without a listing (noted in
 * partial_err), to be tried again at the next listing of its parent. */
struct nx_snode *nx_snap_relist(int fd, struct nx_snode *prev, struct nx_sread *r);
/* Stats path (relative to dirfd, not followed if a symbolic link) as a
 * read does, birth time or generation included; -1 with errno. */
int nx_snap_stat(int dirfd, const char *path, struct nx_sattr *a);
/* Takes n out of its directory and frees it with everything below it. */
void nx_snap_remove(struct nx_snode *n);
/* Moves n (with everything below it) into dir under name; -1 with ENOMEM,
 * or EEXIST when the name is taken. */
int nx_snap_move(struct nx_snode *n, struct nx_snode *dir, const char *name, size_t len);
/* A root with the attributes of n and no entries (a directory read as empty). */
struct nx_snode *nx_snap_empty(const struct nx_snode *n);
void nx_snap_free(struct nx_snode *n);
/* The entry of dir named name, or NULL. */
struct nx_snode *nx_snap_find(const struct nx_snode *dir, const char *name, size_t len);
/* Builds a tree from memory (tests, fuzzing): a new node under parent (NULL
 * for a root); NULL with ENOMEM, or EEXIST when the name is taken. */
struct nx_snode *nx_snap_add(struct nx_snode *parent, const char *name, size_t len,
			     const struct nx_sattr *a);

/* ---- the diff ---- */

#define NX_SDIFF_RECURSIVE 0x1u /* the trees hold the whole tree */
#define NX_SDIFF_LIST      0x2u /* a directory moved in gets its entries listed */

struct nx_sdiff_watch {
	struct nx_snode *old; /* taken apart by the diff: free it afterwards */
	/* The next diff's old.  A directory of cur that could not be read
	 * (no listing) while old has one receives old's listing. */
	struct nx_snode *cur;
	uint32_t flags;
};

/* One event: mask is one NOTIFYX_* type, flags NOTIFYX_EVENT_* (ISDIR,
 * EXCHANGE), paths relative to the watch's root.  NOTIFYX_OVERFLOW (path "")
 * says a filesystem was mounted or unmounted below the root: what it hid or
 * held is not listed. */
typedef void (*nx_semit_fn)(void *ctx, size_t watch, uint32_t mask, uint32_t flags,
			    uint32_t cookie, const char *path, size_t path_len, const char *old,
			    size_t old_len);

/* Reports, through emit, the events that turn every w[i].old into w[i].cur
 * (a node that nx_snap_take moved into cur is the same file unchanged:
 * skipped):
 * moves between watches are MOVED_OUT/MOVED_IN pairs with a cookie from
 * ++*cookie (never 0).  Returns 0, or -1 with ENOMEM (events are then
 * missing: the caller reports an overflow). */
int nx_snap_diff(struct nx_sdiff_watch *w, size_t n, uint32_t *cookie, nx_semit_fn emit,
		 void *ctx);

/* ---- a repair's new tree takes the old one's unchanged files over ---- */

/*
 * A repair lists the tree again into a new tree while the last one waits
 * for the diff, and most files have not changed.  Rather than a new node
 * for such a file (which the diff then compares, and whose old node is
 * freed), the new tree takes the old tree's node over, and the diff skips
 * it.  A file is taken only where the old tree holds it at the same place
 * (every directory above it the same by name and identity) with the same
 * identity and everything the diff compares, so that skipping it reports
 * what comparing it would: nothing.
 */
struct nx_staken;

struct nx_stake {
	struct nx_snode *old;     /* the tree the diff compares with; NULL: no taking */
	struct nx_staken *v;      /* the places in old's directories taken from */
	size_t n, cap;
	const struct nx_snode *cur_dir; /* the last directory of cur matched, */
	struct nx_snode *old_dir;       /* its match in old (NULL: none), */
	uint32_t hint;                  /* and the index there found last */
	bool lost;                /* a node could not be given back (ENOMEM): see below */
};

/* Moves into cur_dir old's node of the file name, with attributes a now
 * (a new directory entry, nothing there yet); NULL when old has no such
 * node (then make a new one). */
struct nx_snode *nx_snap_take(struct nx_stake *t, struct nx_snode *cur_dir, const char *name,
			      size_t len, const struct nx_sattr *a);
/* Gives every node taken back to old, a copy in its place in cur, and takes
 * no more: to be called before cur changes in any other way than by new
 * entries (a node both trees hold must not be freed or changed).  With
 * lost set, a node could not be copied and is missing from cur (the caller
 * reads the tree again). */
void nx_snap_give_back(struct nx_stake *t);
/* Ends the taking: the nodes taken leave old, which can then be diffed
 * against cur, or freed. */
void nx_snap_take_end(struct nx_stake *t);

/* ---- NOTIFYX_WATCH_RESCAN (rescan.c) ---- */

struct nx_watch;

/* For a backend's repair (the core's ops->repair) that has just read w's
 * tree into snapshot t: a copy of t becomes the repair's new model (its
 * unchanged files taken over from the old one), in place of a listing that
 * the model would stat entry by entry again.  Returns 1 (the tree is
 * listed), or -1 with ENOMEM. */
int nx_rescan_adopt(struct nx_watch *w, const struct nx_snode *t);

#endif /* NX_SNAPSHOT_H */
