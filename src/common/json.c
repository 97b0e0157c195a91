#include "common/json.h"
#include "common/utf8.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A read position in the text being parsed, and where to say what went wrong. */
struct cur {
	const char *s;
	size_t len, pos;
	char *err;
	size_t errlen;
};

static int bad(struct cur *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int bad(struct cur *c, int code, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!c->err || c->errlen == 0)
		return code;
	n = snprintf(c->err, c->errlen, "at byte %zu: ", c->pos);
	if (n >= 0 && (size_t)n < c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return code;
}

static bool at_end(const struct cur *c)
{
	return c->pos >= c->len;
}

/* The byte at the read position, or -1 at the end. */
static int peek(const struct cur *c)
{
	return at_end(c) ? -1 : (unsigned char)c->s[c->pos];
}

static void skip_ws(struct cur *c)
{
	for (int ch = peek(c); ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; ch = peek(c))
		c->pos++;
}

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

static int hex4(const char *p, unsigned *ret)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++) {
		char ch = p[i];
		v <<= 4;
		if (ch >= '0' && ch <= '9')
			v |= (unsigned)(ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			v |= (unsigned)(ch - 'a' + 10);
		else if (ch >= 'A' && ch <= 'F')
			v |= (unsigned)(ch - 'A' + 10);
		else
			return -EINVAL;
	}
	*ret = v;
	return 0;
}

/* A \u escape at c->pos (pointing at the 'u'), with its low surrogate if it needs one. */
static int scan_uescape(struct cur *c)
{
	unsigned hi, lo;

	if (c->len - c->pos < 5 || hex4(c->s + c->pos + 1, &hi) < 0)
		return bad(c, -EINVAL, "bad \\u escape");
	c->pos += 5;
	if (hi >= 0xDC00 && hi <= 0xDFFF)
		return bad(c, -EINVAL, "lone low surrogate in a \\u escape");
	if (hi < 0xD800 || hi > 0xDBFF)
		return 0;
	if (c->len - c->pos < 6 || c->s[c->pos] != '\\' || c->s[c->pos + 1] != 'u' ||
	    hex4(c->s + c->pos + 2, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
		return bad(c, -EINVAL, "high surrogate not followed by a low one in a \\u escape");
	c->pos += 6;
	return 0;
}

/* A string at c->pos (the opening quote). *ret points at its raw contents. */
static int scan_string(struct cur *c, const char **ret, size_t *ret_len)
{
	size_t start = ++c->pos, k;
	int r;

	for (;;) {
		int ch = peek(c);
		if (ch < 0)
			return bad(c, -EINVAL, "unterminated string");
		if (ch == '"')
			break;
		if (ch < 0x20)
			return bad(c, -EINVAL, "raw control character 0x%02x in a string", ch);
		if (ch == '\\') {
			c->pos++;
			ch = peek(c);
			if (ch == 'u') {
				r = scan_uescape(c);
				if (r < 0)
					return r;
				continue;
			}
			if (ch <= 0 || !strchr("\"\\/bfnrt", ch))
				return bad(c, -EINVAL, "invalid escape in a string");
			c->pos++;
			continue;
		}
		k = utf8_len((const unsigned char *)c->s + c->pos, c->len - c->pos);
		if (k == 0)
			return bad(c, -EINVAL, "invalid UTF-8 in a string");
		c->pos += k;
	}
	*ret = c->s + start;
	*ret_len = c->pos - start;
	c->pos++;
	return 0;
}

static void scan_digits(struct cur *c)
{
	while (peek(c) >= '0' && peek(c) <= '9')
		c->pos++;
}

static bool is_digit(int ch)
{
	return ch >= '0' && ch <= '9';
}

static int scan_number(struct cur *c)
{
	if (peek(c) == '-')
		c->pos++;
	if (!is_digit(peek(c)))
		return bad(c, -EINVAL, "bad number: expected a digit");
	if (peek(c) == '0') {
		c->pos++;
		if (is_digit(peek(c)))
			return bad(c, -EINVAL, "bad number: leading zero");
	} else {
		scan_digits(c);
	}
	if (peek(c) == '.') {
		c->pos++;
		if (!is_digit(peek(c)))
			return bad(c, -EINVAL, "bad number: expected a digit after '.'");
		scan_digits(c);
	}
	if (peek(c) == 'e' || peek(c) == 'E') {
		c->pos++;
		if (peek(c) == '+' || peek(c) == '-')
			c->pos++;
		if (!is_digit(peek(c)))
			return bad(c, -EINVAL, "bad number: expected a digit in the exponent");
		scan_digits(c);
	}
	return 0;
}

static const struct {
	const char *word;
	enum json_type type;
} literals[] = {
	{ "true", JSON_TRUE }, { "false", JSON_FALSE }, { "null", JSON_NULL },
};

static int scan_value(struct cur *c, struct json_field *f)
{
	int ch = peek(c);
	size_t start = c->pos;
	int r;

	if (at_end(c))
		return bad(c, -EINVAL, "unexpected end of input: expected a value");
	if (ch == '"') {
		f->type = JSON_STRING;
		return scan_string(c, &f->val, &f->val_len);
	}
	if (ch == '{' || ch == '[')
		return bad(c, -ENOTSUP, "nested objects and arrays are not supported");
	if (ch == '-' || is_digit(ch)) {
		r = scan_number(c);
		f->type = JSON_NUMBER;
	} else {
		r = -EINVAL;
		for (size_t i = 0; i < sizeof(literals) / sizeof(literals[0]); i++) {
			size_t n = strlen(literals[i].word);
			if (c->len - c->pos >= n && !memcmp(c->s + c->pos, literals[i].word, n)) {
				c->pos += n;
				f->type = literals[i].type;
				r = 0;
				break;
			}
		}
		if (r < 0)
			return bad(c, -EINVAL, "expected a value (string, number, true, false or null)");
	}
	if (r < 0)
		return r;
	f->val = c->s + start;
	f->val_len = c->pos - start;
	return 0;
}

/* The UTF-8 bytes of code point cp into ch; returns how many. */
static size_t utf8_put(unsigned cp, char ch[4])
{
	if (cp < 0x80) {
		ch[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		ch[0] = (char)(0xC0 | cp >> 6);
		ch[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		ch[0] = (char)(0xE0 | cp >> 12);
		ch[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		ch[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	ch[0] = (char)(0xF0 | cp >> 18);
	ch[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	ch[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	ch[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* The next character of a valid raw string at raw[*i] into ch; returns its length. */
static size_t decode_char(const char *raw, size_t len, size_t *i, char ch[4])
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	unsigned cp, lo;
	size_t k;

	if (raw[*i] != '\\') {
		k = utf8_len((const unsigned char *)raw + *i, len - *i);
		memcpy(ch, raw + *i, k);
		*i += k;
		return k;
	}
	if (raw[*i + 1] != 'u') {
		ch[0] = to[strchr(from, raw[*i + 1]) - from];
		*i += 2;
		return 1;
	}
	hex4(raw + *i + 2, &cp);
	*i += 6;
	if (cp >= 0xD800 && cp <= 0xDBFF) {
		hex4(raw + *i + 2, &lo);
		cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
		*i += 6;
	}
	return utf8_put(cp, ch);
}

/* Decode a valid raw string into out (see json_string); returns the full length. */
static size_t decode(const char *raw, size_t len, char *out, size_t outlen)
{
	size_t i = 0, total = 0, written = 0;
	bool cut = false;
	char ch[4];

	while (i < len) {
		size_t k = decode_char(raw, len, &i, ch);
		if (!cut && written + k < outlen) {
			memcpy(out + written, ch, k);
			written += k;
		} else {
			cut = true;
		}
		total += k;
	}
	if (outlen > 0)
		out[written] = '\0';
	return total;
}

size_t json_string(const struct json_field *f, char *out, size_t outlen)
{
	return decode(f->val, f->val_len, out, outlen);
}

static bool key_is(const char *raw, size_t raw_len, const char *key, size_t key_len)
{
	char buf[JSON_KEY_MAX + 1];
	size_t n;

	if (raw_len > JSON_KEY_MAX)
		return false;
	if (!memchr(raw, '\\', raw_len))
		return raw_len == key_len && !memcmp(raw, key, key_len);
	n = decode(raw, raw_len, buf, sizeof(buf));
	return n == key_len && !memcmp(buf, key, key_len);
}

const struct json_field *json_find(const struct json_field *fields, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (key_is(fields[i].key, fields[i].key_len, key, strlen(key)))
			return &fields[i];
	return NULL;
}

static int scan_member(struct cur *c, struct json_field *fields, size_t n)
{
	struct json_field *f = &fields[n];
	char key[JSON_KEY_MAX + 1];
	size_t key_pos = c->pos, klen;
	int r;

	if (peek(c) != '"')
		return bad(c, -EINVAL, "expected a string key");
	r = scan_string(c, &f->key, &f->key_len);
	if (r < 0)
		return r;
	if (f->key_len > JSON_KEY_MAX) {
		c->pos = key_pos;
		return bad(c, -EINVAL, "key longer than %d bytes", JSON_KEY_MAX);
	}
	klen = decode(f->key, f->key_len, key, sizeof(key));
	for (size_t i = 0; i < n; i++) {
		if (key_is(fields[i].key, fields[i].key_len, key, klen)) {
			c->pos = key_pos;
			return bad(c, -EINVAL, "duplicate key \"%.*s\"", (int)f->key_len, f->key);
		}
	}
	skip_ws(c);
	if (peek(c) != ':')
		return bad(c, -EINVAL, "expected ':' after a key");
	c->pos++;
	skip_ws(c);
	return scan_value(c, f);
}

static int scan_members(struct cur *c, struct json_field *fields, size_t max, size_t *ret_n)
{
	size_t n = 0;
	int r;

	skip_ws(c);
	if (peek(c) == '}') {
		c->pos++;
		*ret_n = 0;
		return 0;
	}
	for (;;) {
		skip_ws(c);
		if (n == max)
			return bad(c, -E2BIG, "more than %zu fields", max);
		r = scan_member(c, fields, n);
		if (r < 0)
			return r;
		n++;
		skip_ws(c);
		if (at_end(c))
			return bad(c, -EINVAL, "unexpected end of input: expected ',' or '}'");
		if (peek(c) == '}')
			break;
		if (peek(c) != ',')
			return bad(c, -EINVAL, "expected ',' or '}'");
		c->pos++;
	}
	c->pos++;
	*ret_n = n;
	return 0;
}

int json_parse_flat(const char *s, size_t len, struct json_field *fields, size_t max,
		    size_t *ret_n, char *err, size_t errlen)
{
	struct cur c = { .s = s, .len = len, .err = err, .errlen = errlen };
	size_t n = 0;
	int r;

	if (err && errlen)
		err[0] = '\0';
	skip_ws(&c);
	if (peek(&c) != '{')
		return bad(&c, -EINVAL, at_end(&c) ? "empty input: expected '{'" : "expected '{'");
	c.pos++;
	r = scan_members(&c, fields, max, &n);
	if (r < 0)
		return r;
	skip_ws(&c);
	if (!at_end(&c))
		return bad(&c, -EINVAL, "unexpected characters after the object");
	*ret_n = n;
	return 0;
}

int json_uint(const struct json_field *f, uint64_t max, uint64_t *ret)
{
	uint64_t v = 0;

	if (f->type != JSON_NUMBER || f->val_len == 0)
		return -EINVAL;
	for (size_t i = 0; i < f->val_len; i++) {
		unsigned d;
		if (!is_digit((unsigned char)f->val[i]))
			return -EINVAL;
		d = (unsigned)(f->val[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (v > max)
		return -ERANGE;
	*ret = v;
	return 0;
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
