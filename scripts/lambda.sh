#!/usr/bin/env bash
# The functions as Lambdas on this machine, with cargo-lambda, against the
# DynamoDB Local (and cluster) of a running `make dev`.
#
#   lambda.sh watch          `make lambda-watch`: cargo lambda watch on
#                            127.0.0.1:$BERTH_LAMBDA_PORT (9000), every function
#   lambda.sh invoke EVENT   `make invoke EVENT=events/…/….json`: invokes the
#                            function the event's folder names, with a real
#                            token in place of the placeholder
#
# The token is $BERTH_TOKEN, else the contents of $BERTH_LOCAL_DIR/token (see README,
# "Lambda and SAM"). IPv4 loopback on both sides: `cargo lambda invoke` would
# otherwise try [::1], which `watch -A 127.0.0.1` does not listen on.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/local-env.sh
# cargo-lambda, with zig (scripts/install-tools.sh lambda), is launched from here.
cache=${BERTH_CACHE:-~/.cache/berth} # `~`: the home directory, also when HOME is not set
export PATH="$cache/bin:$PATH"

placeholder=brt_REPLACEWITHAREALTOKENxxxxxxxxxxxxxxxxxxxx

watch() {
  scripts/install-tools.sh lambda
  # One plain line if DynamoDB Local or the table is missing (`make dev` first).
  scripts/admin.sh cluster show >/dev/null
  echo "== cargo lambda watch on http://127.0.0.1:$BERTH_LAMBDA_PORT (table $BERTH_TABLE, DynamoDB Local on port $BERTH_DYNAMODB_PORT)"
  exec cargo lambda watch --invoke-address 127.0.0.1 --invoke-port "$BERTH_LAMBDA_PORT"
}

invoke() {
  local event=${1:-}
  if [ -z "$event" ] || [ ! -f "$event" ]; then
    echo "make invoke: EVENT must name an event file, e.g. make invoke EVENT=events/health/liveness.json" >&2
    exit 2
  fi
  scripts/install-tools.sh lambda
  local function
  function=$(basename "$(dirname "$event")")
  data=$event # global: the EXIT trap removes it
  if grep -qF "$placeholder" "$event"; then
    local token=${BERTH_TOKEN:-}
    if [ -z "$token" ] && [ -s "$BERTH_LOCAL_DIR/token" ]; then token=$(<"$BERTH_LOCAL_DIR/token"); fi
    if [ -z "$token" ]; then
      echo "make invoke: $event needs a token: create one (README, \"Set up\") and save it in $BERTH_LOCAL_DIR/token, or set BERTH_TOKEN" >&2
      exit 1
    fi
    data=$(mktemp --suffix=.json)
    trap 'rm -f "$data"' EXIT
    # The token goes through the environment, not the command line (which
    # `ps` shows), into a file only this user can read (mktemp's 0600).
    BERTH_EVENT_TOKEN=$token python3 - "$event" "$data" "$placeholder" <<'PY'
import os, sys
event, data, placeholder = sys.argv[1:]
token = os.environ["BERTH_EVENT_TOKEN"].strip()
with open(event) as source, open(data, "w") as target:
    target.write(source.read().replace(placeholder, token))
PY
  fi
  cargo lambda invoke "$function" --data-file "$data" \
    --invoke-address 127.0.0.1 --invoke-port "$BERTH_LAMBDA_PORT"
}

case "${1:-}" in
  watch) watch ;;
  invoke) shift; invoke "$@" ;;
  *) echo "usage: $0 watch | invoke EVENT" >&2; exit 2 ;;
esac
