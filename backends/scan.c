/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Directory listing shared by the backends. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scan.h"

/* Large enough that most directories take one call, small enough for the stack. */
#define SCAN_BUF (32 * 1024)

static unsigned char type_of(int fd, const char *name)
{
	struct stat st;

	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return DT_UNKNOWN;
	return S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
}

int nx_scan_dir(int fd, nx_scan_fn fn, void *ctx, unsigned *calls)
{
	_Alignas(8) char buf[SCAN_BUF];
	unsigned ncalls = 0;
	ssize_t n;
	int ret = 0;

	while ((n = getdents64(fd, buf, sizeof(buf))) > 0) {
		ncalls++;
		for (ssize_t pos = 0; pos < n;) {
			struct dirent64 *d = (struct dirent64 *)(void *)(buf + pos);
			const char *name = d->d_name;
			pos += d->d_reclen;
			if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
				continue;
			unsigned char type = d->d_type;
			if (type == DT_UNKNOWN && (type = type_of(fd, name)) == DT_UNKNOWN)
				continue; /* vanished meanwhile */
			if ((ret = fn(ctx, name, strlen(name), type)))
				goto out;
		}
	}
	ncalls++;
	if (n < 0)
		ret = -1;
out:
	if (calls)
		*calls = ncalls;
	return ret;
}
