#!/usr/bin/env bash
# Installs the tools the tests and local runs need, when they are missing.
#   install-tools.sh           what `make test` and `make dev` need
#   install-tools.sh lambda    cargo-lambda with zig (make lambda-watch, make invoke)
#   install-tools.sh package   that, and Rust's arm64 target (make package)
#   install-tools.sh image     buildah and skopeo (make controller-image, which make test runs)
# Everything goes under ~/.cache/berth (BERTH_CACHE), outside the clone; the
# Python tools each get a virtualenv of their own (aws-sam-cli pins its own
# cfn-lint and boto3) and launchers in ~/.cache/berth/bin.
set -euo pipefail
cd "$(dirname "$0")/.."

SAM_CLI_VERSION=1.170.0
# The conformance run's tools, pinned, in a virtualenv outside the clone.
SCHEMATHESIS_VERSION=4.32.5
OPENAPI_SPEC_VALIDATOR_VERSION=0.9.0
CONFORMANCE_VENV=${BERTH_CACHE:-~/.cache/berth}/conformance-venv
# The conformance run's journey generates a client from the served
# description with it (scripts/conformance/journey.py).
OPENAPI_PYTHON_CLIENT_VERSION=0.29.1
# moto's server stands in for AWS KMS in the registry signer's test (no
# KMS endpoint is reachable here; it signs with real ECDSA keys).
MOTO_VERSION=5.2.5
CARGO_LAMBDA_VERSION=1.9.2
ZIGLANG_VERSION=0.16.0
CACHE=${BERTH_CACHE:-~/.cache/berth}

# python_tool NAME VERSION "COMMAND…" PIP-REQUIREMENT…: installs the
# requirements into $CACHE/NAME-VERSION and puts a launcher for each COMMAND
# in $CACHE/bin (`python` as NAME-python), which runs it with the
# virtualenv's bin first on PATH (cargo-lambda finds zig through the
# `python3` there).
python_tool() {
  local name=$1 version=$2 commands=$3 dir=$CACHE/$1-$2 command launcher
  shift 3
  if [ ! -e "$dir/.installed" ]; then
    echo "install-tools: installing $name $version from PyPI into $dir" >&2
    rm -rf "$dir"
    python3 -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
    touch "$dir/.installed"
  fi
  mkdir -p "$CACHE/bin"
  for command in $commands; do
    launcher=$CACHE/bin/$command
    [ "$command" = python ] && launcher=$CACHE/bin/$name-python
    # A name of this run's own: two runs at once (make dev's tests) must
    # not move each other's file.
    printf '#!/bin/sh\nPATH="%s/bin:$PATH" exec "%s/bin/%s" "$@"\n' "$dir" "$dir" "$command" >"$launcher.new.$$"
    chmod +x "$launcher.new.$$"
    mv "$launcher.new.$$" "$launcher"
  done
}

# apt_tool COMMAND PACKAGE… WHY: installs Debian's PACKAGEs when COMMAND is
# missing (as root, with apt-get), or says what to install.
apt_tool() {
  local command=$1 why=${*: -1} packages=("${@:2:$#-2}")
  command -v "$command" >/dev/null 2>&1 && return 0
  apt_install "$command is missing ($why)" "${packages[@]}"
}

# apt_install WHAT PACKAGE…: installs Debian's PACKAGEs as root with apt-get,
# or says WHAT is missing and what to install.
apt_install() {
  local what=$1
  shift
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "install-tools: installing $* with apt-get" >&2
    apt-get install -y -qq "$@" >/dev/null \
      || { apt-get update -qq && apt-get install -y -qq "$@" >/dev/null; }
  else
    echo "install-tools: $what: install it, e.g. sudo apt-get install $*" >&2
    return 1
  fi
}
command -v cargo >/dev/null 2>&1 || {
  echo "install-tools: cargo (a Rust toolchain) is needed: https://rustup.rs" >&2
  exit 1
}

# Debian's python3 makes virtual environments (below) only with python3-venv.
python3 -c 'import ensurepip' >/dev/null 2>&1 \
  || apt_install "Python's venv module is missing (the tools' virtual environments need it)" python3-venv

case "${1:-}" in
  image)
    # `make controller-image`: buildah builds the image without a daemon,
    # skopeo reads it back and pushes it (docs/deploy.md).
    apt_tool buildah buildah "make controller-image builds the controller's image with it"
    apt_tool skopeo skopeo "the controller's image is inspected and pushed with it"
    # A registry on loopback: the deploy test (docs/deploy.md, run) pushes the image there.
    apt_tool docker-registry docker-registry "the deploy test of docs/deploy.md pushes the image to it"
    exit 0
    ;;
  lambda | package)
    # Callers put $CACHE/bin first on PATH, where `cargo lambda` finds it.
    python_tool cargo-lambda "$CARGO_LAMBDA_VERSION" "cargo-lambda" \
      "cargo-lambda==$CARGO_LAMBDA_VERSION" "ziglang==$ZIGLANG_VERSION"
    # Lambda's arm64 (Graviton) target; zig links for it, no cross gcc needed.
    if [ "$1" = package ] && command -v rustup >/dev/null 2>&1 \
      && ! rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then
      rustup target add aarch64-unknown-linux-gnu
    fi
    exit 0
    ;;
esac

# curl: make dev and DynamoDB Local's start ask the servers whether they answer.
apt_tool curl curl "make dev asks its servers whether they answer with it"
installed=$("$CONFORMANCE_VENV/bin/python" -c 'from importlib.metadata import version as v
print(v("schemathesis"), v("openapi-spec-validator"))' 2>/dev/null || true)
if [ "$installed" != "$SCHEMATHESIS_VERSION $OPENAPI_SPEC_VALIDATOR_VERSION" ]; then
  echo "install-tools: installing schemathesis $SCHEMATHESIS_VERSION and openapi-spec-validator" \
    "$OPENAPI_SPEC_VALIDATOR_VERSION from PyPI into $CONFORMANCE_VENV" >&2
  python3 -m venv "$CONFORMANCE_VENV"
  "$CONFORMANCE_VENV/bin/python" -m pip install --quiet \
    "schemathesis==$SCHEMATHESIS_VERSION" "openapi-spec-validator==$OPENAPI_SPEC_VALIDATOR_VERSION"
fi
# openapi-python-client generates offline; its own dependencies (httpx,
# attrs) are what the generated client needs, so the journey runs with the
# same virtualenv's Python (`openapi-python-client-python`); its ruff, on
# the launcher's PATH, formats what it generates.
python_tool openapi-python-client "$OPENAPI_PYTHON_CLIENT_VERSION" \
  "openapi-python-client python" "openapi-python-client==$OPENAPI_PYTHON_CLIENT_VERSION"
# `sam validate --lint` runs cfn-lint (pinned by aws-sam-cli); its Python
# also runs the CDK comparison, which expands template.yaml with the same SAM
# translator.
python_tool aws-sam-cli "$SAM_CLI_VERSION" "sam python" "aws-sam-cli==$SAM_CLI_VERSION"
# The KMS signer's test (tests/api/registry_tokens.rs) signs with keys of
# moto's KMS, on loopback.
python_tool moto "$MOTO_VERSION" "moto_server" "moto[server]==$MOTO_VERSION"
# jq: docs/guide.md picks values out of answers with it, and its test runs the guide.
apt_tool jq jq "docs/guide.md and its test use it" || true
infra/cdk/cdk.sh install
infra/dynamodb-local/dynamodb-local.sh install
# The build steps' tests (tests/api/build_steps.rs) run Berth's own step
# scripts for real: the source step with git (and git http-backend) on
# loopback, the push step with skopeo against a throwaway registry
# (docker-registry), an OCI layout made with umoci.
apt_tool /usr/bin/git git "the build steps' tests run the source step with Debian's git"
infra/registry/registry.sh install
# The web console (docs/console.md): its npm packages (npm ci, exact
# versions), and Debian's chromium and firefox-esr, which its browser
# journeys drive.
scripts/console.sh install
apt_tool chromium chromium "the web console's browser journeys run in it"
apt_tool firefox-esr firefox-esr "one of the web console's journeys runs in it"
