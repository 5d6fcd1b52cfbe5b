#!/usr/bin/env bash
# The web console (console/, docs/console.md).
#   console.sh install      npm ci (exact versions of console/package-lock.json), when the lock changed
#   console.sh build        install, then build console/dist when its inputs changed (make dev)
#   console.sh check        the generated API types match openapi/ (fails when regenerating changes them),
#                           the types check, the build's JS+CSS is at most 200 KB gzipped
#   console.sh test         check, build, Debian's chromium and firefox-esr, then the browser journeys against
#                           the stack make dev runs (on free ports, in a directory of its own)
#   console.sh screenshots  the journeys' main pages, written to docs/console/ (committed)
# npm's cache lives under ~/.cache/berth/npm (BERTH_CACHE); node_modules in console/.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${BERTH_CACHE:-~/.cache/berth}
export npm_config_cache=$CACHE/npm npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
# The most JavaScript and CSS the console may ship, gzipped.
BUDGET=$((200 * 1024))

say() { printf 'console: %s\n' "$*" >&2; }

# One install or build at a time (two make devs, make test's, may start
# together): they share console/node_modules and console/dist.
lock() {
  exec 9>console/.lock
  flock 9
}
unlock() { exec 9>&-; }

hash_of() { # FILE|DIR...: one hash of their contents and names
  find "$@" -type f -not -path '*/node_modules/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
}

install() {
  lock
  command -v npm >/dev/null 2>&1 || { say "npm (Node 20) is needed for the console"; exit 1; }
  local want
  want=$(sha256sum console/package-lock.json | cut -d' ' -f1)
  if [ "$(cat console/node_modules/.berth-lock 2>/dev/null)" != "$want" ]; then
    say "npm ci (console/package-lock.json)"
    (cd console && npm ci --loglevel=error >&2)
    echo "$want" >console/node_modules/.berth-lock
  fi
  unlock
}

build() {
  install
  lock
  local want
  want=$(hash_of console/src console/public console/index.html console/vite.config.ts console/tsconfig.json \
    console/package-lock.json console/scripts/compress.mjs)
  if [ "$(cat console/dist/.inputs 2>/dev/null)" != "$want" ]; then
    say "building console/dist"
    (cd console && npm run --silent build >&2)
    echo "$want" >console/dist/.inputs
  fi
  unlock
}

check() {
  install
  echo "== console: the API types are generated from openapi/openapi.json"
  local fresh
  fresh=$(mktemp --suffix=.d.ts)
  trap 'rm -f "$fresh"' RETURN
  (cd console && npx --no-install openapi-typescript ../openapi/openapi.json -o "$fresh" >/dev/null 2>&1)
  if ! diff -q "$fresh" console/src/api/schema.d.ts >/dev/null; then
    diff -u console/src/api/schema.d.ts "$fresh" | head -40 >&2 || true
    say "console/src/api/schema.d.ts differs from what openapi/openapi.json generates: run \`scripts/console.sh generate\` and commit it"
    exit 1
  fi
  echo "== console: types"
  (cd console && npx --no-install tsc --noEmit)
  build
  echo "== console: size (JS and CSS, gzipped; at most $BUDGET bytes)"
  local total
  total=$(find console/dist -name '*.js.gz' -o -name '*.css.gz' | xargs cat | wc -c)
  echo "   $total bytes gzipped ($(find console/dist -name '*.js' -o -name '*.css' | xargs cat | wc -c) bytes plain)"
  if ((total > BUDGET)); then
    say "the console's JS and CSS are $total bytes gzipped, over the budget of $BUDGET"
    exit 1
  fi
}

apt_browser() { # COMMAND PACKAGE
  if ! command -v "$1" >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      say "installing Debian's $2 with apt-get"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null \
        || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null; }
    else
      say "$1 is missing: install it, e.g. sudo apt-get install $2"
      exit 1
    fi
  fi
}

browsers() {
  apt_browser chromium chromium
  apt_browser firefox-esr firefox-esr
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Runs the stack make dev runs (scripts/dev.sh) on free ports with its data
# in a directory of its own, then the journeys (console/tests/journeys.mjs)
# against it; stops it after.
journeys() { # SCREENSHOT-DIR
  local shots=$1 dir log dev_pid status=0
  dir=$(mktemp -d "${TMPDIR:-/tmp}/berth-console-test.XXXXXX")
  log=$dir/dev.log
  export BERTH_LOCAL_DIR=$dir/local BERTH_PORT BERTH_DYNAMODB_PORT BERTH_CONTROLLER_PORT BERTH_STANDIN_PORT BERTH_PUBLIC_URL=
  # Each port free now, and different from the others.
  BERTH_PORT=$(free_port) BERTH_DYNAMODB_PORT=$(free_port) BERTH_CONTROLLER_PORT=$(free_port) BERTH_STANDIN_PORT=$(free_port)
  unset BERTH_PUBLIC_URL KUBECONFIG
  # A rollout that makes no progress fails after 10 s, not 10 min: the
  # journey that deploys a crashing image (the stand-in's `:crashloop`)
  # sees it rolled back.
  export BERTH_PROGRESS_DEADLINE_SECONDS=10
  setsid scripts/dev.sh >"$log" 2>&1 &
  dev_pid=$!
  # shellcheck disable=SC2064
  trap "kill -TERM $dev_pid 2>/dev/null || true; wait $dev_pid 2>/dev/null || true; rm -rf '$dir'; trap - RETURN" RETURN
  # Ready when the API answers (make dev exits first if anything fails).
  until curl -fsS -m 2 "http://127.0.0.1:$BERTH_PORT/api/v1/healthz" >/dev/null 2>&1; do
    if ! kill -0 "$dev_pid" 2>/dev/null; then
      say "make dev stopped before the API answered:"
      tail -n 40 "$log" >&2
      return 1
    fi
    sleep 0.2
  done
  local password
  password=$(sed -n 's/.*temporary password[^:]*: *\([^ ]*\).*/\1/Ip' "$log" | head -n 1)
  if [ -z "$password" ]; then
    say "no temporary password in make dev's output:"
    tail -n 40 "$log" >&2
    return 1
  fi
  export BERTH_URL=http://127.0.0.1:$BERTH_PORT BERTH_ADMIN_EMAIL=admin@localhost BERTH_NEW_PASSWORD="correct horse battery staple"
  BERTH_ADMIN_PASSWORD=$password BERTH_SCREENSHOTS=$shots node console/tests/journeys.mjs || status=$?
  # One journey in firefox-esr too (puppeteer-core, WebDriver BiDi), on what they made.
  if ((status == 0)); then node console/tests/firefox.mjs || status=$?; fi
  if ((status != 0)); then
    say "the last lines of make dev's output ($log):"
    tail -n 20 "$log" >&2
  fi
  return $status
}

case "${1:-}" in
  install) install ;;
  build) build ;;
  generate)
    install
    (cd console && npx --no-install openapi-typescript ../openapi/openapi.json -o src/api/schema.d.ts)
    ;;
  check) check ;;
  test)
    check
    browsers
    # Screenshots of a test run: under the build directory, never over tracked files.
    shots=${CARGO_TARGET_DIR:-$CACHE/target}/console-screenshots
    mkdir -p "$shots"
    echo "== console: browser journeys (chromium, then one in firefox-esr; screenshots in $shots)"
    journeys "$shots"
    ;;
  screenshots)
    build
    browsers
    mkdir -p docs/console
    journeys "$PWD/docs/console"
    ;;
  *)
    sed -n '2,10p' "$0" >&2
    exit 2
    ;;
esac
