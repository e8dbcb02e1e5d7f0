/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The backends the library has, and the order NOTIFYX_BACKEND_AUTO tries
 * them in: the one place that names them all (a new backend is its own file
 * here and a line below).  The core reaches them through nx_backend() and
 * nx_backend_auto() only. */
#include "config.h"

#include "nx.h"

/* Each defined in its backend's file. */
extern const struct nx_backend nx_backend_inotify;
extern const struct nx_backend nx_backend_fanotify;
extern const struct nx_backend nx_backend_dnotify;
extern const struct nx_backend nx_backend_poll;

/* Indexed by NOTIFYX_BACKEND_* (AUTO is not a backend), with no gap. */
static const struct nx_backend *const backends[] = {
	[NOTIFYX_BACKEND_INOTIFY] = &nx_backend_inotify,
	[NOTIFYX_BACKEND_FANOTIFY] = &nx_backend_fanotify,
	[NOTIFYX_BACKEND_DNOTIFY] = &nx_backend_dnotify,
	[NOTIFYX_BACKEND_POLL] = &nx_backend_poll,
};

/* What NOTIFYX_BACKEND_AUTO tries, in order, after any failure of the one
 * before.  Never dnotify: it takes a real-time signal and SIGIO for the whole
 * process, which only an application that names it may give away. */
static const uint32_t auto_order[] = {
	NOTIFYX_BACKEND_INOTIFY, NOTIFYX_BACKEND_FANOTIFY, NOTIFYX_BACKEND_POLL,
};

const struct nx_backend *nx_backend(uint32_t id)
{
	return id < sizeof(backends) / sizeof(backends[0]) ? backends[id] : NULL;
}

const struct nx_backend *nx_backend_auto(size_t i)
{
	return i < sizeof(auto_order) / sizeof(auto_order[0]) ? backends[auto_order[i]] : NULL;
}
