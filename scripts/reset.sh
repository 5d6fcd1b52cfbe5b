#!/usr/bin/env bash
# `make reset`: stops what `make dev` started (the API, the controller, the
# stand-in cluster, DynamoDB Local) and wipes .local/ — users, tokens, the
# audit log, the stand-in's objects. The next `make dev` starts from nothing
# and bootstraps a new owner with a new temporary password.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/local-processes.sh

stop_recorded
rm -rf .local
echo "reset: stopped what make dev started and removed .local/; the next \`make dev\` bootstraps a new owner"
