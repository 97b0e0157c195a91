/* The operator's surface, whole: the commands (cmd.h) on the supervisor's host, the control
 * socket that carries them (control.h) and, when --http says so, the HTTP server (api.h). */
#include "console/console.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "common/log.h"
#include "console/api.h"
#include "console/cmd.h"
#include "console/control.h"
#include "console/http.h"
#include "console/status.h"

struct surface {
	struct cmds *cmds;
	struct control *control;
	struct api_host api;
	bool stopped;
};

static int console_open(const struct sup_host *host, struct surface **ret)
{
	const struct config *cfg = host->cfg;
	struct surface *s = calloc(1, sizeof(*s));
	char err[512] = "";
	int r;

	*ret = s;
	if (!s)
		return -ENOMEM;
	if ((r = cmds_new(host, &s->cmds)) < 0)
		return r;
	r = control_open(host->loop, cfg->control, cfg->control_group, s->cmds, &s->control, err,
			 sizeof(err));
	if (r < 0) {
		log_error("%s", err);
		return r;
	}
	s->api.host = *host;
	s->api.cmds = s->cmds;
	return *cfg->http ? api_serve_open(&s->api, cfg) : 0;
}

static const char *console_address(struct surface *s)
{
	return s->api.http ? http_address(s->api.http) : "";
}

static void console_reload(struct surface *s, char *tls, size_t tlslen)
{
	api_serve_reload(&s->api, tls, tlslen);
}

static void console_rows_changed(struct surface *s)
{
	api_watch_changed(&s->api);
}

static void console_stop(struct surface *s)
{
	if (!s || s->stopped)
		return;
	s->stopped = true;
	api_stop(&s->api);
	cmds_flush(s->cmds);
	control_close(s->control);
	s->control = NULL;
	api_serve_close(&s->api);
}

static void console_free(struct surface *s)
{
	if (!s)
		return;
	cmds_free(s->cmds);
	free(s);
}

const struct surface_ops console_ops = {
	.open = console_open,
	.address = console_address,
	.check_secrets = api_serve_check_secrets,
	.reload = console_reload,
	.rows_changed = console_rows_changed,
	.stop = console_stop,
	.free = console_free,
	.pool_json = status_render_json,
};
