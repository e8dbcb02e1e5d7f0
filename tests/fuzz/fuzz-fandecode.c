/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The fanotify record decoder, nx_fan_decode, on arbitrary bytes as if read
 * from the kernel: unknown info types, lengths that lie (event_len,
 * metadata_len, info lengths, handle_bytes), handles of any size, names
 * without NUL, merged masks.  The input is copied into a buffer of exactly
 * its size (ASan catches any read outside it) and decoded record after
 * record from offset 0, then from every offset; every part a decoded record
 * points to must lie inside that record, names must end with their NUL, and
 * the keys must be those of the bytes.  The first 9 bytes also feed the
 * splitting of a merged mask, whose output is checked for order and
 * uniqueness.  A FAN_RENAME's search for an exchange's second half
 * (nx_fan_next_rename) must stay inside buf.
 */
#include "config.h"

#include <sys/fanotify.h>

#include "fanotify.h"
#include "fuzz.h"
#include "nx.h"

#ifndef FAN_RENAME
#define FAN_RENAME 0x10000000
#endif

static void check_id(const struct fanid *id, const char *rec, size_t size, const char *what)
{
	if (!id->len)
		return;
	CHECK(id->len >= 16, "%s: identifier of %zu bytes", what, id->len);
	CHECK((const char *)id->data >= rec && (const char *)id->data + id->len <= rec + size,
	      "%s: identifier outside its record", what);
	CHECK(id->key == nx_fan_key(id->data, id->len), "%s: key", what);
}

static void check_name(const struct fanname *n, const char *rec, size_t size, const char *what)
{
	if (!n->name)
		return;
	CHECK(n->name >= rec && n->name + n->len < rec + size, "%s: name outside its record", what);
	CHECK(n->name[n->len] == '\0' && strlen(n->name) == n->len, "%s: name length", what);
}

static void check_at(const char *buf, size_t len, size_t pos, struct fanrec *r)
{
	bool ok = nx_fan_decode(buf, len, pos, r);

	if (r->size) {
		CHECK(r->size >= sizeof(struct fanotify_event_metadata) && r->size <= len - pos,
		      "size %zu at %zu of %zu", r->size, pos, len);
	}
	if (!ok)
		return;
	const char *rec = buf + pos;
	check_id(&r->fid, rec, r->size, "fid");
	check_id(&r->dfid, rec, r->size, "dfid");
	check_id(&r->odfid, rec, r->size, "odfid");
	check_id(&r->ndfid, rec, r->size, "ndfid");
	check_name(&r->name, rec, r->size, "name");
	check_name(&r->oname, rec, r->size, "oname");
	check_name(&r->nname, rec, r->size, "nname");
	CHECK(!r->name.len || r->dfid.len, "a name without its directory");
	if (r->mask & FAN_RENAME) { /* its second half, if an exchange: a record after it */
		size_t at = nx_fan_next_rename(buf, len, pos, r);
		CHECK(at == SIZE_MAX || at == len || (at > pos && at < len),
		      "second half at %zu for %zu of %zu", at, pos, len);
	}
}

static void check_split(uint64_t mask, bool exists)
{
	uint32_t out[8], seen = 0;
	size_t n = nx_fan_split(mask, exists, out);
	ssize_t cr = -1, del = -1;

	CHECK(n <= 8, "split gave %zu", n);
	for (size_t i = 0; i < n; i++) {
		CHECK(out[i] && !(out[i] & (out[i] - 1)) && (out[i] & NOTIFYX_ALL_EVENTS),
		      "split: %#x is not one event type", out[i]);
		CHECK(!(seen & out[i]), "split: %#x twice", out[i]);
		seen |= out[i];
		if (out[i] == NOTIFYX_CREATE)
			cr = (ssize_t)i;
		if (out[i] == NOTIFYX_DELETE)
			del = (ssize_t)i;
	}
	CHECK((cr >= 0) == !!(mask & FAN_CREATE) && (del >= 0) == !!(mask & FAN_DELETE),
	      "split lost a CREATE or DELETE of %#llx", (unsigned long long)mask);
	if (cr >= 0 && del >= 0)
		CHECK(exists ? del < cr : cr < del, "split order of %#llx (exists %d)",
		      (unsigned long long)mask, exists);
	/* The mask translation: every requested bit maps to something. */
	CHECK(!(seen & ~NOTIFYX_ALL_EVENTS), "split: unknown bits");
	CHECK(!seen || (nx_fan_mask(seen) & mask), "mask of the split types");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	struct fanrec r;
	size_t pos = 0;

	memcpy(buf, data, size);
	while (pos < size) {
		bool ok = nx_fan_decode(buf, size, pos, &r);
		check_at(buf, size, pos, &r);
		if (!ok && !r.size)
			break;
		pos += r.size;
	}
	for (pos = 0; pos <= size; pos++)
		check_at(buf, size, pos, &r);
	if (size >= 9) {
		uint64_t mask;
		memcpy(&mask, data, 8);
		check_split(mask, data[8] & 1);
	}
	free(buf);
	return 0;
}
