#include "common/jobline.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const known[] = {
	"run_at", "delay", "period", "timeout", "priority", "group", "dedupe", "max_attempts",
	"content_type", "traceparent", "retry_base", "retry_max", "dedupe_for",
};
_Static_assert(sizeof(known) / sizeof(known[0]) + 1 <= JOBLINE_PARAMS_MAX,
	       "every key once, and the content type a JSON payload adds");

static bool text_ok(json_t *v, size_t max)
{
	return json_is_string(v) && json_string_length(v) >= 1 && json_string_length(v) <= max &&
	       strlen(json_string_value(v)) == json_string_length(v);
}

/* The graph's keys (ref, after, on_dead, callback), and queue. Returns 1 when key is one of
 * them (then read into out, or 0 / -EINVAL with err), 0 when it is not. */
static int graph_key(const char *key, json_t *v, struct jobline *out, char *err, size_t errlen)
{
	size_t i;
	json_t *e;

	if (!strcmp(key, "queue")) {
		if (!text_ok(v, JOBLINE_QUEUE_MAX))
			goto bad;
		out->queue = json_string_value(v);
	} else if (!strcmp(key, "ref")) {
		if (!text_ok(v, JOBLINE_REF_MAX))
			goto bad;
		out->ref = json_string_value(v);
	} else if (!strcmp(key, "after")) {
		if (!json_is_array(v) || json_array_size(v) > JOBLINE_AFTER_MAX)
			goto bad;
		json_array_foreach(v, i, e) {
			if (!text_ok(e, JOBLINE_REF_MAX))
				goto bad;
			out->after[out->nafter++] = json_string_value(e);
		}
	} else if (!strcmp(key, "on_dead")) {
		if (!json_is_string(v) || (strcmp(json_string_value(v), "cancel") != 0 &&
					   strcmp(json_string_value(v), "run") != 0))
			goto bad;
		out->on_dead_run = !strcmp(json_string_value(v), "run");
	} else if (!strcmp(key, "callback")) {
		if (!json_is_boolean(v))
			goto bad;
		out->callback = json_is_true(v);
	} else {
		return 0;
	}
	return 1;
bad:
	snprintf(err, errlen, "%s must be %s", key,
		 !strcmp(key, "ref") || !strcmp(key, "queue") ? "a string of 1 to 64 bytes" :
		 !strcmp(key, "after") ? "an array of at most 32 refs (strings of 1 to 64 bytes)" :
		 !strcmp(key, "on_dead") ? "\"cancel\" or \"run\"" : "true or false");
	return -EINVAL;
}

int jobline_parse(const char *line, size_t len, struct jobline *out, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root, *v;
	const char *key;

	memset(out, 0, sizeof(*out));
	root = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	if (!root) {
		snprintf(err, errlen, "not JSON: %s (column %d)", je.text, je.column);
		return -EINVAL;
	}
	if (!json_is_object(root)) {
		snprintf(err, errlen, "not a JSON object");
		goto out;
	}
	json_object_foreach(root, key, v) {
		size_t k;
		int g = graph_key(key, v, out, err, errlen);
		if (g < 0)
			goto out;
		if (g > 0)
			continue;
		if (!strcmp(key, "payload")) {
			if (json_is_string(v)) {
				out->payload = (const unsigned char *)json_string_value(v);
				out->payload_len = json_string_length(v);
			} else {
				out->payload_text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
				if (!out->payload_text) {
					snprintf(err, errlen, "out of memory");
					goto out;
				}
				out->payload = (const unsigned char *)out->payload_text;
				out->payload_len = strlen(out->payload_text);
			}
			continue;
		}
		for (k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			if (!strcmp(key, known[k]))
				break;
		if (k == sizeof(known) / sizeof(known[0])) {
			snprintf(err, errlen, "unknown key '%.40s'", key);
			goto out;
		}
		if (json_is_string(v)) {
			if (strlen(json_string_value(v)) != json_string_length(v)) {
				snprintf(err, errlen, "%s has a NUL byte", key);
				goto out;
			}
			out->values[out->n] = json_string_value(v);
		} else if (json_is_integer(v)) {
			snprintf(out->num[out->n], sizeof(out->num[0]), "%lld",
				 (long long)json_integer_value(v));
			out->values[out->n] = out->num[out->n];
		} else {
			snprintf(err, errlen, "%s must be a string or a whole number", key);
			goto out;
		}
		out->names[out->n++] = known[k];
	}
	if (!out->payload)
		out->payload = (const unsigned char *)"";
	if (out->payload_text && !json_object_get(root, "content_type")) {
		out->names[out->n] = "content_type";
		out->values[out->n++] = "application/json";
	}
	out->root = root;
	return 0;
out:
	free(out->payload_text);
	json_decref(root);
	memset(out, 0, sizeof(*out));
	return -EINVAL;
}

void jobline_free(struct jobline *j)
{
	free(j->payload_text);
	json_decref(j->root);
	memset(j, 0, sizeof(*j));
}
