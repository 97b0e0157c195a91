#include "common/trace.h"

#include <string.h>

/* n lower-case hex digits at s; *nonzero set when one is not '0'. */
static bool hex(const char *s, size_t n, bool *nonzero)
{
	for (size_t i = 0; i < n; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
		if (s[i] != '0')
			*nonzero = true;
	}
	return true;
}

const char *trace_log_field(const char *tp, char *buf)
{
	if (!trace_parent_valid(tp))
		return "";
	memcpy(buf, " trace=", 7);
	memcpy(buf + 7, tp + 3, TRACE_ID_LEN);
	buf[7 + TRACE_ID_LEN] = '\0';
	return buf;
}

bool trace_parent_valid(const char *s)
{
	bool any = false, trace = false, parent = false;

	if (!s || strlen(s) != TRACE_PARENT_LEN || s[2] != '-' || s[35] != '-' || s[52] != '-')
		return false;
	return hex(s, 2, &any) && strncmp(s, "ff", 2) != 0 && hex(s + 3, TRACE_ID_LEN, &trace) &&
	       trace && hex(s + 36, 16, &parent) && parent && hex(s + 53, 2, &any);
}
