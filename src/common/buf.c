#include "common/buf.h"
#include "common/json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b)
{
	memset(b, 0, sizeof(*b));
}

void buf_free(struct buf *b)
{
	if (!b)
		return;
	free(b->data);
	buf_init(b);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	b->failed = false;
	if (b->data)
		b->data[0] = '\0';
}

static bool reserve(struct buf *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (b->failed)
		return false;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return true;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p) {
		b->failed = true;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

void buf_append(struct buf *b, const void *p, size_t n)
{
	if (!reserve(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void buf_puts(struct buf *b, const char *s)
{
	buf_append(b, s, strlen(s));
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void buf_json_str(struct buf *b, const char *s)
{
	size_t n = strlen(s), room;

	buf_append(b, "\"", 1);
	room = JSON_ESCAPE_MAX(n);
	if (reserve(b, room)) {
		b->len += json_escape(s, n, b->data + b->len);
		b->data[b->len] = '\0';
	}
	buf_append(b, "\"", 1);
}

bool buf_failed(const struct buf *b)
{
	return b->failed;
}
