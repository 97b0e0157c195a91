#include "worker/pipe_reply.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/json.h"

#define REPLY_QUOTE 200   /* bytes of a bad reply quoted in the error */

static int bad_reply(struct pipe_reply *ret, const char *line, size_t len, const char *what)
{
	struct handler_result *res = &ret->res;
	bool cut = len > REPLY_QUOTE;
	char quoted[JSON_ESCAPE_MAX(REPLY_QUOTE) + 1];

	quoted[json_escape(line, cut ? REPLY_QUOTE : len, quoted)] = '\0';
	pipe_reply_clear(ret);
	res->status = HANDLER_FAILED;
	snprintf(res->error, sizeof(res->error), "bad reply from the co-process: %s; reply: \"%s\"%s",
		 what, quoted, cut ? "..." : "");
	return -EPROTO;
}

/* A member that is there and not null, or NULL. */
static json_t *member(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return v && !json_is_null(v) ? v : NULL;
}

/* v as compact JSON text of at most max bytes into ret->text. Returns 0, or -EPROTO (a bad
 * reply, named what) when it is longer. */
static int dump(json_t *v, size_t max, const char *what, const char *line, size_t len,
		struct pipe_reply *ret)
{
	char msg[120];
	size_t n = json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);

	if (n == 0 || n > max) {
		snprintf(msg, sizeof(msg), "\"%s\" is %zu bytes as compact JSON, over the %zu-byte "
			 "limit", what, n, max);
		return bad_reply(ret, line, len, msg);
	}
	ret->text = malloc(n + 1);
	if (!ret->text)
		return bad_reply(ret, line, len, "out of memory");
	json_dumpb(v, ret->text, n, JSON_COMPACT | JSON_ENCODE_ANY);
	ret->text[n] = '\0';
	ret->text_len = n;
	return 0;
}

/* "enqueue": its objects as compact JSON lines, into ret->enqueue and ret->res. */
static int take_enqueue(json_t *v, const char *line, size_t len, struct pipe_reply *ret)
{
	struct buf b;
	size_t i;
	json_t *e;

	if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > PIPE_ENQUEUE_MAX)
		return bad_reply(ret, line, len, "\"enqueue\" is not an array of 1 to 1000 jobs");
	buf_init(&b);
	json_array_foreach(v, i, e) {
		char *text = json_is_object(e) ? json_dumps(e, JSON_COMPACT) : NULL;
		if (text) {
			buf_puts(&b, text);
			buf_puts(&b, "\n");
		}
		free(text);
		if (!json_is_object(e) || !text || buf_failed(&b)) {
			buf_free(&b);
			return bad_reply(ret, line, len, json_is_object(e) ? "out of memory" :
					 "an \"enqueue\" job is not a JSON object");
		}
	}
	ret->enqueue = b.data;
	ret->res.enqueue = b.data;
	ret->res.enqueue_len = b.len;
	return 0;
}

/* The line's fields into ret; the object is well-formed JSON. */
static int take(json_t *obj, const char *line, size_t len, struct pipe_reply *ret)
{
	json_t *id = json_object_get(obj, "id"), *ok = json_object_get(obj, "ok");
	json_t *error = member(obj, "error"), *retry = member(obj, "retry_in_ms");
	json_t *result = member(obj, "result"), *progress = member(obj, "progress");
	json_t *enqueue = member(obj, "enqueue");
	struct handler_result *res = &ret->res;

	if (!id && json_is_true(json_object_get(obj, "ready"))) {
		ret->ready = true;
		return 0;
	}
	if (!json_is_integer(id) || json_integer_value(id) < 0)
		return bad_reply(ret, line, len, "no \"id\" that is a non-negative integer");
	ret->id = (uint64_t)json_integer_value(id);
	if (!ok && progress) {
		ret->progress = true;
		return dump(progress, PIPE_PROGRESS_MAX, "progress", line, len, ret);
	}
	if (!json_is_boolean(ok))
		return bad_reply(ret, line, len, "no boolean \"ok\" (nor a \"progress\")");
	if (error && !json_is_string(error))
		return bad_reply(ret, line, len, "\"error\" is not a string");
	if (json_is_true(ok) && retry)
		return bad_reply(ret, line, len, "both \"ok\":true and \"retry_in_ms\"");
	if (!json_is_true(ok) && enqueue)
		return bad_reply(ret, line, len, "\"enqueue\" with \"ok\":false (a run that "
				 "failed adds no jobs)");
	if (json_is_true(ok)) {
		res->status = HANDLER_OK;
		if (result) {
			if (dump(result, PIPE_RESULT_MAX, "result", line, len, ret) < 0)
				return -EPROTO;
			res->result = (const unsigned char *)ret->text;
			res->result_len = ret->text_len;
			res->result_type = "application/json";
		}
		return enqueue ? take_enqueue(enqueue, line, len, ret) : 0;
	}
	if (retry) {
		if (!json_is_integer(retry) || json_integer_value(retry) < 0 ||
		    json_integer_value(retry) > UINT32_MAX)
			return bad_reply(ret, line, len, "\"retry_in_ms\" is not an integer from 0 to "
					 "4294967295");
		res->status = HANDLER_RETRY_LATER;
		res->retry_in_ms = (unsigned)json_integer_value(retry);
		snprintf(res->error, sizeof(res->error), "the co-process asked to retry in %u ms",
			 res->retry_in_ms);
		return 0;
	}
	res->status = HANDLER_FAILED;
	if (error && json_string_length(error) > 0)
		snprintf(res->error, sizeof(res->error), "%s", json_string_value(error));
	else
		snprintf(res->error, sizeof(res->error), "the co-process reported a failure "
			 "(\"ok\":false) without an \"error\"");
	return 0;
}

void pipe_reply_clear(struct pipe_reply *r)
{
	free(r->text);
	free(r->enqueue);
	memset(r, 0, sizeof(*r));
}

int pipe_reply_refuse(struct pipe_reply *ret, const char *line, size_t len, const char *what)
{
	return bad_reply(ret, line, len, what);
}

int pipe_reply_parse(const char *line, size_t len, struct pipe_reply *ret)
{
	json_error_t e;
	char what[300];
	json_t *obj;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (len > PIPE_REPLY_MAX)
		return bad_reply(ret, line, len, "longer than 1 MiB");
	/* One value and nothing after it (no JSON_DISABLE_EOF_CHECK); a string may hold \u0000
	 * (the error text ends there). */
	obj = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &e);
	if (!obj) {
		snprintf(what, sizeof(what), "not a JSON object (%s at byte %d)", e.text, e.position);
		return bad_reply(ret, line, len, what);
	}
	if (!json_is_object(obj))
		r = bad_reply(ret, line, len, "not a JSON object (another JSON value)");
	else
		r = take(obj, line, len, ret);
	json_decref(obj);
	return r;
}
