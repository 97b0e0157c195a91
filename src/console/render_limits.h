/* render_limits — a queue's limits (store_limits) for people and programs: the fields of the
 * queue and of a key are the tables in render_limits.c, once, read by both the text (claimctl
 * limit, limits) and the JSON (claimctl --json, the HTTP API, the dashboard) forms; the JSON
 * is built with jansson. */
#ifndef CLAIMD_RENDER_LIMITS_H
#define CLAIMD_RENDER_LIMITS_H

#include "common/buf.h"
#include "store/store.h"

/* "name: value" lines for the queue, then a table of its keys with settings of their own. */
void render_limits_text(const struct store_limits *l, struct buf *b);
/* One JSON object (the queue's fields and "keys": an array of objects), and a newline. */
void render_limits_json(const struct store_limits *l, struct buf *b);

#endif
