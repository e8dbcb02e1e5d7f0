/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Exclude-pattern matching, nx_match_exclude, on arbitrary pattern lists,
 * paths and names.  The input is split at NUL bytes: the last field is the
 * path (relative to a watch root), the fields before it are up to 8
 * patterns; the name is the path's last component, as the library passes it.
 *
 * Checked: a list matches exactly when one of its patterns does; a pattern
 * with a slash is matched against the path with FNM_PATHNAME, one without
 * against the name (the documented rule, notifyx_exclude(3)); and an
 * independent matcher of the usual glob syntax ('*', '?', brackets with '!'
 * or '^', ranges, backslash escapes, '/' matched only literally under
 * FNM_PATHNAME) agrees with the result, wherever the pattern stays inside
 * what that matcher knows (it leaves out character classes, collating
 * elements, escapes inside brackets, reversed or non-ASCII ranges, unclosed
 * brackets with a range, a trailing backslash and "\\/" under FNM_PATHNAME,
 * where glibc has rules of its own).
 */
#include "config.h"

#include <fnmatch.h>

#include "fuzz.h"
#include "nx.h"

#define MAXPAT 8
#define MAXLEN 64

enum { NO = 0, YES = 1, UNKNOWN = 2 };

/* Parses the bracket expression at p ('[' at p[0]); returns the index after
 * its ']' and sets *ok to whether c matches, 0 when it is not a bracket
 * expression (no closing ']': '[' is then an ordinary character), -1 when it
 * holds something this matcher leaves out. */
static int bracket(const char *p, size_t plen, size_t i, unsigned char c, bool pathname, bool *ok)
{
	size_t j = i + 1;
	bool neg = false, match = false, range = false;

	if (j < plen && (p[j] == '!' || p[j] == '^')) {
		neg = true;
		j++;
	}
	size_t first = j;
	for (; j < plen; j++) {
		unsigned char a = (unsigned char)p[j];
		if (a == ']' && j > first)
			break;
		if (a == '[' || a == '\\' || a >= 0x80 || (a == '/' && pathname))
			return -1;
		if (j + 2 < plen && p[j + 1] == '-' && p[j + 2] != ']') {
			unsigned char b = (unsigned char)p[j + 2];
			if (b == '[' || b == '\\' || b >= 0x80 || b < a || (b == '/' && pathname))
				return -1;
			if (c >= a && c <= b)
				match = true;
			range = true;
			j += 2;
			continue;
		}
		if (a == c)
			match = true;
	}
	if (j >= plen)
		return range || memchr(p + i, '-', plen - i) ? -1 : 0; /* glibc: "[a-" never matches */
	*ok = match != neg;
	return (int)(j + 1);
}

/* Memoised matcher: memo[i][k] for pattern index i and string index k. */
struct ref {
	const char *p, *s;
	size_t plen, slen;
	bool pathname;
	signed char memo[MAXLEN + 1][MAXLEN + 1];
};

static int ref_at(struct ref *r, size_t i, size_t k)
{
	int res;

	if (r->memo[i][k] != -1)
		return r->memo[i][k];
	if (i == r->plen) {
		res = k == r->slen ? YES : NO;
	} else {
		char pc = r->p[i];
		if (pc == '*') {
			res = NO;
			/* '*' takes zero or more characters (no '/' under FNM_PATHNAME) */
			for (size_t m = k; ; m++) {
				int t = ref_at(r, i + 1, m);
				if (t == UNKNOWN)
					res = UNKNOWN;
				else if (t == YES && res != UNKNOWN)
					res = YES;
				if (m == r->slen || (r->pathname && r->s[m] == '/'))
					break;
			}
		} else if (k == r->slen) {
			/* A pattern character cannot match the end, except that a
			 * malformed or out-of-model one must be judged first. */
			if (pc == '\\')
				res = i + 1 < r->plen && !(r->pathname && r->p[i + 1] == '/') ? NO : UNKNOWN;
			else if (pc == '[') {
				bool ok;
				res = bracket(r->p, r->plen, i, 0, r->pathname, &ok) < 0 ? UNKNOWN : NO;
			} else
				res = NO;
		} else {
			unsigned char c = (unsigned char)r->s[k];
			if (pc == '?') {
				res = (r->pathname && c == '/') ? NO : ref_at(r, i + 1, k + 1);
			} else if (pc == '\\') {
				if (i + 1 >= r->plen || (r->pathname && r->p[i + 1] == '/'))
					res = UNKNOWN; /* a trailing backslash; glibc's "\\/" */
				else
					res = (unsigned char)r->p[i + 1] == c ? ref_at(r, i + 2, k + 1) : NO;
			} else if (pc == '[') {
				bool ok = false;
				int end = bracket(r->p, r->plen, i, c, r->pathname, &ok);
				if (end < 0)
					res = UNKNOWN;
				else if (end == 0)
					res = c == '[' ? ref_at(r, i + 1, k + 1) : NO;
				else if (r->pathname && c == '/')
					res = NO;
				else
					res = ok ? ref_at(r, (size_t)end, k + 1) : NO;
			} else {
				res = (unsigned char)pc == c ? ref_at(r, i + 1, k + 1) : NO;
			}
		}
	}
	r->memo[i][k] = (signed char)res;
	return res;
}

static int ref_match(const char *p, const char *s, bool pathname)
{
	static struct ref r;

	r.p = p;
	r.s = s;
	r.plen = strlen(p);
	r.slen = strlen(s);
	r.pathname = pathname;
	memset(r.memo, -1, sizeof(r.memo));
	return ref_at(&r, 0, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *fields[MAXPAT + 1];
	size_t nf = 0, start = 0;

	/* Fields at NUL bytes; each copied to a buffer of its own size. */
	for (size_t i = 0; i <= size && nf < MAXPAT + 1; i++) {
		if (i == size || data[i] == 0) {
			size_t len = i - start;
			if (len > MAXLEN)
				len = MAXLEN;
			fields[nf] = malloc(len + 1);
			memcpy(fields[nf], data + start, len);
			fields[nf][len] = '\0';
			nf++;
			start = i + 1;
		}
	}
	const char *path = fields[nf - 1];
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	uint32_t np = (uint32_t)(nf - 1);
	bool any = false;

	CHECK(!nx_match_exclude(fields, 0, path, name), "an empty list matched");
	for (uint32_t i = 0; i < np; i++) {
		const char *p = fields[i];
		bool one = nx_match_exclude(&fields[i], 1, path, name);
		bool has_slash = strchr(p, '/') != NULL;
		bool want = has_slash ? !fnmatch(p, path, FNM_PATHNAME) : !fnmatch(p, name, 0);
		CHECK(one == want, "pattern \"%s\" path \"%s\" name \"%s\": %d", p, path, name, one);
		int ref = ref_match(p, has_slash ? path : name, has_slash);
		CHECK(ref == UNKNOWN || (ref == YES) == one,
		      "pattern \"%s\" on \"%s\" (%s): library %d, reference %d", p,
		      has_slash ? path : name, has_slash ? "FNM_PATHNAME" : "name", one, ref);
		any |= one;
	}
	CHECK(nx_match_exclude(fields, np, path, name) == any, "list of %u: not the OR of its patterns", np);
	for (size_t i = 0; i < nf; i++)
		free(fields[i]);
	return 0;
}
