#include "worker/fence.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static timer_t timer;
static bool made;
static const struct sb_slot *board;
static volatile sig_atomic_t armed;
static volatile uint64_t fired_ns;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* In the signal handler: only loads of the scoreboard, kill(2), write(2) and _exit(2). */
static void on_alarm(int sig)
{
	static const char msg[] = "claimd worker: the leases of the running rows end without a "
				  "renewal and an in-process handler cannot be stopped: exiting\n";
	int saved = errno;
	uint32_t n;
	bool killed = false;

	(void)sig;
	if (!armed || !board)
		return;
	n = __atomic_load_n(&board->nentries, __ATOMIC_RELAXED);
	if (n > SCOREBOARD_ENTRIES)
		n = SCOREBOARD_ENTRIES;
	for (uint32_t i = 0; i < n; i++) {
		const struct sb_entry *e = &board->entries[i];
		if (__atomic_load_n(&e->id, __ATOMIC_ACQUIRE) == 0)
			continue;
		if (__atomic_load_n(&e->flags, __ATOMIC_ACQUIRE) & SB_INPROC) {
			ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
			(void)w;
			_exit(FENCE_EXIT);
		}
		int32_t pg = __atomic_load_n(&e->pgid, __ATOMIC_ACQUIRE);
		/* Never kill(-1) nor our own group, whatever the memory says. */
		if (pg > 1 && pg != getpgrp()) {
			kill(-pg, SIGKILL);
			killed = true;
		}
	}
	if (killed)
		fired_ns = now_ns();
	errno = saved;
}

int fence_init(const struct sb_slot *slot)
{
	struct sigevent ev;
	struct sigaction sa;

	board = slot;
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

void fence_arm(uint64_t deadline_ns)
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
	armed = 1;
	timer_settime(timer, TIMER_ABSTIME, &its, NULL);
}

void fence_disarm(void)
{
	struct itimerspec its;

	armed = 0;
	if (!made)
		return;
	memset(&its, 0, sizeof(its));
	timer_settime(timer, 0, &its, NULL);
}

uint64_t fence_fired_ns(void)
{
	return fired_ns;
}
