#include "console/ui.h"

#include <string.h>

static const struct ui_asset *find(const char *path)
{
	if (!strcmp(path, "/"))
		path = "/ui/index.html";
	for (size_t i = 0; i < ui_nassets; i++)
		if (!strcmp(ui_assets[i].path, path))
			return &ui_assets[i];
	return NULL;
}

bool ui_path(const char *path)
{
	return find(path) != NULL;
}

bool ui_serve(struct http_request *r)
{
	const struct ui_asset *a = find(http_path(r));
	const char *m = http_method(r);

	if (!a)
		return false;
	http_set_tag(r, "ui");
	if (strcmp(m, "GET") != 0 && strcmp(m, "HEAD") != 0) {
		http_add_header(r, "Allow", "GET, HEAD");
		http_respond_error(r, 405, "method not allowed on this route");
	} else {
		http_respond(r, 200, a->type, a->data, a->len);
	}
	return true;
}
