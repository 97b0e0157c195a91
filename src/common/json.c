/* JSON text out: string contents and base64. (JSON in, from handlers, is jansson's: see
 * worker/pipe_reply.c.) */
#include "common/json.h"
#include "common/utf8.h"

#include <stdio.h>
#include <string.h>

bool json_utf8_valid(const void *s, size_t n)
{
	const unsigned char *p = s;
	size_t i = 0, k;

	while (i < n) {
		k = utf8_len(p + i, n - i);
		if (k == 0)
			return false;
		i += k;
	}
	return true;
}

/* One byte's escape, or NULL if it goes out as it is. */
static const char *escape_of(unsigned char ch, char tmp[8])
{
	switch (ch) {
	case '"': return "\\\"";
	case '\\': return "\\\\";
	case '\b': return "\\b";
	case '\f': return "\\f";
	case '\n': return "\\n";
	case '\r': return "\\r";
	case '\t': return "\\t";
	}
	if (ch >= 0x20)
		return NULL;
	snprintf(tmp, 8, "\\u%04x", ch);
	return tmp;
}

static size_t put(char *out, size_t at, const void *p, size_t n)
{
	if (out)
		memcpy(out + at, p, n);
	return n;
}

size_t json_escape(const void *s, size_t n, char *out)
{
	const unsigned char *p = s;
	size_t i = 0, w = 0, k;
	char tmp[8];
	const char *e;

	while (i < n) {
		k = utf8_len(p + i, n - i);
		if (k == 0) {
			w += put(out, w, "\\ufffd", 6);
			i++;
		} else if (k == 1 && (e = escape_of(p[i], tmp)) != NULL) {
			w += put(out, w, e, strlen(e));
			i++;
		} else {
			w += put(out, w, p + i, k);
			i += k;
		}
	}
	return w;
}

size_t json_base64(const void *s, size_t n, char *out)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = s;
	size_t w = 0;

	if (!out)
		return JSON_BASE64_LEN(n);
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		size_t left = n - i;
		if (left > 1)
			v |= (uint32_t)p[i + 1] << 8;
		if (left > 2)
			v |= p[i + 2];
		out[w++] = tab[v >> 18 & 63];
		out[w++] = tab[v >> 12 & 63];
		out[w++] = left > 1 ? tab[v >> 6 & 63] : '=';
		out[w++] = left > 2 ? tab[v & 63] : '=';
	}
	return w;
}
