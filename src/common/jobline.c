#include "common/jobline.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const known[] = {
	"run_at", "delay", "period", "timeout", "priority", "group", "dedupe", "max_attempts",
	"content_type",
};

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
