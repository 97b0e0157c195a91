/* Where the control socket is by default, for claimd and for claimctl (config.h). The name
 * must be in a directory nobody else may write in: in /tmp another local user could create
 * it first and answer claimctl, or keep claimd from starting. */
#include "common/config_int.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SOCKET_NAME "claimd.sock"

/* May claimd put its socket in dir? A directory it may write in and others may not. own:
 * also claimd's user's, and not writable by its group ($XDG_RUNTIME_DIR must be so); else
 * whoever owns it was given it by root (only root makes directories in /run). Returns 0 or
 * -errno (-EPERM: someone else may write there). */
static int private_dir(const char *dir, bool own)
{
	struct stat st;

	if (stat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (st.st_mode & S_IWOTH || (own && (st.st_uid != geteuid() || st.st_mode & S_IWGRP)))
		return -EPERM;
	if (access(dir, W_OK | X_OK) < 0)
		return -errno;
	return 0;
}

static int join(char *out, size_t outlen, const char *dir, char *err, size_t errlen)
{
	int n = snprintf(out, outlen, "%s/" SOCKET_NAME, dir);

	if (n < 0 || (size_t)n >= outlen) {
		snprintf(err, errlen, "the control socket path %s/" SOCKET_NAME " is too long; give "
			 "--control PATH", dir);
		return -ENAMETOOLONG;
	}
	return 0;
}

static const char *why(int r)
{
	return r == -EPERM ? "others may write in it" : strerror(-r);
}

static int listen_default(char *out, size_t outlen, char *err, size_t errlen)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char runtime[160] = "$XDG_RUNTIME_DIR is not set";
	int r = private_dir(CONFIG_CONTROL_SERVICE_DIR, false), rx;

	if (r == 0)
		return join(out, outlen, CONFIG_CONTROL_SERVICE_DIR, err, errlen);
	if (xdg && *xdg == '/') {
		rx = private_dir(xdg, true);
		if (rx == 0)
			return join(out, outlen, xdg, err, errlen);
		snprintf(runtime, sizeof(runtime), "$XDG_RUNTIME_DIR %.80s: %s", xdg, why(rx));
	} else if (xdg && *xdg) {
		snprintf(runtime, sizeof(runtime), "$XDG_RUNTIME_DIR %.80s is not an absolute path",
			 xdg);
	}
	snprintf(err, errlen, "no place for the control socket: give --control PATH (or "
		 "control = in the config file) in a directory only claimd's user may write in "
		 "(" CONFIG_CONTROL_SERVICE_DIR ": %s; %s)", why(r), runtime);
	return -ENOENT;
}

static int find_default(char *out, size_t outlen, char *err, size_t errlen)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct stat st;

	if ((lstat(CONFIG_CONTROL_SERVICE_DIR "/" SOCKET_NAME, &st) == 0 || errno == EACCES) ||
	    !xdg || !*xdg)
		return join(out, outlen, CONFIG_CONTROL_SERVICE_DIR, err, errlen);
	return join(out, outlen, xdg, err, errlen);
}

int config_control_default(enum config_control_use use, char *out, size_t outlen, char *err,
			   size_t errlen)
{
	return use == CONFIG_CONTROL_LISTEN ? listen_default(out, outlen, err, errlen) :
					      find_default(out, outlen, err, errlen);
}

struct file_control {
	char *out;
	size_t outlen;
	int found;   /* 1 found, -ENAMETOOLONG too long, 0 not there */
};

/* The control key (as claimd reads keys: any section, '-' or '_', any case); the last one
 * counts, as in claimd. */
static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct file_control *fc = user;
	const char *want = "control";
	size_t i;

	(void)section;
	for (i = 0; name[i] && want[i]; i++)
		if (tolower((unsigned char)name[i]) != want[i])
			break;
	if (name[i] || want[i] || !*value)
		return 1;
	if (strlen(value) >= fc->outlen) {
		fc->found = -ENAMETOOLONG;
		return 1;
	}
	snprintf(fc->out, fc->outlen, "%s", value);
	fc->found = 1;
	return 1;
}

/* The control key of the file at path into out. Returns 1 found, 0 not in the file, or
 * -errno (the file cannot be read, the path too long). */
static int file_control(const char *path, char *out, size_t outlen)
{
	struct file_control fc = { out, outlen, 0 };
	FILE *f = fopen(path, "re");
	int r;

	if (!f)
		return -errno;
	r = ini_parse_file(f, on_key, &fc);
	fclose(f);
	if (r == -2)
		return -ENOMEM;
	/* A line that is not key = value is claimd's to complain about: the keys read stand. */
	return fc.found;
}

int config_control_find(const char *config_file, char *out, size_t outlen,
			enum config_control_from *ret_from, char *err, size_t errlen)
{
	const char *env = getenv("CLAIMD_CONTROL"), *file = config_file;
	bool named = true;
	int r;

	if (env && *env) {
		if (strlen(env) >= outlen) {
			snprintf(err, errlen, "CLAIMD_CONTROL: longer than %zu bytes", outlen - 1);
			return -ENAMETOOLONG;
		}
		snprintf(out, outlen, "%s", env);
		*ret_from = CONFIG_FROM_ENV;
		return 0;
	}
	if (!file || !*file)
		file = getenv("CLAIMD_CONFIG");
	if (!file || !*file) {
		file = CONFIG_DEFAULT_FILE;
		named = false;
	}
	r = file_control(file, out, outlen);
	if (r == 1) {
		*ret_from = CONFIG_FROM_FILE;
		return 0;
	}
	if (r == -ENAMETOOLONG || r == -ENOMEM || (r < 0 && named)) {
		snprintf(err, errlen, "%s: %s", file, r == -ENAMETOOLONG ?
			 "the control path is too long" : strerror(-r));
		return r;
	}
	/* The default file absent, or not ours to read (the service's settings): defaults. */
	*ret_from = CONFIG_FROM_DEFAULT;
	return config_control_default(CONFIG_CONTROL_FIND, out, outlen, err, errlen);
}

/* The control socket when no setting names it: where claimd listens, decided once per
 * process (a reload, as another user after --user, must not move it); for --doctor, where
 * claimctl would look. Neither --migrate nor the fork server uses it. */
int config_control_settle(struct config *c, char *err, size_t errlen)
{
	static char listening[CONFIG_PATH_MAX];

	if (c->migrate || c->fork_fd >= 0)
		return 0;
	if (c->doctor)
		return config_control_default(CONFIG_CONTROL_FIND, c->control, sizeof(c->control),
					      err, errlen);
	if (!*listening && config_control_default(CONFIG_CONTROL_LISTEN, listening,
						  sizeof(listening), err, errlen) < 0)
		return -EINVAL;
	memcpy(c->control, listening, sizeof(c->control));
	return 0;
}
