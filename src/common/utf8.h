/* utf8 — the one UTF-8 decoder step the JSON writers and the store share. Pure. */
#ifndef CLAIMD_UTF8_H
#define CLAIMD_UTF8_H

#include <stddef.h>

/* Length (1-4) of the valid UTF-8 sequence at p, n >= 1 bytes available, or 0 if it is not
 * one: overlong forms, surrogates, code points above U+10FFFF and truncated sequences are
 * not. */
size_t utf8_len(const unsigned char *p, size_t n);

#endif
