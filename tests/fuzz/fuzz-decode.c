/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The inotify record decoder, nx_inotify_decode, on arbitrary bytes as if
 * read from the kernel: truncated records, a len pointing past the buffer,
 * names without a NUL, zero-length names.  The input is copied into a buffer
 * of exactly its size, so that ASan catches any read outside it, and decoded
 * record after record from offset 0, then from every offset, each result
 * checked against an independent reading of the same bytes.  The mask
 * translations are checked on the masks found on the way.
 */
#include "config.h"

#include <sys/inotify.h>

#include "fuzz.h"
#include "inotify.h"
#include "nx.h"

struct raw {
	int32_t wd;
	uint32_t mask, cookie, len;
};

/* What the record at pos should decode to, read independently. */
static bool expect(const uint8_t *buf, size_t len, size_t pos, struct inrec *r)
{
	struct raw h;

	if (pos > len || len - pos < 16)
		return false;
	memcpy(&h, buf + pos, 16);
	if ((uint64_t)h.len > (uint64_t)(len - pos - 16))
		return false;
	r->wd = h.wd;
	r->mask = h.mask;
	r->cookie = h.cookie;
	r->name = (const char *)buf + pos + 16;
	r->name_len = 0;
	while (r->name_len < h.len && r->name[r->name_len])
		r->name_len++;
	r->size = 16 + (size_t)h.len;
	return true;
}

static void check_at(const uint8_t *buf, size_t len, size_t pos, struct inrec *got)
{
	struct inrec want;
	bool ok;

	memset(got, 0x5a, sizeof(*got));
	ok = nx_inotify_decode((const char *)buf, len, pos, got);
	CHECK(ok == expect(buf, len, pos, &want), "len %zu pos %zu: decode said %d", len, pos, ok);
	if (!ok)
		return;
	CHECK(got->wd == want.wd && got->mask == want.mask && got->cookie == want.cookie,
	      "header fields at %zu", pos);
	CHECK(got->name == want.name, "name pointer at %zu", pos);
	CHECK(got->name_len == want.name_len, "name_len %zu, want %zu", got->name_len, want.name_len);
	CHECK(got->size == want.size, "size %zu, want %zu", got->size, want.size);
	CHECK(got->size >= 16 && got->size <= len - pos, "record leaves the buffer");
	CHECK(memchr(got->name, 0, got->name_len) == NULL, "NUL inside the name");
}

static void check_masks(uint32_t mask)
{
	uint32_t t = nx_inotify_event(mask);

	/* One NOTIFYX type or none, never a move half. */
	CHECK(t == 0 || (!(t & (t - 1)) && (t & NOTIFYX_ALL_EVENTS)), "event(0x%x) = 0x%x", mask, t);
	CHECK(!(t & (NOTIFYX_RENAME | NOTIFYX_MOVED_IN | NOTIFYX_MOVED_OUT)), "move type 0x%x", t);
	/* The type asks the kernel for the bit it came from. */
	if (t)
		CHECK(nx_inotify_mask(t) & mask, "mask(event(0x%x)) = 0x%x", mask, nx_inotify_mask(t));
	/* Requesting everything covers every kernel bit that makes an event. */
	uint32_t all = nx_inotify_mask(NOTIFYX_ALL_EVENTS);
	CHECK(!t || (mask & all), "0x%x makes an event but is not requested by ALL", mask);
	uint32_t m = nx_inotify_mask(mask & NOTIFYX_ALL_EVENTS);
	CHECK((m & ~all) == 0, "mask(0x%x) beyond ALL", mask);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1);
	struct inrec r;
	size_t pos = 0, records = 0;

	if (!buf)
		return 0;
	memcpy(buf, data, size);

	/* The record stream, as the backend's parser walks it. */
	while (pos <= size) {
		check_at(buf, size, pos, &r);
		if (!nx_inotify_decode((const char *)buf, size, pos, &r))
			break;
		check_masks(r.mask);
		pos += r.size;
		records++;
	}
	CHECK(pos <= size, "walked past the end: %zu > %zu", pos, size);

	/* Every other offset, as after a record of any length. */
	for (size_t p = 0; p <= size; p++)
		check_at(buf, size, p, &r);

	/* A buffer that ends early: every prefix of the stream. */
	for (size_t cut = 0; cut < size && cut < 64; cut++) {
		uint8_t *b = malloc(cut ? cut : 1);
		memcpy(b, buf, cut);
		check_at(b, cut, 0, &r);
		free(b);
	}
	free(buf);
	(void)records;
	return 0;
}
