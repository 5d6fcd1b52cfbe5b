# The `run-image` step (Berth's push tool, skopeo, when the strategy is
# `buildpacks`): copies the run image the lifecycle builds on into the OCI
# layout the lifecycle reads it from (RUN_IMAGE_LAYOUT, the path the
# lifecycle derives from the name: imgutil's layout.ParseRefToPath), with
# the pull-only credential when the operator gave one. It runs no tenant
# code. skopeo reads `oci:PATH[:REF]` up to the first `:`
# (oci/internal/oci_util.go), so it is given a path relative to the
# layout's parent, which has none.
set -eu
umask 002
[ "$(cat "$FACTS/strategy")" = buildpacks ] || exit 0
set --
if [ -f "$PULL_AUTH" ]; then set -- --src-authfile "$PULL_AUTH"; fi
# Integrity comes from the reference (pinned by digest where the operator
# pins it), not from signatures: accept what the reference names.
policy=$(mktemp)
printf '{"default":[{"type":"insecureAcceptAnything"}]}' >"$policy"
mkdir -p "$(dirname "$RUN_IMAGE_LAYOUT")"
cd "$(dirname "$RUN_IMAGE_LAYOUT")"
skopeo --policy "$policy" copy --quiet --retry-times 3 "$@" \
  "docker://$RUN_IMAGE" "oci:$(basename "$RUN_IMAGE_LAYOUT")"
echo "run image $RUN_IMAGE ready"
