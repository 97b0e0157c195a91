/* buf — a growable byte buffer for building text (status tables, JSON).
 * Allocation failures are sticky: once one happens every later append is a no-op and
 * buf_failed() says so, so callers check once at the end. Does not log. */
#ifndef CLAIMD_BUF_H
#define CLAIMD_BUF_H

#include <stdbool.h>
#include <stddef.h>

struct buf {
	char *data;   /* NUL-terminated when len > 0 */
	size_t len;
	size_t cap;
	bool failed;
};

void buf_init(struct buf *b);
void buf_free(struct buf *b);
/* Empty it for reuse, keeping the memory; clears a failure. */
void buf_reset(struct buf *b);
void buf_append(struct buf *b, const void *p, size_t n);
void buf_puts(struct buf *b, const char *s);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a JSON string literal, quotes included. */
void buf_json_str(struct buf *b, const char *s);
bool buf_failed(const struct buf *b);

#endif
