#!/usr/bin/env bash
# `make reset`: stops what `make dev` started (the API, the controller, the
# stand-in cluster, DynamoDB Local) and wipes its state directory
# ($BERTH_LOCAL_DIR, .local/ by default) — users, tokens, the audit log, the
# stand-in's objects. The next `make dev` starts from nothing and bootstraps
# a new owner with a new temporary password.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/local-env.sh
source scripts/local-processes.sh

stop_recorded
rm -rf "$BERTH_LOCAL_DIR"
echo "reset: stopped what make dev started and removed $BERTH_LOCAL_DIR/; the next \`make dev\` bootstraps a new owner"
