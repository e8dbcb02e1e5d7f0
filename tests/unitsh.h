/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* For the unit tests that set up trees with the shell: runs a
 * printf-formatted command, which must succeed. */
#ifndef NX_TESTS_UNITSH_H
#define NX_TESTS_UNITSH_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

static inline void unit_sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

#endif
