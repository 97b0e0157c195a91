/* so_load — finding a so: plugin (handler_so.c): the spec's path and arguments, the library
 * and the ABI it speaks. Does not log. */
#ifndef CLAIMD_SO_LOAD_H
#define CLAIMD_SO_LOAD_H

#include <claimd/handler.h>
#include <stddef.h>

/* Split "/path args" into path and args (in a malloc'd copy, *ret_path first, for the caller
 * to free). Returns 0, -EINVAL with err (not an absolute path) or -ENOMEM. */
int so_load_split(const char *arg, char **ret_path, const char **ret_args, char *err,
		  size_t errlen);

/* dlopen path and check it is a plugin of an ABI we speak: *ret_dl the library, *ret the
 * plugin, *ret_version its ABI version. Returns 0 or -EINVAL with err. */
int so_load_open(const char *path, void **ret_dl, const struct claimd_plugin **ret,
		 unsigned *ret_version, char *err, size_t errlen);

#endif
