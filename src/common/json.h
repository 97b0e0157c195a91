/* json — a strict reader for one flat JSON object, and writers for JSON string contents.
 *
 * The reader takes exactly one object whose values are strings, numbers, true, false or null
 * (RFC 8259 grammar, no extensions): no nested objects or arrays, no trailing commas, no
 * leading zeros, no raw control characters or invalid UTF-8 in strings, no lone surrogates,
 * no duplicate keys, nothing but whitespace around the object. It does not allocate: fields
 * point into the caller's text, and string escapes are decoded on demand.
 *
 * Pure: no I/O, no allocation, does not log. */
#ifndef CLAIMD_JSON_H
#define CLAIMD_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_KEY_MAX 128   /* longest key accepted, in raw bytes */

enum json_type {
	JSON_STRING = 1,
	JSON_NUMBER,
	JSON_TRUE,
	JSON_FALSE,
	JSON_NULL,
};

struct json_field {
	const char *key;        /* raw text between the key's quotes (escapes not decoded) */
	size_t key_len;
	enum json_type type;
	const char *val;        /* JSON_STRING: raw text between the quotes; JSON_NUMBER: the */
	size_t val_len;         /* number as written; otherwise the literal (true, false, null) */
};

/* Parse s[0..len) (need not be NUL-terminated) as one flat object. Fills fields[0..*ret_n),
 * which point into s. Returns 0, or fills err with what is wrong and at which byte and
 * returns -EINVAL (malformed), -ENOTSUP (a nested object or array) or -E2BIG (more than max
 * fields). *ret_n is written only on success (fields[] may be partly written on error).
 * err may be NULL. */
int json_parse_flat(const char *s, size_t len, struct json_field *fields, size_t max,
		    size_t *ret_n, char *err, size_t errlen);

/* The field whose decoded key is key, or NULL. */
const struct json_field *json_find(const struct json_field *fields, size_t n, const char *key);

/* Decode a JSON_STRING field (from json_parse_flat, so known valid) into out, NUL-terminated,
 * cut on a UTF-8 character boundary if it does not fit. Returns the full decoded length
 * (like snprintf: >= outlen means it was cut). An escaped NUL (\u0000) is kept as a 0 byte. */
size_t json_string(const struct json_field *f, char *out, size_t outlen);

/* A JSON_NUMBER field that is a plain non-negative integer (no sign, fraction or exponent)
 * no larger than max. Returns 0 and writes *ret, -EINVAL (some other kind of value) or
 * -ERANGE (larger than max). */
int json_uint(const struct json_field *f, uint64_t max, uint64_t *ret);

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
