/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The notifyx tool's escaping of names (tools/escape.c) on arbitrary bytes.
 *
 * Text format: the output is one valid line (valid UTF-8, no byte below 0x20,
 * no 0x7f, no unescaped '"'), and decoding it gives back the input bytes.
 * JSON format: the output is valid UTF-8 without control bytes, and a strict
 * JSON string decoder gives back the input when it is valid UTF-8, else the
 * input with U+FFFD for each invalid byte.  Base64 round-trips.  The UTF-8
 * predicate agrees with an independent decoder.  The decoders, given the
 * input itself, read and write nothing outside their buffers and, when they
 * accept it, their result encodes and decodes back to the same bytes.
 * Every buffer is allocated at exactly the documented size.
 */
#include <sys/types.h>

#include "escape.h"
#include "fuzz.h"

/* Independent UTF-8 reading: the length of the well-formed sequence at s, or 0. */
static size_t ref_seq(const uint8_t *s, size_t n, uint32_t *cp_out)
{
	uint32_t cp;
	size_t len;

	if (s[0] < 0x80) {
		*cp_out = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	static const uint32_t min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*cp_out = cp;
	return len;
}

static bool ref_valid(const uint8_t *s, size_t n)
{
	uint32_t cp;

	for (size_t i = 0, l; i < n; i += l)
		if (!(l = ref_seq(s + i, n - i, &cp)))
			return false;
	return true;
}

static void put_utf8(uint8_t **d, uint32_t cp)
{
	uint8_t *p = *d;

	if (cp < 0x80) {
		*p++ = (uint8_t)cp;
	} else if (cp < 0x800) {
		*p++ = (uint8_t)(0xc0 | cp >> 6);
		*p++ = (uint8_t)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*p++ = (uint8_t)(0xe0 | cp >> 12);
		*p++ = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
		*p++ = (uint8_t)(0x80 | (cp & 0x3f));
	} else {
		*p++ = (uint8_t)(0xf0 | cp >> 18);
		*p++ = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
		*p++ = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
		*p++ = (uint8_t)(0x80 | (cp & 0x3f));
	}
	*d = p;
}

static int hex(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A strict decoder of the contents of a JSON string (RFC 8259) into UTF-8;
 * -1 when s is not one.  dst needs n bytes. */
static ssize_t json_decode(uint8_t *dst, const uint8_t *s, size_t n)
{
	uint8_t *d = dst;
	size_t i = 0;
	uint32_t cp;

	if (!ref_valid(s, n))
		return -1;
	while (i < n) {
		if (s[i] < 0x20 || s[i] == '"')
			return -1;
		if (s[i] != '\\') {
			*d++ = s[i++];
			continue;
		}
		if (i + 1 >= n)
			return -1;
		switch (s[i + 1]) {
		case '"': case '\\': case '/': *d++ = s[i + 1]; i += 2; continue;
		case 'b': *d++ = '\b'; i += 2; continue;
		case 'f': *d++ = '\f'; i += 2; continue;
		case 'n': *d++ = '\n'; i += 2; continue;
		case 'r': *d++ = '\r'; i += 2; continue;
		case 't': *d++ = '\t'; i += 2; continue;
		case 'u': break;
		default: return -1;
		}
		if (i + 6 > n)
			return -1;
		cp = 0;
		for (int k = 2; k < 6; k++) {
			int h = hex(s[i + k]);
			if (h < 0)
				return -1;
			cp = cp << 4 | (uint32_t)h;
		}
		i += 6;
		if (cp >= 0xd800 && cp <= 0xdfff)
			return -1; /* the encoder never needs a surrogate pair */
		put_utf8(&d, cp);
	}
	return d - dst;
}

/* What the JSON format stands for: the input, U+FFFD for each invalid byte. */
static size_t json_expect(uint8_t *dst, const uint8_t *s, size_t n)
{
	uint8_t *d = dst;
	uint32_t cp;

	for (size_t i = 0, l; i < n; i += l) {
		if ((l = ref_seq(s + i, n - i, &cp))) {
			memcpy(d, s + i, l);
			d += l;
		} else {
			put_utf8(&d, 0xfffd);
			l = 1;
		}
	}
	return (size_t)(d - dst);
}

static void check_text(const uint8_t *s, size_t n)
{
	char *out = malloc(NXESC_C_MAX(n));
	uint8_t *back = malloc(NXESC_C_MAX(n));
	size_t len = nxesc_c(out, s, n);

	CHECK(len < NXESC_C_MAX(n) && strlen(out) == len, "text: length %zu of %zu bytes", len, n);
	for (size_t i = 0; i < len; i++) {
		uint8_t c = (uint8_t)out[i];
		CHECK(c >= 0x20 && c != 0x7f, "text: byte 0x%02x at %zu", c, i);
		if (c == '\\') {
			i++; /* the escaped character */
			CHECK(i < len, "text: ends with a lone backslash");
		} else {
			CHECK(c != '"', "text: unescaped quote at %zu", i);
		}
	}
	CHECK(ref_valid((const uint8_t *)out, len), "text: output is not valid UTF-8");
	ssize_t k = nxesc_c_decode(back, out, len);
	CHECK(k == (ssize_t)n && !memcmp(back, s, n), "text: decoding gives %zd bytes, not the %zu", k, n);
	free(out);
	free(back);
}

static void check_json(const uint8_t *s, size_t n)
{
	char *out = malloc(NXESC_JSON_MAX(n));
	uint8_t *dec = malloc(NXESC_JSON_MAX(n));
	uint8_t *want = malloc(3 * n + 1);
	size_t len = nxesc_json(out, s, n);

	CHECK(len < NXESC_JSON_MAX(n) && strlen(out) == len, "json: length %zu of %zu bytes", len, n);
	for (size_t i = 0; i < len; i++)
		CHECK((uint8_t)out[i] >= 0x20 && (uint8_t)out[i] != 0x7f, "json: byte 0x%02x", (uint8_t)out[i]);
	ssize_t k = json_decode(dec, (const uint8_t *)out, len);
	CHECK(k >= 0, "json: not a valid JSON string");
	size_t w = json_expect(want, s, n);
	CHECK((size_t)k == w && !memcmp(dec, want, w), "json: decodes to other bytes");
	if (ref_valid(s, n))
		CHECK((size_t)k == n && !memcmp(dec, s, n), "json: valid UTF-8 not given back");
	free(out);
	free(dec);
	free(want);
}

static void check_base64(const uint8_t *s, size_t n)
{
	char *out = malloc(NXESC_BASE64_MAX(n));
	size_t len = nxesc_base64(out, s, n);
	uint8_t *back = malloc(3 * len / 4 + 1);

	CHECK(len < NXESC_BASE64_MAX(n) && strlen(out) == len && len % 4 == 0, "base64: length %zu", len);
	ssize_t k = nxesc_base64_decode(back, out, len);
	CHECK(k == (ssize_t)n && !memcmp(back, s, n), "base64: round trip gives %zd bytes, not %zu", k, n);
	free(out);
	free(back);
}

/* The decoders on the input itself. */
static void check_decoders(const uint8_t *s, size_t n)
{
	char *src = malloc(n + 1);
	uint8_t *dst = malloc(n ? n : 1);

	memcpy(src, s, n);
	src[n] = '\0';
	ssize_t k = nxesc_c_decode(dst, src, n);
	CHECK(k >= -1 && k <= (ssize_t)n, "c_decode returned %zd for %zu bytes", k, n);
	if (k >= 0) {
		/* Whatever it accepts stands for bytes that encode and decode back. */
		char *re = malloc(NXESC_C_MAX(k));
		uint8_t *again = malloc(NXESC_C_MAX(k));
		size_t rl = nxesc_c(re, dst, (size_t)k);
		CHECK(nxesc_c_decode(again, re, rl) == k && !memcmp(again, dst, (size_t)k), "c re-encode");
		free(re);
		free(again);
	}
	free(dst);

	size_t cap = 3 * n / 4;
	dst = malloc(cap ? cap : 1);
	k = nxesc_base64_decode(dst, src, n);
	CHECK(k >= -1 && k <= (ssize_t)cap, "base64_decode returned %zd for %zu bytes", k, n);
	if (k >= 0) {
		char *re = malloc(NXESC_BASE64_MAX(k));
		size_t rl = nxesc_base64(re, dst, (size_t)k);
		/* Decoding ignores the unused bits of the last digit; else canonical. */
		CHECK(rl == n, "base64 accepted %zu bytes that re-encode to %zu", n, rl);
		free(re);
	}
	free(dst);
	free(src);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *s = malloc(size ? size : 1);

	memcpy(s, data, size);
	/* The UTF-8 predicate, sequence by sequence, on an exact-size buffer. */
	CHECK(nxesc_utf8_valid(s, size) == ref_valid(s, size), "utf8_valid disagrees");
	for (size_t i = 0; i < size; i++) {
		uint32_t cp;
		size_t want = ref_seq(s + i, size - i, &cp);
		CHECK(nxesc_utf8_seq(s + i, size - i) == want, "utf8_seq at %zu: %zu, want %zu", i,
		      nxesc_utf8_seq(s + i, size - i), want);
	}
	check_text(s, size);
	check_json(s, size);
	check_base64(s, size);
	check_decoders(s, size);
	free(s);
	return 0;
}
