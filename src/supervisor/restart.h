/* restart — the pool's restart policy as data: how a worker's end is classed (the table of
 * restart.c: one row per kind of end, what it does to the slot's streak of quick deaths and
 * whether the streak delays the next start) and how long the slot waits before its next
 * worker (PostgreSQL's bgw_restart_time, with back-off for crash loops). Pure: no I/O. */
#ifndef CLAIMD_RESTART_H
#define CLAIMD_RESTART_H

#include <stdbool.h>
#include <stdint.h>

#define RESTART_QUICK_MS 10000   /* a worker that dies sooner than this counts towards back-off */
#define RESTART_MIN_MS 250       /* the first delay of a crash loop */
#define RESTART_MAX_MS 30000     /* its longest */
#define RESTART_FREE_DEATHS 1    /* quick deaths in a row restarted at once before back-off */

/* How a worker ended, as the pool sees it. */
enum restart_end {
	END_CLEAN,        /* exit 0: it stopped as asked (or chose to) */
	END_AT_WORK,      /* crashed or killed after it finished an item: a kill storm, the OOM
			   * killer; not its start-up or its handler */
	END_LATE,         /* crashed without finishing an item, after RESTART_QUICK_MS */
	END_QUICK,        /* crashed without finishing an item, within RESTART_QUICK_MS: a
			   * crash loop in the making */
	END_MAX = END_QUICK
};

/* A row of the policy: what an end does to the streak of quick deaths. */
struct restart_rule {
	const char *name;
	bool counts;      /* the streak grows by one (else it starts again at 0) */
};

extern const struct restart_rule restart_rules[END_MAX + 1];

/* The kind of end: status as waitpid gives it, whether the worker finished an item, how
 * long it lived. */
enum restart_end restart_classify(int status, bool worked, uint64_t lived_ms);

/* The end applied to a slot's streak (*streak changed) and the delay before its next
 * worker, in ms: 0 up to RESTART_FREE_DEATHS quick deaths in a row, then from
 * RESTART_MIN_MS doubling up to RESTART_MAX_MS. */
unsigned restart_next(enum restart_end end, unsigned *streak);

#endif
