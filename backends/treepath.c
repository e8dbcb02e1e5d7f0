/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "treepath.h"

/* Without openat2: one component at a time, each opened O_NOFOLLOW. */
static int open_by_components(int dirfd, const char *rel, int flags)
{
	char name[NAME_MAX + 1];
	int fd = dirfd, next;

	for (;;) {
		const char *slash = strchr(rel, '/');
		size_t len = slash ? (size_t)(slash - rel) : strlen(rel);
		if (len > NAME_MAX || (len == 2 && rel[0] == '.' && rel[1] == '.')) {
			next = -1;
			errno = len > NAME_MAX ? ENAMETOOLONG : EXDEV;
		} else {
			memcpy(name, rel, len);
			name[len] = '\0';
			next = openat(fd, len ? name : ".",
				      slash ? O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
					    : flags | O_NOFOLLOW | O_CLOEXEC);
		}
		if (fd != dirfd) {
			int err = errno;
			close(fd);
			errno = err;
		}
		if (next < 0 || !slash)
			return next;
		fd = next;
		rel = slash + 1;
	}
}

int nx_open_below(int dirfd, const char *rel, int flags)
{
#ifdef SYS_openat2
	struct open_how how = {
		.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};

	/* EAGAIN: a rename somewhere raced the lookup; try again. */
	for (int tries = 0; tries < 8; tries++) {
		int fd = (int)syscall(SYS_openat2, dirfd, *rel ? rel : ".", &how, sizeof(how));
		if (fd >= 0 || (errno != ENOSYS && errno != EAGAIN))
			return fd;
		if (errno == ENOSYS)
			break;
	}
#endif
	return open_by_components(dirfd, rel, flags);
}

uint64_t nx_mount_id(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) < 0 ||
	    !(stx.stx_mask & STATX_MNT_ID))
		return 0;
	return stx.stx_mnt_id;
}

bool nx_mounts_read(int fd, struct nx_map *set)
{
	char buf[8192], id[32];
	size_t ll = 0;
	bool start = true;
	ssize_t n;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return false;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == '\n') {
				start = true;
				ll = 0;
			} else if (!start) {
				continue;
			} else if (buf[i] == ' ') {
				id[ll] = '\0';
				if (nx_map_put(set, strtoull(id, NULL, 10) + 1, (void *)1) < 0)
					return false;
				start = false;
			} else if (ll < sizeof(id) - 1) {
				id[ll++] = buf[i];
			}
		}
	}
	return n == 0;
}

void nx_mountinfo_unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}
