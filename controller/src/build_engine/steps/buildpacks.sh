# The `buildpacks` step (the builder image, when the strategy is
# `buildpacks`): the Cloud Native Buildpacks lifecycle's phases one after
# another, as Shipwright's buildpacks-v3 strategy runs them, exporting to
# an OCI layout (CNB_USE_LAYOUT, CNB_LAYOUT_DIR: experimental upstream,
# allowed by CNB_EXPERIMENTAL_MODE=warn; platform/experimental_features.go
# in buildpacks/lifecycle v0.21.1) at APP_LAYOUT/{commit}, which is where
# imgutil's layout.ParseRefToPath puts IMAGE:{commit}. The step holds no
# registry credential and reaches no registry: the run image is read from
# the layout the `run-image` step filled, and the `push` step pushes.
#
# - No restore: the layout directory is new for each build, so there is no
#   previous image (the lifecycle's default is the output's own name, here
#   in the layout), and `-skip-layers` provides no layer metadata besides.
# - The default process: `-process-type web` when no buildpack declared a
#   default and there is a `web` process (the exporter refuses a
#   `-process-type` that names no process: phase/exporter.go, entrypoint).
#   Both facts are read from <layers>/config/metadata.toml, which the
#   lifecycle writes with BurntSushi/toml: top-level keys before the first
#   table, each [[processes]] entry's `type` a validated process type.
# - Its termination message is the exporter's report.toml, whose [image]
#   table the controller reads.
set -eu
[ "$(cat "$FACTS/strategy")" = buildpacks ] || exit 0
commit=$(cat "$FACTS/commit")
context=$(cat "$FACTS/context")
output="$IMAGE:$commit"
lifecycle=$LIFECYCLE

echo "===> ANALYZING"
"$lifecycle/analyzer" -layers="$LAYERS" -run-image="$RUN_IMAGE" -skip-layers "$output"
echo "===> DETECTING"
"$lifecycle/detector" -app="$context" -layers="$LAYERS"
echo "===> RESTORING"
"$lifecycle/restorer" -layers="$LAYERS" -skip-layers
echo "===> BUILDING"
"$lifecycle/builder" -app="$context" -layers="$LAYERS"

metadata="$LAYERS/config/metadata.toml"
declared=$(awk '/^[ \t]*\[/ { exit } /^[ \t]*buildpack-default-process-type[ \t]*=/ { found = 1 } END { print found + 0 }' "$metadata")
web=$(awk '/^[ \t]*\[\[processes\]\][ \t]*$/ { p = 1; next } /^[ \t]*\[/ { p = 0 } p && /^[ \t]*type[ \t]*=[ \t]*"web"[ \t]*$/ { found = 1 } END { print found + 0 }' "$metadata")
set --
if [ "$declared" = 0 ] && [ "$web" = 1 ]; then set -- -process-type=web; fi
echo "===> EXPORTING"
"$lifecycle/exporter" -app="$context" -layers="$LAYERS" -report="$LAYERS/report.toml" "$@" "$output"
[ -f "$APP_LAYOUT/$commit/index.json" ] || {
  echo "the lifecycle wrote no image at $APP_LAYOUT/$commit" >&2
  exit 1
}
cat "$LAYERS/report.toml" >"$TERMINATION_LOG"
