#!/usr/bin/env bash
# `make test`: installs what is missing, starts DynamoDB Local, runs every
# test, cfn-lint and the generated conformance run, and stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-tools.sh

echo "== cfn-lint template.yaml"
cfn-lint template.yaml

echo "== cargo test"
scripts/with-dynamodb.sh cargo test --workspace --locked

echo "== conformance (openapi-spec-validator, schemathesis)"
scripts/conformance.sh
