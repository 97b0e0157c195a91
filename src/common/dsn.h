/* dsn — database connection settings: parsing of the DSN claimd takes.
 *
 *     mysql://user@host:port/db?socket=/path/to/sock
 *     mysql://user@localhost/db?socket=/run/mysqld/mysqld.sock
 *     mysql://app@db.example:3306/jobs
 *     mysql://app@db.example/jobs?ssl-mode=VERIFY_IDENTITY&ssl-ca=/etc/ssl/db-ca.pem
 *     mysql://app@db1:3306,db2:3306,db3:3306/jobs
 *
 * Several hosts, comma-separated: the store connects to the first that answers (and, on a
 * Galera node, is synced), in the order given, so that every claimd writes to the same one.
 *
 * A password is never part of a DSN (it would show in argv and in ps); dsn_parse rejects
 * "user:password@". The password comes from the environment (CLAIMD_DB_PASSWORD) or a file
 * (?password_file=/path, read at connect time by the store module). Pure, no logging.
 */
#ifndef CLAIMD_DSN_H
#define CLAIMD_DSN_H

#include <stddef.h>

#define DSN_FIELD_MAX 256
#define DSN_HOSTS_MAX 8

/* TLS to the server (?ssl-mode=), as MySQL's clients name the modes. */
enum dsn_ssl_mode {
	DSN_SSL_DEFAULT = 0,   /* not given: DISABLED, or what an option file says */
	DSN_SSL_DISABLED,
	DSN_SSL_PREFERRED,     /* TLS when the server offers it, unverified */
	DSN_SSL_REQUIRED,      /* TLS or no connection, unverified */
	DSN_SSL_VERIFY_CA,     /* TLS, the server's certificate signed by ssl-ca */
	DSN_SSL_VERIFY_IDENTITY, /* and issued to the host claimd connects to */
};

struct dsn_host {
	char host[DSN_FIELD_MAX];          /* "" = localhost */
	unsigned port;                     /* 0 = default (3306) */
};

struct dsn {
	char user[DSN_FIELD_MAX];          /* "" = the client library's default */
	struct dsn_host hosts[DSN_HOSTS_MAX]; /* in the order to try them */
	unsigned nhosts;                   /* at least 1 */
	char db[DSN_FIELD_MAX];            /* required */
	char socket[DSN_FIELD_MAX];        /* "" = none; used when host is localhost or empty */
	char password_file[DSN_FIELD_MAX]; /* "" = none */
	int ssl_mode;                      /* enum dsn_ssl_mode */
	char ssl_ca[DSN_FIELD_MAX];        /* "" = none: PEM files */
	char ssl_cert[DSN_FIELD_MAX];
	char ssl_key[DSN_FIELD_MAX];
	char option_file[DSN_FIELD_MAX];   /* a MySQL option file the client library reads */
	char option_group[DSN_FIELD_MAX];  /* its group ([client] and this) */
};

/* Whether a connection of d may use TLS (an ssl-mode but DISABLED, or an option file that
 * may ask for it). */
int dsn_may_use_tls(const struct dsn *d);

/* The file a connection of d reads its password from: d's password_file, unless
 * $CLAIMD_DB_PASSWORD (set, not empty) is the password. NULL when none. */
const char *dsn_password_file(const struct dsn *d);

/* Parse s into *ret. Returns 0, or -EINVAL with a human message in err (what is wrong and
 * where), leaving *ret untouched. Percent-escapes (%2F) are decoded in every part.
 * Accepted query parameters: socket, password_file, ssl-mode (DISABLED, PREFERRED, REQUIRED,
 * VERIFY_CA, VERIFY_IDENTITY), ssl-ca, ssl-cert, ssl-key, option-file, option-group ('_'
 * may stand for '-'); any other is an error. VERIFY_CA and VERIFY_IDENTITY need ssl-ca;
 * ssl-cert and ssl-key go together. */
int dsn_parse(const char *s, struct dsn *ret, char *err, size_t errlen);

#endif
