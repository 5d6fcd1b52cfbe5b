#!/usr/bin/env bash
# Runs a command with a throwaway in-memory DynamoDB Local, reachable at
# $BERTH_TEST_DYNAMODB_ENDPOINT, and stops it afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."

ddb=infra/dynamodb-local/dynamodb-local.sh
"$ddb" install
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
run_dir=$(mktemp -d)
trap '"$ddb" stop "$run_dir/dynamodb.pid"; rm -rf "$run_dir"' EXIT
"$ddb" start "$port" --in-memory "$run_dir/dynamodb.pid"
export BERTH_TEST_DYNAMODB_ENDPOINT="http://127.0.0.1:$port"
"$@"
