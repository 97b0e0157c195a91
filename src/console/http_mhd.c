/* Loading libmicrohttpd with dlopen (see http_int.h for why). */
#include "console/http_int.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>

struct mhd_fns mhd;


int http_load_mhd(char *err, size_t errlen)
{
	void *lib;

	if (mhd.lib)
		return 0;
	lib = dlopen(CLAIMD_MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(err, errlen, "http: cannot load %s (Debian: libmicrohttpd12): %s",
			 CLAIMD_MHD_SONAME, dlerror());
		return -ENOENT;
	}
#define LOAD(name) \
	if (!(*(void **)&mhd.name = dlsym(lib, "MHD_" #name))) \
		goto missing
	LOAD(start_daemon);
	LOAD(stop_daemon);
	LOAD(run);
	LOAD(get_timeout);
	LOAD(get_daemon_info);
	LOAD(queue_response);
	LOAD(destroy_response);
	LOAD(create_response_from_buffer);
	LOAD(create_response_from_callback);
	LOAD(add_response_header);
	LOAD(resume_connection);
	LOAD(suspend_connection);
	LOAD(lookup_connection_value);
	LOAD(get_connection_values);
	LOAD(get_connection_info);
	LOAD(quiesce_daemon);
	LOAD(is_feature_supported);
#undef LOAD
	mhd.lib = lib;
	return 0;
missing:
	snprintf(err, errlen, "http: %s lacks a function claimd needs: %s", CLAIMD_MHD_SONAME,
		 dlerror());
	dlclose(lib);
	return -ENOENT;
}
