# The `dockerfile` step (rootless BuildKit, when the strategy is
# `dockerfile`): builds the Dockerfile the `source` step found into an OCI
# layout at APP_LAYOUT/{commit} (BuildKit's `type=oci,tar=false`), pushing
# nothing: the `push` step does. Bases are pulled with the pull-only
# credential in DOCKER_CONFIG, when the operator gave one. Its termination
# message is BuildKit's `--metadata-file` (JSON), whose
# `containerimage.digest` the controller compares with what was pushed.
#
# buildctl-daemonless.sh (examples/buildctl-daemonless in moby/buildkit at
# the pinned tag) starts buildkitd and tries to reach it
# BUILDCTL_CONNECT_RETRIES_MAX + 1 times, sleeping 0.1 s + 0.02 s per try
# before: its default of 10 gives up after about 2.5 s, too soon for a
# loaded node (moby/buildkit#1423, #3002); the Job sets 75 (about 65 s).
set -eu
umask 002
[ "$(cat "$FACTS/strategy")" = dockerfile ] || exit 0
commit=$(cat "$FACTS/commit")
context=$(cat "$FACTS/context")
dockerfile=$(cat "$FACTS/dockerfile")
mkdir -p "$APP_LAYOUT/$commit"
metadata=$(mktemp)
buildctl-daemonless.sh build \
  --frontend dockerfile.v0 \
  --local context="$context" \
  --local dockerfile="$(dirname "$dockerfile")" \
  --opt filename="$(basename "$dockerfile")" \
  --output type=oci,tar=false,dest="$APP_LAYOUT/$commit" \
  --metadata-file "$metadata"
cat "$metadata" >"$TERMINATION_LOG"
