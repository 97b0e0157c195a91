/* json — writing JSON: the contents of a string (the one escaper claimd has: status output,
 * pipe: requests, quoted bad replies) and base64 for bytes that are not UTF-8. Reading JSON
 * from handlers is jansson's (worker/pipe_reply.c). Pure: no I/O, no allocation, does not
 * log. */
#ifndef CLAIMD_JSON_H
#define CLAIMD_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
bool json_utf8_valid(const void *s, size_t n);

/* Write s[0..n) as the contents of a JSON string (without the quotes) to out: ", \ and
 * control characters escaped, bytes that are not valid UTF-8 written as \ufffd. out may
 * be NULL to measure. Returns the number of bytes written (at most JSON_ESCAPE_MAX(n)). */
#define JSON_ESCAPE_MAX(n) (6 * (n))
size_t json_escape(const void *s, size_t n, char *out);

/* Standard base64 (RFC 4648, with padding) of s[0..n) to out (NULL to measure). Returns the
 * length written, JSON_BASE64_LEN(n). Not NUL-terminated. */
#define JSON_BASE64_LEN(n) (4 * (((n) + 2) / 3))
size_t json_base64(const void *s, size_t n, char *out);

#endif
