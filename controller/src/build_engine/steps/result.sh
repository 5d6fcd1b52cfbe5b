# The `result` container: the build's outcome as one JSON object, its
# termination message, from FACTS (written only by Berth's own steps:
# `source` and `push`; the builders mount it read-only).
set -eu
digest=$(cat "$FACTS/digest" 2>/dev/null || true)
if [ -z "$digest" ]; then
  echo "the push step reported no image digest" >&2
  exit 1
fi
printf '{"commit":"%s","strategy":"%s","digest":"%s"}' \
  "$(cat "$FACTS/commit")" "$(cat "$FACTS/strategy")" "$digest" >"$TERMINATION_LOG"
