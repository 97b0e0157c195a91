/* test_sqlsplit — the statements of SQL scripts (common/sqlsplit), table-driven: delimiters
 * and DELIMITER lines, quotes and comments that hold the delimiter, escapes, what is an
 * error. (tests/integration/test_migrate.py applies the real migrations.) Exits 1 on a
 * failure. */
#include "common/sqlsplit.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int failures;

static const struct {
	const char *name, *in;
	const char *want[6];   /* the statements; NULL ends */
	int rc;                /* the last call's: 0, or -EINVAL */
} cases[] = {
	{ "two", "SELECT 1; SELECT 2;", { "SELECT 1", "SELECT 2" }, 0 },
	{ "last_without_delimiter", "SELECT 1;\n SELECT 2 \n", { "SELECT 1", "SELECT 2" }, 0 },
	{ "blank_and_comments", " \n-- one\n# two\n/* three; */\n", { NULL }, 0 },
	{ "quotes_hold_it", "SELECT ';', \"a;b\", `c;d`; SELECT 'it''s';",
	  { "SELECT ';', \"a;b\", `c;d`", "SELECT 'it''s'" }, 0 },
	{ "escape", "SELECT 'a\\';b'; SELECT 2", { "SELECT 'a\\';b'", "SELECT 2" }, 0 },
	{ "comments_hold_it", "SELECT 1 -- a; b\n + 1; /* ; */ SELECT 2 # ;\n;",
	  { "SELECT 1 -- a; b\n + 1", "SELECT 2 # ;" }, 0 },
	{ "dashes_without_space", "SELECT 1--1;", { "SELECT 1--1" }, 0 },
	{ "delimiter", "DELIMITER //\nCREATE TRIGGER t BEGIN SET a = 1; END//\nDELIMITER ;\nSELECT 3;",
	  { "CREATE TRIGGER t BEGIN SET a = 1; END", "SELECT 3" }, 0 },
	{ "delimiter_lower", "delimiter $$\nSELECT 1$$\n", { "SELECT 1" }, 0 },
	{ "open_quote", "SELECT 'a;", { NULL }, -EINVAL },
	{ "open_comment", "SELECT 1; /* no end", { "SELECT 1" }, -EINVAL },
	{ "bad_delimiter", "DELIMITER \nSELECT 1;", { NULL }, -EINVAL },
};

static void run(size_t i)
{
	struct sqlsplit s;
	const char *p;
	size_t len, k = 0;
	unsigned line;
	int r;

	sqlsplit_init(&s, cases[i].in, strlen(cases[i].in));
	while ((r = sqlsplit_next(&s, &p, &len, &line)) == 1) {
		const char *want = k < 6 ? cases[i].want[k] : NULL;
		if (!want || strlen(want) != len || memcmp(want, p, len) != 0) {
			printf("not ok - %s: statement %zu is '%.*s', want '%s'\n", cases[i].name, k,
			       (int)len, p, want ? want : "(none)");
			failures++;
			return;
		}
		k++;
	}
	if (r != cases[i].rc || (k < 6 && cases[i].want[k])) {
		printf("not ok - %s: %zu statements, then %d (want %d)\n", cases[i].name, k, r,
		       cases[i].rc);
		failures++;
	}
}

int main(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run(i);
	if (failures) {
		printf("%d case(s) failed\n", failures);
		return 1;
	}
	printf("ok - sqlsplit: %zu cases\n", sizeof(cases) / sizeof(cases[0]));
	return 0;
}
