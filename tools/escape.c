/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Escaping of file names for notifyx(1).  A Linux file name is any string of
 * bytes but '/' and NUL; these rules keep every name on one output line and
 * make the output decodable back to the exact bytes.
 *
 * UTF-8 here means well-formed UTF-8 as RFC 3629 defines it: no overlong
 * forms, no surrogates (U+D800..U+DFFF), nothing above U+10FFFF.  A byte
 * that does not begin a well-formed sequence is "invalid"; decoding goes on
 * at the next byte.
 *
 * Text format (nxesc_c; the tool puts the result between double quotes):
 *   \\  for a backslash          \"  for a double quote
 *   \n  for a newline (0x0a)     \t  for a tab (0x09)     \r  for 0x0d
 *   \xHH (exactly two lower-case hex digits) for
 *       - every other byte 0x00..0x1f and 0x7f,
 *       - every invalid byte,
 *       - each byte of a valid sequence for a character that could fool
 *         a terminal or a line-based reader: C1 controls U+0080..U+009F,
 *         U+2028, U+2029, and the bidirectional controls U+200E, U+200F,
 *         U+202A..U+202E, U+2066..U+2069;
 *   every other byte (printable ASCII, the rest of valid UTF-8) as itself.
 * Decoding (nxesc_c_decode): \\ \" \n \t \r give their byte, \xHH gives the
 * byte HH (two hex digits, either case), anything else is itself.  The
 * output never holds a byte below 0x20 or 0x7f, so never a newline, and
 * never an unescaped '"', so a quoted name always ends at its closing quote.
 *
 * JSON format (nxesc_json, contents of a JSON string, RFC 8259): valid
 * UTF-8 passes through as itself, except
 *   \" and \\; \b \f \n \r \t; \u00XX for other bytes 0x00..0x1f and 0x7f;
 *   \u0080..\u009f for the C1 controls; \u2028 and \u2029;
 * and each invalid byte becomes U+FFFD (the replacement character).  The
 * string is then always valid UTF-8 without lone surrogates, so any strict
 * parser accepts it, and it is the name itself whenever the name is valid
 * UTF-8.  When it is not, the string is only for display: the tool then adds
 * a key "<key>_b64" (for example "path_b64") holding the exact bytes in
 * base64 (RFC 4648, standard alphabet, '=' padding).  To get the bytes of a
 * name back: base64-decode "<key>_b64" when present, else UTF-8-encode the
 * decoded string.
 */
#include "escape.h"

#include <string.h>

static const char hexdigits[] = "0123456789abcdef";

size_t nxesc_utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (c < 0x80)
		return 1;
	if (c < 0xc2)
		return 0; /* continuation byte or overlong 2-byte lead */
	if (c < 0xe0) {
		len = 2;
	} else if (c < 0xf0) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		else if (c == 0xed)
			hi = 0x9f; /* surrogates */
	} else if (c < 0xf5) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90; /* overlong */
		else if (c == 0xf4)
			hi = 0x8f; /* above U+10FFFF */
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

int nxesc_utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0, l;

	while (i < n) {
		l = nxesc_utf8_seq(s + i, n - i);
		if (l == 0)
			return 0;
		i += l;
	}
	return 1;
}

/* The code point of the well-formed sequence s[0..len). */
static unsigned long utf8_cp(const unsigned char *s, size_t len)
{
	unsigned long cp;
	size_t i;

	switch (len) {
	case 1:
		return s[0];
	case 2:
		cp = s[0] & 0x1f;
		break;
	case 3:
		cp = s[0] & 0x0f;
		break;
	default:
		cp = s[0] & 0x07;
		break;
	}
	for (i = 1; i < len; i++)
		cp = cp << 6 | (s[i] & 0x3f);
	return cp;
}

/* Characters the text format writes as \xHH bytes although they are valid. */
static int text_unsafe(unsigned long cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
	       cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

static char *put_hex_byte(char *d, unsigned char c)
{
	*d++ = '\\';
	*d++ = 'x';
	*d++ = hexdigits[c >> 4];
	*d++ = hexdigits[c & 0xf];
	return d;
}

size_t nxesc_c(char *dst, const unsigned char *s, size_t n)
{
	char *d = dst;
	size_t i = 0, l, k;

	while (i < n) {
		unsigned char c = s[i];

		if (c < 0x80) {
			switch (c) {
			case '\\': *d++ = '\\'; *d++ = '\\'; break;
			case '"':  *d++ = '\\'; *d++ = '"';  break;
			case '\n': *d++ = '\\'; *d++ = 'n';  break;
			case '\t': *d++ = '\\'; *d++ = 't';  break;
			case '\r': *d++ = '\\'; *d++ = 'r';  break;
			default:
				if (c < 0x20 || c == 0x7f)
					d = put_hex_byte(d, c);
				else
					*d++ = (char)c;
			}
			i++;
			continue;
		}
		l = nxesc_utf8_seq(s + i, n - i);
		if (l == 0) {
			d = put_hex_byte(d, c);
			i++;
		} else if (text_unsafe(utf8_cp(s + i, l))) {
			for (k = 0; k < l; k++)
				d = put_hex_byte(d, s[i + k]);
			i += l;
		} else {
			memcpy(d, s + i, l);
			d += l;
			i += l;
		}
	}
	*d = '\0';
	return (size_t)(d - dst);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

ssize_t nxesc_c_decode(unsigned char *dst, const char *src, size_t n)
{
	unsigned char *d = dst;
	size_t i = 0;
	int h, l;

	while (i < n) {
		unsigned char c = (unsigned char)src[i];

		if (c < 0x20 || c == 0x7f || c == '"')
			return -1; /* never produced unescaped */
		if (c != '\\') {
			*d++ = c;
			i++;
			continue;
		}
		if (i + 1 >= n)
			return -1;
		switch (src[i + 1]) {
		case '\\': *d++ = '\\'; i += 2; break;
		case '"':  *d++ = '"';  i += 2; break;
		case 'n':  *d++ = '\n'; i += 2; break;
		case 't':  *d++ = '\t'; i += 2; break;
		case 'r':  *d++ = '\r'; i += 2; break;
		case 'x':
			if (i + 3 >= n)
				return -1;
			h = hexval(src[i + 2]);
			l = hexval(src[i + 3]);
			if (h < 0 || l < 0)
				return -1;
			*d++ = (unsigned char)(h << 4 | l);
			i += 4;
			break;
		default:
			return -1;
		}
	}
	return (ssize_t)(d - dst);
}

static char *put_u(char *d, unsigned long cp)
{
	*d++ = '\\';
	*d++ = 'u';
	*d++ = hexdigits[(cp >> 12) & 0xf];
	*d++ = hexdigits[(cp >> 8) & 0xf];
	*d++ = hexdigits[(cp >> 4) & 0xf];
	*d++ = hexdigits[cp & 0xf];
	return d;
}

size_t nxesc_json(char *dst, const unsigned char *s, size_t n)
{
	char *d = dst;
	size_t i = 0, l;
	unsigned long cp;

	while (i < n) {
		unsigned char c = s[i];

		if (c < 0x80) {
			switch (c) {
			case '\\': *d++ = '\\'; *d++ = '\\'; break;
			case '"':  *d++ = '\\'; *d++ = '"';  break;
			case '\b': *d++ = '\\'; *d++ = 'b';  break;
			case '\f': *d++ = '\\'; *d++ = 'f';  break;
			case '\n': *d++ = '\\'; *d++ = 'n';  break;
			case '\r': *d++ = '\\'; *d++ = 'r';  break;
			case '\t': *d++ = '\\'; *d++ = 't';  break;
			default:
				if (c < 0x20 || c == 0x7f)
					d = put_u(d, c);
				else
					*d++ = (char)c;
			}
			i++;
			continue;
		}
		l = nxesc_utf8_seq(s + i, n - i);
		if (l == 0) {
			/* U+FFFD, 3 bytes for 1 */
			*d++ = (char)0xef;
			*d++ = (char)0xbf;
			*d++ = (char)0xbd;
			i++;
			continue;
		}
		cp = utf8_cp(s + i, l);
		if ((cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029) {
			d = put_u(d, cp); /* 6 bytes for 2 or 3 */
		} else {
			memcpy(d, s + i, l);
			d += l;
		}
		i += l;
	}
	*d = '\0';
	return (size_t)(d - dst);
}

static const char b64digits[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t nxesc_base64(char *dst, const unsigned char *s, size_t n)
{
	char *d = dst;
	size_t i;

	for (i = 0; i + 2 < n; i += 3) {
		unsigned long v = (unsigned long)s[i] << 16 | (unsigned long)s[i + 1] << 8 | s[i + 2];

		*d++ = b64digits[(v >> 18) & 63];
		*d++ = b64digits[(v >> 12) & 63];
		*d++ = b64digits[(v >> 6) & 63];
		*d++ = b64digits[v & 63];
	}
	if (n - i == 1) {
		unsigned long v = (unsigned long)s[i] << 16;

		*d++ = b64digits[(v >> 18) & 63];
		*d++ = b64digits[(v >> 12) & 63];
		*d++ = '=';
		*d++ = '=';
	} else if (n - i == 2) {
		unsigned long v = (unsigned long)s[i] << 16 | (unsigned long)s[i + 1] << 8;

		*d++ = b64digits[(v >> 18) & 63];
		*d++ = b64digits[(v >> 12) & 63];
		*d++ = b64digits[(v >> 6) & 63];
		*d++ = '=';
	}
	*d = '\0';
	return (size_t)(d - dst);
}

static int b64val(char c)
{
	const char *p;

	if (c == '\0')
		return -1;
	p = strchr(b64digits, c);
	return p ? (int)(p - b64digits) : -1;
}

ssize_t nxesc_base64_decode(unsigned char *dst, const char *src, size_t n)
{
	unsigned char *d = dst;
	size_t i;

	if (n % 4 != 0)
		return -1;
	for (i = 0; i < n; i += 4) {
		int a = b64val(src[i]), b = b64val(src[i + 1]);
		int c, e;
		int last = i + 4 == n;

		if (a < 0 || b < 0)
			return -1;
		*d++ = (unsigned char)(a << 2 | b >> 4);
		if (last && src[i + 2] == '=') {
			if (src[i + 3] != '=')
				return -1;
			break;
		}
		c = b64val(src[i + 2]);
		if (c < 0)
			return -1;
		*d++ = (unsigned char)((b & 0xf) << 4 | c >> 2);
		if (last && src[i + 3] == '=')
			break;
		e = b64val(src[i + 3]);
		if (e < 0)
			return -1;
		*d++ = (unsigned char)((c & 0x3) << 6 | e);
	}
	return (ssize_t)(d - dst);
}
