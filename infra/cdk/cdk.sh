#!/usr/bin/env bash
# Berth's CDK app (infra/cdk): its npm packages, and its template made offline.
#
#   cdk.sh install        `npm ci` into ~/.cache/berth (BERTH_CACHE), outside
#                         the clone, linked as infra/cdk/node_modules
#   cdk.sh synth [OUTDIR] the CloudFormation template (default infra/cdk/cdk.out),
#                         without building the functions: no AWS credentials,
#                         no lookups, no cargo
#   cdk.sh check          type-checks the app, synthesizes it and compares the
#                         template with template.yaml (`make test`)
#
# `npx cdk synth` and `npx cdk deploy` (the CDK CLI) always bundle, that is
# build every function in release; the CLI refuses the `aws:` context that
# turns bundling off, so `synth` here runs the app itself with it.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPOSITORY=$(cd "$HERE/../.." && pwd)
CACHE=${BERTH_CACHE:-~/.cache/berth}

say() { printf 'cdk: %s\n' "$*" >&2; }

install() {
  command -v npm >/dev/null 2>&1 || { say "npm (Node 20 or later) is needed for the CDK app"; exit 1; }
  local lock prefix
  # One install per lockfile: a changed lockfile gets a fresh directory.
  lock=$(cat "$HERE/package.json" "$HERE/package-lock.json" | sha256sum | cut -c1-16)
  prefix=$CACHE/cdk-$lock
  if [ ! -e "$prefix/.installed" ]; then
    say "installing the CDK app's npm packages (npm ci) into $prefix"
    rm -rf "$prefix"
    mkdir -p "$prefix"
    cp "$HERE/package.json" "$HERE/package-lock.json" "$prefix/"
    (cd "$prefix" && npm ci --no-audit --no-fund --loglevel=error) >&2
    touch "$prefix/.installed"
  fi
  if [ "$(readlink "$HERE/node_modules" 2>/dev/null)" != "$prefix/node_modules" ]; then
    rm -rf "$HERE/node_modules"
    ln -s "$prefix/node_modules" "$HERE/node_modules"
  fi
}

synth() {
  local out=${1:-$HERE/cdk.out}
  install
  rm -rf "$out"
  # An empty `aws:cdk:bundling-stacks` skips bundling in every stack.
  (cd "$HERE" && CDK_OUTDIR=$out CDK_CONTEXT_JSON='{"aws:cdk:bundling-stacks":[]}' node_modules/.bin/tsx bin/berth.ts)
  say "synthesized $out/Berth.template.json"
}

check() {
  install
  (cd "$HERE" && node_modules/.bin/tsc --noEmit -p .)
  CHECK_OUT=$(mktemp -d)
  trap 'rm -rf "$CHECK_OUT"' EXIT
  synth "$CHECK_OUT"
  # The SAM CLI's Python: its SAM translator and cfn-lint (scripts/install-tools.sh).
  "$CACHE/bin/aws-sam-cli-python" "$HERE/compare_with_sam.py" \
    "$REPOSITORY/template.yaml" "$CHECK_OUT/Berth.template.json"
}

case "${1:-}" in
  install) install ;;
  synth) shift; synth "$@" ;;
  check) check ;;
  *) say "usage: $0 install | synth [OUTDIR] | check"; exit 2 ;;
esac
