/* test_http_state — the HTTP request's transition table (http_state.h): every state is
 * reached from the first, every state but the last leads to the end, the end has no way
 * out, the paths a request takes are allowed step by step, and steps that would be bugs
 * (an answer after the end, a body after the answer, a suspended request freed while its
 * command holds it) are refused. */
#include "console/http_state.h"

#include <stdbool.h>
#include <string.h>

#include "check.h"

#define N HTTP_S_COUNT

/* The states reachable from start (a mark per state). */
static void reach(enum http_state start, bool seen[N])
{
	enum http_state stack[N];
	size_t n = 0;

	memset(seen, 0, N * sizeof(seen[0]));
	seen[start] = true;
	stack[n++] = start;
	while (n) {
		enum http_state s = stack[--n];
		for (int t = 0; t < N; t++)
			if (http_state_may_follow(s, t) && !seen[t]) {
				seen[t] = true;
				stack[n++] = t;
			}
	}
}

static void test_every_state_is_reached_from_headers(void)
{
	bool seen[N];

	reach(HTTP_S_HEADERS, seen);
	for (int s = 0; s < N; s++)
		CHECK(seen[s], "%s is not reached from headers", http_state_name(s));
}

static void test_every_state_leads_to_done(void)
{
	bool seen[N];

	for (int s = 0; s < N; s++) {
		reach(s, seen);
		CHECK(seen[HTTP_S_DONE], "%s never leads to done", http_state_name(s));
	}
}

static void test_done_has_no_way_out(void)
{
	for (int t = 0; t < N; t++)
		CHECK(!http_state_may_follow(HTTP_S_DONE, t), "done -> %s is allowed",
		      http_state_name(t));
}

static void test_no_state_follows_itself(void)
{
	for (int s = 0; s < N; s++)
		CHECK(!http_state_may_follow(s, s), "%s -> itself is allowed", http_state_name(s));
}

static void test_names_are_distinct(void)
{
	for (int s = 0; s < N; s++) {
		CHECK(strcmp(http_state_name(s), "?") != 0, "state %d has no name", s);
		for (int t = s + 1; t < N; t++)
			CHECK(strcmp(http_state_name(s), http_state_name(t)) != 0,
			      "states %d and %d share the name %s", s, t, http_state_name(s));
	}
	CHECK(!strcmp(http_state_name(N), "?"), "a state out of range has a name");
	CHECK(!strcmp(http_state_name((enum http_state)-1), "?"), "-1 has a name");
	CHECK(!http_state_may_follow(N, HTTP_S_DONE), "a state out of range has a step");
	CHECK(!http_state_may_follow(HTTP_S_HEADERS, N), "a step to a state out of range");
}

/* The lives a request has, step by step. */
static const struct {
	const char *name;
	enum http_state path[8];
	size_t n;
} lives[] = {
	{ "answered at once", { HTTP_S_HEADERS, HTTP_S_BODY, HTTP_S_HANDLER, HTTP_S_ANSWERED,
				HTTP_S_SENT, HTTP_S_DONE }, 6 },
	{ "answered after a command", { HTTP_S_HEADERS, HTTP_S_BODY, HTTP_S_HANDLER,
					HTTP_S_WAITING, HTTP_S_ANSWERED, HTTP_S_SENT,
					HTTP_S_DONE }, 7 },
	{ "refused before the body", { HTTP_S_HEADERS, HTTP_S_ANSWERED, HTTP_S_SENT,
				       HTTP_S_DONE }, 4 },
	{ "a body too large", { HTTP_S_HEADERS, HTTP_S_BODY, HTTP_S_TOO_BIG, HTTP_S_ANSWERED,
				HTTP_S_SENT, HTTP_S_DONE }, 6 },
	{ "a stream to its end", { HTTP_S_HEADERS, HTTP_S_BODY, HTTP_S_HANDLER, HTTP_S_WAITING,
				   HTTP_S_STREAM, HTTP_S_STREAM_IDLE, HTTP_S_STREAM,
				   HTTP_S_STREAM_END }, 8 },
	{ "a stream whose client left", { HTTP_S_WAITING, HTTP_S_STREAM, HTTP_S_STREAM_IDLE,
					  HTTP_S_DONE }, 4 },
	{ "the server stops while a command runs", { HTTP_S_WAITING, HTTP_S_ANSWERED,
						     HTTP_S_OWED, HTTP_S_ORPHAN,
						     HTTP_S_DONE }, 5 },
	{ "the command answers before the close", { HTTP_S_ANSWERED, HTTP_S_OWED,
						    HTTP_S_SENT, HTTP_S_DONE }, 4 },
	{ "the connection closes while a command runs", { HTTP_S_WAITING, HTTP_S_ORPHAN,
							  HTTP_S_DONE }, 3 },
	{ "the client leaves mid-body", { HTTP_S_HEADERS, HTTP_S_BODY, HTTP_S_DONE }, 3 },
};

static void test_lives_are_allowed(void)
{
	for (size_t i = 0; i < sizeof(lives) / sizeof(lives[0]); i++)
		for (size_t k = 1; k < lives[i].n; k++)
			CHECK(http_state_may_follow(lives[i].path[k - 1], lives[i].path[k]),
			      "%s: %s -> %s is refused", lives[i].name,
			      http_state_name(lives[i].path[k - 1]),
			      http_state_name(lives[i].path[k]));
}

static const struct {
	const char *why;
	enum http_state from, to;
} bugs[] = {
	{ "a second answer", HTTP_S_SENT, HTTP_S_ANSWERED },
	{ "a body after the answer", HTTP_S_ANSWERED, HTTP_S_BODY },
	{ "the handler before the body is in", HTTP_S_HEADERS, HTTP_S_HANDLER },
	{ "suspended before the handler ran", HTTP_S_BODY, HTTP_S_WAITING },
	{ "freed while its command holds it", HTTP_S_WAITING, HTTP_S_DONE },
	{ "freed while owed", HTTP_S_OWED, HTTP_S_DONE },
	{ "a stream after the answer", HTTP_S_ANSWERED, HTTP_S_STREAM },
	{ "a stream started again", HTTP_S_STREAM_END, HTTP_S_STREAM },
	{ "an orphan answered", HTTP_S_ORPHAN, HTTP_S_ANSWERED },
	{ "a stream owed", HTTP_S_STREAM, HTTP_S_OWED },
	{ "a 413 after the handler", HTTP_S_HANDLER, HTTP_S_TOO_BIG },
};

static void test_bugs_are_refused(void)
{
	for (size_t i = 0; i < sizeof(bugs) / sizeof(bugs[0]); i++)
		CHECK(!http_state_may_follow(bugs[i].from, bugs[i].to), "%s: %s -> %s is allowed",
		      bugs[i].why, http_state_name(bugs[i].from), http_state_name(bugs[i].to));
}

int main(void)
{
	test_every_state_is_reached_from_headers();
	test_every_state_leads_to_done();
	test_done_has_no_way_out();
	test_no_state_follows_itself();
	test_names_are_distinct();
	test_lives_are_allowed();
	test_bugs_are_refused();
	if (failures)
		return 1;
	printf("ok - test_http_state\n");
	return 0;
}
