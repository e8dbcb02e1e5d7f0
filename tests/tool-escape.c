/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit test of tools/escape.c, the escaping of names in notifyx(1) output.
 *
 * For the nasty cases and for random byte strings:
 *  - text (C-style): no byte below 0x20, no 0x7f, no bare '"'; valid UTF-8;
 *    decoding gives back the original bytes;
 *  - JSON: valid UTF-8 without control bytes; a JSON decoder gives back the
 *    original when it is valid UTF-8, else U+FFFD for each invalid byte;
 *    base64 round-trips;
 *  - python3's json module (strict) parses every object, and an independent
 *    Python decoder of both rules gives back the original bytes.  This part
 *    is skipped, with the reason, when python3 is missing.
 * NXESC_SEED=N in the environment repeats a run; NXESC_ROUNDS=N sets the
 * number of random strings.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"

static int failures;

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("FAIL: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	if (++failures > 20) {
		fputs("too many failures\n", stderr);
		exit(1);
	}
}

static void hexdump(FILE *f, const unsigned char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		fprintf(f, "%02x", s[i]);
}

static void fail_bytes(const char *what, const unsigned char *s, size_t n)
{
	fprintf(stderr, "FAIL: %s; input (hex) \"", what);
	hexdump(stderr, s, n);
	fputc('"', stderr);
	fputc('\n', stderr);
	if (++failures > 20) {
		fputs("too many failures\n", stderr);
		exit(1);
	}
}

/* ---- a small JSON string decoder, independent of escape.c -------------- */

static int hex4(const char *p, unsigned long *v)
{
	int i;

	*v = 0;
	for (i = 0; i < 4; i++) {
		char c = p[i];
		int d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		*v = *v << 4 | (unsigned long)d;
	}
	return 0;
}

static unsigned char *put_utf8(unsigned char *d, unsigned long cp)
{
	if (cp < 0x80) {
		*d++ = (unsigned char)cp;
	} else if (cp < 0x800) {
		*d++ = (unsigned char)(0xc0 | cp >> 6);
		*d++ = (unsigned char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*d++ = (unsigned char)(0xe0 | cp >> 12);
		*d++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		*d++ = (unsigned char)(0x80 | (cp & 0x3f));
	} else {
		*d++ = (unsigned char)(0xf0 | cp >> 18);
		*d++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
		*d++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		*d++ = (unsigned char)(0x80 | (cp & 0x3f));
	}
	return d;
}

/* Decodes the contents of a JSON string; -1 when it is not valid JSON. */
static long json_decode(unsigned char *dst, const char *s)
{
	unsigned char *d = dst;
	unsigned long cp, lo;

	while (*s) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == '"')
			return -1;
		if (c != '\\') {
			*d++ = c;
			s++;
			continue;
		}
		switch (s[1]) {
		case '"': *d++ = '"'; s += 2; break;
		case '\\': *d++ = '\\'; s += 2; break;
		case '/': *d++ = '/'; s += 2; break;
		case 'b': *d++ = '\b'; s += 2; break;
		case 'f': *d++ = '\f'; s += 2; break;
		case 'n': *d++ = '\n'; s += 2; break;
		case 'r': *d++ = '\r'; s += 2; break;
		case 't': *d++ = '\t'; s += 2; break;
		case 'u':
			if (hex4(s + 2, &cp) < 0)
				return -1;
			s += 6;
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return -1; /* lone low surrogate */
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (s[0] != '\\' || s[1] != 'u' || hex4(s + 2, &lo) < 0 ||
				    lo < 0xdc00 || lo > 0xdfff)
					return -1;
				s += 6;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			d = put_utf8(d, cp);
			break;
		default:
			return -1;
		}
	}
	return (long)(d - dst);
}

/* What nxesc_json must decode to: s with U+FFFD for each invalid byte. */
static size_t replace_invalid(unsigned char *dst, const unsigned char *s, size_t n)
{
	size_t i = 0, o = 0, l;

	while (i < n) {
		l = nxesc_utf8_seq(s + i, n - i);
		if (l == 0) {
			dst[o++] = 0xef;
			dst[o++] = 0xbf;
			dst[o++] = 0xbd;
			i++;
		} else {
			memcpy(dst + o, s + i, l);
			o += l;
			i += l;
		}
	}
	return o;
}

/* ---- checks of one string ------------------------------------------------ */

static FILE *py; /* python3 checker, or NULL */

static void check_one(const unsigned char *s, size_t n)
{
	char *c = malloc(NXESC_C_MAX(n));
	char *j = malloc(NXESC_JSON_MAX(n));
	char *b = malloc(NXESC_BASE64_MAX(n));
	unsigned char *back = malloc(6 * n + 16);
	unsigned char *want = malloc(3 * n + 1);
	char *cj;
	size_t cl, jl, bl, i, wl;
	ssize_t dl;
	long jdl;
	int valid;

	if (!c || !j || !b || !back || !want) {
		fputs("out of memory\n", stderr);
		exit(99);
	}
	valid = nxesc_utf8_valid(s, n);

	/* text */
	memset(c, 0x55, NXESC_C_MAX(n));
	cl = nxesc_c(c, s, n);
	if (cl + 1 > NXESC_C_MAX(n) || c[cl] != '\0' || strlen(c) != cl)
		fail_bytes("nxesc_c length", s, n);
	for (i = 0; i < cl; i++) {
		unsigned char x = (unsigned char)c[i];

		if (x < 0x20 || x == 0x7f) {
			fail_bytes("nxesc_c left a control byte", s, n);
			break;
		}
		if (x == '\\') {
			i++; /* the escaped character */
			continue;
		}
		if (x == '"') {
			fail_bytes("nxesc_c left a bare quote", s, n);
			break;
		}
	}
	if (!nxesc_utf8_valid((const unsigned char *)c, cl))
		fail_bytes("nxesc_c output is not UTF-8", s, n);
	dl = nxesc_c_decode(back, c, cl);
	if (dl < 0 || (size_t)dl != n || memcmp(back, s, n) != 0)
		fail_bytes("nxesc_c does not round-trip", s, n);
	if (valid && n > 0 && memchr(s, '\\', n) == NULL && memchr(s, '"', n) == NULL) {
		int plain = 1;

		for (i = 0; i < n; i++)
			if (s[i] < 0x20 || s[i] == 0x7f)
				plain = 0;
		if (plain && s[0] < 0x80 && n == 1 && cl != 1)
			fail_bytes("nxesc_c changed a printable character", s, n);
	}

	/* JSON */
	jl = nxesc_json(j, s, n);
	if (jl + 1 > NXESC_JSON_MAX(n) || strlen(j) != jl)
		fail_bytes("nxesc_json length", s, n);
	if (!nxesc_utf8_valid((const unsigned char *)j, jl))
		fail_bytes("nxesc_json output is not UTF-8", s, n);
	for (i = 0; i < jl; i++)
		if ((unsigned char)j[i] < 0x20 || j[i] == 0x7f)
			fail_bytes("nxesc_json left a control byte", s, n);
	jdl = json_decode(back, j);
	wl = replace_invalid(want, s, n);
	if (jdl < 0 || (size_t)jdl != wl || memcmp(back, want, wl) != 0)
		fail_bytes("nxesc_json does not decode to the name (U+FFFD for invalid bytes)", s, n);

	/* base64 */
	bl = nxesc_base64(b, s, n);
	if (bl + 1 > NXESC_BASE64_MAX(n) || strlen(b) != bl || bl % 4 != 0)
		fail_bytes("nxesc_base64 length", s, n);
	dl = nxesc_base64_decode(back, b, bl);
	if (dl < 0 || (size_t)dl != n || memcmp(back, s, n) != 0)
		fail_bytes("nxesc_base64 does not round-trip", s, n);

	/* python3: one object per line, as the tool writes them */
	if (py) {
		/* the text escape as a JSON string, to carry it to Python */
		cj = malloc(NXESC_JSON_MAX(cl));
		if (!cj)
			exit(99);
		nxesc_json(cj, (const unsigned char *)c, cl);
		fprintf(py, "{\"path\":\"%s\"%s%s%s,\"text\":\"%s\",\"hex\":\"",
			j, valid ? "" : ",\"path_b64\":\"", valid ? "" : b,
			valid ? "" : "\"", cj);
		hexdump(py, s, n);
		fputs("\"}\n", py);
		free(cj);
	}
	free(c);
	free(j);
	free(b);
	free(back);
	free(want);
}

/* Python side: a strict parse, and both documented decoding rules. */
static const char py_checker[] =
	"import base64, json, re, sys\n"
	"bad = 0\n"
	"def cdecode(t):\n"
	"    out = bytearray(); i = 0; b = t.encode('utf-8')\n"
	"    simple = {ord('n'): 10, ord('t'): 9, ord('r'): 13, ord('\\\\'): 92, ord('\"'): 34}\n"
	"    while i < len(b):\n"
	"        if b[i] != 92:\n"
	"            out.append(b[i]); i += 1; continue\n"
	"        e = b[i + 1]\n"
	"        if e in simple:\n"
	"            out.append(simple[e]); i += 2\n"
	"        elif e == ord('x'):\n"
	"            out.append(int(b[i + 2:i + 4], 16)); i += 4\n"
	"        else:\n"
	"            raise ValueError('bad escape')\n"
	"    return bytes(out)\n"
	"for n, line in enumerate(sys.stdin, 1):\n"
	"    o = json.loads(line)\n"
	"    want = bytes.fromhex(o['hex'])\n"
	"    got = base64.b64decode(o['path_b64'], validate=True) if 'path_b64' in o else o['path'].encode('utf-8')\n"
	"    if got != want:\n"
	"        bad += 1; print('json rule: line %d: %r != %r' % (n, got, want))\n"
	"    if cdecode(o['text']) != want:\n"
	"        bad += 1; print('text rule: line %d: %r != %r' % (n, o['text'], want))\n"
	"    if bad > 20: break\n"
	"sys.exit(1 if bad else 0)\n";

static const struct {
	const char *s;
	size_t n; /* 0: strlen */
} nasty[] = {
	{ "", 0 }, { "plain", 0 }, { "new\nline", 0 }, { "\n", 0 }, { "quo\"te", 0 },
	{ "back\\slash", 0 }, { "\\", 0 }, { "trail\\", 0 }, { "tab\there", 0 },
	{ "cr\rhere", 0 }, { "\\x41", 0 }, { "\\n", 0 }, { "\"\\\"", 0 },
	{ "\x01\x02\x1f\x7f", 0 }, { "\x1b[31mred\x1b[0m", 0 }, { "bell\a", 0 },
	{ "bad\xff\xfeutf8", 0 }, { "\xff", 0 }, { "\x80", 0 }, { "\xc3", 0 },
	{ "\xc3(", 0 }, { "caf\xc3\xa9", 0 }, { "\xe2\x82\xac", 0 },
	{ "\xf0\x9f\x98\x80 emoji", 0 }, { "\xe2\x80\xa8line sep", 0 },
	{ "\xe2\x80\xae" "bidi", 0 }, { "\xc2\x9b" "c1 csi", 0 }, { "\xc2\xa0nbsp", 0 },
	{ "\xed\xa0\x80surrogate", 0 }, { "\xed\x9f\xbf", 0 }, { "\xf4\x90\x80\x80", 0 },
	{ "\xf4\x8f\xbf\xbf", 0 }, { "\xc0\xaf", 0 }, { "\xe0\x80\xaf", 0 },
	{ "\xf0\x80\x80\xaf", 0 }, { "\xf8\x88\x80\x80\x80", 0 }, { "\xe2\x82", 0 },
	{ "\xf0\x9f\x98", 0 }, { "a\0b", 3 }, { "\0", 1 }, { "sp ace -> x", 0 },
	{ "from \"x\"", 0 }, { "\xef\xbf\xbd", 0 }, { "\xef\xbb\xbf" "bom", 0 },
};

static const struct {
	const char *s;
	int valid;
} utf8_cases[] = {
	{ "abc", 1 }, { "caf\xc3\xa9", 1 }, { "\xf0\x9f\x98\x80", 1 }, { "\xf4\x8f\xbf\xbf", 1 },
	{ "\xed\x9f\xbf", 1 }, { "\xee\x80\x80", 1 }, { "\xc2\x80", 1 }, { "\xe0\xa0\x80", 1 },
	{ "\xff", 0 }, { "\xc3", 0 }, { "\xc0\x80", 0 }, { "\xc1\xbf", 0 }, { "\xe0\x9f\xbf", 0 },
	{ "\xed\xa0\x80", 0 }, { "\xed\xbf\xbf", 0 }, { "\xf0\x8f\xbf\xbf", 0 },
	{ "\xf4\x90\x80\x80", 0 }, { "\xf5\x80\x80\x80", 0 }, { "\x80", 0 }, { "\xe2\x82(", 0 },
};

/* xorshift64*: the same sequence everywhere for a given seed */
static uint64_t rng_state;

static uint32_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ULL) >> 32);
}

static unsigned char rnd_byte(void)
{
	static const unsigned char interesting[] = {
		'\n', '\t', '\r', '"', '\\', 'x', '0', 'a', 0x00, 0x01, 0x1b, 0x7f,
		0x80, 0xbf, 0xc0, 0xc2, 0xc3, 0xe0, 0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff,
	};

	switch (rnd() % 4) {
	case 0:
		return interesting[rnd() % sizeof(interesting)];
	case 1:
		return (unsigned char)(0x20 + rnd() % 0x5f);
	default:
		return (unsigned char)rnd();
	}
}

/* Random strings, often made of valid UTF-8 characters so that both paths run. */
static size_t rnd_string(unsigned char *s, size_t max)
{
	size_t n = rnd() % (max + 1), i = 0;

	while (i < n) {
		if (rnd() % 3 == 0 && i + 4 <= n) {
			static const char *const chars[] = {
				"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xc2\x9b",
				"\xe2\x80\xa8", "\xe2\x80\xae", "\xef\xbf\xbd", "\xd7\x90",
			};
			const char *ch = chars[rnd() % (sizeof(chars) / sizeof(chars[0]))];
			size_t l = strlen(ch);

			memcpy(s + i, ch, l);
			i += l;
		} else {
			s[i++] = rnd_byte();
		}
	}
	return i;
}

int main(void)
{
	unsigned char buf[256];
	unsigned long seed = 20240601, rounds = 20000, r;
	const char *e;
	size_t i;
	int py_status;

	if ((e = getenv("NXESC_SEED")) && *e)
		seed = strtoul(e, NULL, 0);
	if ((e = getenv("NXESC_ROUNDS")) && *e)
		rounds = strtoul(e, NULL, 0);
	signal(SIGPIPE, SIG_IGN); /* a dead python3 is reported by pclose */
	setvbuf(stdout, NULL, _IOLBF, 0);
	rng_state = (uint64_t)seed * 0x9e3779b97f4a7c15ULL + 1;
	printf("tool-escape: seed %lu (NXESC_SEED), %lu random strings\n", seed, rounds);

	/* fixed answers */
	for (i = 0; i < sizeof(utf8_cases) / sizeof(utf8_cases[0]); i++) {
		const unsigned char *s = (const unsigned char *)utf8_cases[i].s;

		if (nxesc_utf8_valid(s, strlen(utf8_cases[i].s)) != utf8_cases[i].valid)
			fail_bytes(utf8_cases[i].valid ? "valid UTF-8 refused" : "invalid UTF-8 accepted",
				   s, strlen(utf8_cases[i].s));
	}
	{
		static const struct { const char *in, *c, *j; } exact[] = {
			{ "a\nb", "a\\nb", "a\\nb" },
			{ "q\"\\", "q\\\"\\\\", "q\\\"\\\\" },
			{ "\t\r\x01\x7f", "\\t\\r\\x01\\x7f", "\\t\\r\\u0001\\u007f" },
			{ "bad\xff", "bad\\xff", "bad\xef\xbf\xbd" },
			{ "caf\xc3\xa9", "caf\xc3\xa9", "caf\xc3\xa9" },
			{ "\xc2\x9b", "\\xc2\\x9b", "\\u009b" },
			{ "\xe2\x80\xa8", "\\xe2\\x80\\xa8", "\\u2028" },
			{ "\\x41", "\\\\x41", "\\\\x41" },
		};
		char out[64];

		for (i = 0; i < sizeof(exact) / sizeof(exact[0]); i++) {
			size_t n = strlen(exact[i].in);

			nxesc_c(out, (const unsigned char *)exact[i].in, n);
			if (strcmp(out, exact[i].c) != 0)
				fail("nxesc_c case %zu: got \"%s\", want \"%s\"", i, out, exact[i].c);
			nxesc_json(out, (const unsigned char *)exact[i].in, n);
			if (strcmp(out, exact[i].j) != 0)
				fail("nxesc_json case %zu: got \"%s\", want \"%s\"", i, out, exact[i].j);
		}
		if (nxesc_c_decode(buf, "\\q", 2) != -1 || nxesc_c_decode(buf, "\\x4", 3) != -1 ||
		    nxesc_c_decode(buf, "a\nb", 3) != -1 || nxesc_c_decode(buf, "\\", 1) != -1)
			fail("nxesc_c_decode accepted malformed input");
		if (nxesc_c_decode(buf, "\\x4A\\x4a", 8) != 2 || buf[0] != 0x4a || buf[1] != 0x4a)
			fail("nxesc_c_decode: \\xHH in either case");
		if (nxesc_base64_decode(buf, "Zm9v", 4) != 3 || memcmp(buf, "foo", 3) != 0 ||
		    nxesc_base64_decode(buf, "Zg==", 4) != 1 || buf[0] != 'f' ||
		    nxesc_base64_decode(buf, "Zg=", 3) != -1 || nxesc_base64_decode(buf, "Z!==", 4) != -1)
			fail("nxesc_base64_decode");
		nxesc_base64((char *)buf, (const unsigned char *)"fooba", 5);
		if (strcmp((char *)buf, "Zm9vYmE=") != 0)
			fail("nxesc_base64(\"fooba\") = %s, want Zm9vYmE=", buf);
	}

	py = NULL;
	if (system("command -v python3 >/dev/null 2>&1") == 0) {
		char cmd[2 * 4096 + 64];

		/* the script goes through a file: no shell quoting to get wrong */
		FILE *f;
		const char *tmpdir = getenv("TMPDIR");
		char path[4096];
		int fd;

		snprintf(path, sizeof(path), "%s/tool-escape-XXXXXX",
			 tmpdir && *tmpdir ? tmpdir : "/tmp");
		fd = mkstemp(path);

		if (fd < 0 || !(f = fdopen(fd, "w"))) {
			perror("mkstemp");
			return 99;
		}
		fputs(py_checker, f);
		fclose(f);
		snprintf(cmd, sizeof(cmd), "python3 '%s'; s=$?; rm -f '%s'; exit $s", path, path);
		py = popen(cmd, "w");
		if (!py)
			perror("popen python3");
	} else {
		printf("tool-escape: python3 not found: skipping the strict JSON parser check\n");
	}

	for (i = 0; i < sizeof(nasty) / sizeof(nasty[0]); i++)
		check_one((const unsigned char *)nasty[i].s, nasty[i].n ? nasty[i].n : strlen(nasty[i].s));
	for (r = 0; r < rounds; r++) {
		size_t n = rnd_string(buf, 64);

		check_one(buf, n);
	}
	/* every 1- and 2-byte string */
	for (i = 0; i < 65536; i++) {
		buf[0] = (unsigned char)(i >> 8);
		buf[1] = (unsigned char)i;
		check_one(buf + 1, 1);
		check_one(buf, 2);
	}

	if (py) {
		py_status = pclose(py);
		if (py_status != 0)
			fail("the python3 check failed (status %d)", py_status);
		else
			printf("tool-escape: python3 json.loads and both decoding rules agree\n");
	}
	if (failures) {
		printf("tool-escape: %d failure(s), seed %lu\n", failures, seed);
		return 1;
	}
	printf("tool-escape: ok\n");
	return 0;
}
