#!/usr/bin/env bash
# An image registry for tests: Debian's `docker-registry` (CNCF Distribution
# 2.8), and the client tools the build tests use with it (skopeo, umoci),
# installed from Debian's packages when missing (as root with apt-get;
# elsewhere it says what to install).
#
#   registry.sh install
#   registry.sh start PORT DIR [HTPASSWD]   a throwaway registry on https://127.0.0.1:PORT,
#                                          storage and log in DIR, pid in DIR/registry.pid,
#                                          its certificate (self-signed, made anew) in
#                                          DIR/tls/cert.pem for clients to trust (Go's
#                                          SSL_CERT_FILE, curl --cacert); with HTPASSWD (a
#                                          bcrypt htpasswd file), pushes and pulls need its
#                                          credentials
#   registry.sh start PORT DIR token REALM ISSUER BUNDLE
#                                          the same, trusting a token service (Docker
#                                          Registry token authentication): clients get
#                                          tokens at REALM; tokens must be issued by ISSUER
#                                          for the service 127.0.0.1:PORT and signed by a
#                                          key whose certificate is in BUNDLE (PEM)
#   registry.sh stop DIR
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/../pidfile.sh"

say() { printf 'registry: %s\n' "$*" >&2; }

need() {
  local command=$1 package=$2
  command -v "$command" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "$command is missing; installing Debian's $package"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null; }
  fi
  command -v "$command" >/dev/null 2>&1 || {
    say "$command is needed: install it (Debian: apt-get install $package) and try again."
    exit 1
  }
}

install() {
  need docker-registry docker-registry
  need skopeo skopeo
  need umoci umoci
  need openssl openssl
}

start() {
  local port=$1 dir=$2 htpasswd=${3:-} realm= issuer= bundle=
  if [ "$htpasswd" = token ]; then
    htpasswd= realm=$4 issuer=$5 bundle=$6
  fi
  install
  mkdir -p "$dir/storage" "$dir/tls"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$dir/tls/key.pem" -out "$dir/tls/cert.pem" 2>/dev/null
  {
    printf 'version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\n' "$dir/storage"
    printf 'http:\n  addr: 127.0.0.1:%s\n  tls:\n    certificate: %s\n    key: %s\n' \
      "$port" "$dir/tls/cert.pem" "$dir/tls/key.pem"
    if [ -n "$htpasswd" ]; then
      printf 'auth:\n  htpasswd:\n    realm: berth-test\n    path: %s\n' "$htpasswd"
    fi
    if [ -n "$realm" ]; then
      printf 'auth:\n  token:\n    realm: %s\n    service: 127.0.0.1:%s\n    issuer: %s\n    rootcertbundle: %s\n' \
        "$realm" "$port" "$issuer" "$bundle"
    fi
  } >"$dir/registry.yml"
  nohup docker-registry serve "$dir/registry.yml" >"$dir/registry.log" 2>&1 &
  echo $! >"$dir/registry.pid"
  for _ in $(seq 1 100); do
    # Any answer to /v2/ (200, or 401 with a challenge) means it is up.
    if curl -s -o /dev/null -m 1 --cacert "$dir/tls/cert.pem" "https://127.0.0.1:$port/v2/"; then return; fi
    if ! kill -0 "$(cat "$dir/registry.pid")" 2>/dev/null; then
      say "docker-registry exited; its log:"; cat "$dir/registry.log" >&2; exit 1
    fi
    sleep 0.1
  done
  say "docker-registry did not answer on port $port within 10 s; its log:"; cat "$dir/registry.log" >&2
  exit 1
}

# Only ever stops a registry.
stop() { stop_pidfile "$1/registry.pid" docker-registry; }

case "${1:-}" in
  install) install ;;
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  *) say "usage: $0 install | start PORT DIR [HTPASSWD | token REALM ISSUER BUNDLE] | stop DIR"; exit 2 ;;
esac
