#!/bin/sh
# Usage: timed.sh WHAT COMMAND [ARGS...]
# Runs COMMAND, then prints how long WHAT took; exits with COMMAND's status.
what=$1
shift
start=$(date +%s)
status=0
"$@" || status=$?
echo "== $what: $(($(date +%s) - start)) s (exit $status)"
exit $status
