/* admin — what claimd does besides running: the start-up check of the database, bringing its
 * schema up to date (--migrate), checking a set-up (--doctor). Each prints what it finds
 * (stdout, or stderr for errors). */
#ifndef CLAIMD_ADMIN_H
#define CLAIMD_ADMIN_H

#include "common/config.h"

/* Connect once as the workers will: a server that refuses (a password, a certificate, an
 * unknown database), one claimd does not support (MySQL, MariaDB before 10.6) or a schema
 * older than this claimd needs returns -1 (said why on stderr); a server that does not
 * answer is waited for later (0). */
int admin_preflight(const struct config *cfg);

/* Apply the migrations the database lacks, in order. Returns the exit status (2: no
 * connection, or a server claimd does not support; 1: a migration failed). */
int admin_migrate(const struct config *cfg);

/* Check the set-up: connect, the server's version, the schema, privileges, isolation, binary
 * log, clock skew, the control socket, HTTP. Returns the exit status (1 when something
 * fails, 2 when the server is one claimd does not support). */
int admin_doctor(const struct config *cfg);

#endif
