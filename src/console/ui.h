/* ui — the dashboard's files (src/console/ui/, built into the binary by embed.py), served
 * at / (index.html) and /ui/<name>. They hold no data: the page reads the API, which needs
 * the token when one is set, so the files are served without it. */
#ifndef CLAIMD_UI_H
#define CLAIMD_UI_H

#include <stdbool.h>
#include <stddef.h>

#include "console/http.h"

struct ui_asset {
	const char *path;      /* "/ui/app.js" */
	const char *type;
	const unsigned char *data;
	size_t len;
};

extern const struct ui_asset ui_assets[];
extern const size_t ui_nassets;

/* Whether path is one of the dashboard's (answered without the token). */
bool ui_path(const char *path);

/* Answers r if its path is the dashboard's (405 for a method but GET or HEAD); returns
 * whether it did. */
bool ui_serve(struct http_request *r);

#endif
