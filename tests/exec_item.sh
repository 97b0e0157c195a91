#!/bin/sh
# An exec: handler for test_handler_kinds. Appends "start <id>" and "end <id>" to the file
# named by $1 around what its payload (on stdin) says:
#   wait FILE    until FILE exists
#   sleep S      sleeps S seconds
#   deaf S       ignores SIGTERM (and so does its sleep), sleeps S seconds
#   fail         a line on stderr, exit status 3
#   echo WORD    WORD on stdout
log=$1
read -r what arg
echo "start $CLAIMD_ITEM_ID" >>"$log"
case $what in
wait) while [ ! -e "$arg" ]; do sleep 0.01; done ;;
sleep) sleep "$arg" ;;
deaf) trap '' TERM; sleep "$arg" ;;
fail) echo "exec_item: failing as asked" >&2; exit 3 ;;
echo) echo "$arg" ;;
esac
echo "end $CLAIMD_ITEM_ID" >>"$log"
