#!/usr/bin/env bash
# `make test`: installs what is missing, starts DynamoDB Local, runs every
# test and cfn-lint, and stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-tools.sh

echo "== cfn-lint template.yaml"
cfn-lint template.yaml

echo "== cargo test"
scripts/with-dynamodb.sh cargo test --workspace --locked
