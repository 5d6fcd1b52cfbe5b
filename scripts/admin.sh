#!/usr/bin/env bash
# `make admin ARGS="…"`: the admin CLI against the local setup of `make dev`
# (its DynamoDB Local and table), whether or not `make dev` runs.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/local-env.sh
cargo build --quiet --locked -p berth-admin
exec "${CARGO_TARGET_DIR:-target}/debug/berth-admin" "$@"
