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

echo "== the controller's image (make controller-image, from an unoptimized build)"
# Also for the tests: the README's Deploy test runs `make controller-image`.
export BERTH_IMAGE_PROFILE=dev
scripts/controller-image.sh

echo "== cargo test"
# The stand-in records what Berth's two identities were let do; after the
# run, every grant of their roles must have been used (least privilege).
rbac_uses=$(mktemp -d)
trap 'rm -rf "$rbac_uses"' EXIT
BERTH_TEST_RBAC_USES=$rbac_uses scripts/with-dynamodb.sh cargo test --workspace --locked
if [ -z "${BERTH_TEST_KUBECONFIG:-}" ]; then
  echo "== least privilege: the suite used every grant of infra/k8s's roles"
  BERTH_TEST_RBAC_USES=$rbac_uses cargo test --locked --test api \
    manifests::every_grant_of_the_roles_is_used -- --ignored --exact
fi

echo "== conformance (openapi-spec-validator, schemathesis)"
scripts/conformance.sh
