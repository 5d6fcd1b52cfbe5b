#!/usr/bin/env bash
# Installs the tools the tests and local runs need, when they are missing.
set -euo pipefail

CFN_LINT_VERSION=1.51.0
# The conformance run's tools, pinned, in a virtualenv outside the clone.
SCHEMATHESIS_VERSION=4.32.5
OPENAPI_SPEC_VALIDATOR_VERSION=0.9.0
CONFORMANCE_VENV=${BERTH_CACHE:-$HOME/.cache/berth}/conformance-venv

command -v cargo >/dev/null 2>&1 || {
  echo "install-tools: cargo (a Rust toolchain) is needed: https://rustup.rs" >&2
  exit 1
}
if ! command -v cfn-lint >/dev/null 2>&1; then
  echo "install-tools: installing cfn-lint $CFN_LINT_VERSION from PyPI" >&2
  python3 -m pip install --quiet "cfn-lint==$CFN_LINT_VERSION"
  hash -r
fi
installed=$("$CONFORMANCE_VENV/bin/python" -c 'from importlib.metadata import version as v
print(v("schemathesis"), v("openapi-spec-validator"))' 2>/dev/null || true)
if [ "$installed" != "$SCHEMATHESIS_VERSION $OPENAPI_SPEC_VALIDATOR_VERSION" ]; then
  echo "install-tools: installing schemathesis $SCHEMATHESIS_VERSION and openapi-spec-validator" \
    "$OPENAPI_SPEC_VALIDATOR_VERSION from PyPI into $CONFORMANCE_VENV" >&2
  python3 -m venv "$CONFORMANCE_VENV"
  "$CONFORMANCE_VENV/bin/python" -m pip install --quiet \
    "schemathesis==$SCHEMATHESIS_VERSION" "openapi-spec-validator==$OPENAPI_SPEC_VALIDATOR_VERSION"
fi
"$(dirname "$0")/../infra/dynamodb-local/dynamodb-local.sh" install
