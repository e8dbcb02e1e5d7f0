/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The inotify backend: moves, paired by cookie (see inotify.c). */
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

/* ---- moves ---- */



static bool same_watch(const struct nx_node *a, const struct nx_node *b)
{
	return nx_node_watch(a) == nx_node_watch(b);
}

static void arrived(struct nx_kt_rename *r, struct nx_node *n, const char *name, size_t len,
		    bool theirs, bool unseen)
{
	(void)theirs;
	nx_ino_add_subdir(r->nx, n, name, len, !unseen || (nx_node_watch(n)->flags & NOTIFYX_WATCH_LIST));
}

static void rename_in_watch(struct notifyx *nx, struct nx_node *a, struct nx_node *b,
			    const struct move *m)
{
	struct ino *in = ino_of(nx);
	struct nx_kt_rename r = {
		.a = a, .b = b, .fname = m->fname, .flen = m->flen, .tname = m->tname,
		.tlen = m->tlen, .isdir = m->isdir, .to_isdir = m->to_isdir,
		.exchange = m->exchange, .scratch = { in->path[0], in->path[1] },
		.arrived = arrived, .bury = nx_ino_bury, .nx = nx,
	};

	nx_ino_sup_take(in, a, m->fname, m->flen, SUP_CREATE);
	nx_kt_rename(&r);
}

/*
 * A directory arrives (a lone MOVED_TO) where the table has a node already.
 * Either the arrival replaced that directory, or the node is the arriving
 * directory itself: a listing made while it was being moved in found it
 * there (and listed it; it is not listed again).  Its own kernel watch tells:
 * one added after the MOVED_TO was queued is on what arrived, and the kernel
 * queues the IN_MOVE_SELF of a moved directory right after the MOVED_TO.
 */
static bool arrived_known(const struct ino *in, const struct nx_node *n)
{
	const struct kwatch *kw = n->kref;
	struct inrec r;

	if (kw && kw->born > in->cur)
		return true;
	for (size_t pos = in->next; kw && nx_inotify_decode(in->buf, in->len, pos, &r); pos += r.size) {
		if (r.mask & (IN_MOVED_FROM | IN_MOVED_TO))
			break; /* the next move: its MOVE_SELF would be another's */
		if (r.wd == kw->kwd && !r.name_len && (r.mask & IN_MOVE_SELF))
			return true;
	}
	return false;
}

void nx_ino_do_move(struct notifyx *nx, const struct move *m)
{
	struct ino *in = ino_of(nx);
	size_t nf = nx_ino_subscribers(nx, m->from, 0), nt = nx_ino_subscribers(nx, m->to, 1);
	struct nx_node **from = in->vec[0], **to = in->vec[1];

	for (size_t i = 0; i < nf && m->only != ONLY_ARRIVALS; i++) {
		struct nx_node *a = from[i], *b = NULL;
		if (a->dead)
			continue;
		for (size_t j = 0; j < nt && !b; j++)
			if (!to[j]->dead && same_watch(a, to[j]))
				b = to[j];
		if (b) {
			rename_in_watch(nx, a, b, m);
			continue;
		}
		size_t len = nx_ino_entry_path(in, a, m->fname, m->flen, 0);
		if (len == SIZE_MAX) {
			nx_ino_too_long(nx, a);
			continue;
		}
		nx_ino_sup_take(in, a, m->fname, m->flen, SUP_CREATE);
		nx_emit(nx, nx_node_watch(a), NOTIFYX_MOVED_OUT, m->isdir ? NOTIFYX_EVENT_ISDIR : 0,
			nt ? m->cookie : 0, 0, in->path[0], len, NULL, 0);
		if (m->isdir)
			nx_ino_bury(nx, nx_node_find(&nx->paths, a, m->fname, m->flen));
	}
	for (size_t j = 0; j < nt && m->only != ONLY_DEPARTURES; j++) {
		struct nx_node *b = to[j];
		bool paired = false;
		if (b->dead)
			continue;
		for (size_t i = 0; i < nf && !paired; i++)
			paired = same_watch(from[i], b);
		if (paired)
			continue;
		size_t len = nx_ino_entry_path(in, b, m->tname, m->tlen, 0);
		if (len == SIZE_MAX) {
			nx_ino_too_long(nx, b);
			continue;
		}
		struct nx_watch *w = nx_node_watch(b);
		struct nx_node *old = m->isdir ? nx_node_find(&nx->paths, b, m->tname, m->tlen) : NULL;
		bool known = old && arrived_known(in, old);
		if (old && !known)
			nx_ino_bury(nx, old); /* replaced */
		nx_emit(nx, w, NOTIFYX_MOVED_IN, m->isdir ? NOTIFYX_EVENT_ISDIR : 0,
			nf ? m->cookie : 0, 0, in->path[0], len, NULL, 0);
		if (m->isdir && !known && !nx_excluded(nx, w, in->path[0], in->path[0] + len - m->tlen))
			nx_ino_add_subdir(nx, b, m->tname, m->tlen, w->flags & NOTIFYX_WATCH_LIST);
	}
}

/* Marks the record at pos as consumed (its pair was handled earlier). */
void nx_ino_consume(struct ino *in, size_t pos)
{
	struct inotify_event ev;

	memcpy(&ev, in->buf + pos, sizeof(ev));
	ev.mask = 0;
	memcpy(in->buf + pos, &ev, sizeof(ev));
}

/* The header of the record at pos, when the whole record is in buf. */
bool nx_ino_peek(const struct ino *in, size_t pos, struct inotify_event *ev)
{
	if (in->len - pos < sizeof(*ev))
		return false;
	memcpy(ev, in->buf + pos, sizeof(*ev));
	return ev->len <= in->len - pos - sizeof(*ev);
}

/* Finds the MOVED_TO of the MOVED_FROM from among the HOLD_DISTANCE records
 * after pos (the record after from); 0 when not there.  It comes before any
 * later change of from's directory (see sync_holds): the search ends there. */
size_t nx_ino_find_moved_to(const struct ino *in, size_t pos, const struct inrec *from,
			    struct inrec *out)
{
	struct inotify_event ev;

	for (int n = 0; n < HOLD_DISTANCE && nx_ino_peek(in, pos, &ev); n++, pos += sizeof(ev) + ev.len) {
		if ((ev.mask & IN_MOVED_TO) && ev.cookie == from->cookie)
			return nx_inotify_decode(in->buf, in->len, pos, out) ? pos : 0;
		if (ev.wd == from->wd && (ev.mask & DIR_CHANGES))
			return 0;
	}
	return 0;
}

/* True when each watch that sees one half of a move sees the other: an
 * exchange is reported as one event only then (see BUGS in notifyx(7)). */
bool nx_ino_within_watches(struct notifyx *nx, const struct kwatch *a, const struct kwatch *b)
{
	struct ino *in = ino_of(nx);
	size_t na = nx_ino_subscribers(nx, a, 0), nb = nx_ino_subscribers(nx, b, 1);

	for (size_t i = 0; i < na + nb; i++) {
		struct nx_node *x = i < na ? in->vec[0][i] : in->vec[1][i - na];
		struct nx_node **other = i < na ? in->vec[1] : in->vec[0];
		size_t nother = i < na ? nb : na, j;
		for (j = 0; j < nother && !same_watch(x, other[j]); j++)
			;
		if (j == nother)
			return false;
	}
	return true;
}

/* Does some watch subscribed to kw exclude its entry name? */
static bool hides(struct notifyx *nx, const struct kwatch *kw, const char *name, size_t len)
{
	struct ino *in = ino_of(nx);

	struct nx_node *s;

	for (size_t si = 0; (s = nx_subs_get(kw->subs, si)); si++) {
		size_t plen = nx_node_watch(s)->nexclude ? nx_ino_entry_path(in, s, name, len, 1) : SIZE_MAX;
		if (plen != SIZE_MAX && nx_excluded(nx, nx_node_watch(s), in->path[1], in->path[1] + plen - len))
			return true;
	}
	return false;
}

/* Is there an entry name in the directory of kernel watch kw now?  1 or 0;
 * -1 when that directory cannot be reached by its path now. */
static int entry_state(struct notifyx *nx, const struct kwatch *kw, const char *name, size_t len)
{
	char buf[NAME_MAX + 1];
	struct stat st;
	int fd = -1, ret;
	struct nx_node *s;

	for (size_t si = 0; kw && fd < 0 && len <= NAME_MAX && (s = nx_subs_get(kw->subs, si)); si++)
		if (!s->dead)
			fd = nx_ino_open_node(nx, s);
	if (fd < 0)
		return -1;
	memcpy(buf, name, len);
	buf[len] = '\0';
	ret = fstatat(fd, buf, &st, AT_SYMLINK_NOFOLLOW) == 0;
	close(fd);
	return ret;
}

/* Is the next record after pos (MOVE_SELF records aside) the MOVED_FROM of
 * the name the MOVED_TO to arrived at, with its MOVED_TO back at fm's name
 * (the reverse pair of an exchange whose departure fm was dropped)? */
static bool reverse_follows(const struct ino *in, size_t pos, const struct inrec *to,
			    const struct from_mark *fm)
{
	struct inrec f, t;

	for (; nx_inotify_decode(in->buf, in->len, pos, &f); pos += f.size) {
		if (!f.mask || (!f.name_len && (f.mask & IN_MOVE_SELF)))
			continue;
		return (f.mask & IN_MOVED_FROM) && f.wd == to->wd && f.name_len == to->name_len &&
		       !memcmp(f.name, to->name, f.name_len) &&
		       nx_ino_find_moved_to(in, pos + f.size, &f, &t) && t.wd == fm->wd &&
		       t.name_len == fm->len && !memcmp(t.name, fm->name, t.name_len);
	}
	return false;
}

/* Two non-directories that swapped names reach inotify as a rename onto an
 * existing name and a rename back, reported as two RENAMEs (API.md).  Where
 * a watch sees only one of the names, the two readings differ for it (the
 * name it sees stays, or goes): there the state decides, an exchange when
 * the names seen exist now. */
/* Whether name is in kw's directory once the records before pos are applied:
 * told by the next record read that changes it (read on first: what
 * the kernel queued since counts), else by the directory as it is now; -1
 * when neither can tell (the directory moved, by events not read yet). */
int nx_ino_there_at(struct notifyx *nx, const struct kwatch *kw, const char *name, size_t len,
		    size_t pos)
{
	struct ino *in = ino_of(nx);
	struct inrec n;

	nx_ino_read_more(in);
	for (; nx_inotify_decode(in->buf, in->len, pos, &n); pos += n.size) {
		const struct from_mark *fm = (n.mask & IN_MOVED_TO) ? nx_ino_after_from(in, pos) : NULL;
		if (fm && fm->wd == kw->kwd && fm->len == len && !memcmp(fm->name, name, len) &&
		    reverse_follows(in, pos + n.size, &n, fm))
			return 1; /* a departure of the name was dropped before n (see dropped_departure) */
		if (n.wd != kw->kwd || !(n.mask & DIR_CHANGES) || n.name_len != len ||
		    memcmp(n.name, name, len))
			continue;
		if (!(n.mask & IN_MOVED_TO))
			return (n.mask & (IN_DELETE | IN_MOVED_FROM)) != 0;
		/* An arrival: onto the name when it is the first half of an
		 * exchange (the departure of that name follows, with the next
		 * cookie), else the name was free. */
		struct inrec f = { 0 };
		for (pos += n.size; nx_inotify_decode(in->buf, in->len, pos, &f); pos += f.size)
			if (f.mask && !(f.mask & IN_MOVE_SELF))
				break;
		return pos < in->len && (f.mask & IN_MOVED_FROM) && f.wd == n.wd &&
		       f.cookie == n.cookie + 1 && f.name_len == len && !memcmp(f.name, name, len);
	}
	return entry_state(nx, kw, name, len);
}

/* The pair (from, to) and its reverse pair rev (second half at after - its
 * size) between two files: an exchange, or a rename onto an existing name
 * and one back?  Both names are there after an exchange. */
static bool files_exchanged(struct notifyx *nx, const struct inrec *from, const struct inrec *to,
			    const struct inrec *rev, size_t after)
{
	struct ino *in = ino_of(nx);
	const struct kwatch *a = nx_ino_kwatch(in, from->wd);
	const struct kwatch *b = nx_ino_kwatch(in, to->wd);
	int sa, sb;

	if (!a || !b)
		return false;
	bool ha = hides(nx, a, from->name, from->name_len);
	bool hb = hides(nx, b, to->name, to->name_len);
	if (!ha && !hb && nx_ino_within_watches(nx, a, b))
		return false;
	/* A hidden name may have gone since without an event: only the names
	 * seen count. */
	sa = ha ? 1 : nx_ino_there_at(nx, a, from->name, from->name_len, after);
	sb = hb ? 1 : nx_ino_there_at(nx, b, to->name, to->name_len, after);
	if (sa < 0 || sb < 0) /* the two renames of an exchange take consecutive cookies */
		return sa && sb && rev->cookie == from->cookie + 1;
	return sa && sb;
}

/* After the pair (from, to) of an exchange, the kernel queues the reverse
 * pair; MOVE_SELF records of the moved entries may come between.  When what
 * is read may end inside the exchange, *incomplete is where the records
 * read after it would start (after the reverse pair's MOVED_FROM when that
 * is read: it was queued under the rename's lock, it does not show the
 * rename over), else 0. */
size_t nx_ino_find_exchange(struct notifyx *nx, size_t pos, const struct inrec *from,
			    const struct inrec *to, size_t *incomplete, bool *to_isdir,
			    uint32_t *cookie)
{
	struct ino *in = ino_of(nx);
	struct inrec r, t;

	*incomplete = 0;
	for (; nx_inotify_decode(in->buf, in->len, pos, &r); pos += r.size) {
		if (r.mask == 0 || (!r.name_len && (r.mask & IN_MOVE_SELF)))
			continue;
		if (!(r.mask & IN_MOVED_FROM) || r.wd != to->wd || r.name_len != to->name_len ||
		    memcmp(r.name, to->name, r.name_len))
			return 0;
		size_t tpos = nx_ino_find_moved_to(in, pos + r.size, &r, &t);
		if (!tpos) {
			*incomplete = pos + r.size;
			return 0;
		}
		if (t.wd != from->wd || t.name_len != from->name_len || memcmp(t.name, from->name, t.name_len))
			return 0;
		/* Entries of different types can only have been exchanged, and a
		 * directory replaced by a rename would have ended its own watch. */
		if (!((r.mask ^ from->mask) & IN_ISDIR) && !(r.mask & IN_ISDIR) &&
		    !files_exchanged(nx, from, to, &r, tpos + t.size))
			return 0;
		*to_isdir = r.mask & IN_ISDIR;
		*cookie = r.cookie;
		nx_ino_consume(in, pos);
		nx_ino_consume(in, tpos);
		return pos;
	}
	*incomplete = pos;
	return 0;
}

