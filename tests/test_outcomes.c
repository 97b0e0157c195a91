/* test_outcomes — how a worker's outcomes wait for the database (worker/outcomes): a write
 * takes the successes there were when it began; those that come while it runs stay, in
 * order, due as a failure among them says; each written one is reported once (FINISHED).
 * Exits 1 on a failure. */
#include "worker/outcomes.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"

static unsigned reported, messages;
static uint64_t last_id;

static void on_send(void *data, struct proto_msg *m)
{
	(void)data;
	messages++;
	reported += m->u.items.n;
	if (m->u.items.n)
		last_id = m->u.items.items[m->u.items.n - 1].id;
}

static struct store_item row(uint64_t id)
{
	return (struct store_item){ .id = id, .token = id * 10, .attempt = 1 };
}

int main(void)
{
	static struct outcomes o;
	static struct store_ref refs[OUTCOMES_MAX];
	struct store_item r;
	struct outcome *x;
	size_t k;

	outcomes_init(&o, on_send, NULL);
	for (uint64_t id = 1; id <= 3; id++) {
		r = row(id);
		outcomes_add(&o, &r, OUTCOME_SUCCESS, 0, NULL);
	}
	CHECK(!outcomes_due(&o), "three successes are not due at once");
	k = outcomes_done_refs(&o, refs);
	CHECK(k == 3 && refs[2].id == 3 && refs[2].token == 30, "the write takes %zu", k);
	/* While it runs: a success with a result, then a failure. */
	r = row(4);
	x = outcomes_add(&o, &r, OUTCOME_SUCCESS, 0, NULL);
	CHECK(outcome_set_result(&o, x, (const unsigned char *)"{}", 2, "json", NULL) == 0,
	      "a result");
	r = row(5);
	outcomes_add(&o, &r, OUTCOME_FAILURE, 100, "boom");
	outcomes_done_written(&o, k);
	CHECK(reported == 3 && last_id == 3, "reported %u, the last %llu", reported,
	      (unsigned long long)last_id);
	CHECK(o.n == 2 && o.list[0].ref.id == 4 && o.list[1].ref.id == 5, "two stay, in order");
	CHECK(o.list[0].ref.result == o.list[0].result && o.list[0].ref.result_len == 2,
	      "the result stays the row's");
	CHECK(strcmp(o.list[1].error, "boom") == 0, "the failure's error stays");
	CHECK(o.urgent && outcomes_due(&o), "a failure among them: due at once");
	CHECK(o.result_bytes == 2, "their results' bytes: %zu", o.result_bytes);
	/* Successes alone: the one that came during the write is not due at once. */
	outcomes_done_written(&o, o.n);
	CHECK(o.n == 0 && reported == 5 && last_id == 5, "all written: %zu left, %u reported",
	      o.n, reported);
	for (uint64_t id = 6; id <= 7; id++) {
		r = row(id);
		outcomes_add(&o, &r, OUTCOME_SUCCESS, 0, NULL);
	}
	k = outcomes_done_refs(&o, refs);
	r = row(8);
	outcomes_add(&o, &r, OUTCOME_SUCCESS, 0, NULL);
	outcomes_done_written(&o, k);
	CHECK(o.n == 1 && o.list[0].ref.id == 8 && !o.urgent && !outcomes_due(&o) &&
	      o.result_bytes == 0, "a success alone stays, not due at once");
	outcomes_done_written(&o, 5);
	CHECK(o.n == 0 && reported == 8, "more than there are: all of them, %u reported",
	      reported);
	return failures ? 1 : 0;
}
