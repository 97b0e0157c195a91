/* The row states' one name table. */
#include "common/row_state.h"

#include <string.h>

static const char *const names[ROW_STATE_COUNT] = {
	[ROW_READY] = "ready", [ROW_CLAIMED] = "claimed", [ROW_DONE] = "done", [ROW_DEAD] = "dead",
};

const char *row_state_name(enum row_state s)
{
	return (unsigned)s < ROW_STATE_COUNT ? names[s] : "";
}

bool row_state_parse(const char *s, enum row_state *ret)
{
	for (unsigned i = 0; s && i < ROW_STATE_COUNT; i++) {
		if (!strcmp(s, names[i])) {
			*ret = (enum row_state)i;
			return true;
		}
	}
	return false;
}

enum row_state row_state_of(const char *s)
{
	enum row_state st = ROW_NONE;

	row_state_parse(s, &st);
	return st;
}

unsigned row_state_bit(const char *s)
{
	enum row_state st;

	return row_state_parse(s, &st) ? ROW_STATE_BIT(st) : 0;
}

bool row_state_final(enum row_state s)
{
	return s == ROW_DONE || s == ROW_DEAD;
}
