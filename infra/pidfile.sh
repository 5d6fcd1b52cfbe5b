# Sourced by the scripts that start a helper server for tests and local
# runs (infra/dynamodb-local, infra/registry) to stop the one they started.

# Stops the process PIDFILE records, if it still runs PROGRAM (the pid may
# have been reused since): asks it to end, waits up to 5 s, then kills it;
# removes PIDFILE either way.
stop_pidfile() { # PIDFILE PROGRAM
  local pidfile=$1 program=$2 pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  if grep -q "$program" "/proc/$pid/cmdline" 2>/dev/null && kill "$pid" 2>/dev/null; then
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}
