/* control — the supervisor's control socket: a unix stream socket (mode 0600). Each
 * connection carries one request line (common/ctl.h has the protocol), decoded here and
 * carried out by the commands (supervisor/cmd.h); the reply goes back and the connection
 * closes. A request that does not decode gets an error reply and nothing is done. Does not
 * log. */
#ifndef CLAIMD_CONTROL_H
#define CLAIMD_CONTROL_H

#include <stddef.h>
#include <uv.h>

#include "supervisor/cmd.h"

struct control;

/* Listen on path; requests go to cmds (borrowed). A stale socket file (nobody answering) is
 * replaced; a live one is an error (-EADDRINUSE, "another claimd is running"). Returns 0 or
 * -errno with a message in err. */
int control_open(uv_loop_t *loop, const char *path, struct cmds *cmds, struct control **ret,
		 char *err, size_t errlen);

/* Stop listening and unlink the socket file. Connections with a request in flight stay until
 * it is answered. Accepts NULL. */
void control_close(struct control *c);

#endif
