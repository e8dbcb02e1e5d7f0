/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The inotify backend: reading the kernel queue, the hold of first halves
 * of moves, and process() (see inotify.c). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "inotify-int.h"
#include "scan.h"
#include "treepath.h"

/* ---- the hold ----
 *
 * A record that needs a later one (the second half of a move, or the
 * departure of an exchange with a place outside the watches) waits for it:
 * at most NX_HOLD_NS from the moment it was read, and no longer once
 * HOLD_DISTANCE later records have been read.  Records read together wait
 * together, so N lone moves cost one wait, not N.  Each pass over buf starts
 * from its first record; a record that waits "blocks" the watches it
 * concerns for the rest of the pass, so that their later records wait
 * behind it (never overtaking it), while those of other watches go on. */

/* A MOVED_TO or MOVED_FROM: its directory, name and type. */
static uint64_t move_key(const struct inrec *r)
{
	return nx_hash(r->name, r->name_len, (uint64_t)(uint32_t)r->wd << 1 | !!(r->mask & IN_ISDIR)) | 1;
}

/* Marks, among the records just read, the MOVED_FROMs that came right after
 * a MOVED_TO of the same name and type (see dropped_arrival), and the
 * MOVED_TOs that came right after a MOVED_FROM of the same type and another
 * cookie (see dropped_departure). */
static void note_moves(struct ino *in)
{
	size_t max = sizeof(in->after_to) / sizeof(in->after_to[0]);
	size_t fmax = sizeof(in->after_from) / sizeof(in->after_from[0]);
	uint64_t start = in->stream - in->len;
	struct inrec r;
	size_t pos = in->scanned > start ? (size_t)(in->scanned - start) : 0;
	struct inotify_event ev;

	for (; nx_ino_peek(in, pos, &ev); pos += sizeof(ev) + ev.len) {
		if (!(ev.mask & IN_MOVE)) { /* most records: no name to read */
			in->last_to = 0;
			in->last_from.mask = 0;
			continue;
		}
		nx_inotify_decode(in->buf, in->len, pos, &r);
		uint64_t key = move_key(&r);
		if ((r.mask & IN_MOVED_FROM) && key == in->last_to)
			in->after_to[in->nafter_to++ % max] = start + pos;
		if ((r.mask & IN_MOVED_TO) && in->last_from.mask && r.cookie != in->last_from.cookie &&
		    !((r.mask ^ in->last_from.mask) & IN_ISDIR)) {
			struct from_mark *fm = &in->after_from[in->nafter_from++ % fmax];
			*fm = in->last_from;
			fm->at = start + pos;
		}
		in->last_to = (r.mask & IN_MOVED_TO) ? key : 0;
		in->last_from.mask = 0;
		if ((r.mask & IN_MOVED_FROM) && r.name_len <= NAME_MAX) {
			in->last_from.wd = r.wd;
			in->last_from.mask = r.mask;
			in->last_from.cookie = r.cookie;
			in->last_from.len = r.name_len;
			memcpy(in->last_from.name, r.name, r.name_len);
		}
	}
	in->scanned = start + pos;
}

/* The MOVED_FROM the MOVED_TO at pos was read right after (see note_moves),
 * or NULL. */
struct from_mark *nx_ino_after_from(struct ino *in, size_t pos)
{
	size_t max = sizeof(in->after_from) / sizeof(in->after_from[0]);
	uint64_t at = in->stream - in->len + pos;

	for (size_t i = 0; i < max && i < in->nafter_from; i++)
		if (in->after_from[i].at == at)
			return &in->after_from[i];
	return NULL;
}

/* Was the MOVED_FROM at pos read right after a MOVED_TO of its name?  Once. */
static bool take_after_to(struct ino *in, size_t pos)
{
	size_t max = sizeof(in->after_to) / sizeof(in->after_to[0]);
	uint64_t at = in->stream - in->len + pos;

	for (size_t i = 0; i < max && i < in->nafter_to; i++) {
		if (in->after_to[i] == at) {
			in->after_to[i] = UINT64_MAX;
			return true;
		}
	}
	return false;
}

/* The bytes up to in->len were just read. */
void nx_ino_note_read(struct ino *in)
{
	size_t max = sizeof(in->reads) / sizeof(in->reads[0]);

	note_moves(in);
	if (in->nreads && in->reads[in->nreads - 1].end >= in->len)
		return;
	if (in->nreads == max)
		in->reads[max - 1].end = in->len;
	else
		in->reads[in->nreads++] = (struct read_mark){ in->len, nx_now_ns() };
}

static uint64_t read_at(const struct ino *in, size_t pos)
{
	for (size_t i = 0; i < in->nreads; i++)
		if (pos < in->reads[i].end)
			return in->reads[i].ns;
	return nx_now_ns();
}

/* The first used bytes of buf were handled: they leave it. */
static void drop_front(struct ino *in, size_t used)
{
	size_t j = 0;

	memmove(in->buf, in->buf + used, in->len - used);
	in->len -= used;
	for (size_t i = 0; i < in->nreads; i++) {
		if (in->reads[i].end > used) {
			in->reads[j] = in->reads[i];
			in->reads[j++].end -= used;
		}
	}
	in->nreads = j;
	in->sync_end = in->sync_end > used ? in->sync_end - used : 0;
	if (!in->sync_end)
		in->nsync_kwd = 0;
}

static bool has_kwd(const int *v, size_t n, int kwd)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == kwd)
			return true;
	return false;
}

/* The record at pos needs a later one that is not in buf: true while it
 * may still come (read on, or wait), false when it is time to go on
 * without it.  drained: the kernel had nothing more to give.  The records
 * from later_at on (0: right after it) are those read after its move (a
 * MOVED_TO of its own pair is not, nor an exchange's reverse MOVED_FROM). */
static bool held_from(struct notifyx *nx, size_t pos, size_t later_at, bool drained)
{
	struct ino *in = ino_of(nx);
	uint64_t until = read_at(in, pos) + NX_HOLD_NS;
	struct inotify_event ev;
	int later = 0; /* the records read after its move */
	struct inrec r;
	bool synced = drained && pos < in->sync_end;

	if (!nx_inotify_decode(in->buf, in->len, pos, &r))
		return false;
	for (size_t p = later_at ? later_at : pos + r.size;
	     later < HOLD_DISTANCE && nx_ino_peek(in, p, &ev); p += sizeof(ev) + ev.len, later++)
		if (ev.wd == r.wd && (ev.mask & DIR_CHANGES) && (r.mask & IN_MOVED_FROM))
			return false; /* made under the lock the move held: see sync_holds */
	/* (A lone MOVED_TO waits for the departure of an exchange with an
	 * unseen place, which the same rename queues: synced alike.) */
	if (in->flush || in->no_wait || later >= HOLD_DISTANCE || (drained && nx_now_ns() >= until) ||
	    (synced && (r.mask & IN_MOVE) && has_kwd(in->sync_kwd, in->nsync_kwd, r.wd)))
		return false;
	if (!in->holding || until < in->hold_until)
		in->hold_until = until;
	in->holding = true;
	if (!(r.mask & IN_MOVE) || r.name_len > NAME_MAX)
		return true;
	size_t i = 0;
	while (i < in->nheld_kwd && in->held_kwd[i] != r.wd)
		i++;
	if (i == sizeof(in->held_kwd) / sizeof(in->held_kwd[0]))
		return true; /* not synced: ends by time or distance */
	in->nheld_kwd += i == in->nheld_kwd;
	in->held_kwd[i] = r.wd;
	/* An arrival's name is in the dentry cache, its lookup takes no lock:
	 * none is kept (see nx_kt_rename_over). */
	size_t len = (r.mask & IN_MOVED_TO) ? 0 : r.name_len;
	memcpy(in->held_name[i], r.name, len);
	in->held_name[i][len] = '\0';
	return true;
}

static bool held(struct notifyx *nx, size_t pos, bool drained)
{
	return held_from(nx, pos, 0, drained);
}

/* A descriptor of the directory of kernel watch kw, for sync_holds(): the
 * root a recursive watch holds (*owned false: not to be closed); the root of
 * another watch by its path, when what is there has the root's device and
 * inode (were the root deleted and that inode reused, the lookup would still
 * come after the rename: deleting the root took the lock the rename held);
 * any other directory by nx_ino_open_node(), which checks it is kw's. */
static int sync_dir(struct notifyx *nx, const struct kwatch *kw, bool *owned)
{
	const struct iwatch *iw;
	struct nx_node *n;
	struct stat st;
	int fd;

	for (size_t si = 0; (n = nx_subs_get(kw->subs, si)) && n->dead; si++)
		;
	if (!n)
		return -1;
	*owned = true;
	iw = iw_of(nx_node_watch(n));
	if (n->parent || !iw || iw->rootname)
		return nx_ino_open_node(nx, n);
	if (iw->rootfd >= 0) {
		*owned = false;
		return iw->rootfd;
	}
	fd = open(nx_node_watch(n)->abspath, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_dev != iw->dev || st.st_ino != iw->ino)) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Ends the holds of MOVED_FROMs, and of lone MOVED_TOs (an exchange with an
 * unseen place: its departure follows), early where it can tell.  A rename
 * queues both of its halves while it holds the lock of the directory it
 * moves from (an exchange, of both), and every change of that directory's
 * entries takes the same lock: so of the
 * MOVED_FROMs of one directory only the last can still wait for its second
 * half (a later change of that directory's entries in the stream shows it
 * has not), and only while that lock is held.  Once nx_kt_rename_over()
 * returned, what the rename queued is in the kernel queue (an exchange's
 * four records included), and a second half that the next read does not
 * find will not come.  Returns false when no directory could be reached
 * (the holds then end by time or distance only).
 */
static bool sync_holds(struct notifyx *nx)
{
	struct ino *in = ino_of(nx);

	in->nsync_kwd = 0;
	for (size_t i = 0; i < in->nheld_kwd; i++) {
		struct kwatch *kw = nx_ino_kwatch(in, in->held_kwd[i]);
		bool owned = true;
		int pfd;

		if (!kw)
			continue;
		if (in->sync_fd >= 0 && in->sync_fd_kwd == kw->kwd) {
			pfd = in->sync_fd;
		} else {
			if ((pfd = sync_dir(nx, kw, &owned)) < 0)
				continue;
			if (owned) {
				nx_ino_sync_done(in);
				in->sync_fd = pfd;
				in->sync_fd_kwd = kw->kwd;
			}
		}
		if (nx_kt_rename_over(nx, pfd, in->held_name[i][0] ? in->held_name[i] : NULL))
			in->sync_kwd[in->nsync_kwd++] = kw->kwd;
	}
	in->sync_end = in->nsync_kwd ? in->len : 0;
	return in->nsync_kwd > 0;
}

/* No hold left: the directory sync_holds() kept is closed (an open
 * descriptor would delay the DELETE_SELF of a directory removed, until
 * it is closed). */
void nx_ino_sync_done(struct ino *in)
{
	if (in->sync_fd >= 0)
		close(in->sync_fd);
	in->sync_fd = -1;
}

static bool watch_blocked(const struct ino *in, const struct nx_watch *w)
{
	for (size_t i = 0; i < in->nblocked; i++)
		if (in->blocked[i] == w)
			return true;
	return false;
}

static bool kwatch_blocked(const struct ino *in, const struct kwatch *kw)
{
	const struct nx_node *s;

	for (size_t si = 0; kw && (s = nx_subs_get(kw->subs, si)); si++)
		if (!s->dead && watch_blocked(in, nx_node_watch(s)))
			return true;
	return false;
}

static void block_kwatch(struct ino *in, const struct kwatch *kw)
{
	const struct nx_node *s;

	for (size_t si = 0; kw && (s = nx_subs_get(kw->subs, si)); si++) {
		if (s->dead || watch_blocked(in, nx_node_watch(s)))
			continue;
		if (in->nblocked == in->blocked_cap) {
			size_t cap = in->blocked_cap ? in->blocked_cap * 2 : 8;
			struct nx_watch **v = realloc(in->blocked, cap * sizeof(*v));
			if (!v) { /* no room to tell the watches apart: all wait */
				in->block_all = true;
				return;
			}
			in->blocked = v;
			in->blocked_cap = cap;
		}
		in->blocked[in->nblocked++] = nx_node_watch(s);
	}
}

/* Must the record at pos wait behind one that waits? */
static bool must_wait(struct notifyx *nx, size_t pos, const struct inrec *r)
{
	struct ino *in = ino_of(nx);
	struct inrec to;
	size_t tpos;

	if (!in->nblocked && !in->nwait_cookie && !in->block_all)
		return false;
	if (in->block_all || (r->mask & IN_Q_OVERFLOW))
		return true;
	for (size_t i = 0; i < in->nwait_cookie && (r->mask & IN_MOVED_TO); i++)
		if (in->wait_cookie[i] == r->cookie)
			return true; /* its first half waits */
	if (kwatch_blocked(in, nx_ino_kwatch(in, r->wd)))
		return true;
	/* A pair is reported in place of its first half: where the second
	 * half's watches wait, the whole move waits. */
	return (r->mask & IN_MOVED_FROM) &&
	       (tpos = nx_ino_find_moved_to(in, pos + r->size, r, &to)) &&
	       kwatch_blocked(in, nx_ino_kwatch(in, to.wd));
}

/* The record at pos waits: so do the later records of its watches. */
static void wait_behind(struct notifyx *nx, size_t pos, const struct inrec *r)
{
	struct ino *in = ino_of(nx);
	struct inrec to;

	if (r->mask & IN_Q_OVERFLOW)
		in->block_all = true;
	block_kwatch(in, nx_ino_kwatch(in, r->wd));
	if (!(r->mask & IN_MOVED_FROM))
		return;
	if (in->nwait_cookie == sizeof(in->wait_cookie) / sizeof(in->wait_cookie[0]))
		in->block_all = true;
	else
		in->wait_cookie[in->nwait_cookie++] = r->cookie;
	if (nx_ino_find_moved_to(in, pos + r->size, r, &to))
		block_kwatch(in, nx_ino_kwatch(in, to.wd));
}

/* Reports the exchange m (its reverse pair: the type of the entry that was at
 * m->tname, and the cookie). */
static void exchanged(struct notifyx *nx, struct move *m, bool to_isdir, uint32_t rcookie)
{
	if (nx_ino_within_watches(nx, m->from, m->to)) {
		m->exchange = true;
		m->to_isdir = to_isdir;
		nx_ino_do_move(nx, m);
		return;
	}
	/* An exchange that some watch sees one side of: there it is a
	 * departure and an arrival at one name, the departure first. */
	struct move rev = {
		.from = m->to, .to = m->from, .fname = m->tname, .flen = m->tlen,
		.tname = m->fname, .tlen = m->flen, .isdir = to_isdir, .cookie = rcookie,
	};
	m->only = rev.only = ONLY_DEPARTURES;
	nx_ino_do_move(nx, m);
	nx_ino_do_move(nx, &rev);
	m->only = rev.only = ONLY_ARRIVALS;
	nx_ino_do_move(nx, m);
	nx_ino_do_move(nx, &rev);
}

/*
 * The kernel drops a record equal (watch, mask, name; the cookie is not
 * compared) to the last one it holds unread.  An exchange with a place no
 * watch sees queues the arrival at a name, then the departure from it: right
 * after another arrival at that name not read yet (a move or rename onto
 * it), the exchange's arrival is dropped and only its departure, the lone
 * MOVED_FROM r at pos, is left.  The name is then still there after it
 * (which a move away does not leave).
 */
static bool dropped_arrival(struct notifyx *nx, size_t pos, const struct inrec *r)
{
	struct ino *in = ino_of(nx);
	const struct kwatch *kw = nx_ino_kwatch(in, r->wd);

	return take_after_to(in, pos) && kw &&
	       nx_ino_there_at(nx, kw, r->name, r->name_len, pos + r->size) == 1;
}

/* Handles the MOVED_FROM at pos.  Returns false when it must wait for more
 * of the stream. */
static bool moved_from(struct notifyx *nx, size_t pos, const struct inrec *r, bool drained)
{
	struct ino *in = ino_of(nx);
	struct inrec to;
	size_t tpos = nx_ino_find_moved_to(in, pos + r->size, r, &to);
	struct move m = {
		.from = nx_ino_kwatch(in, r->wd),
		.fname = r->name, .flen = r->name_len,
		.isdir = r->mask & IN_ISDIR, .cookie = r->cookie,
	};

	if (!tpos) {
		if (held(nx, pos, drained))
			return false;
		nx_ino_do_move(nx, &m); /* its pair is not coming: a move out */
		if (dropped_arrival(nx, pos, r)) {
			struct move a = { .to = m.from, .tname = r->name, .tlen = r->name_len, .isdir = m.isdir };
			nx_ino_do_move(nx, &a);
		}
		return true;
	}
	bool to_isdir = false;
	size_t incomplete = 0;
	uint32_t rcookie = 0;
	m.to = nx_ino_kwatch(in, to.wd);
	m.tname = to.name;
	m.tlen = to.name_len;
	if (!nx_ino_find_exchange(nx, tpos + to.size, r, &to, &incomplete, &to_isdir, &rcookie)) {
		/* The reverse pair may follow: read on, or, when the read may
		 * have ended inside the exchange, wait for it as for a second
		 * half (sync_holds: the rename is over, or the hold's time). */
		if (incomplete && held_from(nx, pos, incomplete, drained))
			return false;
		nx_ino_consume(in, tpos);
		nx_ino_do_move(nx, &m);
		return true;
	}
	nx_ino_consume(in, tpos);
	exchanged(nx, &m, to_isdir, rcookie);
	return true;
}

/*
 * Was entry r->name of r's directory there just before the record at pos?
 * The next record read that changes that name tells (a departure: it was;
 * an arrival: it was not); only when none does, the state now.  The state
 * alone would answer for a later moment, after changes whose records are
 * read but not handled yet.
 */
static bool there_after(struct notifyx *nx, size_t pos, const struct inrec *r, const struct inrec *f)
{
	struct ino *in = ino_of(nx);
	const struct kwatch *kw = nx_ino_kwatch(in, r->wd);
	struct inrec n;
	size_t at = pos;
	int state;

	/* Two directories: the kernel queues the IN_MOVE_SELF of the one that
	 * left right after its MOVED_FROM (one fsnotify_move()).  When that
	 * is the directory the table has at the name, it was exchanged. */
	for (; (r->mask & IN_ISDIR) && nx_inotify_decode(in->buf, in->len, pos, &n); pos += n.size) {
		if (!n.mask)
			continue;
		const struct kwatch *sk = (n.mask & IN_MOVE_SELF) ?
			nx_ino_kwatch(in, n.wd) : NULL;
		const struct nx_node *s;

		for (size_t si = 0; sk && (s = nx_subs_get(sk->subs, si)); si++)
			if (!s->dead && s->parent && s->parent->kref == kw && nx_node_name_len(s) == r->name_len &&
			    !memcmp(nx_node_name(s), r->name, r->name_len))
				return true;
		break;
	}
	if (kw && (state = nx_ino_there_at(nx, kw, r->name, r->name_len, at)) >= 0)
		return state;
	/* The directory moved since (events not read yet): the two halves of
	 * an exchange take consecutive cookies, two renames seldom do. */
	return f->cookie == r->cookie + 1;
}

/*
 * renameat2(outside, inside, RENAME_EXCHANGE) reaches a watched directory as
 * the arrival (MOVED_TO name) followed by the departure (MOVED_FROM of the
 * same name).  Applied in that order, the arrival would be undone; the
 * departure must come first.  It is surely an exchange when the two entries
 * differ in type; an entry moved in and moved on looks the same as an
 * exchange of two of one type, and the state tells them apart: after an
 * exchange the name is there (and when it went since, its DELETE follows).
 * Sets *fpos to the departure, or 0;
 * returns false when more of the stream must be read to tell.
 */
static bool departure_first(struct notifyx *nx, size_t pos, const struct inrec *to,
			    bool drained, size_t *fpos, struct inrec *f)
{
	struct ino *in = ino_of(nx);
	struct inrec second;
	size_t at = pos;

	*fpos = 0;
	for (pos += to->size; nx_inotify_decode(in->buf, in->len, pos, f); pos += f->size) {
		if (f->mask == 0 || (!f->name_len && (f->mask & IN_MOVE_SELF)))
			continue;
		if (!(f->mask & IN_MOVED_FROM) || f->wd != to->wd || f->name_len != to->name_len ||
		    memcmp(f->name, to->name, f->name_len))
			return true;
		/* A departure whose arrival is in the stream is a move of its
		 * own (the name's next change), not the other half of an
		 * exchange with an unseen place, whose arrival goes where no
		 * watch is.  Its arrival may not be read yet: wait for it as
		 * for any second half. */
		if (nx_ino_find_moved_to(in, pos + f->size, f, &second))
			return true;
		if (held(nx, pos, drained))
			return false;
		/* The departure of an exchange whose arrival is to: none was
		 * dropped before it (see dropped_arrival). */
		if (((f->mask ^ to->mask) & IN_ISDIR) || there_after(nx, pos + f->size, to, f)) {
			*fpos = pos;
			take_after_to(in, pos);
		}
		return true;
	}
	/* The last record read: its departure may not be queued yet.  Wait
	 * for it as for the second half of a move. */
	return !held(nx, at, drained);
}

/*
 * A departure from a name right after another departure from it not read
 * yet is dropped too (see dropped_arrival): an exchange of a name with an
 * unseen place, then at once with another name of the watches, leaves the
 * second exchange's first pair without its MOVED_FROM.  The MOVED_TO r at
 * pos, read right after a MOVED_FROM of another cookie, and followed by the
 * reverse pair from r's name back to that MOVED_FROM's name, is such an
 * exchange.  Returns 1 when it was (and is reported), 0 when more of the
 * stream must be read to tell, -1 when it was not.
 */
static int dropped_departure(struct notifyx *nx, size_t pos, const struct inrec *r, bool drained)
{
	struct ino *in = ino_of(nx);
	struct from_mark *fm = nx_ino_after_from(in, pos);
	bool to_isdir = false;
	size_t incomplete = 0;
	uint32_t rcookie = 0;

	if (!fm)
		return -1;
	struct inrec from = { .wd = fm->wd, .mask = IN_MOVED_FROM | (r->mask & IN_ISDIR),
			      .cookie = r->cookie, .name = fm->name, .name_len = fm->len };
	if (!nx_ino_find_exchange(nx, pos + r->size, &from, r, &incomplete, &to_isdir, &rcookie))
		return incomplete && !drained ? 0 : -1;
	fm->at = UINT64_MAX;
	struct move m = {
		.from = nx_ino_kwatch(in, fm->wd), .to = nx_ino_kwatch(in, r->wd),
		.fname = fm->name, .flen = fm->len, .tname = r->name, .tlen = r->name_len,
		.isdir = r->mask & IN_ISDIR, .cookie = r->cookie,
	};
	exchanged(nx, &m, to_isdir, rcookie);
	return 1;
}

/* Handles the MOVED_TO at pos, whose MOVED_FROM is not in the stream (a move
 * in from outside).  Returns false when it must wait for more of it. */
static bool moved_to(struct notifyx *nx, size_t pos, const struct inrec *r, bool drained)
{
	struct ino *in = ino_of(nx);
	int dropped = dropped_departure(nx, pos, r, drained);
	size_t fpos;
	struct inrec f;

	if (dropped >= 0)
		return dropped;
	/* fpos: an exchange with a place outside the watches */
	if (!departure_first(nx, pos, r, drained, &fpos, &f) || (fpos && !moved_from(nx, fpos, &f, drained)))
		return false;
	if (fpos)
		nx_ino_consume(in, fpos);
	struct move m = {
		.to = nx_ino_kwatch(in, r->wd),
		.tname = r->name, .tlen = r->name_len,
		.isdir = r->mask & IN_ISDIR,
	};
	nx_ino_do_move(nx, &m);
	return true;
}

/* Processes the records in buf; returns the bytes that can leave it (the
 * records before the first one that waits; those handled after it are
 * consumed in place).  drained: the kernel had nothing more to give (or the
 * buffer is full). */
static size_t parse(struct notifyx *nx, bool drained)
{
	struct ino *in = ino_of(nx);
	struct inrec r;
	size_t pos = 0, keep = SIZE_MAX;

	in->holding = in->block_all = false;
	in->nblocked = in->nwait_cookie = in->nheld_kwd = 0;
	for (; nx_inotify_decode(in->buf, in->len, pos, &r); pos += r.size) {
		bool done = true;
		in->next = pos + r.size;
		in->cur = in->stream - in->len + pos;
		if (!r.mask) {
			continue; /* consumed */
		} else if (must_wait(nx, pos, &r)) {
			done = false;
		} else if (r.mask & IN_Q_OVERFLOW) {
			/* Every watch, even one repaired after it (stale()): the
			 * kernel queue may have stayed full, losing more, after
			 * the repair read its tree. */
			nx_lost_all(nx);
		} else if (r.mask & IN_MOVED_FROM) {
			done = moved_from(nx, pos, &r, drained);
		} else if (r.mask & IN_MOVED_TO) { /* no MOVED_FROM: from outside */
			done = moved_to(nx, pos, &r, drained);
		} else {
			nx_ino_plain_event(nx, &r);
		}
		if (!done) {
			wait_behind(nx, pos, &r);
			if (keep == SIZE_MAX)
				keep = pos;
		} else if (keep != SIZE_MAX) {
			nx_ino_consume(in, pos);
		}
		/* A directory deferred is watched (and listed) as soon as no
		 * later record read changes its name: its contents come before
		 * the later events of its watch, not after them. */
		if (done && in->ndeferred && (r.mask & DIR_CHANGES))
			nx_ino_retry_deferred(nx, false);
	}
	in->next = 0; /* the caller drops what was handled: what waits starts at 0 */
	return keep < pos ? keep : pos;
}

/* Roots that a repair found gone (see nx_ino_check_root). */
static void recheck_roots(struct notifyx *nx)
{
	struct nx_watch *w;
	size_t pos = 0;

	ino_of(nx)->recheck = false;
	while (nx_map_next(&nx->watches, &pos, NULL, (void **)&w))
		nx_ino_check_root(nx, w);
}

/* The timer ends the holds at hold_until.  Armed already for that time or
 * sooner, it is left as it is (a move out a read, one after another, would
 * cost a system call each): firing sooner, it wakes the application once
 * for nothing, and is armed again then. */
static int arm_hold_timer(struct ino *in)
{
	uint64_t now = nx_now_ns();
	uint64_t left = in->hold_until > now ? in->hold_until - now : 1;
	struct itimerspec its = { .it_value = { (time_t)(left / 1000000000u), (long)(left % 1000000000u) } };

	if (in->timer_armed && in->timer_at <= in->hold_until)
		return 0;
	in->timer_armed = timerfd_settime(in->timerfd, 0, &its, NULL) == 0;
	in->timer_at = now + left;
	return in->timer_armed ? 0 : -1;
}

int nx_ino_process(struct notifyx *nx, unsigned flags)
{
	struct ino *in = ino_of(nx);
	uint64_t expirations;
	int ret = 0, err = 0;
	bool dry = false, wake = false;
	int syncs = 0, retries = 0;

	in->flush = flags & NX_PROCESS_FLUSH;
	/* Reset the timer's readiness once it has fired (not before its time:
	 * no system call to learn that). */
	if (in->timer_armed && nx_now_ns() >= in->timer_at &&
	    read(in->timerfd, &expirations, sizeof(expirations)) > 0)
		in->timer_armed = false;
	for (;;) {
		size_t room = sizeof(in->buf) - in->len;
		ssize_t n = 0;
		bool drained;

		if (room > READ_STEP)
			room = READ_STEP;
		if (room) {
			n = read(in->fd, in->buf + in->len, room);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno != EAGAIN && errno != EINVAL) {
				ret = -1;
				err = errno;
				break;
			}
		}
		/* EINVAL: the next record does not fit in what is left of the
		 * buffer.  A read that left room for the largest record found
		 * the queue empty, as EAGAIN would have: no second read to learn
		 * it. */
		drained = n <= 0 || room - (size_t)n >= sizeof(struct inotify_event) + NAME_MAX + 1;
		if (n > 0) {
			in->len += (size_t)n;
			in->stream += (uint64_t)n;
			nx_ino_note_read(in);
		}
		drop_front(in, parse(nx, drained || in->len == sizeof(in->buf)));
		/* A few rounds: a move made meanwhile may be held in its turn. */
		if (drained && in->holding && !in->fed && syncs++ < 4 && sync_holds(nx))
			continue; /* read what the sync let in, then parse again */
		/* Everything read is handled: the directories deferred are
		 * watched now, unless what they read meanwhile (nx_ino_read_more())
		 * changes their names again; that is handled first. */
		if (drained && !in->len && !in->holding && in->ndeferred && !(wake = retries++ == 4)) {
			nx_ino_retry_deferred(nx, true);
			if (in->len)
				continue;
		}
		if (drained) {
			dry = !in->len;
			break;
		}
		/* Events are ready: the application reads them before more of
		 * the kernel queue is read (what is held waits in buf). */
		if (nx->queue.count && (!in->len || in->holding))
			break;
	}
	/* Work due at once, which the kernel's descriptor, empty by now, would
	 * not announce: the sync rounds ran out before the holds ended (moves
	 * went on meanwhile), or directories are still deferred as changes to
	 * their names went on.  The application comes back at once, so the
	 * holds need no timer. */
	nx->again = in->holding ? syncs > 4 : wake && dry;
	if (in->holding && !nx->again && arm_hold_timer(in) < 0) {
		/* Nothing would end the holds: end them now. */
		in->no_wait = true;
		drop_front(in, parse(nx, true));
		in->no_wait = false;
	} else if (!in->holding && in->timer_armed) {
		/* The holds ended sooner: no spurious wakeup later. */
		struct itimerspec off = { { 0, 0 }, { 0, 0 } };
		in->timer_armed = timerfd_settime(in->timerfd, 0, &off, NULL) < 0;
	}
	if (!in->holding)
		nx_ino_sync_done(in);
	if (dry && !in->holding)
		nx_ino_dry_point(nx);
	if (dry)
		nx_ino_check_mounts(nx);
	if (dry && in->recheck)
		recheck_roots(nx);
	in->flush = false;
	errno = err;
	return ret;
}

int nx_inotify_feed(struct notifyx *nx, const void *data, size_t len, bool drained)
{
	struct ino *in = ino_of(nx);

	if (!len)
		data = "";
	if (len > sizeof(in->buf) - in->len) {
		errno = ENOBUFS;
		return -1;
	}
	memcpy(in->buf + in->len, data, len);
	in->len += len;
	in->stream += len;
	in->fed = true;
	nx_ino_note_read(in);
	drop_front(in, parse(nx, drained || in->len == sizeof(in->buf)));
	if (drained && !in->holding && !in->len) {
		if (in->ndeferred)
			nx_ino_retry_deferred(nx, true);
		nx_ino_dry_point(nx);
	}
	return 0;
}

int nx_inotify_kwd(const struct notifyx *nx, int i)
{
	struct kwatch *kw;
	size_t pos = 0;

	while (nx_index_next(&ino_of(nx)->kwatches, &pos, (void **)&kw))
		if (kw->subs && i-- == 0)
			return kw->kwd;
	return -1;
}

