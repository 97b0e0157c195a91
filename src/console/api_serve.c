/* The HTTP server as the settings say: the tokens read at start (or one made, and written
 * beside the control socket for the operator and the tools that run there), the server
 * opened, its certificate read again on SIGHUP, the made token's file removed at a stop. */
#include "console/api.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/ctl.h"
#include "common/log.h"
#include "common/secret.h"
#include "console/http_token.h"

/* Whether path can be read now (as claimd starts: before it becomes --user). */
static int readable(const char *what, const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0) {
		snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
		return -EINVAL;
	}
	close(fd);
	return 0;
}

int api_serve_prepare(struct config *cfg, char *err, size_t errlen)
{
	if (!*cfg->http)
		return 0;
	if (*cfg->http_token_file &&
	    http_token_read("--http-token-file", cfg->http_token_file, cfg->http_token,
			    sizeof(cfg->http_token), err, errlen) < 0)
		return -EINVAL;
	if (*cfg->http_read_token_file &&
	    http_token_read("--http-read-token-file", cfg->http_read_token_file,
			    cfg->http_read_token, sizeof(cfg->http_read_token), err, errlen) < 0)
		return -EINVAL;
	if (*cfg->http_read_token && !strcmp(cfg->http_read_token, cfg->http_token)) {
		snprintf(err, errlen, "--http-read-token-file holds the same token as "
			 "--http-token-file: the read-only token must be another");
		return -EINVAL;
	}
	if (*cfg->http_tls_cert &&
	    (readable("--http-tls-cert", cfg->http_tls_cert, err, errlen) < 0 ||
	     secret_check("--http-tls-key", cfg->http_tls_key, err, errlen) < 0))
		return -EINVAL;
	return 0;
}

int api_serve_check_secrets(const struct config *cfg, char *err, size_t errlen)
{
	static const struct {
		const char *what;
		size_t at;
	} files[] = {
		{ "--http-token-file", offsetof(struct config, http_token_file) },
		{ "--http-read-token-file", offsetof(struct config, http_read_token_file) },
		{ "--http-tls-key", offsetof(struct config, http_tls_key) },
	};

	if (!*cfg->http)
		return 0;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		const char *path = (const char *)cfg + files[i].at;
		int r;
		if (*path && (r = secret_check(files[i].what, path, err, errlen)) == -EPERM)
			return r;
	}
	return 0;
}

/* The made token into its file, owned by --user when claimd becomes it (who removes it at
 * the stop, and whose tools read it). */
static int write_token(struct api_host *h, const struct config *cfg, const char *token)
{
	char err[600];
	uid_t uid = (uid_t)-1;
	gid_t gid = (gid_t)-1;
	int r = http_token_path(cfg->control, h->token_file, sizeof(h->token_file));

	if (r < 0) {
		log_error("http: the token file's path (from --control %s) is too long", cfg->control);
		h->token_file[0] = '\0';
		return r;
	}
	if (geteuid() == 0 && *cfg->user && strcmp(cfg->user, "root") != 0) {
		const struct passwd *pw = getpwnam(cfg->user);
		if (pw) {
			uid = pw->pw_uid;
			gid = pw->pw_gid;
		}
	}
	r = http_token_write(h->token_file, token, uid, gid, err, sizeof(err));
	if (r < 0) {
		log_error("http: %s", err);
		h->token_file[0] = '\0';
	}
	return r;
}

int api_serve_open(struct api_host *h, const struct config *cfg)
{
	char token[HTTP_TOKEN_MAX + 1] = "", err[600] = "", told[sizeof(h->token_file) + 32];
	const char *use = NULL;
	int r = 0;

	if (*cfg->http_token_file)
		use = cfg->http_token;
	else if (!cfg->http_no_auth && (r = http_token_make(token, sizeof(token))) == 0)
		use = token;
	if (r < 0) {
		log_error("http: cannot make a token: %s", strerror(-r));
		return r;
	}
	struct http_opts o = {
		.loop = h->host.loop, .addr = (const struct sockaddr *)&cfg->http_addr,
		.addrlen = cfg->http_addrlen, .token = use,
		.read_token = *cfg->http_read_token ? cfg->http_read_token : NULL,
		.hosts = *cfg->http_hosts ? cfg->http_hosts : NULL,
		.tls_cert_file = *cfg->http_tls_cert ? cfg->http_tls_cert : NULL,
		.tls_key_file = *cfg->http_tls_key ? cfg->http_tls_key : NULL,
		.max_conns = cfg->http_max_conns, .max_conns_per_ip = cfg->http_max_conns_per_ip,
		.max_streams = config_http_max_streams(cfg),
		.max_body = CTL_PAYLOAD_MAX, .handle = api_handle, .data = h,
		.access_of = api_access_of, .early = api_early, .on_answer = api_count,
	};
	h->metrics.max_conns = cfg->http_max_conns;
	r = http_open(&o, &h->http, err, sizeof(err));
	if (r < 0)
		log_error("%s", err);
	else if (use == token)
		r = write_token(h, cfg, token);
	explicit_bzero(token, sizeof(token));
	if (r < 0)
		return r;
	if (*h->token_file)
		snprintf(told, sizeof(told), "the token is in %s", h->token_file);
	else
		snprintf(told, sizeof(told), "%s", use ? "the token of --http-token-file" :
			 "no token: --http-insecure-no-auth");
	log_info("http: listening on %s://%s/ (%s%s)", http_scheme(h->http),
		 http_address(h->http), told, *cfg->http_read_token ? ", and a read-only one" : "");
	return 0;
}

int api_serve_reload(struct api_host *h, char *err, size_t errlen)
{
	int r;

	if (!h->http || strcmp(http_scheme(h->http), "https") != 0)
		return 0;
	r = http_reload_tls(h->http, err, errlen);
	if (r < 0)
		log_error("reload: %s; the certificate in use stays", err);
	else
		log_info("http: the certificate and key were read again: new connections get them; "
			 "open ones end on the old, within %d s", HTTP_DRAIN_S);
	return r;
}

void api_serve_close(struct api_host *h)
{
	http_close(h->http);
	h->http = NULL;
	if (*h->token_file && unlink(h->token_file) < 0 && errno != ENOENT)
		log_warn("http: cannot remove the token file %s: %s; left there", h->token_file,
			 strerror(errno));
	h->token_file[0] = '\0';
}
