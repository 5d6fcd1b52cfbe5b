#!/usr/bin/env bash
# `make test`: installs what is missing, starts DynamoDB Local, runs every
# test, lints the SAM template, checks the CDK stack against it, runs the
# generated conformance run, and stops what it started.
# `BERTH_TEST_KUBECONFIG=/path make test` runs the cluster tests against that
# real cluster instead of the stand-in (see the README's Tests).
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
if [[ -n "${BERTH_TEST_KUBECONFIG:-}" ]]; then
  if [[ ! -r "$BERTH_TEST_KUBECONFIG" ]]; then
    echo "BERTH_TEST_KUBECONFIG=$BERTH_TEST_KUBECONFIG is not a readable kubeconfig" >&2
    exit 1
  fi
  # Absolute: each test binary runs in its own package's directory.
  BERTH_TEST_KUBECONFIG=$(realpath "$BERTH_TEST_KUBECONFIG")
  export BERTH_TEST_KUBECONFIG
  echo "   against the cluster of $BERTH_TEST_KUBECONFIG (tests that need the stand-in's knobs are reported ignored)"
fi
# Every test binary runs, so that one that fails does not hide the next.
scripts/with-dynamodb.sh cargo test --workspace --locked --no-fail-fast

echo "== conformance (openapi-spec-validator, schemathesis)"
scripts/conformance.sh
