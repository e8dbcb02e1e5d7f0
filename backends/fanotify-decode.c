/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fanotify backend (fanotify.c): decoding the kernel's records, and
 * the masks of events.  Declared in fanotify.h, for the unit tests and the
 * fuzzers too. */
#include "config.h"

#include <string.h>
#include <sys/fanotify.h>

#include "fanotify-int.h"

/* Newer than some installed headers (see KERNEL.md). */
#ifndef FAN_EVENT_INFO_TYPE_OLD_DFID_NAME
#define FAN_EVENT_INFO_TYPE_OLD_DFID_NAME 10
#define FAN_EVENT_INFO_TYPE_NEW_DFID_NAME 12
#endif

/* ---- decoding (pure: no system call) ---- */

uint64_t nx_fan_key(const void *data, size_t len)
{
	return nx_hash(data, len, 0x6661);
}

/* An identifier record: header (4), fsid (8), handle_bytes (4), type (4),
 * the handle, then for the *_NAME types a NUL-terminated name.  The name, nm
 * when not NULL, is empty for the other types.  A record that does not
 * decode leaves both empty. */
static void decode_id(const unsigned char *p, size_t len, bool named, struct fanid *id,
		      struct fanname *nm)
{
	uint32_t hbytes;
	size_t end, n = 0;

	*id = (struct fanid){ 0 };
	if (nm)
		*nm = (struct fanname){ 0 };
	if (len < 4 + 16)
		return;
	memcpy(&hbytes, p + 12, sizeof(hbytes));
	if (hbytes > len - 20)
		return;
	end = 20 + hbytes;
	if (named && (n = strnlen((const char *)p + end, len - end)) == len - end)
		return; /* no NUL inside the record */
	id->data = p + 4;
	id->len = 16 + hbytes;
	id->key = nx_fan_key(id->data, id->len);
	if (named) {
		nm->name = (const char *)p + end;
		nm->len = n;
	}
}

/* The header of the record at buf[pos], when the whole record is there:
 * false when not (see nx_fan_decode).  *ok: whether the header is one this
 * library reads. */
static bool header_at(const char *buf, size_t len, size_t pos, struct fanotify_event_metadata *m,
		      bool *ok)
{
	if (pos > len || len - pos < sizeof(*m))
		return false;
	memcpy(m, buf + pos, sizeof(*m));
	if (m->event_len < sizeof(*m) || m->event_len > len - pos)
		return false;
	*ok = m->vers == FANOTIFY_METADATA_VERSION && m->metadata_len >= sizeof(*m) &&
	      m->metadata_len <= m->event_len;
	return true;
}

bool nx_fan_decode(const char *buf, size_t len, size_t pos, struct fanrec *r)
{
	struct fanotify_event_metadata m;
	size_t off;
	bool ok;

	memset(r, 0, sizeof(*r));
	if (!header_at(buf, len, pos, &m, &ok))
		return false;
	r->size = m.event_len;
	if (!ok)
		return false;
	r->mask = m.mask;
	r->pid = m.pid;
	for (off = m.metadata_len; m.event_len - off >= 4;) {
		const unsigned char *p = (const unsigned char *)buf + pos + off;
		uint16_t ilen;
		memcpy(&ilen, p + 2, sizeof(ilen));
		if (ilen < 4 || ilen > m.event_len - off)
			break; /* a length that lies: the rest is not trusted */
		switch (p[0]) {
		case FAN_EVENT_INFO_TYPE_FID:
			decode_id(p, ilen, false, &r->fid, NULL);
			break;
		case FAN_EVENT_INFO_TYPE_DFID_NAME:
			decode_id(p, ilen, true, &r->dfid, &r->name);
			break;
		case FAN_EVENT_INFO_TYPE_DFID:
			decode_id(p, ilen, false, &r->dfid, &r->name);
			break;
		case FAN_EVENT_INFO_TYPE_OLD_DFID_NAME:
			decode_id(p, ilen, true, &r->odfid, &r->oname);
			break;
		case FAN_EVENT_INFO_TYPE_NEW_DFID_NAME:
			decode_id(p, ilen, true, &r->ndfid, &r->nname);
			break;
		default:
			break; /* unknown: skipped by its own length */
		}
		off += ilen;
	}
	return true;
}

/* The order in which the parts of a merged event on one entry happened, when
 * the entry was made by this event: made, opened, used, closed, changed. */
static const struct {
	uint64_t fan;
	uint32_t nx;
} order[] = {
	{ FAN_OPEN, NOTIFYX_OPEN },
	{ FAN_ACCESS, NOTIFYX_ACCESS },
	{ FAN_MODIFY, NOTIFYX_MODIFY },
	{ FAN_CLOSE_WRITE, NOTIFYX_CLOSE_WRITE },
	{ FAN_CLOSE_NOWRITE, NOTIFYX_CLOSE_NOWRITE },
	{ FAN_ATTRIB, NOTIFYX_ATTRIB },
};

size_t nx_fan_split(uint64_t mask, bool exists, uint32_t out[8])
{
	bool create = mask & FAN_CREATE, del = mask & FAN_DELETE;
	size_t n = 0;

	/* Made and deleted, and there now: it was deleted, then made again. */
	if (del && create && exists)
		out[n++] = NOTIFYX_DELETE;
	if (create)
		out[n++] = NOTIFYX_CREATE;
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (mask & order[i].fan)
			out[n++] = order[i].nx;
	if (del && !(exists && create))
		out[n++] = NOTIFYX_DELETE;
	return n;
}

uint64_t nx_fan_mask(uint32_t events)
{
	uint64_t m = 0;

	if (events & NOTIFYX_ACCESS)
		m |= FAN_ACCESS;
	if (events & NOTIFYX_MODIFY)
		m |= FAN_MODIFY;
	if (events & NOTIFYX_ATTRIB)
		m |= FAN_ATTRIB;
	if (events & NOTIFYX_CLOSE_WRITE)
		m |= FAN_CLOSE_WRITE;
	if (events & NOTIFYX_CLOSE_NOWRITE)
		m |= FAN_CLOSE_NOWRITE;
	if (events & NOTIFYX_OPEN)
		m |= FAN_OPEN;
	if (events & NOTIFYX_CREATE)
		m |= FAN_CREATE;
	if (events & NOTIFYX_DELETE)
		m |= FAN_DELETE;
	if (events & (NOTIFYX_RENAME | NOTIFYX_MOVED_OUT | NOTIFYX_MOVED_IN))
		m |= FAN_RENAME;
	if (events & NOTIFYX_DELETE_SELF)
		m |= FAN_DELETE_SELF;
	if (events & NOTIFYX_MOVE_SELF)
		m |= FAN_MOVE_SELF;
	return m;
}

/* Records looked at after a FAN_RENAME for the second half of an exchange. */
#define PAIR_WINDOW 1024

size_t nx_fan_next_rename(const char *buf, size_t len, size_t pos, const struct fanrec *r)
{
	struct fanotify_event_metadata m;
	size_t at = pos + r->size;
	bool ok;

	/* The headers only: the search runs for each FAN_RENAME handled. */
	for (int i = 0; i < PAIR_WINDOW; i++) {
		if (at >= len)
			return SIZE_MAX;
		if (!header_at(buf, len, at, &m, &ok))
			return len;
		if (ok && (m.mask & FAN_RENAME) && m.pid == r->pid)
			return at;
		at += m.event_len;
	}
	return len;
}
