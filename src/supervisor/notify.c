#include "supervisor/notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int fd = -1;
static struct sockaddr_un addr;
static socklen_t addrlen;
static uint64_t watchdog_ms;

int notify_init(void)
{
	const char *path = getenv("NOTIFY_SOCKET"), *usec = getenv("WATCHDOG_USEC");
	const char *wpid = getenv("WATCHDOG_PID");
	size_t n;

	if (usec && *usec && (!wpid || !*wpid || strtol(wpid, NULL, 10) == (long)getpid())) {
		unsigned long long v = strtoull(usec, NULL, 10);
		watchdog_ms = v / 2000;   /* half the interval, in ms */
	}
	if (path && *path) {
		n = strlen(path);
		if ((path[0] != '/' && path[0] != '@') || n >= sizeof(addr.sun_path))
			return -EINVAL;
		memset(&addr, 0, sizeof(addr));
		addr.sun_family = AF_UNIX;
		memcpy(addr.sun_path, path, n);
		if (path[0] == '@')
			addr.sun_path[0] = '\0';   /* an abstract socket */
		addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
		fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
	}
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	return 0;
}

bool notify_enabled(void)
{
	return fd >= 0;
}

int notify_send(const char *text)
{
	if (fd < 0)
		return 0;
	if (sendto(fd, text, strlen(text), MSG_NOSIGNAL, (const struct sockaddr *)&addr,
		   addrlen) < 0)
		return -errno;
	return 0;
}

uint64_t notify_watchdog_ms(void)
{
	return watchdog_ms;
}

void notify_end(void)
{
	if (fd >= 0)
		close(fd);
	fd = -1;
}
