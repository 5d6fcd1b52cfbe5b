#!/usr/bin/env bash
# Installs the tools the tests and local runs need, when they are missing.
set -euo pipefail

CFN_LINT_VERSION=1.51.0

command -v cargo >/dev/null 2>&1 || {
  echo "install-tools: cargo (a Rust toolchain) is needed: https://rustup.rs" >&2
  exit 1
}
if ! command -v cfn-lint >/dev/null 2>&1; then
  echo "install-tools: installing cfn-lint $CFN_LINT_VERSION from PyPI" >&2
  python3 -m pip install --quiet "cfn-lint==$CFN_LINT_VERSION"
  hash -r
fi
"$(dirname "$0")/../infra/dynamodb-local/dynamodb-local.sh" install
