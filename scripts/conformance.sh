#!/usr/bin/env bash
# The generated conformance run of `make test`: the committed
# OpenAPI description is validated (openapi-spec-validator), then schemathesis
# sends generated requests to every operation of the whole API, running
# locally against a throwaway in-memory DynamoDB Local and Berth's stand-in
# cluster, as an owner with an API token; every response must conform to the
# description, and every other check of schemathesis's (`--checks all`:
# schema-violating requests refused, schema-valid ones accepted, credentials
# enforced, ...; `use_after_free` through a hook that lets a soft-deleted
# project or environment stay readable). Its settings and hooks are in
# scripts/conformance/.
# Everything it starts is stopped afterwards; on failure its report stays
# under .local/conformance/.
#
# Before that, a journey (scripts/conformance/journey.py) drives a client
# generated from the served description (openapi-python-client) with the
# session cookie: one change of each method, every body-less POST, logout.
#
# Knobs: BERTH_CONFORMANCE_EXAMPLES (examples per operation and phase, default
# 10), BERTH_CONFORMANCE_SEED (one fixed seed, to replay a run; by default
# three: the day's date, so that the generated cases change from day to day
# but a failure replays the same day, and two more derived from it),
# BERTH_CONFORMANCE_CHECKS (default `all`).
set -euo pipefail
cd "$(dirname "$0")/.."

tools=${BERTH_CACHE:-~/.cache/berth}/conformance-venv/bin
bin=${CARGO_TARGET_DIR:-target}/debug
report=.local/conformance
examples=${BERTH_CONFORMANCE_EXAMPLES:-10}
day=$(date -u +%Y%m%d)
seeds=${BERTH_CONFORMANCE_SEED:-"$day ${day}1 ${day}2"}

say() { printf 'conformance: %s\n' "$*" >&2; }

say "validating openapi/openapi.json (OpenAPI 3.1)"
"$tools/openapi-spec-validator" openapi/openapi.json

cargo build --locked -p berth-local -p berth-kube-standin -p berth-controller --bins

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
run_dir=$(mktemp -d)
ddb=infra/dynamodb-local/dynamodb-local.sh
children=()
cleanup() {
  for pid in "${children[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  "$ddb" stop "$run_dir/dynamodb.pid"
  rm -rf "$run_dir"
}
trap cleanup EXIT

ddb_port=$(free_port)
"$ddb" start "$ddb_port" --in-memory "$run_dir/dynamodb.pid"
export AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$ddb_port"
export AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local
unset AWS_PROFILE AWS_SESSION_TOKEN
export BERTH_TABLE=conformance BERTH_INSECURE_COOKIES=true
# The domain check asks a name server that is not there: an app's domains
# are generated names, and the run must not reach the internet.
BERTH_DNS_SERVERS="127.0.0.1:$(free_port)"
export BERTH_DNS_SERVERS

"$bin/berth-admin" create-table >/dev/null
bootstrap=$("$bin/berth-admin" bootstrap --org conformance --email owner@conformance.example --json)

"$bin/kube-standin" --addr "127.0.0.1:$(free_port)" --kubeconfig-out "$run_dir/kubeconfig" \
  --simulate-controllers --simulate-kubelet >"$run_dir/standin.log" 2>&1 &
children+=($!)
for _ in $(seq 1 100); do [ -s "$run_dir/kubeconfig" ] && break; sleep 0.1; done
[ -s "$run_dir/kubeconfig" ] || { say "the stand-in cluster did not start"; cat "$run_dir/standin.log" >&2; exit 1; }
"$bin/berth-admin" cluster set --kubeconfig "$run_dir/kubeconfig" >/dev/null
"$bin/berth-admin" cluster install --kubeconfig "$run_dir/kubeconfig" >/dev/null
# Where builds run (createBuild is 503 without it), as infra/k8s makes it.
kubectl --kubeconfig "$run_dir/kubeconfig" apply -f infra/k8s/builds.yaml >/dev/null
# Its endpoint on a free loopback port (8080 may be taken, by a make dev or
# another run), its Lease in `default` (the stand-in has no berth-system).
KUBECONFIG=$run_dir/kubeconfig BERTH_REPLICA=conformance BERTH_LEASE_NAMESPACE=default \
  BERTH_CONTROLLER_ADDR="127.0.0.1:$(free_port)" \
  "$bin/berth-controller" >"$run_dir/controller.log" 2>&1 &
children+=($!)

# The registry's token service, configured as an installation has it
# (docs/deploy.md): a signing key, the public URL, and the registry's
# settings with scoped credentials (in berth-system, which infra/k8s makes).
# Unconfigured, its operations are 503.
export BERTH_PORT=$(free_port)
export BERTH_PUBLIC_URL="http://127.0.0.1:$BERTH_PORT"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
  -out "$run_dir/registry-signing-key.pem" 2>/dev/null
export BERTH_REGISTRY_SIGNING_KEY="file:$run_dir/registry-signing-key.pem"
printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: berth-system}\n' |
  kubectl --kubeconfig "$run_dir/kubeconfig" apply -f - >/dev/null
"$bin/berth-admin" registry set --kubeconfig "$run_dir/kubeconfig" \
  --prefix registry.conformance.test/berth --server registry.conformance.test >/dev/null
"$bin/berth-local" >"$run_dir/berth-local.log" 2>&1 &
children+=($!)
api="http://127.0.0.1:$BERTH_PORT"
for _ in $(seq 1 100); do curl -fsS "$api/api/v1/healthz" >/dev/null 2>&1 && break; sleep 0.1; done

# The owner signs in with the temporary password, replaces it, and makes the
# API token the run uses.
owner=$(BOOTSTRAP=$bootstrap API=$api python3 - <<'EOF'
import json, os, secrets, urllib.request

api = os.environ["API"]
owner = json.loads(os.environ["BOOTSTRAP"])

def call(path, body, cookie=None):
    request = urllib.request.Request(
        api + path, data=json.dumps(body).encode(), method="POST",
        headers={"content-type": "application/json", **({"cookie": cookie} if cookie else {})})
    with urllib.request.urlopen(request) as response:
        return response.headers, json.loads(response.read() or b"null")

headers, _ = call("/api/v1/auth/login",
                  {"email": owner["email"], "password": owner["temporary_password"]})
cookie = headers["set-cookie"].split(";")[0]
password = secrets.token_urlsafe(24)
call("/api/v1/me/password", {"current_password": owner["temporary_password"],
                             "new_password": password}, cookie)
_, created = call("/api/v1/tokens", {"name": "conformance"}, cookie)
print(json.dumps({"email": owner["email"], "password": password, "token": created["token"]}))
EOF
)
field() { python3 -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$owner" "$1"; }
token=$(field token)

say "journey: a client generated from the served description, with the session cookie"
cache=${BERTH_CACHE:-~/.cache/berth}
"$cache/bin/openapi-python-client" generate --url "$api/api/v1/openapi.json" --meta none \
  --output-path "$run_dir/client/berth_client" >"$run_dir/generate.log" 2>&1 \
  || { cat "$run_dir/generate.log" >&2; say "openapi-python-client could not generate a client"; exit 1; }
if grep -q '^Warning' "$run_dir/generate.log"; then
  # What it could not generate, a client of the description would lack.
  cat "$run_dir/generate.log" >&2
  say "openapi-python-client warned while generating the client"
  exit 1
fi
rm -rf "$report"
mkdir -p "$report"
BERTH_API=$api BERTH_EMAIL=$(field email) BERTH_PASSWORD=$(field password) \
  PYTHONPATH=$run_dir/client "$cache/bin/openapi-python-client-python" scripts/conformance/journey.py \
  || { cp "$run_dir"/*.log "$report/"; say "the journey FAILED; the servers' logs are in $report/"; exit 1; }

say "schemathesis: every operation, $examples examples per operation and phase, seeds $seeds"
started=$(date +%s)
status=0
failed_seeds=()
schemathesis() {
  local name=$1 seed=$2
  shift 2
  BERTH_CONFORMANCE_TOKEN=$token SCHEMATHESIS_HOOKS=hooks PYTHONPATH=scripts/conformance \
    "$tools/st" --config-file scripts/conformance/schemathesis.toml run openapi/openapi.json --url "$api" \
    --checks "${BERTH_CONFORMANCE_CHECKS:-all}" \
    --exclude-checks use_after_free \
    --max-examples "$examples" --seed "$seed" --workers 1 \
    --request-timeout 30 --generation-database none \
    --report junit,ndjson --report-dir "$report/$name" \
    --no-color "$@" >"$report/$name.log" 2>&1 || { status=$?; failed_seeds+=("$seed"); }
  sed -n '/^=* SUMMARY =*$/,$p' "$report/$name.log"
}
# The operations that can take the run's own credentials away run on their
# own, without the stateful phase: there schemathesis finds the run's token in
# `listTokens` and revokes it, or invites a second owner and then removes or
# demotes the first (its own caller), after which every request is, rightly,
# 401 or 403. Alone they meet only ids that are not there.
disarming='^(deleteToken|removeMember|updateMember)$'
for seed in $seeds; do
  say "seed $seed"
  schemathesis "main-$seed" "$seed" --exclude-operation-id-regex "$disarming"
  schemathesis "disarming-$seed" "$seed" --include-operation-id-regex "$disarming" \
    --phases examples,coverage,fuzzing
done
say "finished in $(($(date +%s) - started)) s"
generated=$(sed -n 's/^ *\([0-9][0-9]*\) generated.*/\1/p' "$report"/*.log | awk '{ n += $1 } END { print n + 0 }')
say "$generated generated requests"
wanted=$((1000 * $(wc -w <<<"$seeds")))
if [ "$status" -eq 0 ] && [ "$generated" -lt "$wanted" ]; then
  say "only $generated generated requests; the run asks for at least 1000 a seed"
  status=1
fi
if [ "$status" -ne 0 ]; then
  cp "$run_dir"/*.log "$report/" 2>/dev/null || true
  say "FAILED (exit $status); the report is in $report/ (replay with BERTH_CONFORMANCE_SEED=${failed_seeds[0]:-$day})"
  exit "$status"
fi
# Passed: only the logs stay (.local/conformance/*.log).
find "$report" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +
