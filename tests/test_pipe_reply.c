/* test_pipe_reply — a pipe: co-process's reply lines (worker/pipe_reply, on jansson): what
 * each good reply means, what each bad one is refused for (the message says), nested values
 * accepted, every strict prefix of a good reply refused. Table-driven; exits 1 on a failure. */
#include "worker/pipe_reply.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		failures++; \
		printf("not ok - %s:%d: ", __FILE__, __LINE__); \
		printf(__VA_ARGS__); \
		printf("\n"); \
	} \
} while (0)

static const struct good {
	const char *line;
	int status;
	unsigned retry_ms;
	const char *error;   /* part of res.error, or NULL for "" */
} goods[] = {
	{ "{\"id\":7,\"ok\":true}", HANDLER_OK, 0, NULL },
	{ " \t{ \"ok\" : true , \"id\" : 7 }\r\n ", HANDLER_OK, 0, NULL },
	{ "{\"id\":7,\"ok\":true,\"error\":null,\"retry_in_ms\":null}", HANDLER_OK, 0, NULL },
	{ "{\"id\":7,\"ok\":false,\"error\":\"disk full\"}", HANDLER_FAILED, 0, "disk full" },
	{ "{\"id\":7,\"ok\":false,\"error\":\"caf\\u00e9 \\ud83d\\ude00\"}", HANDLER_FAILED, 0,
	  "caf\xc3\xa9 \xf0\x9f\x98\x80" },
	{ "{\"id\":7,\"ok\":false,\"error\":\"a\\u0000b\"}", HANDLER_FAILED, 0, "a" },
	{ "{\"id\":7,\"ok\":false}", HANDLER_FAILED, 0, "without an \"error\"" },
	{ "{\"id\":7,\"ok\":false,\"error\":\"\"}", HANDLER_FAILED, 0, "without an \"error\"" },
	{ "{\"id\":7,\"ok\":false,\"retry_in_ms\":5000}", HANDLER_RETRY_LATER, 5000, "5000 ms" },
	{ "{\"id\":7,\"ok\":false,\"retry_in_ms\":4294967295}", HANDLER_RETRY_LATER, 4294967295u,
	  NULL },
	{ "{\"id\":7,\"ok\":false,\"retry_in_ms\":0,\"error\":\"busy\"}", HANDLER_RETRY_LATER, 0,
	  NULL },
	/* nested values: a result and progress may come with a reply */
	{ "{\"id\":7,\"ok\":true,\"result\":{\"rows\":[1,2,{\"x\":null}],\"t\":1.5e3}}",
	  HANDLER_OK, 0, NULL },
	{ "{\"progress\":[0.5,\"half\"],\"id\":7,\"ok\":true}", HANDLER_OK, 0, NULL },
};

static const struct bad {
	const char *line;
	size_t len;          /* 0: strlen */
	const char *says;
} bads[] = {
	{ "", 0, "not a JSON object" },
	{ "  ", 0, "not a JSON object" },
	{ "this is not json", 0, "not a JSON object" },
	{ "[7,true]", 0, "not a JSON object" },
	{ "\"ok\"", 0, "not a JSON object" },
	{ "{\"id\":7,\"ok\":true} x", 0, "not a JSON object" },
	{ "{\"id\":7,\"ok\":true}{}", 0, "not a JSON object" },
	{ "{\"id\":7,\"ok\":true,}", 0, "not a JSON object" },
	{ "{'id':7,'ok':true}", 0, "not a JSON object" },
	{ "{\"id\":07,\"ok\":true}", 0, "not a JSON object" },
	{ "{\"id\":7,\"ok\":True}", 0, "not a JSON object" },
	{ "{\"id\":7,\"ok\":true,\"error\":\"x\ny\"}", 0, "not a JSON object" },
	{ "{\"id\":7,\"ok\":false,\"error\":\"\xff\"}", 0, "not a JSON object" },
	{ "{\"id\":7,\"ok\":false,\"error\":\"\\ud83d\"}", 0, "not a JSON object" },
	{ "{\"id\":7,\"ok\":true,\"id\":7}", 0, "not a JSON object" },
	{ "{\"id\":7,\"ok\":true}\0", 20, "not a JSON object" },
	{ "{\"id\":99999999999999999999,\"ok\":true}", 0, "not a JSON object" },
	{ "{\"ok\":true}", 0, "no \"id\"" },
	{ "{\"id\":\"7\",\"ok\":true}", 0, "no \"id\"" },
	{ "{\"id\":-7,\"ok\":true}", 0, "no \"id\"" },
	{ "{\"id\":7.0,\"ok\":true}", 0, "no \"id\"" },
	{ "{\"id\":8,\"ok\":true}", 0, "wrong id 8 (the item sent was 7)" },
	{ "{\"id\":7}", 0, "no boolean \"ok\"" },
	{ "{\"id\":7,\"ok\":1}", 0, "no boolean \"ok\"" },
	{ "{\"id\":7,\"ok\":\"true\"}", 0, "no boolean \"ok\"" },
	{ "{\"id\":7,\"ok\":false,\"error\":42}", 0, "\"error\" is not a string" },
	{ "{\"id\":7,\"ok\":false,\"error\":{\"why\":1}}", 0, "\"error\" is not a string" },
	{ "{\"id\":7,\"ok\":true,\"retry_in_ms\":5}", 0, "both \"ok\":true and \"retry_in_ms\"" },
	{ "{\"id\":7,\"ok\":false,\"retry_in_ms\":-1}", 0, "\"retry_in_ms\" is not an integer" },
	{ "{\"id\":7,\"ok\":false,\"retry_in_ms\":4294967296}", 0, "\"retry_in_ms\" is not" },
	{ "{\"id\":7,\"ok\":false,\"retry_in_ms\":1.5}", 0, "\"retry_in_ms\" is not" },
	{ "{\"id\":7,\"ok\":false,\"retry_in_ms\":\"5\"}", 0, "\"retry_in_ms\" is not" },
};

static void test_good(void)
{
	for (size_t i = 0; i < sizeof(goods) / sizeof(goods[0]); i++) {
		const struct good *g = &goods[i];
		struct handler_result res;
		int r = pipe_reply_parse(g->line, strlen(g->line), 7, &res);

		CHECK(r == 0, "'%s': %d %s", g->line, r, res.error);
		if (r < 0)
			continue;
		CHECK(res.status == g->status, "'%s': status %d, want %d", g->line, res.status,
		      g->status);
		CHECK(res.retry_in_ms == g->retry_ms, "'%s': retry %u", g->line, res.retry_in_ms);
		CHECK(g->error ? strstr(res.error, g->error) != NULL :
		      g->status != HANDLER_OK || res.error[0] == '\0',
		      "'%s': error '%s'", g->line, res.error);
	}
}

static void test_bad(void)
{
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		const struct bad *b = &bads[i];
		size_t len = b->len ? b->len : strlen(b->line);
		char *copy = malloc(len ? len : 1);  /* exactly len bytes: reads past them show */
		struct handler_result res;
		int r;

		memcpy(copy, b->line, len);
		r = pipe_reply_parse(copy, len, 7, &res);
		free(copy);
		CHECK(r == -EPROTO && res.status == HANDLER_FAILED, "'%s': %d", b->line, r);
		CHECK(strstr(res.error, "bad reply from the co-process: ") == res.error &&
		      strstr(res.error, b->says), "'%s': error '%s' lacks '%s'", b->line, res.error,
		      b->says);
		CHECK(strstr(res.error, "; reply: \""), "'%s': the reply is not quoted: '%s'", b->line,
		      res.error);
	}
}

/* Every strict prefix of a good reply is refused (the line ended early). */
static void test_prefixes(void)
{
	const char *line = "{\"id\":7,\"ok\":false,\"retry_in_ms\":250,\"result\":{\"a\":[1]}}";

	for (size_t n = 0; n < strlen(line); n++) {
		char *copy = malloc(n ? n : 1);
		struct handler_result res;
		int r;

		memcpy(copy, line, n);
		r = pipe_reply_parse(copy, n, 7, &res);
		free(copy);
		CHECK(r == -EPROTO, "prefix of %zu bytes accepted", n);
	}
}

static void test_long_reply(void)
{
	size_t n = PIPE_REPLY_MAX + 1;
	char *line = malloc(n);
	struct handler_result res;

	memset(line, ' ', n);
	CHECK(pipe_reply_parse(line, n, 7, &res) == -EPROTO && strstr(res.error, "longer than 1 MiB"),
	      "a reply over 1 MiB: '%.80s'", res.error);
	free(line);
}

int main(void)
{
	test_good();
	test_bad();
	test_prefixes();
	test_long_reply();
	if (failures) {
		printf("%d check(s) failed\n", failures);
		return 1;
	}
	printf("ok - pipe_reply: %zu good, %zu bad replies, prefixes, size cap\n",
	       sizeof(goods) / sizeof(goods[0]), sizeof(bads) / sizeof(bads[0]));
	return 0;
}
