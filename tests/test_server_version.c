/* test_server_version — table-driven: which servers claimd supports, read from VERSION()
 * (and @@version_comment for the message): MariaDB 10.6 or later; MySQL and its flavours,
 * older MariaDB and unreadable versions refused, each with a message that says what the
 * server is and what claimd needs. */
#include "store/store.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

struct server_case {
	const char *version, *comment;
	enum store_server_kind kind;
	unsigned major, minor;
	const char *says;          /* in the message ("" when supported) */
};

static const struct server_case cases[] = {
	{ "10.11.19-MariaDB-0+deb12u1-log", "Debian 12", STORE_SERVER_MARIADB, 10, 11, "" },
	{ "10.6.0-MariaDB", "mariadb.org binary distribution", STORE_SERVER_MARIADB, 10, 6, "" },
	{ "10.6.21-MariaDB-log", NULL, STORE_SERVER_MARIADB, 10, 6, "" },
	{ "11.4.5-MariaDB-ubu2404", "mariadb.org binary distribution", STORE_SERVER_MARIADB, 11, 4,
	  "" },
	{ "12.0.2-MariaDB", "", STORE_SERVER_MARIADB, 12, 0, "" },
	/* what MariaDB 10 says in the handshake to clients that check for 5.5 */
	{ "5.5.5-10.11.6-MariaDB-0+deb12u1", "Debian 12", STORE_SERVER_MARIADB, 10, 11, "" },
	{ "10.6.12-MariaDB-wsrep", "Source distribution, wsrep_26.22", STORE_SERVER_MARIADB, 10, 6,
	  "" },
	{ "10.5.27-MariaDB", "MariaDB Server", STORE_SERVER_MARIADB_OLD, 10, 5,
	  "MariaDB 10.5.27-MariaDB, older than 10.6" },
	{ "10.3.39-MariaDB-0+deb10u2", "Debian 10", STORE_SERVER_MARIADB_OLD, 10, 3,
	  "older than 10.6" },
	{ "5.5.68-MariaDB", "MariaDB Server", STORE_SERVER_MARIADB_OLD, 5, 5, "older than 10.6" },
	{ "5.5.5-10.4.34-MariaDB", NULL, STORE_SERVER_MARIADB_OLD, 10, 4, "older than 10.6" },
	{ "8.0.36", "MySQL Community Server - GPL", STORE_SERVER_NOT_MARIADB, 0, 0,
	  "not MariaDB (version '8.0.36', MySQL Community Server - GPL)" },
	{ "8.4.3-0ubuntu0.24.04.1", "(Ubuntu)", STORE_SERVER_NOT_MARIADB, 0, 0, "not MySQL" },
	{ "8.0.39-30", "Percona Server (GPL), Release 30", STORE_SERVER_NOT_MARIADB, 0, 0,
	  "Percona Server" },
	{ "5.7.44-log", "MySQL Community Server (GPL)", STORE_SERVER_NOT_MARIADB, 0, 0,
	  "MariaDB 10.6 or later" },
	{ "11.0.0", NULL, STORE_SERVER_NOT_MARIADB, 0, 0, "version '11.0.0')" },
	{ "", NULL, STORE_SERVER_NOT_MARIADB, 0, 0, "not MariaDB" },
	{ NULL, NULL, STORE_SERVER_NOT_MARIADB, 0, 0, "not MariaDB" },
	{ "MariaDB", NULL, STORE_SERVER_UNREADABLE, 0, 0, "cannot read the server's version" },
	{ "10.x-MariaDB", NULL, STORE_SERVER_UNREADABLE, 0, 0, "cannot read" },
	{ "10.11-MariaDB", NULL, STORE_SERVER_UNREADABLE, 0, 0, "cannot read" },
};

int main(void)
{
	size_t n = sizeof(cases) / sizeof(cases[0]);
	char err[400];

	for (size_t i = 0; i < n; i++) {
		const struct server_case *c = &cases[i];
		unsigned major = 99, minor = 99;
		enum store_server_kind k = store_server_classify(c->version, &major, &minor);
		int r;

		CHECK(k == c->kind, "'%s': %s, want %s", c->version ? c->version : "(null)",
		      store_server_kind_names[k], store_server_kind_names[c->kind]);
		CHECK(major == c->major && minor == c->minor, "'%s': %u.%u, want %u.%u",
		      c->version ? c->version : "(null)", major, minor, c->major, c->minor);
		err[0] = '\0';
		r = store_server_supported(c->version, c->comment, err, sizeof(err));
		if (c->kind == STORE_SERVER_MARIADB) {
			CHECK(r == 0 && !err[0], "'%s': %d '%s', want supported", c->version, r, err);
		} else {
			CHECK(r == -ENOTSUP, "'%s': %d, want -ENOTSUP", c->version ? c->version : "", r);
			CHECK(strstr(err, c->says) && strstr(err, "MariaDB 10.6 or later"),
			      "'%s': message '%s' lacks '%s'", c->version ? c->version : "", err,
			      c->says);
		}
	}
	for (int k = 0; k < STORE_SERVER_NKINDS; k++)
		CHECK(store_server_kind_names[k] && *store_server_kind_names[k], "kind %d unnamed", k);
	if (failures)
		return 1;
	printf("ok - server versions: %zu cases\n", n);
	return 0;
}
