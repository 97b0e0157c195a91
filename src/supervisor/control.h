/* control — the supervisor's control socket: a unix stream socket (mode 0600) that takes one
 * request line per connection ("status", "status --json") and sends back one reply, then
 * closes. What a request means is the owner's business (control_request_cb). Does not log. */
#ifndef CLAIMD_CONTROL_H
#define CLAIMD_CONTROL_H

#include <stddef.h>
#include <uv.h>

#define CONTROL_ADD_MAX (1024u * 1024)       /* payload bytes one "add" may carry */
#define CONTROL_LINE_MAX (2 * CONTROL_ADD_MAX + 256) /* "add QUEUE HEX" */

struct control;
struct control_conn;

/* line is NUL-terminated, without the newline. The owner must answer every request with
 * control_reply, now or later. */
typedef void (*control_request_cb)(void *data, struct control_conn *conn, const char *line);

/* Listen on path. A stale socket file (nobody answering) is replaced; a live one is an error
 * (-EADDRINUSE, "another claimd is running"). Returns 0 or -errno with a message in err. */
int control_open(uv_loop_t *loop, const char *path, control_request_cb cb, void *data,
		 struct control **ret, char *err, size_t errlen);

/* Send text and close the connection. Copies text. */
void control_reply(struct control_conn *conn, const char *text, size_t len);

/* Stop listening, unlink the socket file, drop connections. Accepts NULL. */
void control_close(struct control *c);

#endif
