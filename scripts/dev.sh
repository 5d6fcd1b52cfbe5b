#!/usr/bin/env bash
# `make dev`: Berth on this machine.
#
# - DynamoDB Local on 127.0.0.1:$BERTH_DYNAMODB_PORT (8000), data kept under
#   $BERTH_LOCAL_DIR (.local/);
# - the table $BERTH_TABLE (berth), bootstrapped with the owner admin@localhost
#   in organization `default` when it is new;
# - a cluster: with KUBECONFIG set, that one (a kind or k3d cluster works);
#   without, Berth's stand-in Kubernetes API server on 127.0.0.1:$BERTH_STANDIN_PORT
#   (6443; workloads are simulated: Deployments get pods that "run" on a
#   simulated node with simulated logs; its objects are kept in
#   .local/standin-state.json across runs); its kubeconfig is stored and the
#   CRDs applied;
# - the controller as a local process against that cluster, its endpoint on
#   127.0.0.1:$BERTH_CONTROLLER_PORT (3001);
# - the whole API on http://127.0.0.1:$BERTH_PORT (3000), and the web console
#   at / (built by scripts/console.sh when its sources changed).
# A port that is taken stops it before it starts anything, naming the port.
# It watches what it started: if any of them exits, it says which, with the
# last lines of its log, stops the rest and exits non-zero. Ctrl-C stops
# everything it started; so does `make reset`, which finds the processes in
# .local/pids/ and then wipes .local/.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/local-env.sh
source scripts/local-processes.sh
state=$BERTH_LOCAL_DIR

say() { printf 'make dev: %s\n' "$*" >&2; }

if pid=$(live_pid dev.sh); then
  say "it already runs (pid $pid); stop it with Ctrl-C, or with \`make reset\` (which also wipes $state/)"
  exit 1
fi

scripts/install-tools.sh
echo "== building"
cargo build --locked -p berth-local -p berth-kube-standin -p berth-controller --bins
bin=${CARGO_TARGET_DIR:-target}/debug
# The web console (console/, docs/console.md), built when its sources
# changed; berth-local serves it at / beside the API.
scripts/console.sh build
export BERTH_CONSOLE_DIR=$PWD/console/dist

# Every port make dev listens on, by the setting that moves it.
ports=(BERTH_PORT BERTH_DYNAMODB_PORT BERTH_CONTROLLER_PORT)
[ -n "${KUBECONFIG:-}" ] || ports+=(BERTH_STANDIN_PORT)

# Whether something listens on PORT (on any address: DynamoDB Local listens
# on all of them), as the programs bind it (SO_REUSEADDR: a port whose
# earlier connections linger in TIME_WAIT is free).
port_taken() { # PORT
  ! python3 - "$1" 2>/dev/null <<'PY'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen()
PY
}

# Stops make dev, before it starts anything, if a port is not a port, is
# given twice, or is taken.
check_ports() {
  local setting port seen=" "
  for setting in "${ports[@]}"; do
    port=${!setting}
    if ! [[ $port =~ ^[0-9]+$ ]] || ((port < 1 || port > 65535)); then
      say "$setting=$port is not a port number"
      exit 1
    fi
    if [[ $seen == *" $port "* ]]; then
      say "port $port is given to two of ${ports[*]}: give each its own"
      exit 1
    fi
    seen+="$port "
    if port_taken "$port"; then
      say "port $port ($setting) is taken: something else listens on it."
      if command -v ss >/dev/null 2>&1; then ss -Hltnp "sport = :$port" 2>/dev/null | sed 's/^/    /' >&2 || true; fi
      say "stop that, or run make dev with another port, e.g. $setting=$((port + 100)) make dev"
      exit 1
    fi
  done
}

# What make dev started and watches: a name, its pid, its log.
watched_names=() watched_pids=() watched_logs=()
watch_process() { # NAME PID LOG
  watched_names+=("$1") watched_pids+=("$2") watched_logs+=("$3")
}

children=()
cleanup() {
  for pid in "${children[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait "${children[@]}" 2>/dev/null || true # the stand-in saves its state as it stops
  infra/dynamodb-local/dynamodb-local.sh stop "$dynamodb_pidfile"
  rm -f "$pids_dir"/*.pid
}

# The first watched process that no longer runs, as its index; none: fails.
first_exited() {
  local i
  for i in "${!watched_pids[@]}"; do
    if ! kill -0 "${watched_pids[$i]}" 2>/dev/null; then
      echo "$i"
      return 0
    fi
  done
  return 1
}

# The last lines of the log of watched process INDEX, indented.
show_log() { # INDEX
  tail -n 20 "${watched_logs[$1]}" 2>/dev/null | sed 's/^/    /' >&2 || true
}

# Says which process exited, with the last lines of its log, and stops
# make dev (the EXIT trap stops the others).
stop_because() { # INDEX
  local name=${watched_names[$1]} pid=${watched_pids[$1]} log=${watched_logs[$1]} how=exited
  local status
  # A child's status; DynamoDB Local is not make dev's child.
  if [[ " ${children[*]} " == *" $pid "* ]]; then
    status=0
    wait "$pid" 2>/dev/null || status=$?
    how="exited with status $status"
  fi
  echo >&2
  if [ -n "$log" ]; then
    say "$name (pid $pid) $how; the last lines of $log:"
    show_log "$1"
  else
    say "$name (pid $pid) $how; its output is above"
  fi
  say "stopping everything it started: Berth does not work without it"
  exit 1
}

# Waits until CHECK succeeds; stops make dev if a watched process exits
# first, or after SECONDS (showing the log of the one started last).
await() { # WHAT SECONDS CHECK...
  local what=$1 seconds=$2 exited
  local deadline=$((SECONDS + seconds))
  shift 2
  until "$@" >/dev/null 2>&1; do
    if exited=$(first_exited); then stop_because "$exited"; fi
    if ((SECONDS >= deadline)); then
      local last=$((${#watched_pids[@]} - 1))
      say "$what: not within $seconds s; the last lines of ${watched_logs[$last]:-its output}:"
      show_log "$last"
      exit 1
    fi
    sleep 0.2
  done
}

stop_recorded # what a previous run that was killed hard left behind
check_ports
record_pid dev.sh $$
trap cleanup EXIT
# A signal to make dev alone (make reset's, a service manager's) stops it
# too: bash would otherwise wait for the loop's `sleep` and go on.
trap 'exit 130' INT
trap 'exit 143' TERM
infra/dynamodb-local/dynamodb-local.sh start "$BERTH_DYNAMODB_PORT" --data "$state/dynamodb/data" "$dynamodb_pidfile"
watch_process "DynamoDB Local" "$(cat "$dynamodb_pidfile")" "${dynamodb_pidfile%.pid}.log"

created=$("$bin/berth-admin" create-table)
echo "$created"
if [[ $created == "created table"* ]]; then
  "$bin/berth-admin" bootstrap --org default --email admin@localhost
  echo
  echo "Sign in as admin@localhost with the temporary password above, then replace it (see README)."
fi

if [ -n "${KUBECONFIG:-}" ]; then
  kubeconfig=$KUBECONFIG
  echo "== cluster: KUBECONFIG ($kubeconfig)"
else
  kubeconfig=$state/standin/kubeconfig
  mkdir -p "$state/standin"
  rm -f "$kubeconfig"
  "$bin/kube-standin" --addr "127.0.0.1:$BERTH_STANDIN_PORT" --kubeconfig-out "$kubeconfig" \
    --simulate-controllers --simulate-kubelet --state-file "$state/standin-state.json" \
    >"$state/standin/standin.log" 2>&1 &
  children+=($!)
  record_pid kube-standin $!
  watch_process "the stand-in cluster" $! "$state/standin/standin.log"
  await "the stand-in cluster did not start" 30 test -s "$kubeconfig"
  echo "== cluster: no KUBECONFIG, so Berth's stand-in Kubernetes API server on 127.0.0.1:$BERTH_STANDIN_PORT."
  echo "   Workloads are simulated: pods \"run\" on a simulated node, but nothing runs."
  echo "   Its objects are kept in $state/standin-state.json (delete it to start empty)."
fi
"$bin/berth-admin" cluster set --kubeconfig "$kubeconfig"
"$bin/berth-admin" cluster install --kubeconfig "$kubeconfig"
if [ -z "${KUBECONFIG:-}" ]; then
  # Apps from git build on the stand-in too: its kubelet ends a build's pod
  # with what a build reports (a commit, an image digest of its own), so a
  # build succeeds and its image runs as any other. Builds need where they
  # run (berth-builds, as infra/k8s makes it) and a registry (a name only:
  # the stand-in pushes and pulls nothing). Without kubectl, createBuild
  # says the cluster has no berth-builds.
  if command -v kubectl >/dev/null 2>&1; then
    kubectl --kubeconfig "$kubeconfig" apply -f infra/k8s/builds.yaml >/dev/null
    printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: berth-system}\n' |
      kubectl --kubeconfig "$kubeconfig" apply -f - >/dev/null
    "$bin/berth-admin" registry set --kubeconfig "$kubeconfig" \
      --prefix registry.localhost/berth --server registry.localhost
  else
    say "kubectl is not installed: apps from git cannot build on the stand-in (its berth-builds namespace is made with kubectl)"
  fi
fi
# A replica name of its own (the Lease's holder): a restarted make dev leads
# again at once. Its Lease in `default`, which every cluster has
# (`berth-system` is infra/k8s's). Its endpoint on loopback, never on every
# interface. No egress range of the cluster's own is closed unless given:
# the stand-in has no network (`none` is that choice, said out loud, so
# that the controller does not warn); with a real KUBECONFIG, give
# BERTH_EGRESS_DENIED_CIDRS its node, pod and Service ranges.
KUBECONFIG=$kubeconfig BERTH_REPLICA=${BERTH_REPLICA:-make-dev} \
  BERTH_EGRESS_DENIED_CIDRS=${BERTH_EGRESS_DENIED_CIDRS:-none} \
  BERTH_LEASE_NAMESPACE=${BERTH_LEASE_NAMESPACE:-default} \
  BERTH_CONTROLLER_ADDR=127.0.0.1:$BERTH_CONTROLLER_PORT \
  "$bin/berth-controller" >"$state/controller.log" 2>&1 &
children+=($!)
record_pid berth-controller $!
watch_process "the controller" $! "$state/controller.log"
# Ready: it leads (its caches filled), or stands by for a replica of
# another name that does.
await "the controller is not ready" 60 \
  curl -fsS -m 1 "http://127.0.0.1:$BERTH_CONTROLLER_PORT/readyz"
echo "== controller $(curl -fsS -m 1 "http://127.0.0.1:$BERTH_CONTROLLER_PORT/readyz") (log: $state/controller.log; /metrics on 127.0.0.1:$BERTH_CONTROLLER_PORT)"

# The registry's token service (docs/deploy.md, "The registry and Berth's
# token service"): a signing key of this setup's own, in a file, made once;
# `make admin ARGS="registry certificate"` prints its certificate for a
# local registry's bundle. Tokens' issuer and realm: this API.
signing_key=${BERTH_REGISTRY_SIGNING_KEY#file:}
if [ "$signing_key" != "$BERTH_REGISTRY_SIGNING_KEY" ] && [ ! -s "$signing_key" ]; then
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$signing_key" 2>/dev/null
  chmod 600 "$signing_key"
fi
"$bin/berth-local" &
children+=($!)
record_pid berth-local $!
watch_process "the API" $! ""
await "the API does not answer on 127.0.0.1:$BERTH_PORT" 30 \
  curl -fsS -m 1 "http://127.0.0.1:$BERTH_PORT/api/v1/healthz"
echo
echo "Berth: http://127.0.0.1:$BERTH_PORT/api/v1 (DynamoDB Local on port $BERTH_DYNAMODB_PORT, data in $state/)"
echo "The console: http://127.0.0.1:$BERTH_PORT/"

while true; do
  if exited=$(first_exited); then stop_because "$exited"; fi
  sleep 0.5
done
