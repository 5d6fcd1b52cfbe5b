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
