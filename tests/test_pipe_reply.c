/* test_pipe_reply — a pipe: co-process's reply lines (worker/pipe_reply, on jansson): what
 * each good reply means (its id, its result, or a progress report, as compact JSON), what each
 * bad one is refused for (the message says), nested values accepted, the size limits, every
 * strict prefix of a good reply refused, a good one refused by its reader. Table-driven; exits
 * 1 on a failure. */
#include "worker/pipe_reply.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* Table rows leave their trailing fields zero. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

static const struct good {
	const char *line;
	int status;
	unsigned retry_ms;
	const char *error;   /* part of res.error, or NULL for "" */
	const char *text;    /* the result (or progress) as compact JSON, or NULL for none */
	bool progress;
	uint64_t id;         /* 0: 7 */
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
	/* nested values: a result, kept compact */
	{ "{\"id\":7,\"ok\":true,\"result\":{\"rows\":[1, 2,{\"x\":null}],\"t\":\"\u00e9\"}}",
	  HANDLER_OK, 0, NULL, "{\"rows\":[1,2,{\"x\":null}],\"t\":\"\xc3\xa9\"}" },
	{ "{\"id\":7,\"ok\":true,\"result\":42}", HANDLER_OK, 0, NULL, "42" },
	{ "{\"id\":7,\"ok\":true,\"result\":\"text\"}", HANDLER_OK, 0, NULL, "\"text\"" },
	{ "{\"id\":7,\"ok\":true,\"result\":null}", HANDLER_OK, 0, NULL, NULL },
	/* a failure's result is not kept */
	{ "{\"id\":7,\"ok\":false,\"error\":\"no\",\"result\":1}", HANDLER_FAILED, 0, "no", NULL },
	/* progress in a reply is ignored; without "ok" it is a progress report */
	{ "{\"progress\":[0.5,\"half\"],\"id\":7,\"ok\":true}", HANDLER_OK, 0, NULL },
	{ "{\"id\":7,\"progress\":0.25}", 0, 0, NULL, "0.25", true },
	{ "{\"id\":7, \"progress\": {\"done\": 3, \"of\": 10}}", 0, 0, NULL,
	  "{\"done\":3,\"of\":10}", true },
	/* any id: whether it is an item outstanding is the pipe: kind's to say */
	{ "{\"id\":8,\"ok\":true}", HANDLER_OK, 0, NULL, NULL, false, 8 },
	{ "{\"id\":9223372036854775807,\"progress\":1}", 0, 0, NULL, "1", true,
	  9223372036854775807u },
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
	{ "{\"id\":7,\"progress\":null}", 0, "no boolean \"ok\" (nor a \"progress\")" },
	/* follow-up jobs go with a success, as an array of objects */
	{ "{\"id\":7,\"ok\":false,\"enqueue\":[{}]}", 0, "\"enqueue\" with \"ok\":false" },
	{ "{\"id\":7,\"ok\":true,\"enqueue\":{}}", 0, "\"enqueue\" is not an array of 1" },
	{ "{\"id\":7,\"ok\":true,\"enqueue\":[]}", 0, "\"enqueue\" is not an array of 1" },
	{ "{\"id\":7,\"ok\":true,\"enqueue\":[{},2]}", 0, "an \"enqueue\" job is not a JSON" },
	/* the ready line is true and has no id */
	{ "{\"ready\":false}", 0, "no \"id\"" },
	{ "{\"ready\":1}", 0, "no \"id\"" },
	{ "{\"ready\":true,\"id\":7}", 0, "no boolean \"ok\"" },
	{ "{\"ready\":true}x", 0, "not a JSON object" },
};

/* The ready line, alone or with fields it ignores; with an id it is a reply like another. */
static void test_ready(void)
{
	static const char *const lines[] = {
		"{\"ready\":true}", " { \"ready\" : true }\r", "{\"ready\":true,\"pid\":42}",
	};
	struct pipe_reply reply;

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		int r = pipe_reply_parse(lines[i], strlen(lines[i]), &reply);
		CHECK(r == 0 && reply.ready && reply.id == 0 && !reply.progress && !reply.text,
		      "'%s': %d ready %d", lines[i], r, reply.ready);
		pipe_reply_clear(&reply);
	}
	CHECK(pipe_reply_parse("{\"ready\":true,\"id\":7,\"ok\":true}", 31, &reply) == 0 &&
	      !reply.ready && reply.id == 7 && reply.res.status == HANDLER_OK,
	      "a reply with \"ready\" in it is a reply");
	pipe_reply_clear(&reply);
}

/* The jobs of "enqueue" come out a compact line each, in order; without it, none. */
static void test_enqueue(void)
{
	static const char line[] = "{\"id\":7,\"ok\":true,\"result\":1,\"enqueue\":[ {\"queue\" : "
				   "\"mail\", \"payload\":{\"to\":\"a\"}}, {\"payload\":\"x\"} ]}";
	static const char want[] = "{\"queue\":\"mail\",\"payload\":{\"to\":\"a\"}}\n"
				   "{\"payload\":\"x\"}\n";
	struct pipe_reply reply;
	int r = pipe_reply_parse(line, strlen(line), &reply);

	CHECK(r == 0 && reply.res.status == HANDLER_OK && reply.res.enqueue &&
	      reply.res.enqueue_len == strlen(want) && !memcmp(reply.res.enqueue, want, strlen(want)),
	      "enqueue: %d '%.*s'", r, (int)reply.res.enqueue_len,
	      reply.res.enqueue ? reply.res.enqueue : "");
	CHECK(reply.res.result && reply.res.result_len == 1, "enqueue: the result is kept too");
	pipe_reply_clear(&reply);
	r = pipe_reply_parse("{\"id\":7,\"ok\":true}", 18, &reply);
	CHECK(r == 0 && !reply.res.enqueue && reply.res.enqueue_len == 0, "no enqueue: none");
	pipe_reply_clear(&reply);
}

static void test_good(void)
{
	for (size_t i = 0; i < sizeof(goods) / sizeof(goods[0]); i++) {
		const struct good *g = &goods[i];
		struct pipe_reply reply;
		int r = pipe_reply_parse(g->line, strlen(g->line), &reply);
		const struct handler_result res = reply.res;

		CHECK(r == 0, "'%s': %d %s", g->line, r, res.error);
		if (r < 0)
			continue;
		CHECK(reply.progress == g->progress, "'%s': progress %d", g->line, reply.progress);
		CHECK(!reply.ready, "'%s': read as the ready line", g->line);
		CHECK(reply.id == (g->id ? g->id : 7), "'%s': id %llu", g->line,
		      (unsigned long long)reply.id);
		CHECK(g->text ? reply.text && !strcmp(reply.text, g->text) &&
		      reply.text_len == strlen(g->text) : !reply.text, "'%s': text '%s'", g->line,
		      reply.text ? reply.text : "(none)");
		CHECK(g->progress || !g->text || (res.result && res.result_len == strlen(g->text) &&
		      !strcmp(res.result_type, "application/json")), "'%s': no result", g->line);
		CHECK(!res.result || g->status == HANDLER_OK, "'%s': a result for a failure", g->line);
		pipe_reply_clear(&reply);
		if (g->progress)
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
		struct pipe_reply reply;
		struct handler_result res;
		int r;

		memcpy(copy, b->line, len);
		r = pipe_reply_parse(copy, len, &reply);
		res = reply.res;
		CHECK(!reply.text, "'%s': a bad reply with a text", b->line);
		pipe_reply_clear(&reply);
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
		struct pipe_reply reply;
		int r;

		memcpy(copy, line, n);
		r = pipe_reply_parse(copy, n, &reply);
		pipe_reply_clear(&reply);
		free(copy);
		CHECK(r == -EPROTO, "prefix of %zu bytes accepted", n);
	}
}

static void test_long_reply(void)
{
	size_t n = PIPE_REPLY_MAX + 1;
	char *line = malloc(n);
	struct pipe_reply reply;

	memset(line, ' ', n);
	CHECK(pipe_reply_parse(line, n, &reply) == -EPROTO &&
	      strstr(reply.res.error, "longer than 1 MiB"), "a reply over 1 MiB: '%.80s'",
	      reply.res.error);
	pipe_reply_clear(&reply);
	free(line);
}

/* A result of exactly the limit is kept, one byte more refused; the same for progress. */
static void test_limits(void)
{
	static const struct { const char *head; size_t max; bool progress; } cases[] = {
		{ "{\"id\":7,\"ok\":true,\"result\":", PIPE_RESULT_MAX, false },
		{ "{\"id\":7,\"progress\":", PIPE_PROGRESS_MAX, true },
	};

	for (size_t c = 0; c < 2; c++) {
		for (size_t extra = 0; extra < 2; extra++) {
			size_t slen = cases[c].max + extra - 2;   /* the string's bytes, quotes apart */
			size_t hl = strlen(cases[c].head), n = hl + slen + 3;
			char *line = malloc(n + 1);
			struct pipe_reply reply;
			int r;

			memcpy(line, cases[c].head, hl);
			line[hl] = '"';
			memset(line + hl + 1, 'x', slen);
			memcpy(line + hl + 1 + slen, "\"}", 3);
			r = pipe_reply_parse(line, n, &reply);
			if (extra == 0)
				CHECK(r == 0 && reply.text_len == cases[c].max &&
				      reply.progress == cases[c].progress, "%zu bytes refused: %s",
				      cases[c].max, reply.res.error);
			else
				CHECK(r == -EPROTO && strstr(reply.res.error, "over the"),
				      "%zu bytes accepted", cases[c].max + 1);
			pipe_reply_clear(&reply);
			free(line);
		}
	}
}

/* A line that parses may still be refused by its reader (an id not outstanding): the same
 * bad-reply error, with the line quoted. */
static void test_refuse(void)
{
	const char *line = "{\"id\":8,\"ok\":true,\"result\":[1]}";
	struct pipe_reply reply;

	CHECK(pipe_reply_parse(line, strlen(line), &reply) == 0 && reply.text, "parse");
	CHECK(pipe_reply_refuse(&reply, line, strlen(line), "wrong id 8") == -EPROTO, "refuse");
	CHECK(reply.res.status == HANDLER_FAILED && !reply.text && !reply.res.result &&
	      !strcmp(reply.res.error, "bad reply from the co-process: wrong id 8; reply: "
		      "\"{\\\"id\\\":8,\\\"ok\\\":true,\\\"result\\\":[1]}\""),
	      "refused: '%s'", reply.res.error);
	pipe_reply_clear(&reply);
}

int main(void)
{
	test_good();
	test_enqueue();
	test_bad();
	test_prefixes();
	test_long_reply();
	test_limits();
	test_refuse();
	test_ready();
	if (failures) {
		printf("%d check(s) failed\n", failures);
		return 1;
	}
	printf("ok - pipe_reply: %zu good, %zu bad replies, prefixes, size cap, refused, "
	       "ready\n",
	       sizeof(goods) / sizeof(goods[0]), sizeof(bads) / sizeof(bads[0]));
	return 0;
}
