/* store_binlog — following the server's binary log, as a replica does, to learn at once of
 * the changes that can make a row claimable (and of any change of a row, for the requests
 * waiting for one): a connection of its own (the DSN's settings),
 * COM_BINLOG_DUMP from a GTID position through Connector/C's replication API, and only the
 * headers of what it sends are read. A row event of work_items or queues in the DSN's
 * database counts unless the statement that made it says it cannot make a row claimable:
 * claimd's own claims, completions, lease extensions and progress writes begin with QUIET
 * (store_int.h), which the server keeps in the ANNOTATE_ROWS event before their rows. */
#include "store/store.h"
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <mariadb_rpl.h>

#define GTID_DOMAINS_MAX 16

struct gtid {
	uint32_t domain, server;
	uint64_t seq;
};

struct store_binlog {
	struct store *s;
	MARIADB_RPL *rpl;
	uint64_t tables[2];        /* the table ids of work_items and queues; 0: not seen yet */
	bool quiet;                /* the statement of the rows that follow is marked QUIET */
	struct gtid gtid[GTID_DOMAINS_MAX];
	unsigned ngtid;
	char position[GTID_DOMAINS_MAX * 48];
};

static int fail_from(struct store_binlog *b, const char *what, char *err, size_t errlen)
{
	unsigned e = mysql_errno(b->s->conn);
	int r = e == 1045 || e == 1227 || e == 1142 || e == 1044 ? -EACCES :
		e == 1236 ? -ESPIPE : e >= 2000 && e < 3000 ? -ENOTCONN : -EIO;

	return sq_fail_msg(r, err, errlen, "%s: mysql error %u: %s", what, e,
			   mysql_error(b->s->conn));
}

/* One row of a one-column query into out. Returns 0 or a negative error. */
static int query_text(struct store_binlog *b, const char *q, char *out, size_t outlen,
		      char *err, size_t errlen)
{
	MYSQL_RES *res;
	MYSQL_ROW row;

	if (mysql_query(b->s->conn, q) != 0)
		return fail_from(b, "store_binlog", err, errlen);
	res = mysql_store_result(b->s->conn);
	row = res ? mysql_fetch_row(res) : NULL;
	snprintf(out, outlen, "%s", row && row[0] ? row[0] : "");
	mysql_free_result(res);
	return 0;
}

/* The server must write a row-based binary log (the only kind whose events name the rows'
 * table). Returns 0, or -ENOTSUP with why. */
static int check_server(struct store_binlog *b, char *err, size_t errlen)
{
	char on[8], format[16];
	int r = query_text(b, "SELECT @@log_bin", on, sizeof(on), err, errlen);

	if (r == 0)
		r = query_text(b, "SELECT @@binlog_format", format, sizeof(format), err, errlen);
	if (r < 0)
		return r;
	if (strcmp(on, "1") != 0)
		return sq_fail_msg(-ENOTSUP, err, errlen, "the server writes no binary log "
				   "(log_bin is off)");
	if (strcmp(format, "ROW") != 0)
		return sq_fail_msg(-ENOTSUP, err, errlen, "the server's binary log is not "
				   "row-based (binlog_format=%s; claimd needs ROW)", format);
	return 0;
}

int store_binlog_open(const struct dsn *dsn, const char *from, unsigned server_id,
		      unsigned heartbeat_s, struct store_binlog **ret, char *err, size_t errlen)
{
	struct store_binlog *b = calloc(1, sizeof(*b));
	char pos[GTID_DOMAINS_MAX * 48], quoted[2 * sizeof(pos) + 1], q[sizeof(quoted) + 300];
	int r;

	if (!b)
		return sq_fail_msg(-ENOMEM, err, errlen, "store_binlog: out of memory");
	r = store_new(dsn, "binlog", &b->s);
	if (r == 0)
		r = store_connect(b->s, err, errlen);
	if (r < 0)
		goto fail;
	r = check_server(b, err, errlen);
	if (r < 0)
		goto fail;
	/* Where to start: after the last transaction seen, else from now. */
	if (from && *from)
		snprintf(pos, sizeof(pos), "%s", from);
	else if ((r = query_text(b, "SELECT @@gtid_binlog_pos", pos, sizeof(pos), err, errlen)) < 0)
		goto fail;
	snprintf(b->position, sizeof(b->position), "%s", pos);
	/* "domain-server-seq" per domain, comma-separated: kept as the position moves on. */
	for (const char *p = pos; *p && b->ngtid < GTID_DOMAINS_MAX; ) {
		unsigned long d, sv;
		unsigned long long seq;
		int used = 0;
		if (sscanf(p, "%lu-%lu-%llu%n", &d, &sv, &seq, &used) != 3)
			break;
		b->gtid[b->ngtid++] = (struct gtid){ (uint32_t)d, (uint32_t)sv, seq };
		p += used;
		p += *p == ',';
	}
	mysql_real_escape_string(b->s->conn, quoted, pos, (unsigned long)strlen(pos));
	/* A MariaDB replica's session: GTID events and positioning (capability 4), checksums
	 * as the server writes them, and a heartbeat when nothing happens. */
	snprintf(q, sizeof(q), "SET @mariadb_slave_capability = 4, "
		 "@master_binlog_checksum = @@global.binlog_checksum, @slave_connect_state = '%s', "
		 "@slave_gtid_strict_mode = 0, @slave_gtid_ignore_duplicates = 0, "
		 "@master_heartbeat_period = %llu", quoted,
		 (unsigned long long)heartbeat_s * 1000000000ull);
	if (mysql_query(b->s->conn, q) != 0) {
		r = fail_from(b, "store_binlog", err, errlen);
		goto fail;
	}
	b->rpl = mariadb_rpl_init(b->s->conn);
	if (!b->rpl) {
		r = sq_fail_msg(-ENOMEM, err, errlen, "store_binlog: cannot start the replication API");
		goto fail;
	}
	mariadb_rpl_optionsv(b->rpl, MARIADB_RPL_SERVER_ID, server_id);
	mariadb_rpl_optionsv(b->rpl, MARIADB_RPL_FILENAME, "", (size_t)0);
	mariadb_rpl_optionsv(b->rpl, MARIADB_RPL_START, 4ul);
	mariadb_rpl_optionsv(b->rpl, MARIADB_RPL_FLAGS, (unsigned)MARIADB_RPL_BINLOG_SEND_ANNOTATE_ROWS);
	if (mariadb_rpl_open(b->rpl) != 0) {
		r = fail_from(b, "the binary log dump", err, errlen);
		goto fail;
	}
	/* The server answers the dump with its first event, or with why not (a privilege). */
	unsigned changes;
	r = store_binlog_read(b, &changes, err, errlen);
	if (r < 0)
		goto fail;
	*ret = b;
	return 0;
fail:
	store_binlog_close(b);
	return r;
}

static bool named(const MARIADB_STRING *s, const char *want)
{
	return s->length == strlen(want) && memcmp(s->str, want, s->length) == 0;
}

static void note_gtid(struct store_binlog *b, uint32_t domain, uint32_t server, uint64_t seq)
{
	unsigned i;
	size_t k = 0;

	for (i = 0; i < b->ngtid && b->gtid[i].domain != domain; i++)
		;
	if (i == b->ngtid) {
		if (b->ngtid == GTID_DOMAINS_MAX)
			return;
		b->ngtid++;
	}
	b->gtid[i] = (struct gtid){ domain, server, seq };
	b->position[0] = '\0';
	for (i = 0; i < b->ngtid && k < sizeof(b->position); i++)
		k += (size_t)snprintf(b->position + k, sizeof(b->position) - k, "%s%u-%u-%llu",
				      i ? "," : "", b->gtid[i].domain, b->gtid[i].server,
				      (unsigned long long)b->gtid[i].seq);
}

static bool rows_event(enum mariadb_rpl_event t)
{
	return (t >= WRITE_ROWS_EVENT_V1 && t <= DELETE_ROWS_EVENT_V1) ||
	       (t >= WRITE_ROWS_EVENT && t <= DELETE_ROWS_EVENT) ||
	       (t >= WRITE_ROWS_COMPRESSED_EVENT_V1 && t <= DELETE_ROWS_COMPRESSED_EVENT);
}

int store_binlog_read(struct store_binlog *b, unsigned *ret_changes, char *err, size_t errlen)
{
	MARIADB_RPL_EVENT *ev;

	*ret_changes = 0;
	/* A new event each time: on some errors the library frees the one it was given. */
	ev = mariadb_rpl_fetch(b->rpl, NULL);
	if (!ev) {
		if (mysql_errno(b->s->conn) == 0)
			return sq_fail_msg(-ENOTCONN, err, errlen, "the binary log stream ended");
		return fail_from(b, "the binary log stream", err, errlen);
	}
	switch (ev->event_type) {
	case GTID_EVENT:
		b->quiet = false;
		note_gtid(b, ev->event.gtid.domain_id, ev->server_id, ev->event.gtid.sequence_nr);
		break;
	case ANNOTATE_ROWS_EVENT:
		b->quiet = ev->event.annotate_rows.statement.length >= sizeof(QUIET) - 1 &&
			   !memcmp(ev->event.annotate_rows.statement.str, QUIET, sizeof(QUIET) - 1);
		break;
	case TABLE_MAP_EVENT:
		if (!named(&ev->event.table_map.database, b->s->dsn.db))
			break;
		if (named(&ev->event.table_map.table, "work_items"))
			b->tables[0] = ev->event.table_map.table_id;
		else if (named(&ev->event.table_map.table, "queues"))
			b->tables[1] = ev->event.table_map.table_id;
		break;
	default:
		if (!rows_event(ev->event_type))
			break;
		if (!b->quiet && (ev->event.rows.table_id == b->tables[0] ||
				  ev->event.rows.table_id == b->tables[1]))
			*ret_changes |= STORE_BINLOG_CLAIMABLE;
		if (ev->event.rows.table_id == b->tables[0])
			*ret_changes |= STORE_BINLOG_ROWS;
		break;
	}
	mariadb_free_rpl_event(ev);
	return 0;
}

const char *store_binlog_position(const struct store_binlog *b)
{
	return b->position;
}

void store_binlog_interrupt(struct store_binlog *b)
{
	if (b && b->s && b->s->conn)
		shutdown(mysql_get_socket(b->s->conn), SHUT_RDWR);
}

void store_binlog_close(struct store_binlog *b)
{
	if (!b)
		return;
	if (b->rpl)
		mariadb_rpl_close(b->rpl);
	store_free(b->s);
	free(b);
}

void store_thread_init(void)
{
	mysql_thread_init();
}

void store_thread_end(void)
{
	mysql_thread_end();
}
