#!/usr/bin/env bash
# Installs the tools the tests and local runs need, when they are missing.
#   install-tools.sh          cfn-lint and DynamoDB Local (make dev, make test)
#   install-tools.sh lambda   cargo-lambda (make lambda-watch, make invoke)
set -euo pipefail

CFN_LINT_VERSION=1.51.0
# The conformance run's tools, pinned, in a virtualenv outside the clone.
SCHEMATHESIS_VERSION=4.32.5
OPENAPI_SPEC_VALIDATOR_VERSION=0.9.0
CONFORMANCE_VENV=${BERTH_CACHE:-$HOME/.cache/berth}/conformance-venv
CARGO_LAMBDA_VERSION=1.9.2

command -v cargo >/dev/null 2>&1 || {
  echo "install-tools: cargo (a Rust toolchain) is needed: https://rustup.rs" >&2
  exit 1
}

if [ "${1:-}" = lambda ]; then
  if ! cargo lambda --version >/dev/null 2>&1; then
    echo "install-tools: installing cargo-lambda $CARGO_LAMBDA_VERSION from PyPI" >&2
    python3 -m pip install --quiet "cargo-lambda==$CARGO_LAMBDA_VERSION"
    hash -r
    cargo lambda --version >/dev/null 2>&1 || {
      echo "install-tools: cargo-lambda was installed but is not on PATH; add $(python3 -m site --user-base)/bin to PATH" >&2
      exit 1
    }
  fi
  exit 0
fi

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
# jq: docs/guide.md picks values out of answers with it, and its test runs the guide.
if ! command -v jq >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "install-tools: installing jq with apt-get" >&2
    apt-get install -y -qq jq >/dev/null || { apt-get update -qq && apt-get install -y -qq jq >/dev/null; }
  else
    echo "install-tools: jq is missing (docs/guide.md and its test use it): install it," \
         "e.g. sudo apt-get install jq, or brew install jq" >&2
  fi
fi
"$(dirname "$0")/../infra/dynamodb-local/dynamodb-local.sh" install
