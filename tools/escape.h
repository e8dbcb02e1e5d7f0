/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Escaping of file names for the notifyx(1) tool: pure functions on byte
 * strings, so that they can be unit-tested and fuzzed apart from the tool.
 * The rules are written at the top of escape.c.
 */
#ifndef NOTIFYX_TOOLS_ESCAPE_H
#define NOTIFYX_TOOLS_ESCAPE_H

#include <stddef.h>
#include <sys/types.h>

/* Room for the output of each function for n input bytes, the NUL included. */
#define NXESC_C_MAX(n)      (4 * (size_t)(n) + 1) /* "\xHH" per byte at most */
#define NXESC_JSON_MAX(n)   (6 * (size_t)(n) + 1) /* "\u00HH" per byte at most */
#define NXESC_BASE64_MAX(n) (4 * (((size_t)(n) + 2) / 3) + 1)

/*
 * Length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF) at the start of s[0..n), or 0 when the
 * first byte does not begin one.  n must be > 0.
 */
size_t nxesc_utf8_seq(const unsigned char *s, size_t n);

/* 1 when all of s[0..n) is well-formed UTF-8, else 0. */
int nxesc_utf8_valid(const unsigned char *s, size_t n);

/*
 * Text format: C-style escaping of s[0..n) into dst (NXESC_C_MAX(n) bytes),
 * NUL-terminated, without surrounding quotes.  Returns strlen(dst).
 */
size_t nxesc_c(char *dst, const unsigned char *s, size_t n);

/*
 * The reverse of nxesc_c: decodes src[0..n) into dst (at least n bytes).
 * Returns the number of bytes decoded, or -1 when src is not something
 * nxesc_c can produce (unknown escape, short \x, raw control byte).
 */
ssize_t nxesc_c_decode(unsigned char *dst, const char *src, size_t n);

/*
 * JSON format: the contents of a JSON string (without the quotes) for
 * s[0..n), into dst (NXESC_JSON_MAX(n) bytes), NUL-terminated; always
 * well-formed UTF-8 that a strict parser accepts.  Returns strlen(dst).
 * When s is not valid UTF-8, each byte that does not belong to a valid
 * sequence becomes U+FFFD: lossy, so the caller adds the base64 key too.
 */
size_t nxesc_json(char *dst, const unsigned char *s, size_t n);

/* Base64 (RFC 4648, standard alphabet, '=' padding) of s[0..n) into dst
 * (NXESC_BASE64_MAX(n) bytes), NUL-terminated.  Returns strlen(dst). */
size_t nxesc_base64(char *dst, const unsigned char *s, size_t n);

/* The reverse of nxesc_base64 into dst (at least 3 * n / 4 bytes); -1 when
 * src is not padded standard base64. */
ssize_t nxesc_base64_decode(unsigned char *dst, const char *src, size_t n);

#endif /* NOTIFYX_TOOLS_ESCAPE_H */
