#!/usr/bin/env bash
# `make dev`: Berth on this machine.
#
# - DynamoDB Local on 127.0.0.1:${BERTH_DYNAMODB_PORT:-8000}, data kept under .local/;
# - the table ${BERTH_TABLE:-berth}, bootstrapped with the owner admin@localhost in
#   organization `default` when it is new;
# - a cluster: with KUBECONFIG set, that one (a kind or k3d cluster works);
#   without, Berth's stand-in Kubernetes API server on 127.0.0.1:${BERTH_STANDIN_PORT:-6443}
#   (workloads are simulated: Deployments get pods that "run" on a simulated node with
#   simulated logs; its objects are kept in .local/standin-state.json across runs);
#   its kubeconfig is stored and the CRDs applied;
# - the controller as a local process against that cluster;
# - the whole API on http://127.0.0.1:${BERTH_PORT:-3000}.
# Ctrl-C stops everything it started; so does `make reset`, which finds the
# processes in .local/pids/ and then wipes .local/.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/local-env.sh
source scripts/local-processes.sh
standin_port=${BERTH_STANDIN_PORT:-6443}

if pid=$(live_pid dev.sh); then
  echo "make dev already runs (pid $pid); stop it with Ctrl-C, or with \`make reset\` (which also wipes .local/)" >&2
  exit 1
fi

scripts/install-tools.sh
echo "== building"
cargo build --locked -p berth-local -p berth-kube-standin -p berth-controller --bins
bin=${CARGO_TARGET_DIR:-target}/debug

ddb=infra/dynamodb-local/dynamodb-local.sh
pidfile=.local/dynamodb/dynamodb.pid
children=()
cleanup() {
  for pid in "${children[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait "${children[@]}" 2>/dev/null || true # the stand-in saves its state as it stops
  "$ddb" stop "$pidfile"
  rm -f "$pids_dir"/*.pid
}
stop_recorded # what a previous run that was killed hard left behind
record_pid dev.sh $$
trap cleanup EXIT
"$ddb" start "$BERTH_DYNAMODB_PORT" --data .local/dynamodb/data "$pidfile"

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
  kubeconfig=.local/standin/kubeconfig
  mkdir -p .local/standin
  rm -f "$kubeconfig"
  "$bin/kube-standin" --addr "127.0.0.1:$standin_port" --kubeconfig-out "$kubeconfig" \
    --simulate-controllers --simulate-kubelet --state-file .local/standin-state.json \
    >.local/standin/standin.log 2>&1 &
  children+=($!)
  record_pid kube-standin $!
  for _ in $(seq 1 100); do [ -s "$kubeconfig" ] && break; sleep 0.1; done
  [ -s "$kubeconfig" ] || { echo "the stand-in cluster did not start; see .local/standin/standin.log" >&2; exit 1; }
  echo "== cluster: no KUBECONFIG, so Berth's stand-in Kubernetes API server on 127.0.0.1:$standin_port."
  echo "   Workloads are simulated: pods \"run\" on a simulated node, but nothing runs."
  echo "   Its objects are kept in .local/standin-state.json (delete it to start empty)."
fi
"$bin/berth-admin" cluster set --kubeconfig "$kubeconfig"
"$bin/berth-admin" cluster install --kubeconfig "$kubeconfig"
KUBECONFIG=$kubeconfig "$bin/berth-controller" >.local/controller.log 2>&1 &
children+=($!)
record_pid berth-controller $!
echo "== controller running (log: .local/controller.log)"

echo
echo "Berth: http://127.0.0.1:$BERTH_PORT/api/v1 (DynamoDB Local on port $BERTH_DYNAMODB_PORT, data in .local/)"
"$bin/berth-local" &
children+=($!)
record_pid berth-local $!
wait $!
