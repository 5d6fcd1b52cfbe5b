# The processes `make dev` starts, sourced (after scripts/local-env.sh) by
# scripts/dev.sh and scripts/reset.sh. Each is recorded as
# $BERTH_LOCAL_DIR/pids/NAME.pid, NAME being the program, which is checked
# before any signal: a pid may have been reused.

pids_dir=$BERTH_LOCAL_DIR/pids
dynamodb_pidfile=$BERTH_LOCAL_DIR/dynamodb/dynamodb.pid

record_pid() { # NAME PID
  mkdir -p "$pids_dir"
  echo "$2" >"$pids_dir/$1.pid"
}

# Prints NAME's recorded pid if that process still runs NAME.
live_pid() { # NAME
  local file="$pids_dir/$1.pid" pid
  [ -f "$file" ] || return 1
  pid=$(cat "$file")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$1" || return 1
  echo "$pid"
}

# Stops what a `make dev` started (running, or left behind when it was
# killed hard), the API first and the stand-in last but one (it saves its
# state when told to stop), then DynamoDB Local; waits until each is gone.
stop_recorded() {
  local name pid
  for name in berth-local berth-controller kube-standin dev.sh; do
    if pid=$(live_pid "$name"); then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do live_pid "$name" >/dev/null || break; sleep 0.1; done
      if live_pid "$name" >/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
    fi
    rm -f "$pids_dir/$name.pid"
  done
  infra/dynamodb-local/dynamodb-local.sh stop "$dynamodb_pidfile"
}
