#!/bin/sh
# An exec: handler for claimd: one process per item, started without a shell.
#
#   claimd --handler 'exec:/usr/local/share/claimd/examples/exec-handler.sh' --exec-result ...
#
# The payload is on stdin; the row's facts are in the environment (CLAIMD_ITEM_ID,
# CLAIMD_QUEUE, CLAIMD_ATTEMPT, CLAIMD_MAX_ATTEMPTS, CLAIMD_DEADLINE_MS, and CLAIMD_GROUP,
# CLAIMD_SEQ, CLAIMD_ENQUEUED_AT, CLAIMD_CONTENT_TYPE when the row has them).
# Exit 0: the row is done. Any other exit: a failed attempt, retried with back-off and dead
# after max_attempts; the tail of stderr is kept in last_error. With --exec-result, stdout
# (at most 64 KiB) is kept in the row's result. A line written to descriptor 3
# (CLAIMD_ENQUEUE_FD) is a job to add, committed with the row's success (claimd-handlers(7)):
#     echo '{"queue":"audit","payload":{"item":'"$CLAIMD_ITEM_ID"'}}' >&3
#
# This one counts the payload's lines, words and bytes and takes its SHA-256; an empty
# payload is refused.
set -eu

payload=$(mktemp)
trap 'rm -f "$payload"' EXIT
cat > "$payload"

if [ ! -s "$payload" ]; then
	echo "item $CLAIMD_ITEM_ID: the payload is empty (attempt $CLAIMD_ATTEMPT of" \
		"$CLAIMD_MAX_ATTEMPTS)" >&2
	exit 1
fi
set -- $(wc -l -w -c < "$payload")
sum=$(sha256sum < "$payload" | cut -d' ' -f1)
printf '{"id":%s,"queue":"%s","lines":%s,"words":%s,"bytes":%s,"sha256":"%s"}\n' \
	"$CLAIMD_ITEM_ID" "$CLAIMD_QUEUE" "$1" "$2" "$3" "$sum"
