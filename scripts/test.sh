#!/usr/bin/env bash
# `make test`: installs what is missing, starts DynamoDB Local, runs every
# test, lints the SAM template, checks the CDK stack against it, runs the
# generated conformance run, runs the web console's journeys in a real
# browser, and stops what it started.
# `BERTH_TEST_KUBECONFIG=/path make test` runs the cluster tests against that
# real cluster instead of the stand-in (see docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-tools.sh
CACHE=${BERTH_CACHE:-~/.cache/berth}
# A test run builds each crate once: incremental caches would only cost disk
# (gigabytes per clone) and time. Whoever sets it keeps their choice.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}

echo "== sam validate --lint (template.yaml)"
# Offline: no credentials are needed, only a region; no usage data is sent.
AWS_DEFAULT_REGION=${AWS_DEFAULT_REGION:-us-east-1} SAM_CLI_TELEMETRY=0 \
  "$CACHE/bin/sam" validate --lint --template template.yaml

echo "== the CDK stack (infra/cdk) against template.yaml"
infra/cdk/cdk.sh check

echo "== the controller's image (make controller-image, from an unoptimized build)"
# Also for the tests: the deploy test (docs/deploy.md, run) runs `make controller-image`.
export BERTH_IMAGE_PROFILE=dev
scripts/controller-image.sh

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
echo "== the binaries make dev starts"
# The newcomer's test (tests/api/make_dev.rs) runs `make dev`, and the
# conformance run starts the same binaries: built here, with the settings the
# tests see (BERTH_TEST_KUBECONFIG above), so that their `cargo build` finds
# them fresh.
cargo build --locked -p berth-local -p berth-admin -p berth-kube-standin -p berth-controller -p berth-cli --bins
# The stand-in records what Berth's two identities were let do; after the
# run, every grant of their roles must have been used (least privilege).
rbac_uses=$(mktemp -d)
trap 'rm -rf "$rbac_uses"' EXIT
# Every test binary runs, so that one that fails does not hide the next.
BERTH_TEST_RBAC_USES=$rbac_uses scripts/with-dynamodb.sh cargo test --workspace --locked --no-fail-fast
if [ -z "${BERTH_TEST_KUBECONFIG:-}" ]; then
  echo "== least privilege: the suite used every grant of infra/k8s's roles"
  BERTH_TEST_RBAC_USES=$rbac_uses cargo test --locked --test api \
    manifests::every_grant_of_the_roles_is_used -- --ignored --exact
fi

echo "== conformance (openapi-spec-validator, schemathesis)"
scripts/conformance.sh

echo "== the web console (docs/console.md): generated types, size, browser journeys"
scripts/console.sh test
