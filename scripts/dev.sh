#!/usr/bin/env bash
# `make dev`: DynamoDB Local on 127.0.0.1:${BERTH_DYNAMODB_PORT:-8000} keeping its
# data under .local/, the table ${BERTH_TABLE:-berth} (bootstrapped with an owner
# admin@localhost in organization `default` when new), and the whole API on
# http://127.0.0.1:${BERTH_PORT:-3000}. Ctrl-C stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."

export BERTH_PORT=${BERTH_PORT:-3000}
export BERTH_DYNAMODB_PORT=${BERTH_DYNAMODB_PORT:-8000}
export BERTH_TABLE=${BERTH_TABLE:-berth}
export BERTH_INSECURE_COOKIES=true
export AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$BERTH_DYNAMODB_PORT"
export AWS_REGION=${AWS_REGION:-us-east-1}
export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local
unset AWS_PROFILE AWS_SESSION_TOKEN

scripts/install-tools.sh
echo "== building"
cargo build --locked --bin berth-local --bin berth-admin
bin=${CARGO_TARGET_DIR:-target}/debug

ddb=infra/dynamodb-local/dynamodb-local.sh
pidfile=.local/dynamodb/dynamodb.pid
"$ddb" stop "$pidfile" # a previous run that was killed hard
trap '"$ddb" stop "$pidfile"' EXIT
"$ddb" start "$BERTH_DYNAMODB_PORT" --data .local/dynamodb/data "$pidfile"

created=$("$bin/berth-admin" create-table)
echo "$created"
if [[ $created == "created table"* ]]; then
  "$bin/berth-admin" bootstrap --org default --email admin@localhost
  echo
  echo "Sign in as admin@localhost with the temporary password above, then replace it:"
  echo "  curl -c .local/cookies -H 'content-type: application/json' \\"
  echo "       -d '{\"email\":\"admin@localhost\",\"password\":\"...\"}' http://127.0.0.1:$BERTH_PORT/api/v1/auth/login"
fi
echo
echo "Berth: http://127.0.0.1:$BERTH_PORT/api/v1 (DynamoDB Local on port $BERTH_DYNAMODB_PORT, data in .local/)"
"$bin/berth-local"
