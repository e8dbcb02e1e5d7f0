/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The output formats of notifyx watch (text, json, nul, template), and the
 * escaped names that notifyx run passes to its command.  The escaping itself
 * is in escape.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <notifyx.h>

#include "escape.h"
#include "format.h"
#include "tool.h"

/* A scratch buffer that grows as names need it. */
struct scratch {
	char *p;
	size_t size;
};

static char *scratch_get(struct scratch *s, size_t need)
{
	if (need > s->size) {
		size_t n = s->size ? s->size : 256;
		char *p;

		while (n < need)
			n *= 2;
		p = realloc(s->p, n);
		if (!p) {
			fprintf(stderr, "%s: %s\n", progname, strerror(ENOMEM));
			exit(EXIT_FAILURE);
		}
		s->p = p;
		s->size = n;
	}
	return s->p;
}

static struct scratch esc_buf, join_buf;

/* %T without --timefmt: ISO 8601, local time with its offset. */
#define DEFAULT_TIMEFMT "%Y-%m-%dT%H:%M:%S%z"

/* Writes s[0..n) C-escaped between double quotes. */
static void put_c_string(FILE *f, const char *s, size_t n)
{
	char *d = scratch_get(&esc_buf, NXESC_C_MAX(n));

	nxesc_c(d, (const unsigned char *)s, n);
	fputc('"', f);
	fputs(d, f);
	fputc('"', f);
}

/* Writes ,"key":"..." and, for a name that is not UTF-8, ,"key_b64":"...". */
static void put_json_name(FILE *f, const char *key, const char *s)
{
	size_t n = strlen(s);
	char *d = scratch_get(&esc_buf, NXESC_JSON_MAX(n) > NXESC_BASE64_MAX(n) ?
				       NXESC_JSON_MAX(n) : NXESC_BASE64_MAX(n));

	nxesc_json(d, (const unsigned char *)s, n);
	fprintf(f, ",\"%s\":\"%s\"", key, d);
	if (!nxesc_utf8_valid((const unsigned char *)s, n)) {
		nxesc_base64(d, (const unsigned char *)s, n);
		fprintf(f, ",\"%s_b64\":\"%s\"", key, d);
	}
}

/* root joined with the relative path rel ("" is root itself). */
const char *fmt_join(const char *root, const char *rel)
{
	size_t rl = strlen(root), pl = strlen(rel);
	char *d;

	if (pl == 0)
		return root;
	d = scratch_get(&join_buf, rl + pl + 2);
	memcpy(d, root, rl);
	if (rl == 0 || root[rl - 1] != '/')
		d[rl++] = '/';
	memcpy(d + rl, rel, pl + 1);
	return d;
}


static void print_text(FILE *f, const struct notifyx_event *ev, const char *root)
{
	const char *old = notifyx_event_old_path(ev);
	const char *p;

	put_event_name(f, ev->mask);
	if (ev->flags & NOTIFYX_EVENT_ISDIR)
		fputs(" isdir", f);
	if (ev->flags & NOTIFYX_EVENT_SYNTHETIC)
		fputs(" synthetic", f);
	if (ev->flags & NOTIFYX_EVENT_EXCHANGE)
		fputs(" exchange", f);
	if (ev->flags & ~(uint32_t)(NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_SYNTHETIC |
				    NOTIFYX_EVENT_EXCHANGE))
		fprintf(f, " flags=0x%x", (unsigned)ev->flags);
	if (ev->cookie)
		fprintf(f, " cookie=%u", (unsigned)ev->cookie);
	fputc(' ', f);
	p = fmt_join(root, notifyx_event_path(ev));
	put_c_string(f, p, strlen(p));
	if (old) {
		fputs(" from ", f);
		p = fmt_join(root, old);
		put_c_string(f, p, strlen(p));
	}
	if (ev->mask == NOTIFYX_ERROR)
		fprintf(f, ": %s", strerror(ev->error));
	else if (ev->mask == NOTIFYX_OVERFLOW)
		fputs(": events were lost", f);
	fputc('\n', f);
}

static void print_json(FILE *f, const struct notifyx_event *ev, const char *root,
		       const struct timespec *now)
{
	const char *old = notifyx_event_old_path(ev);

	fprintf(f, "{\"time\":%lld.%06ld,\"wd\":%d", (long long)now->tv_sec,
		(long)(now->tv_nsec / 1000), (int)ev->wd);
	put_json_name(f, "root", root);
	put_json_name(f, "path", notifyx_event_path(ev));
	if (old)
		put_json_name(f, "old_path", old);
	else
		fputs(",\"old_path\":null", f);
	fputs(",\"event\":\"", f);
	put_event_name(f, ev->mask); /* plain lower-case ASCII names */
	fprintf(f, "\",\"isdir\":%s,\"synthetic\":%s,\"exchange\":%s,\"cookie\":%u,\"error\":%d",
		ev->flags & NOTIFYX_EVENT_ISDIR ? "true" : "false",
		ev->flags & NOTIFYX_EVENT_SYNTHETIC ? "true" : "false",
		ev->flags & NOTIFYX_EVENT_EXCHANGE ? "true" : "false",
		(unsigned)ev->cookie, (int)ev->error);
	if (ev->error) {
		const char *msg = strerror(ev->error);
		size_t n = strlen(msg);
		char *d = scratch_get(&esc_buf, NXESC_JSON_MAX(n));

		nxesc_json(d, (const unsigned char *)msg, n);
		fprintf(f, ",\"error_text\":\"%s\"}\n", d);
	} else {
		fputs(",\"error_text\":null}\n", f);
	}
}

/* The directives of --format=TEMPLATE, checked before any watch is set. */
static const char template_directives[] = "eprowtTcf%";

static int check_template(const char *t)
{
	for (; *t; t++) {
		if (*t != '%')
			continue;
		t++;
		if (*t == '\0') {
			fprintf(stderr, "%s: --format: the template ends with a lone '%%' "
				"(write %%%% for a percent sign)\n", progname);
			return -1;
		}
		if (!strchr(template_directives, *t)) {
			fprintf(stderr, "%s: --format: unknown directive '%%%c' (known: %%e %%p "
				"%%r %%o %%w %%t %%T %%c %%f %%%%)\n", progname, *t);
			return -1;
		}
	}
	return 0;
}

const char *fmt_escape(const char *s)
{
	size_t n = strlen(s);
	char *d = scratch_get(&esc_buf, NXESC_C_MAX(n));

	nxesc_c(d, (const unsigned char *)s, n);
	return d;
}

/* Writes s C-escaped as in the text format, without the quotes. */
static void put_c_bare(FILE *f, const char *s)
{
	fputs(fmt_escape(s), f);
}

/* The flags of ev as a comma-separated list ("" for none). */
static void put_flag_list(FILE *f, uint32_t flags)
{
	const char *sep = "";

	if (flags & NOTIFYX_EVENT_ISDIR) {
		fputs("isdir", f);
		sep = ",";
	}
	if (flags & NOTIFYX_EVENT_SYNTHETIC) {
		fprintf(f, "%ssynthetic", sep);
		sep = ",";
	}
	if (flags & NOTIFYX_EVENT_EXCHANGE)
		fprintf(f, "%sexchange", sep);
}

/*
 * The time of now, local, as strftime(3) formats it with fmt (the default
 * when fmt is NULL).  A result longer than the buffer writes nothing, as
 * strftime(3) gives nothing then.
 */
static void put_time(FILE *f, const char *fmt, const struct timespec *now)
{
	char buf[256];
	struct tm tm;
	size_t n;

	if (!localtime_r(&now->tv_sec, &tm))
		return;
	/* the user's --timefmt is the format: that is the point of it */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	n = strftime(buf, sizeof(buf), fmt ? fmt : DEFAULT_TIMEFMT, &tm);
#pragma GCC diagnostic pop
	fwrite(buf, 1, n, f);
}

static void print_template(FILE *f, const char *t, const struct notifyx_event *ev,
			   const char *root, const struct timespec *now, const char *timefmt)
{
	const char *old = notifyx_event_old_path(ev);

	for (; *t; t++) {
		if (*t != '%') {
			fputc(*t, f);
			continue;
		}
		switch (*++t) {
		case 'e':
			put_event_name(f, ev->mask);
			break;
		case 'p':
			put_c_bare(f, fmt_join(root, notifyx_event_path(ev)));
			break;
		case 'r':
			put_c_bare(f, notifyx_event_path(ev));
			break;
		case 'o':
			if (old)
				put_c_bare(f, fmt_join(root, old));
			break;
		case 'w':
			put_c_bare(f, root);
			break;
		case 't':
			fprintf(f, "%lld.%06ld", (long long)now->tv_sec, (long)(now->tv_nsec / 1000));
			break;
		case 'T':
			put_time(f, timefmt, now);
			break;
		case 'c':
			fprintf(f, "%u", (unsigned)ev->cookie);
			break;
		case 'f':
			put_flag_list(f, ev->flags);
			break;
		default: /* '%'; check_template let nothing else through */
			fputc('%', f);
			break;
		}
	}
	fputc('\n', f);
}

/* --format=nul: the event's path, exact bytes, then a NUL (for xargs -0). */
static void print_nul(FILE *f, const struct notifyx_event *ev, const char *root)
{
	const char *p = fmt_join(root, notifyx_event_path(ev));

	fwrite(p, 1, strlen(p) + 1, f);
}

int fmt_parse(struct output *o, const char *arg)
{
	if (strcmp(arg, "text") == 0) {
		o->format = FORMAT_TEXT;
	} else if (strcmp(arg, "json") == 0) {
		o->format = FORMAT_JSON;
	} else if (strcmp(arg, "nul") == 0) {
		o->format = FORMAT_NUL;
	} else if (strchr(arg, '%')) {
		if (check_template(arg) < 0)
			return -1;
		o->format = FORMAT_TEMPLATE;
		o->template = arg;
	} else {
		fprintf(stderr, "%s: unknown format '%s' (known: text, json, nul, "
			"or a template with %% directives)\n", progname, arg);
		return -1;
	}
	return 0;
}

int fmt_check_timefmt(const struct output *o)
{
	if (!o->timefmt || o->format == FORMAT_TEXT || o->format == FORMAT_TEMPLATE)
		return 0;
	fprintf(stderr, "%s: --timefmt applies to the text format and to %%T in a "
		"template, not to --format=%s\n", progname,
		o->format == FORMAT_JSON ? "json" : "nul");
	return -1;
}

void fmt_print(FILE *f, const struct output *o, const struct notifyx_event *ev,
	       const char *root, const struct timespec *now)
{
	switch (o->format) {
	case FORMAT_JSON:
		print_json(f, ev, root, now);
		break;
	case FORMAT_NUL:
		print_nul(f, ev, root);
		break;
	case FORMAT_TEMPLATE:
		print_template(f, o->template, ev, root, now, o->timefmt);
		break;
	default:
		if (o->timefmt) {
			put_time(f, o->timefmt, now);
			fputc(' ', f);
		}
		print_text(f, ev, root);
		break;
	}
}
