/* test_jobset — jobs added together (common/jobset.h): lines into add requests in order,
 * blank lines skipped, each line's queue or the one given, refs into edges, the callback; and
 * what is refused (a line's own fault named by its line, the graph's by its job), and more
 * lines than allowed. */
#include "common/jobset.h"

#include <errno.h>
#include <string.h>

#include "check.h"

static void test_plain(void)
{
	static const char text[] = "{\"payload\":\"a\",\"priority\":-2}\n\r\n"
				   "{\"queue\":\"mail\",\"payload\":{\"to\":\"x\"},\"delay\":\"30s\"}";
	struct jobset set;
	char err[300] = "";
	int r = jobset_parse(text, strlen(text), 10, "default", JOBSET_LINE_QUEUE, &set, err,
			     sizeof(err));

	CHECK(r == 0 && set.n == 2 && !set.graph && set.nedges == 0 && set.callback == -1,
	      "plain: %d n=%zu graph=%d (%s)", r, set.n, set.graph, err);
	if (r < 0)
		return;
	CHECK(!strcmp(set.reqs[0].queue, "default") && set.reqs[0].priority == -2 &&
	      set.reqs[0].payload_len == 1 && set.reqs[0].verb == CTL_ADD, "plain: the first line");
	CHECK(!strcmp(set.reqs[1].queue, "mail") && set.reqs[1].delay_ms == 30000 &&
	      ctl_has(&set.reqs[1], CTL_F_CONTENT_TYPE) &&
	      !strcmp(set.reqs[1].content_type, "application/json"), "plain: the second line");
	jobset_free(&set);
}

static void test_graph(void)
{
	static const char text[] = "{\"ref\":\"a\"}\n{\"ref\":\"b\",\"after\":[\"a\"]}\n"
				   "{\"after\":[\"a\",\"b\"],\"on_dead\":\"run\",\"callback\":true}\n";
	struct jobset set;
	char err[300] = "";
	int r = jobset_parse(text, strlen(text), 10, "q", 0, &set, err, sizeof(err));

	CHECK(r == 0 && set.graph && set.n == 3 && set.nedges == 3 && set.callback == 2,
	      "graph: %d (%s)", r, err);
	if (r < 0)
		return;
	CHECK(set.edges[0].parent == 0 && set.edges[0].child == 1 && !set.edges[0].on_dead_run &&
	      set.edges[1].parent == 0 && set.edges[1].child == 2 && set.edges[1].on_dead_run &&
	      set.edges[2].parent == 1 && set.edges[2].child == 2, "graph: the edges");
	jobset_free(&set);
}

static void test_refused(void)
{
	static const struct {
		const char *text;
		unsigned flags;
		int rc;
		const char *err;
	} cases[] = {
		{ "{}\n\n{\"bogus\":1}", 0, -EINVAL, "line 3: unknown key 'bogus'" },
		{ "{\"queue\":\"x\"}", 0, -EINVAL, "line 1: unknown key 'queue'" },
		{ "{\"queue\":\"\"}", JOBSET_LINE_QUEUE, -EINVAL, "line 1: queue must be" },
		{ "{\"priority\":99}", 0, -EINVAL, "line 1: " },
		{ "{\"ref\":\"a\"}\n{\"ref\":\"a\"}", 0, -EINVAL, "line 2: ref 'a' is another" },
		{ "{\"after\":[\"z\"]}", 0, -EINVAL, "line 1: after: no line has ref 'z'" },
		{ "{\"callback\":true}\n{\"callback\":true}", 0, -EINVAL, "line 2: a batch has one callback" },
		{ "{}\n{}\n{}\n{}", 0, -E2BIG, "" },
		{ "[1]", 0, -EINVAL, "line 1: not a JSON object" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct jobset set;
		char err[300] = "";
		int r = jobset_parse(cases[i].text, strlen(cases[i].text), 3, "q", cases[i].flags,
				     &set, err, sizeof(err));
		CHECK(r == cases[i].rc && strstr(err, cases[i].err) == err,
		      "'%s': %d '%s', want %d '%s'", cases[i].text, r, err, cases[i].rc,
		      cases[i].err);
		CHECK(set.n == 0 && !set.lines && !set.reqs && !set.edges, "'%s': nothing left",
		      cases[i].text);
	}
}

int main(void)
{
	test_plain();
	test_graph();
	test_refused();
	if (failures) {
		printf("%d check(s) failed\n", failures);
		return 1;
	}
	printf("ok - jobset: lines, queues, a graph's edges and callback, refusals\n");
	return 0;
}
