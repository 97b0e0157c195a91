/* so_load — finding a so: plugin: the spec's path and arguments, the library and its ABI. */
#include "worker/so_load.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int so_load_split(const char *arg, char **ret_path, const char **ret_args, char *err,
		  size_t errlen)
{
	char *copy = strdup(arg);
	size_t n;

	if (!copy)
		return -ENOMEM;
	n = strcspn(copy, " \t");
	if (n == 0 || copy[0] != '/') {
		snprintf(err, errlen, "--handler: so: needs an absolute path to a shared library, "
			 "got '%s'", arg);
		free(copy);
		return -EINVAL;
	}
	*ret_args = "";
	if (copy[n]) {
		copy[n] = '\0';
		*ret_args = copy + n + 1 + strspn(copy + n + 1, " \t");
	}
	*ret_path = copy;
	return 0;
}

int so_load_open(const char *path, void **ret_dl, const struct claimd_plugin **ret,
		 unsigned *ret_version, char *err, size_t errlen)
{
	static const struct { const char *sym; unsigned version; } abis[] = {
		{ CLAIMD_PLUGIN_SYMBOL, CLAIMD_PLUGIN_ABI_VERSION },
		{ CLAIMD_PLUGIN_SYMBOL_V2, 2 },
		{ CLAIMD_PLUGIN_SYMBOL_V1, 1 },
	};
	const struct claimd_plugin *pl = NULL;
	claimd_plugin_fn fn = NULL;
	size_t k;
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!dl) {
		snprintf(err, errlen, "--handler: cannot load plugin: %s", dlerror());
		return -EINVAL;
	}
	for (k = 0; k < sizeof(abis) / sizeof(abis[0]) && !fn; k++)
		*(void **)&fn = dlsym(dl, abis[k].sym);
	k--;
	pl = fn ? fn() : NULL;
	if (!fn)
		snprintf(err, errlen, "--handler: '%s' is not a claimd plugin: it exports none of "
			 "%s(), %s() and %s() (see claimd/handler.h)", path, CLAIMD_PLUGIN_SYMBOL,
			 CLAIMD_PLUGIN_SYMBOL_V2, CLAIMD_PLUGIN_SYMBOL_V1);
	else if (!pl)
		snprintf(err, errlen, "--handler: '%s': %s() returned NULL", path, abis[k].sym);
	else if (pl->abi_version != abis[k].version)
		snprintf(err, errlen, "--handler: '%s' says plugin ABI version %u from %s(), this "
			 "claimd speaks version %d (and 2, 1): rebuild it against this claimd's "
			 "claimd/handler.h", path, pl->abi_version, abis[k].sym,
			 CLAIMD_PLUGIN_ABI_VERSION);
	else if (!pl->handle)
		snprintf(err, errlen, "--handler: '%s': the plugin has no handle function", path);
	else {
		*ret_dl = dl;
		*ret = pl;
		*ret_version = abis[k].version;
		return 0;
	}
	dlclose(dl);
	return -EINVAL;
}
