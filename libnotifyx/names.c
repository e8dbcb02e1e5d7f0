/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Names of backends and events, and the library version. */
#include "config.h"

#include "nx.h"

static const char *const event_names[] = {
	"access", "modify", "attrib", "close_write", "close_nowrite", "open", "create",
	"delete", "rename", "moved_out", "moved_in", "delete_self", "move_self",
	NULL, NULL, NULL,
	"overflow", "unmount", "error", "ignored", "sync",
};

NX_EXPORT const char *notifyx_event_name(uint32_t mask)
{
	if (!mask || (mask & (mask - 1)))
		return NULL; /* not exactly one bit */
	unsigned bit = (unsigned)__builtin_ctz(mask);
	return bit < sizeof(event_names) / sizeof(event_names[0]) ? event_names[bit] : NULL;
}

NX_EXPORT const char *notifyx_backend_name(uint32_t backend)
{
	const struct nx_backend *ops = nx_backend(backend);

	if (backend == NOTIFYX_BACKEND_AUTO)
		return "auto";
	return ops ? ops->name : NULL;
}

#define STR_(x) #x
#define STR(x) STR_(x)

NX_EXPORT const char *notifyx_version(void)
{
	return STR(NOTIFYX_VERSION_MAJOR) "." STR(NOTIFYX_VERSION_MINOR) "." STR(NOTIFYX_VERSION_PATCH);
}
