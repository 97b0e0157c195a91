/* test_json — the JSON writers: string escaping (json_escape, and buf_json_str on it),
 * base64 and the UTF-8 check. Table-driven; prints every failure, exits 1 if any. (Reading
 * JSON, the pipe: replies, is jansson's: tests/test_pipe_reply.c.) */
#include "common/buf.h"
#include "common/json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* buf_json_str is json_escape between quotes: one escaper. */
static void test_buf_json_str(void)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{ "", "\"\"" },
		{ "idle", "\"idle\"" },
		{ "a\"b\\c\nd", "\"a\\\"b\\\\c\\nd\"" },
		{ "\x01\x7f", "\"\\u0001\x7f\"" },
		{ "caf\xc3\xa9 \xff", "\"caf\xc3\xa9 \\ufffd\"" },
	};
	struct buf b;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		buf_init(&b);
		buf_puts(&b, "x");
		buf_json_str(&b, cases[i].in);
		if (buf_failed(&b) || strcmp(b.data + 1, cases[i].want) != 0)
			fail("buf_json_str", "case %zu: got %s", i, b.data ? b.data + 1 : "(null)");
		buf_free(&b);
	}
}

int main(void)
{
	test_escape();
	test_base64_and_utf8();
	test_buf_json_str();
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("ok: escape, base64, utf8, buf_json_str\n");
	return 0;
}
