/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The event encoder (nx_queue_push, nx_queue_splice) and notifyx_read's
 * copy-out, at every buffer length.
 *
 * The input describes up to 64 records (wd, type, flags, cookie, path and
 * old path lengths up to PATH_MAX-1, queued directly or through the stage
 * queue spliced in as a watch being set up does), then buffer lengths.  The
 * records are queued in a real handle (inotify backend, no watch), then read
 * out with the given lengths, then with every length from 1 up: each read
 * must return exactly the whole records that fit, byte for byte as an
 * independent encoder writes them (size a multiple of 8, names NUL
 * terminated, zero padding), or fail with EINVAL and consume nothing when the
 * next record does not fit.  The buffer ends where its allocation ends, so
 * ASan sees any write past len; the bytes after what was returned must be
 * untouched.  Once empty, a read fails with EAGAIN.
 */
#include "config.h"

#include <errno.h>

#include "fuzz.h"
#include "nx.h"

#define MAXREC 64
#define REGION (NOTIFYX_EVENT_MAX * 4)
#define CANARY 0xa5

struct rec {
	uint8_t *bytes; /* the expected encoding */
	size_t size;
};

static struct rec recs[MAXREC];
static size_t nrec, head;
static uint8_t *region;
static char names[2][PATH_MAX];

static const uint32_t masks[] = {
	NOTIFYX_CREATE, NOTIFYX_DELETE, NOTIFYX_RENAME, NOTIFYX_MOVED_OUT, NOTIFYX_MOVED_IN,
	NOTIFYX_MODIFY, NOTIFYX_OVERFLOW, NOTIFYX_ERROR, NOTIFYX_IGNORED, NOTIFYX_UNMOUNT,
};

static size_t encode(uint8_t **out, int32_t wd, uint32_t mask, uint32_t flags, uint32_t cookie,
		     int32_t error, size_t plen, size_t olen)
{
	size_t need = 32 + plen + 1 + (olen ? olen + 1 : 0);
	size_t size = (need + 7) / 8 * 8;
	uint8_t *b = calloc(1, size);
	uint32_t h[8] = { (uint32_t)size, (uint32_t)wd, mask, flags, cookie, (uint32_t)error,
			  (uint32_t)plen, (uint32_t)olen };

	memcpy(b, h, 32);
	memcpy(b + 32, names[0], plen);
	if (olen)
		memcpy(b + 32 + plen + 1, names[1], olen);
	*out = b;
	return size;
}

/* Bytes of the whole records from head that fit in len. */
static size_t fitting(size_t len, size_t *count)
{
	size_t done = 0, k = 0;

	while (head + k < nrec && recs[head + k].size <= len - done)
		done += recs[head + k++].size;
	*count = k;
	return done;
}

static void read_with(struct notifyx *nx, size_t len)
{
	uint8_t *buf = region + REGION - len;
	size_t count, want = fitting(len, &count);
	size_t before = nx->queue.count;
	const struct notifyx_event *next = nx_queue_peek(&nx->queue);
	size_t fill = want ? len : (len < 64 ? len : 64);

	memset(buf, CANARY, fill);
	errno = 0;
	ssize_t got = notifyx_read(nx, buf, len);
	if (!want) {
		CHECK(got == -1, "len %zu: read %zd, but the next record is %zu bytes", len, got,
		      head < nrec ? recs[head].size : 0);
		CHECK(errno == (head < nrec ? EINVAL : EAGAIN), "len %zu: errno %d", len, errno);
		CHECK(nx->queue.count == before && nx_queue_peek(&nx->queue) == next,
		      "len %zu: a failed read consumed something", len);
		for (size_t i = 0; i < fill; i++)
			CHECK(buf[i] == CANARY, "len %zu: a failed read wrote at %zu", len, i);
		return;
	}
	CHECK(got == (ssize_t)want, "len %zu: read %zd bytes, want %zu (%zu records)", len, got, want, count);
	size_t off = 0;
	for (size_t k = 0; k < count; k++) {
		const struct rec *r = &recs[head + k];
		CHECK(!memcmp(buf + off, r->bytes, r->size), "len %zu: record %zu differs", len, head + k);
		uint32_t evsize; /* the buffer ends at the region's end: not aligned */
		memcpy(&evsize, buf + off, sizeof(evsize));
		CHECK(evsize % 8 == 0 && evsize == r->size, "record %zu: size %u", head + k, evsize);
		off += r->size;
	}
	for (size_t i = want; i < len; i++)
		CHECK(buf[i] == CANARY, "len %zu: wrote past the %zu bytes returned, at %zu", len, want, i);
	head += count;
	CHECK(nx->queue.count == nrec - head, "queue count %zu, want %zu", nx->queue.count, nrec - head);
	CHECK(nx->queue.exempt <= nx->queue.count, "exempt %zu > count %zu", nx->queue.exempt,
	      nx->queue.count);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct notifyx_config cfg = { .size = sizeof(cfg), .backend = NOTIFYX_BACKEND_INOTIFY,
				      .flags = NOTIFYX_NONBLOCK };
	struct in in = { data, size };
	struct notifyx *nx;
	uint8_t n;

	if (!region) {
		region = malloc(REGION);
		for (size_t i = 0; i < PATH_MAX; i++) {
			names[0][i] = (char)('a' + i % 26);
			names[1][i] = (char)('A' + i % 23);
		}
	}
	if (!(nx = notifyx_open(&cfg)))
		return 0;
	n = in_u8(&in) % (MAXREC + 1);
	nrec = head = 0;
	for (uint8_t i = 0; i < n && in_more(&in); i++) {
		int32_t wd = (int8_t)in_u8(&in);
		uint8_t m = in_u8(&in);
		uint32_t mask = m < 0xf0 ? masks[m % (sizeof(masks) / sizeof(masks[0]))] : in_u32(&in);
		uint32_t flags = in_u8(&in) & 7;
		uint32_t cookie = in_u8(&in);
		int32_t error = mask == NOTIFYX_ERROR ? in_u8(&in) : 0;
		size_t plen = in_u16(&in) % PATH_MAX;
		uint16_t o = in_u16(&in);
		size_t olen = (o & 0x8000) ? 0 : o % PATH_MAX;
		uint8_t how = in_u8(&in);
		struct nx_queue *q = (how & 1) ? &nx->stage : &nx->queue;

		/* Records queued before those still on the stage come first. */
		if (!(how & 1) && nx->stage.count)
			break;
		CHECK(nx_event_size(plen, olen) == (32 + plen + 1 + (olen ? olen + 1 : 0) + 7) / 8 * 8,
		      "nx_event_size(%zu, %zu)", plen, olen);
		struct notifyx_event *ev = nx_queue_push(q, wd, mask, flags, cookie, error, names[0],
							 plen, names[1], olen);
		CHECK(ev, "push of %zu + %zu bytes failed", plen, olen);
		recs[nrec].size = encode(&recs[nrec].bytes, wd, mask, flags, cookie, error, plen, olen);
		CHECK(!memcmp(ev, recs[nrec].bytes, recs[nrec].size), "record %zu encoded differently", nrec);
		nrec++;
		if (how & 2) /* as add_watch does: the stage's records are exempt */
			nx_queue_splice(&nx->queue, &nx->stage, (how & 4) != 0);
	}
	nx_queue_splice(&nx->queue, &nx->stage, true);
	CHECK(nx->queue.count == nrec && nx->stage.count == 0, "count %zu after %zu pushes",
	      nx->queue.count, nrec);

	/* The lengths the input asks for, then every length from 1 up. */
	while (in_more(&in) && head < nrec)
		read_with(nx, 1 + in_u16(&in) % REGION);
	for (size_t len = 1; head < nrec;) {
		size_t before = head;
		read_with(nx, len);
		if (head == before)
			len++;
		CHECK(len <= NOTIFYX_EVENT_MAX, "no progress with a buffer of NOTIFYX_EVENT_MAX");
	}
	read_with(nx, NOTIFYX_EVENT_MAX); /* empty: EAGAIN */
	CHECK(nx->queue.exempt == 0, "exempt %zu left in an empty queue", nx->queue.exempt);
	for (size_t i = 0; i < nrec; i++)
		free(recs[i].bytes);
	notifyx_close(nx);
	return 0;
}
