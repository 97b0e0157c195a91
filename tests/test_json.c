/* test_json — table-driven tests of the flat JSON reader and the string writers: accepted
 * objects field by field, rejected ones with their error code and message, every prefix of
 * every accepted object rejected (or accepted only when the rest is whitespace), integers,
 * decoding with truncation, escaping and base64. Prints every failure, exits 1 if any. */
#include "common/json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXF 16

struct want_field {
	const char *key;
	enum json_type type;
	const char *val;        /* decoded string ("\\0" stands for a NUL), or the raw text */
};

struct ok_case {
	const char *name;
	const char *in;
	size_t n;
	struct want_field f[4];
};

struct bad_case {
	const char *name;
	const char *in;
	size_t in_len;          /* 0: strlen(in) */
	int code;
	const char *err_contains;
};

static const struct ok_case ok_cases[] = {
	{ "empty_object", "{}", 0, { { 0 } } },
	{ "empty_object_ws", " \t\r\n{ \n}\n ", 0, { { 0 } } },
	{ "reply_ok", "{\"id\":1,\"ok\":true}", 2,
	  { { "id", JSON_NUMBER, "1" }, { "ok", JSON_TRUE, "true" } } },
	{ "reply_error", "{\"id\": 42, \"ok\": false, \"error\": \"boom\"}", 3,
	  { { "id", JSON_NUMBER, "42" }, { "ok", JSON_FALSE, "false" },
	    { "error", JSON_STRING, "boom" } } },
	{ "null_value", "{\"error\":null}", 1, { { "error", JSON_NULL, "null" } } },
	{ "numbers", "{\"a\":0,\"b\":-1.5e+3,\"c\":12.25,\"d\":1E9}", 4,
	  { { "a", JSON_NUMBER, "0" }, { "b", JSON_NUMBER, "-1.5e+3" },
	    { "c", JSON_NUMBER, "12.25" }, { "d", JSON_NUMBER, "1E9" } } },
	{ "escapes", "{\"s\":\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t\"}", 1,
	  { { "s", JSON_STRING, "q\" b\\ s/ \b\f\n\r\t" } } },
	{ "unicode_escapes", "{\"s\":\"\\u00e9\\u20AC\\ud83d\\ude00\"}", 1,
	  { { "s", JSON_STRING, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" } } },
	{ "raw_utf8", "{\"s\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}", 1,
	  { { "s", JSON_STRING, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" } } },
	{ "escaped_nul", "{\"s\":\"a\\u0000b\"}", 1, { { "s", JSON_STRING, "a\\0b" } } },
	{ "escaped_key", "{\"i\\u0064\":7}", 1, { { "id", JSON_NUMBER, "7" } } },
	{ "empty_key_and_string", "{\"\":\"\"}", 1, { { "", JSON_STRING, "" } } },
};

static const struct bad_case bad_cases[] = {
	{ "empty", "", 0, -EINVAL, "expected '{'" },
	{ "only_ws", "  \n", 0, -EINVAL, "expected '{'" },
	{ "not_object", "[1]", 0, -EINVAL, "expected '{'" },
	{ "bare_string", "\"x\"", 0, -EINVAL, "expected '{'" },
	{ "unterminated", "{\"id\":1", 0, -EINVAL, "end of input" },
	{ "trailing_comma", "{\"id\":1,}", 0, -EINVAL, "string key" },
	{ "leading_comma", "{,\"id\":1}", 0, -EINVAL, "string key" },
	{ "missing_colon", "{\"id\" 1}", 0, -EINVAL, "':'" },
	{ "missing_value", "{\"id\":}", 0, -EINVAL, "expected a value" },
	{ "missing_comma", "{\"a\":1 \"b\":2}", 0, -EINVAL, "',' or '}'" },
	{ "single_quotes", "{'id':1}", 0, -EINVAL, "string key" },
	{ "unquoted_key", "{id:1}", 0, -EINVAL, "string key" },
	{ "trailing_garbage", "{\"id\":1} x", 0, -EINVAL, "after the object" },
	{ "two_objects", "{}{}", 0, -EINVAL, "after the object" },
	{ "nested_object", "{\"a\":{}}", 0, -ENOTSUP, "nested" },
	{ "nested_array", "{\"a\":[1]}", 0, -ENOTSUP, "nested" },
	{ "leading_zero", "{\"a\":01}", 0, -EINVAL, "leading zero" },
	{ "plus_sign", "{\"a\":+1}", 0, -EINVAL, "expected a value" },
	{ "bare_minus", "{\"a\":-}", 0, -EINVAL, "digit" },
	{ "dot_no_digits", "{\"a\":1.}", 0, -EINVAL, "after '.'" },
	{ "leading_dot", "{\"a\":.5}", 0, -EINVAL, "expected a value" },
	{ "bad_exponent", "{\"a\":1e}", 0, -EINVAL, "exponent" },
	{ "nan", "{\"a\":NaN}", 0, -EINVAL, "expected a value" },
	{ "capital_true", "{\"a\":True}", 0, -EINVAL, "expected a value" },
	{ "truncated_literal", "{\"a\":tru}", 0, -EINVAL, "expected a value" },
	{ "literal_run_on", "{\"a\":truex}", 0, -EINVAL, "',' or '}'" },
	{ "raw_newline", "{\"a\":\"x\ny\"}", 0, -EINVAL, "control character" },
	{ "raw_tab", "{\"a\":\"x\ty\"}", 0, -EINVAL, "control character" },
	{ "raw_nul", "{\"a\":\"x\0y\"}", 11, -EINVAL, "control character" },
	{ "nul_after_object", "{}\0", 3, -EINVAL, "after the object" },
	{ "bad_escape", "{\"a\":\"\\x\"}", 0, -EINVAL, "invalid escape" },
	{ "short_u_escape", "{\"a\":\"\\u12\"}", 0, -EINVAL, "\\u escape" },
	{ "non_hex_u_escape", "{\"a\":\"\\u12g4\"}", 0, -EINVAL, "\\u escape" },
	{ "lone_high_surrogate", "{\"a\":\"\\ud83d\"}", 0, -EINVAL, "surrogate" },
	{ "lone_low_surrogate", "{\"a\":\"\\ude00\"}", 0, -EINVAL, "surrogate" },
	{ "high_then_bmp", "{\"a\":\"\\ud83d\\u0041\"}", 0, -EINVAL, "surrogate" },
	{ "invalid_utf8", "{\"a\":\"\xff\"}", 0, -EINVAL, "UTF-8" },
	{ "overlong_utf8", "{\"a\":\"\xc0\xaf\"}", 0, -EINVAL, "UTF-8" },
	{ "utf8_surrogate", "{\"a\":\"\xed\xa0\x80\"}", 0, -EINVAL, "UTF-8" },
	{ "truncated_utf8", "{\"a\":\"\xe2\x82\"}", 0, -EINVAL, "UTF-8" },
	{ "unterminated_string", "{\"a\":\"abc", 0, -EINVAL, "unterminated" },
	{ "escape_at_end", "{\"a\":\"\\", 0, -EINVAL, "escape" },
	{ "duplicate_key", "{\"id\":1,\"id\":2}", 0, -EINVAL, "duplicate key" },
	{ "duplicate_key_escaped", "{\"id\":1,\"\\u0069d\":2}", 0, -EINVAL, "duplicate key" },
	{ "too_many_fields",
	  "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\":9,\"j\":10,"
	  "\"k\":11,\"l\":12,\"m\":13,\"n\":14,\"o\":15,\"p\":16,\"q\":17}", 0, -E2BIG, "more than" },
	{ "long_key",
	  "{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\":1}", 0, -EINVAL, "key longer" },
};

static int failures;

static void fail(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL %s: ", name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	failures++;
}

static void check_field(const char *name, const struct json_field *fs, size_t n,
			const struct want_field *w)
{
	const struct json_field *f = json_find(fs, n, w->key);
	char buf[256], want[256];
	size_t want_len = 0, got_len;

	for (const char *p = w->val; *p; p++)
		want[want_len++] = p[0] == '\\' && p[1] == '0' ? (p++, '\0') : *p;

	if (!f) {
		fail(name, "no field \"%s\"", w->key);
		return;
	}
	if (f->type != w->type) {
		fail(name, "field \"%s\" has type %d, want %d", w->key, (int)f->type, (int)w->type);
		return;
	}
	if (f->type != JSON_STRING) {
		if (f->val_len != want_len || memcmp(f->val, want, want_len))
			fail(name, "field \"%s\" is \"%.*s\", want \"%s\"", w->key, (int)f->val_len,
			     f->val, w->val);
		return;
	}
	got_len = json_string(f, buf, sizeof(buf));
	if (got_len != want_len || memcmp(buf, want, want_len) || buf[got_len] != 0)
		fail(name, "field \"%s\" decodes to \"%s\" (%zu bytes), want \"%s\"", w->key, buf,
		     got_len, w->val);
}

static void test_ok(const struct ok_case *c)
{
	struct json_field fs[MAXF];
	char err[256] = "";
	size_t n = 999;
	int r;

	r = json_parse_flat(c->in, strlen(c->in), fs, MAXF, &n, err, sizeof(err));
	if (r != 0) {
		fail(c->name, "rejected (%d): %s", r, err);
		return;
	}
	if (n != c->n)
		fail(c->name, "%zu fields, want %zu", n, c->n);
	for (size_t i = 0; i < c->n; i++)
		check_field(c->name, fs, n, &c->f[i]);
	if (json_find(fs, n, "no-such-key"))
		fail(c->name, "json_find found a key that is not there");
}

static void test_bad(const struct bad_case *c)
{
	struct json_field fs[MAXF];
	size_t len = c->in_len ? c->in_len : strlen(c->in), n = 999;
	char err[256] = "";
	int r;

	r = json_parse_flat(c->in, len, fs, MAXF, &n, err, sizeof(err));
	if (r != c->code)
		fail(c->name, "returned %d, want %d (err \"%s\")", r, c->code, err);
	if (n != 999)
		fail(c->name, "*ret_n written on error");
	if (!strstr(err, c->err_contains))
		fail(c->name, "err \"%s\" does not mention \"%s\"", err, c->err_contains);
	if (strncmp(err, "at byte ", 8) != 0)
		fail(c->name, "err \"%s\" does not say where", err);
}

/* Fed byte by byte: every prefix is rejected with a message, unless all that is missing is
 * whitespace; a tiny err buffer is cut, not overrun; a NULL err is fine. */
static void test_prefixes(const struct ok_case *c)
{
	size_t len = strlen(c->in), n;
	struct json_field fs[MAXF];
	char err[256], tiny[4];
	int r;

	for (size_t i = 0; i < len; i++) {
		bool rest_ws = strspn(c->in + i, " \t\r\n") == len - i;
		char *copy = malloc(i + 1);  /* exact size: reads past i show up under ASan */
		memcpy(copy, c->in, i);
		err[0] = '\0';
		r = json_parse_flat(copy, i, fs, MAXF, &n, err, sizeof(err));
		if (rest_ws ? r != 0 : (r != -EINVAL || !err[0]))
			fail(c->name, "prefix of %zu bytes: returned %d, err \"%s\"", i, r, err);
		memset(tiny, 'x', sizeof(tiny));
		r = json_parse_flat(copy, i, fs, MAXF, &n, tiny, 3);
		if (r != 0 && (tiny[2] != '\0' || tiny[3] != 'x'))
			fail(c->name, "prefix of %zu bytes: err buffer overrun", i);
		(void)json_parse_flat(copy, i, fs, MAXF, &n, NULL, 0);
		free(copy);
	}
}

static void test_uint(void)
{
	static const struct {
		const char *in;
		uint64_t max;
		int code;
		uint64_t want;
	} cases[] = {
		{ "{\"v\":0}", UINT64_MAX, 0, 0 },
		{ "{\"v\":42}", UINT64_MAX, 0, 42 },
		{ "{\"v\":18446744073709551615}", UINT64_MAX, 0, UINT64_MAX },
		{ "{\"v\":18446744073709551616}", UINT64_MAX, -ERANGE, 0 },
		{ "{\"v\":99999999999999999999999}", UINT64_MAX, -ERANGE, 0 },
		{ "{\"v\":4294967296}", 4294967295u, -ERANGE, 0 },
		{ "{\"v\":-1}", UINT64_MAX, -EINVAL, 0 },
		{ "{\"v\":1.0}", UINT64_MAX, -EINVAL, 0 },
		{ "{\"v\":1e3}", UINT64_MAX, -EINVAL, 0 },
		{ "{\"v\":\"1\"}", UINT64_MAX, -EINVAL, 0 },
		{ "{\"v\":true}", UINT64_MAX, -EINVAL, 0 },
		{ "{\"v\":null}", UINT64_MAX, -EINVAL, 0 },
	};
	struct json_field fs[MAXF];
	size_t n;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 7;
		int r;
		if (json_parse_flat(cases[i].in, strlen(cases[i].in), fs, MAXF, &n, NULL, 0) < 0) {
			fail("uint", "%s did not parse", cases[i].in);
			continue;
		}
		r = json_uint(&fs[0], cases[i].max, &v);
		if (r != cases[i].code || (r == 0 && v != cases[i].want) || (r < 0 && v != 7))
			fail("uint", "%s: returned %d value %llu", cases[i].in, r, (unsigned long long)v);
	}
}

/* Decoding into a short buffer cuts on a character boundary and reports the full length. */
static void test_string_cut(void)
{
	const char *in = "{\"s\":\"ab\\u00e9\\ud83d\\ude00z\"}";   /* a b é(2) 😀(4) z = 9 */
	static const struct {
		size_t outlen;
		const char *want;
	} cases[] = {
		{ 1, "" }, { 3, "ab" }, { 4, "ab" }, { 5, "ab\xc3\xa9" }, { 8, "ab\xc3\xa9" },
		{ 9, "ab\xc3\xa9\xf0\x9f\x98\x80" }, { 10, "ab\xc3\xa9\xf0\x9f\x98\x80z" },
	};
	struct json_field fs[MAXF];
	char out[16];
	size_t n;

	if (json_parse_flat(in, strlen(in), fs, MAXF, &n, NULL, 0) < 0) {
		fail("string_cut", "did not parse");
		return;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(out, 'x', sizeof(out));
		size_t len = json_string(&fs[0], out, cases[i].outlen);
		if (len != 9 || strcmp(out, cases[i].want) || out[cases[i].outlen] != 'x')
			fail("string_cut", "outlen %zu: got \"%s\" len %zu", cases[i].outlen, out, len);
	}
	if (json_string(&fs[0], NULL, 0) != 9)
		fail("string_cut", "measuring with NULL out");
}

static void test_escape(void)
{
	static const struct {
		const char *in;
		size_t len;
		const char *want;
	} cases[] = {
		{ "plain", 5, "plain" },
		{ "q\"b\\", 4, "q\\\"b\\\\" },
		{ "\n\r\t\b\f", 5, "\\n\\r\\t\\b\\f" },
		{ "\x01\x1f", 2, "\\u0001\\u001f" },
		{ "a\0b", 3, "a\\u0000b" },
		{ "\xc3\xa9\xf0\x9f\x98\x80", 6, "\xc3\xa9\xf0\x9f\x98\x80" },
		{ "\xff", 1, "\\ufffd" },
		{ "a\xc3", 2, "a\\ufffd" },
		{ "\xed\xa0\x80", 3, "\\ufffd\\ufffd\\ufffd" },
		{ "/", 1, "/" },
	};
	char out[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t want = strlen(cases[i].want), m = json_escape(cases[i].in, cases[i].len, NULL);
		size_t w = json_escape(cases[i].in, cases[i].len, out);
		if (w != want || m != want || memcmp(out, cases[i].want, want) ||
		    w > JSON_ESCAPE_MAX(cases[i].len))
			fail("escape", "case %zu: got \"%.*s\" (%zu, measured %zu)", i, (int)w, out, w, m);
	}
}

static void test_base64_and_utf8(void)
{
	static const struct {
		const char *in;
		size_t len;
		const char *want;
	} b64[] = {
		{ "", 0, "" }, { "f", 1, "Zg==" }, { "fo", 2, "Zm8=" }, { "foo", 3, "Zm9v" },
		{ "foob", 4, "Zm9vYg==" }, { "\xff\x00\xfe", 3, "/wD+" },
	};
	char out[32];

	for (size_t i = 0; i < sizeof(b64) / sizeof(b64[0]); i++) {
		size_t w = json_base64(b64[i].in, b64[i].len, out);
		if (w != strlen(b64[i].want) || memcmp(out, b64[i].want, w) ||
		    json_base64(b64[i].in, b64[i].len, NULL) != w)
			fail("base64", "case %zu: got \"%.*s\"", i, (int)w, out);
	}
	if (!json_utf8_valid("", 0) || !json_utf8_valid("a\0\xc3\xa9", 4) ||
	    !json_utf8_valid("\xf4\x8f\xbf\xbf", 4))
		fail("utf8", "valid text rejected");
	if (json_utf8_valid("\xf4\x90\x80\x80", 4) || json_utf8_valid("\xe0\x80\x80", 3) ||
	    json_utf8_valid("\xc3", 1) || json_utf8_valid("\x80", 1))
		fail("utf8", "invalid text accepted");
}

int main(void)
{
	size_t nok = sizeof(ok_cases) / sizeof(ok_cases[0]);
	size_t nbad = sizeof(bad_cases) / sizeof(bad_cases[0]);

	for (size_t i = 0; i < nok; i++) {
		test_ok(&ok_cases[i]);
		test_prefixes(&ok_cases[i]);
	}
	for (size_t i = 0; i < nbad; i++)
		test_bad(&bad_cases[i]);
	test_uint();
	test_string_cut();
	test_escape();
	test_base64_and_utf8();
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("ok: %zu accepted, %zu rejected cases, prefixes, integers, cut, escape, base64\n",
	       nok, nbad);
	return 0;
}
