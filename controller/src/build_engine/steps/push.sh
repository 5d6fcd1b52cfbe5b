# The `push` step (Berth's push tool, skopeo): the only step that mounts
# the push credential, and it runs no tenant code. It pushes the OCI
# layout the builder left at APP_LAYOUT/{commit} to IMAGE:{commit},
# unchanged (`--preserve-digests`: fail rather than alter the manifest),
# and writes the digest skopeo reports (`--digestfile`: the digest of the
# manifest it wrote) to FACTS/digest.
#
# The layout was written by a step that ran tenant code, so it is read
# only if its path has no symbolic link and it holds nothing but
# directories and regular files: a link could make the push read, and
# send to the tenant's own repository, a file outside the layout.
set -eu
umask 002
fail() {
  echo "$*" >&2
  exit 1
}
commit=$(cat "$FACTS/commit")
layout="$APP_LAYOUT/$commit"
[ -d "$layout" ] && [ "$(cd "$layout" && pwd -P)" = "$layout" ] \
  || fail "the builder left no image to push (no OCI layout at $layout)"
# The first entry under $1 (hidden ones too) that is neither a directory
# nor a regular file; plain sh, since the image need not have find(1).
odd_entry() {
  for entry in "$1"/* "$1"/.[!.]* "$1"/..?*; do
    if [ -L "$entry" ]; then
      echo "$entry"
      return
    fi
    [ -e "$entry" ] || continue
    if [ -d "$entry" ]; then
      found=$(odd_entry "$entry")
      if [ -n "$found" ]; then
        echo "$found"
        return
      fi
    elif [ ! -f "$entry" ]; then
      echo "$entry"
      return
    fi
  done
}
odd=$(odd_entry "$layout")
[ -z "$odd" ] || fail "the image the builder left holds something other than files and directories: ${odd#"$layout"/}"
[ -f "$layout/index.json" ] || fail "the builder left no image to push (no index.json in $layout)"
policy=$(mktemp)
printf '{"default":[{"type":"insecureAcceptAnything"}]}' >"$policy"
# `oci:PATH[:REF]` is cut at the first `:` (oci/internal/oci_util.go): the
# path is given relative to the layout's parent, the commit, which has none.
cd "$APP_LAYOUT"
skopeo --policy "$policy" copy --quiet --retry-times 3 --preserve-digests \
  --dest-authfile "$PUSH_AUTH" --digestfile "$FACTS/digest" \
  "oci:$commit" "docker://$IMAGE:$commit"
echo "pushed $IMAGE:$commit ($(cat "$FACTS/digest"))"
