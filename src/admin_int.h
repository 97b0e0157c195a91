/* admin_int — what admin.c and admin_migrate.c share. Not an interface. */
#ifndef CLAIMD_ADMIN_INT_H
#define CLAIMD_ADMIN_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/config.h"
#include "store/store.h"

/* A store connected as cfg says (migrating: store_set_migrating first). Returns 0 with *ret,
 * or a negative error with err filled (nothing left to free). */
int admin_connect(const struct config *cfg, bool migrating, struct store **ret, char *err,
		  size_t errlen);

/* MariaDB 10.6 or later: 0; else -ENOTSUP with why (or another error reading the version). */
int admin_check_server(struct store *s, char *version, size_t vlen, char *err, size_t errlen);

/* An error of --migrate or --doctor: on stderr, and with --json also as {"error": ...}. */
void admin_error(const struct config *cfg, const char *what, const char *err);

#endif
