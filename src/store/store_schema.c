/* store_schema — the database's schema version, the servers claimd supports, and what
 * --doctor asks the server. Applying migrations is store_migrate.c's. */
#include "store/store.h"
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int store_schema_version(struct store *s, unsigned *ret, char *err, size_t errlen)
{
	int r = sq_check(s, "store_schema_version", NULL, 0, NULL, err, errlen);
	MYSQL_RES *res;
	MYSQL_ROW row;

	if (r < 0)
		return r;
	if (mysql_query(s->conn, "SELECT MAX(version) FROM claimd_schema") != 0) {
		if (mysql_errno(s->conn) == 1146) {   /* no such table: before migrations */
			*ret = 0;
			return 0;
		}
		return sq_fail_msg(-EIO, err, errlen, "store_schema_version: mysql error %u: %s",
				   mysql_errno(s->conn), mysql_error(s->conn));
	}
	res = mysql_store_result(s->conn);
	row = res ? mysql_fetch_row(res) : NULL;
	*ret = row && row[0] ? (unsigned)strtoul(row[0], NULL, 10) : 0;
	mysql_free_result(res);
	return 0;
}

/* ---- which server ---- */

const char *const store_server_kind_names[STORE_SERVER_NKINDS] = {
	[STORE_SERVER_MARIADB] = "MariaDB",
	[STORE_SERVER_MARIADB_OLD] = "MariaDB older than 10.6",
	[STORE_SERVER_NOT_MARIADB] = "not MariaDB",
	[STORE_SERVER_UNREADABLE] = "MariaDB of an unreadable version",
};

enum store_server_kind store_server_classify(const char *version, unsigned *ret_major,
					     unsigned *ret_minor)
{
	unsigned major = 0, minor = 0, patch = 0;
	enum store_server_kind k;
	const char *v = version ? version : "";

	if (!strncmp(v, "5.5.5-", 6))   /* what MariaDB 10 says to old MySQL clients */
		v += 6;
	if (!strstr(v, "MariaDB") && !strstr(v, "mariadb"))
		k = STORE_SERVER_NOT_MARIADB;
	else if (sscanf(v, "%u.%u.%u", &major, &minor, &patch) != 3)
		k = STORE_SERVER_UNREADABLE;
	else if (major < STORE_MARIADB_MIN_MAJOR ||
		 (major == STORE_MARIADB_MIN_MAJOR && minor < STORE_MARIADB_MIN_MINOR))
		k = STORE_SERVER_MARIADB_OLD;
	else
		k = STORE_SERVER_MARIADB;
	if (k == STORE_SERVER_NOT_MARIADB || k == STORE_SERVER_UNREADABLE)
		major = minor = 0;
	if (ret_major)
		*ret_major = major;
	if (ret_minor)
		*ret_minor = minor;
	return k;
}

int store_server_supported(const char *version, const char *comment, char *err, size_t errlen)
{
	const char *c = comment && *comment ? comment : NULL;
	enum store_server_kind k = store_server_classify(version, NULL, NULL);

	switch (k) {
	case STORE_SERVER_MARIADB:
		return 0;
	case STORE_SERVER_MARIADB_OLD:
		return sq_fail_msg(-ENOTSUP, err, errlen, "the server is MariaDB %s, older than "
				   "10.6: claimd supports MariaDB 10.6 or later (and Galera clusters "
				   "of it); upgrade the server", version);
	case STORE_SERVER_NOT_MARIADB:
		return sq_fail_msg(-ENOTSUP, err, errlen, "the server is not MariaDB (version '%.60s'"
				   "%s%.80s): claimd supports MariaDB 10.6 or later (and Galera "
				   "clusters of it), not MySQL: its SQL and its binary log follower "
				   "use MariaDB's own forms", version ? version : "", c ? ", " : "",
				   c ? c : "");
	default:
		return sq_fail_msg(-ENOTSUP, err, errlen, "cannot read the server's version '%.60s': "
				   "claimd supports MariaDB 10.6 or later", version ? version : "");
	}
}

int store_server_version(struct store *s, char *version, size_t vlen, char *comment,
			 size_t clen, char *err, size_t errlen)
{
	int r = sq_check(s, "store_server_version", NULL, 0, NULL, err, errlen);
	MYSQL_RES *res;
	MYSQL_ROW row;

	if (r < 0)
		return r;
	if (mysql_query(s->conn, "SELECT VERSION(), @@version_comment") != 0)
		return sq_fail_msg(-EIO, err, errlen, "store_server_version: mysql error %u: %s",
				   mysql_errno(s->conn), mysql_error(s->conn));
	res = mysql_store_result(s->conn);
	row = res ? mysql_fetch_row(res) : NULL;
	snprintf(version, vlen, "%s", row && row[0] ? row[0] : "");
	snprintf(comment, clen, "%s", row && row[1] ? row[1] : "");
	mysql_free_result(res);
	return 0;
}

/* What claimd does to each table, tried inside a transaction that is rolled back. */
static const struct {
	const char *what, *sql;
} uses[] = {
	{ "SELECT on work_items", "SELECT id FROM work_items LIMIT 0" },
	{ "INSERT on work_items", "INSERT INTO work_items (queue, payload, state) "
	  "VALUES ('claimd-doctor', '', 'done')" },
	{ "UPDATE on work_items", "UPDATE work_items SET attempts = attempts "
	  "WHERE id = LAST_INSERT_ID()" },
	{ "DELETE on work_items", "DELETE FROM work_items WHERE id = LAST_INSERT_ID()" },
	{ "INSERT, UPDATE on queues", "INSERT INTO queues (name) VALUES ('claimd-doctor') "
	  "ON DUPLICATE KEY UPDATE paused = paused" },
	{ "SELECT, DELETE on queues", "DELETE FROM queues WHERE name = 'claimd-doctor'" },
	{ "INSERT, UPDATE on work_groups", "INSERT INTO work_groups (queue, group_key) "
	  "VALUES ('claimd-doctor', 'g') ON DUPLICATE KEY UPDATE last_seq = last_seq" },
	{ "SELECT, DELETE on work_groups", "DELETE FROM work_groups WHERE queue = 'claimd-doctor'" },
	{ "INSERT, UPDATE on supervisors", "INSERT INTO supervisors (id, host, pid, version, "
	  "queues, started_at, seen_at, workers) VALUES ('claimd-doctor', '', 0, '', '', NOW(6), "
	  "NOW(6), '{}') ON DUPLICATE KEY UPDATE seen_at = NOW(6)" },
	{ "SELECT, DELETE on supervisors", "DELETE FROM supervisors WHERE id = 'claimd-doctor'" },
	{ "INSERT, UPDATE on schedules", "INSERT INTO schedules (name, cron) VALUES "
	  "('claimd-doctor', '@daily') ON DUPLICATE KEY UPDATE ticks = ticks" },
	{ "SELECT, DELETE on schedules", "DELETE FROM schedules WHERE name = 'claimd-doctor'" },
	{ "SELECT on claimd_schema", "SELECT version FROM claimd_schema LIMIT 0" },
};

static void text_of(MYSQL_ROW row, int i, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s", row && row[i] ? row[i] : "");
}

const char *store_tls_cipher(struct store *s)
{
	return s->conn ? mysql_get_ssl_cipher(s->conn) : NULL;
}

int store_doctor(struct store *s, struct store_doctor *ret, char *err, size_t errlen)
{
	int r = sq_check(s, "store_doctor", NULL, 0, NULL, err, errlen);
	MYSQL_RES *res;
	MYSQL_ROW row;
	size_t k = 0;

	if (r < 0)
		return r;
	memset(ret, 0, sizeof(*ret));
	if (mysql_query(s->conn, "SELECT UNIX_TIMESTAMP(NOW(6)), @@log_bin, @@binlog_format, "
			"@@binlog_row_image, VERSION()") != 0)
		return sq_fail_msg(-EIO, err, errlen, "mysql error %u: %s", mysql_errno(s->conn),
				   mysql_error(s->conn));
	res = mysql_store_result(s->conn);
	row = res ? mysql_fetch_row(res) : NULL;
	ret->server_time = row && row[0] ? strtod(row[0], NULL) : 0;
	ret->log_bin = row && row[1] && row[1][0] == '1';
	text_of(row, 2, ret->binlog_format, sizeof(ret->binlog_format));
	text_of(row, 3, ret->binlog_row_image, sizeof(ret->binlog_row_image));
	text_of(row, 4, ret->version, sizeof(ret->version));
	mysql_free_result(res);
	/* MariaDB before 11.1 names it tx_isolation, MySQL 8 only transaction_isolation. */
	if (mysql_query(s->conn, "SHOW SESSION VARIABLES WHERE Variable_name IN "
			"('transaction_isolation', 'tx_isolation')") != 0)
		return sq_fail_msg(-EIO, err, errlen, "mysql error %u: %s", mysql_errno(s->conn),
				   mysql_error(s->conn));
	res = mysql_store_result(s->conn);
	row = res ? mysql_fetch_row(res) : NULL;
	text_of(row, 1, ret->isolation, sizeof(ret->isolation));
	mysql_free_result(res);
	/* MariaDB only (MySQL has no such variable: -1). */
	ret->idle_trx_timeout = -1;
	if (mysql_query(s->conn, "SHOW SESSION VARIABLES LIKE 'idle_transaction_timeout'") != 0)
		return sq_fail_msg(-EIO, err, errlen, "mysql error %u: %s", mysql_errno(s->conn),
				   mysql_error(s->conn));
	res = mysql_store_result(s->conn);
	row = res ? mysql_fetch_row(res) : NULL;
	if (row && row[1])
		ret->idle_trx_timeout = atol(row[1]);
	mysql_free_result(res);
	if (mysql_query(s->conn, "START TRANSACTION") != 0)
		return sq_fail_msg(-EIO, err, errlen, "START TRANSACTION: %s", mysql_error(s->conn));
	for (size_t i = 0; i < sizeof(uses) / sizeof(uses[0]); i++) {
		if (mysql_query(s->conn, uses[i].sql) == 0) {
			mysql_free_result(mysql_store_result(s->conn));
			continue;
		}
		k += (size_t)snprintf(ret->missing + k, sizeof(ret->missing) - k, "%s%s (%u)",
				      k ? "; " : "", uses[i].what, mysql_errno(s->conn));
		if (k >= sizeof(ret->missing))
			k = sizeof(ret->missing) - 1;
	}
	mysql_query(s->conn, "ROLLBACK");
	return 0;
}
