#include "worker/fence.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static timer_t timer;
static bool made;
static volatile sig_atomic_t fired;
static volatile pid_t target;      /* > 0: a process group; 0 with armed: ourselves */
static volatile sig_atomic_t armed;

static void on_alarm(int sig)
{
	static const char msg[] = "claimd worker: the lease of the running row ends without a "
				  "renewal and its in-process handler cannot be stopped: exiting\n";
	int saved = errno;

	(void)sig;
	if (!armed)
		return;
	if (target > 0) {
		kill(-target, SIGKILL);
		fired = 1;
	} else {
		ssize_t n = write(STDERR_FILENO, msg, sizeof(msg) - 1);
		(void)n;
		_exit(FENCE_EXIT);
	}
	errno = saved;
}

int fence_init(void)
{
	struct sigevent ev;
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) < 0)
		return -errno;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGALRM;
	/* uv_hrtime() reads CLOCK_MONOTONIC */
	if (timer_create(CLOCK_MONOTONIC, &ev, &timer) < 0)
		return -errno;
	made = true;
	return 0;
}

void fence_arm(uint64_t deadline_ns, pid_t pgid)
{
	struct itimerspec its;

	if (!made)
		return;
	memset(&its, 0, sizeof(its));
	/* 0 would disarm: a deadline already passed fires at once */
	if (deadline_ns == 0)
		deadline_ns = 1;
	its.it_value.tv_sec = (time_t)(deadline_ns / 1000000000u);
	its.it_value.tv_nsec = (long)(deadline_ns % 1000000000u);
	target = pgid;
	armed = 1;
	timer_settime(timer, TIMER_ABSTIME, &its, NULL);
}

void fence_disarm(void)
{
	struct itimerspec its;

	armed = 0;
	target = 0;
	if (!made)
		return;
	memset(&its, 0, sizeof(its));
	timer_settime(timer, 0, &its, NULL);
}

bool fence_fired(void)
{
	bool f = fired;

	fired = 0;
	return f;
}
