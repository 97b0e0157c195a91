/* status — renders the supervisor's view of its pool for claimctl: a table for people and a JSON
 * object for programs. Pure: fills a buf from a snapshot, no I/O. */
#ifndef CLAIMD_STATUS_H
#define CLAIMD_STATUS_H

#include <jansson.h>

#include "common/buf.h"
#include "supervisor/surface.h"

void status_render_json(const struct status *st, struct buf *b);
void status_render_table(const struct status *st, struct buf *b);

/* The worker table's text head and a row from a worker's JSON (as status_render_json writes
 * it, by any claimd): claimctl status --all's pools. */
void status_worker_head(const char *indent, struct buf *b);
void status_worker_row_json(json_t *w, const char *indent, struct buf *b);

#endif
