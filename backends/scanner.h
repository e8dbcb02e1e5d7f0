/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The watches of a scanning backend (poll, dnotify): not pure, these use
 * the handle.  See scanner.c.
 */
#ifndef NX_SCANNER_H
#define NX_SCANNER_H

#include <stdbool.h>
#include <stdint.h>

#include "notifyx.h"
#include "snapshot.h"

struct notifyx;
struct nx_watch;

/* What a comparison of two states can tell; OPEN, ACCESS and the CLOSE
 * events are operations that leave no trace in a state. */
#define NX_SCAN_EVENTS                                                                   \
	(NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME | NOTIFYX_MOVED_OUT |          \
	 NOTIFYX_MOVED_IN | NOTIFYX_MODIFY | NOTIFYX_ATTRIB | NOTIFYX_DELETE_SELF |      \
	 NOTIFYX_MOVE_SELF)

struct nx_swatch {
	struct nx_watch *w;
	int rootfd;              /* O_PATH, held: it follows the root wherever it goes */
	struct nx_snode *snap;   /* what the application has been told */
	uint64_t mnt_id;         /* the root's mount, 0 if unknown */
	uint64_t mnt_below;      /* of the mounts below the root at the last run, 0 if unknown */
	bool away;               /* MOVE_SELF reported: the path leads elsewhere */
	bool dead;               /* removed while a scan ran: freed after it */
	bool dirty;              /* to be scanned at the next nx_scanner_run(..., false) */
	bool failed;             /* the last read failed and an ERROR said so */
	/* A repair may take snap as it is: the only losses since the last
	 * repair were of events of the diff that made snap (losses: w's count
	 * then), which snap holds, so a read would only tell the same again. */
	bool fresh;
	uint32_t losses;
	uint64_t err_key;        /* of the last ERROR for part of the tree */
	struct nx_swatch *next;
	void *bdata;             /* the backend's */
};

struct nx_scanner {
	struct nx_swatch *list;
	uint32_t cookie;
	bool busy;               /* a scan runs: removals are deferred */
	/* Passed to nx_snap_read for every read (dnotify registers directories). */
	int (*on_dir)(void *ctx, struct nx_snode *n, int fd, const char *path);
	/* Called when a watch's state is freed (dnotify releases a file
	 * watch's directory). */
	void (*on_free)(void *ctx, struct nx_swatch *sw);
	void *ctx;
	struct nx_swatch *reading; /* the watch being read (for on_dir) */
	uint64_t entries;        /* statistics: entries read */
	uint64_t listings;       /* statistics: directories listed */
};

/* Sets up w: holds its root, reads its tree, reports it with LIST. */
int nx_scanner_add(struct notifyx *nx, struct nx_scanner *s, struct nx_watch *w);
void nx_scanner_rm(struct nx_scanner *s, struct nx_watch *w);
/* Checks every root (moved, deleted, unmounted) and reads the trees again:
 * every watch's, or (all false) the dirty ones' and those of roots that went,
 * and in the other trees the directories marked with nx_snap_mark. */
void nx_scanner_run(struct notifyx *nx, struct nx_scanner *s, bool all);
struct nx_swatch *nx_scanner_find(struct nx_scanner *s, const struct nx_watch *w);
/* The backends' repair op (RESCAN): reads w's tree now, bringing its
 * snapshot up to the disk. */
int nx_scanner_repair(struct notifyx *nx, struct nx_scanner *s, struct nx_watch *w);
void nx_scanner_free(struct nx_scanner *s);

#endif /* NX_SCANNER_H */
