/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers shared by the libFuzzer targets of tests/fuzz/. */
#ifndef NX_FUZZ_H
#define NX_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failed invariant: libFuzzer sees the abort and saves the input. */
#define CHECK(cond, ...)                                                         \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "FUZZ FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                           \
			fputc('\n', stderr);                                    \
			abort();                                                \
		}                                                               \
	} while (0)

/* Reads the input front to back; past its end every read gives 0. */
struct in {
	const uint8_t *p;
	size_t n;
};

static inline bool in_more(const struct in *in)
{
	return in->n > 0;
}

static inline uint8_t in_u8(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static inline uint16_t in_u16(struct in *in)
{
	uint16_t v = in_u8(in);
	return (uint16_t)(v | (uint16_t)in_u8(in) << 8);
}

static inline uint32_t in_u32(struct in *in)
{
	uint32_t v = in_u16(in);
	return v | (uint32_t)in_u16(in) << 16;
}

/* Up to max bytes (fewer when the input ends); returns how many. */
static inline size_t in_bytes(struct in *in, void *dst, size_t max)
{
	size_t k = max < in->n ? max : in->n;
	memcpy(dst, in->p, k);
	in->p += k;
	in->n -= k;
	return k;
}

#endif
