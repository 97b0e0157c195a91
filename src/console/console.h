/* console — the operator's surface as the supervisor drives it: the control socket, the
 * commands behind it and the HTTP server (API, dashboard, /metrics), opened, reloaded and
 * stopped through console_ops (supervisor/surface.h's struct surface_ops). */
#ifndef CLAIMD_CONSOLE_H
#define CLAIMD_CONSOLE_H

#include "supervisor/surface.h"

extern const struct surface_ops console_ops;

#endif
