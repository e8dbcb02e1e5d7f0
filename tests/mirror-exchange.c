/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mirror-exchange A B: swap the names A and B (renameat2 RENAME_EXCHANGE),
 * for tests/mirror-cases.sh.  Exit 77 when the kernel or filesystem cannot. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: mirror-exchange A B\n");
		return 2;
	}
	if (renameat2(AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE) < 0) {
		fprintf(stderr, "mirror-exchange %s %s: %s\n", argv[1], argv[2], strerror(errno));
		return errno == EINVAL || errno == ENOSYS ? 77 : 1;
	}
	return 0;
}
