/* control — the supervisor's control socket: a unix stream socket, mode 0600, or 0660 with
 * a group whose members are claimd's operators (--control-group). Each connection carries
 * one request line (common/ctl.h has the protocol), decoded here and carried out by the
 * commands (console/cmd.h); the reply goes back and the connection closes. A request
 * that does not decode gets an error reply and nothing is done.
 *
 * Whoever connects is checked, whatever the file's mode lets through: the peer's
 * credentials (SO_PEERCRED, and SO_PEERGROUPS for its groups, as they were at connect())
 * must be claimd's user, root, or a member of the control group (by gid or supplementary
 * group). Anyone else gets "error: permission denied: ..." and nothing is done; that is
 * logged (a warning with the peer's uid, gid and pid), nothing else is. */
#ifndef CLAIMD_CONTROL_H
#define CLAIMD_CONTROL_H

#include <stddef.h>
#include <uv.h>

#include "console/cmd.h"

struct control;

/* Listen on path; requests go to cmds (borrowed). group: NULL or "" for a socket of claimd's
 * user alone (0600), else a group name (0660, that group). A stale socket file (nobody
 * answering) is replaced; a live one is an error (-EADDRINUSE, "another claimd is
 * running"); so is a group that does not exist or that claimd may not give the socket to.
 * Returns 0 or -errno with a message in err. */
int control_open(uv_loop_t *loop, const char *path, const char *group, struct cmds *cmds,
		 struct control **ret, char *err, size_t errlen);

/* Stop listening and unlink the socket file. Connections with a request in flight stay until
 * it is answered. Accepts NULL. */
void control_close(struct control *c);

#endif
