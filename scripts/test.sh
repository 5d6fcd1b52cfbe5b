#!/usr/bin/env bash
# `make test`: installs what is missing, starts DynamoDB Local, runs every
# test, lints the SAM template, checks the CDK stack against it, runs the
# generated conformance run, and stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-tools.sh
CACHE=${BERTH_CACHE:-$HOME/.cache/berth}

echo "== sam validate --lint (template.yaml)"
# Offline: no credentials are needed, only a region; no usage data is sent.
AWS_DEFAULT_REGION=${AWS_DEFAULT_REGION:-us-east-1} SAM_CLI_TELEMETRY=0 \
  "$CACHE/bin/sam" validate --lint --template template.yaml

echo "== the CDK stack (infra/cdk) against template.yaml"
infra/cdk/cdk.sh check

echo "== cargo test"
scripts/with-dynamodb.sh cargo test --workspace --locked

echo "== conformance (openapi-spec-validator, schemathesis)"
scripts/conformance.sh
