#include "claimctl/termsafe.h"

#include <stdbool.h>

#include "common/utf8.h"

#define ESC 0x1b
#define BEL 0x07

/* The length of the escape sequence at p (p[0] is ESC), n bytes available: what is dropped.
 * A sequence cut short by something that cannot be in it ends there (that byte is judged on
 * its own); one cut short by the end of the text runs to the end. */
static size_t escape_len(const unsigned char *p, size_t n)
{
	size_t i = 1;

	if (n < 2)
		return n;
	switch (p[1]) {
	case '[':   /* CSI: parameters 0x30-0x3f, intermediates 0x20-0x2f, a final 0x40-0x7e */
		for (i = 2; i < n && p[i] >= 0x20 && p[i] <= 0x3f; i++)
			;
		return i < n && p[i] >= 0x40 && p[i] <= 0x7e ? i + 1 : i;
	case ']': case 'P': case 'X': case '^': case '_':   /* strings: up to BEL or ST */
		for (i = 2; i < n; i++) {
			if (p[i] == BEL)
				return i + 1;
			if (p[i] == ESC)
				return i + 1 < n && p[i + 1] == '\\' ? i + 2 : i;
			if (p[i] == '\n')
				return i;
		}
		return n;
	default:   /* intermediates 0x20-0x2f, then a final 0x30-0x7e; or one byte */
		for (i = 1; i < n && p[i] >= 0x20 && p[i] <= 0x2f; i++)
			;
		return i < n && p[i] >= 0x30 && p[i] <= 0x7e ? i + 1 : i;
	}
}

size_t termsafe(char *s, size_t len)
{
	unsigned char *p = (unsigned char *)s;
	size_t in = 0, out = 0;

	while (in < len) {
		unsigned char c = p[in];
		size_t k;

		if (c == ESC) {
			in += escape_len(p + in, len - in);
			continue;
		}
		if (c < 0x80) {
			if ((c >= 0x20 && c != 0x7f) || c == '\n' || c == '\t')
				p[out++] = c;
			in++;
			continue;
		}
		k = utf8_len(p + in, len - in);
		if (k == 0) {
			p[out++] = '?';
			in++;
			continue;
		}
		/* C1: U+0080..U+009F, C2 80..C2 9F */
		bool c1 = k == 2 && c == 0xc2 && p[in + 1] <= 0x9f;
		for (size_t j = 0; j < k && !c1; j++)
			p[out++] = p[in + j];
		in += k;
	}
	return out;
}
