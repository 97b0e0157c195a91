#include "supervisor/slot_health.h"

static const char *const names[] = {
	[SLOT_DOWN] = "down", [SLOT_FORKING] = "forking", [SLOT_UP] = "up", [SLOT_UNRESPONSIVE] = "unresponsive",
	[SLOT_EXITED] = "exited",
};

/* What may follow what. */
static const bool may_follow[SLOT_HEALTH_COUNT][SLOT_HEALTH_COUNT] = {
	[SLOT_DOWN] = { [SLOT_FORKING] = true },
	[SLOT_FORKING] = { [SLOT_UP] = true, [SLOT_DOWN] = true },
	[SLOT_UP] = { [SLOT_UNRESPONSIVE] = true, [SLOT_EXITED] = true },
	[SLOT_UNRESPONSIVE] = { [SLOT_EXITED] = true },
	[SLOT_EXITED] = { [SLOT_DOWN] = true },
};

const char *slot_health_name(enum slot_health h)
{
	return (unsigned)h < sizeof(names) / sizeof(names[0]) ? names[h] : "?";
}

bool slot_health_may_follow(enum slot_health from, enum slot_health to)
{
	return (unsigned)from < SLOT_HEALTH_COUNT && (unsigned)to < SLOT_HEALTH_COUNT &&
	       may_follow[from][to];
}
