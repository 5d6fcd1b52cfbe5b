# The `source` step (Berth's git image; POSIX sh: BusyBox's in the image,
# dash in the tests): fetches GIT_REF of GIT_REPO into SOURCE and writes
# into FACTS what later steps go by: `commit`, `strategy`, and the
# symlink-free absolute paths `context` and `dockerfile`. Every value comes
# in the environment, so none is ever parsed as shell.
#
# - Nothing but GIT_ORIGIN's scheme is spoken (`protocol.allow`), redirects
#   are refused (`http.followRedirects=false`: a redirect is an error, see
#   git-config(1)), and no system configuration is read.
# - The credential, when there is one (GIT_TOKEN, GIT_USERNAME), is in no
#   URL, argument or file: a helper configured for GIT_ORIGIN alone
#   (`credential.<url>.helper`) reads it from the environment, and answers
#   only when git asks for exactly that protocol and host.
# - A ref is fetched by name (a branch, a tag, or a full commit id where
#   the server serves commits by id, as GitHub and GitLab do). What no
#   server resolves, a commit id of 4 to 40 hex digits, is looked up
#   locally: every branch and tag is fetched without file contents
#   (`--filter=blob:none`, or whole where the server cannot filter) and
#   the id must name exactly one commit.
# - `context_dir` and `dockerfile` are taken after resolving symbolic
#   links, and must stay inside the checkout.
set -eu
umask 002

fail() {
  echo "$*" >&2
  exit 1
}

scheme=${GIT_ORIGIN%%://*}
mkdir -p "$HOME" "$FACTS"
export GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
git config --global protocol.allow never
git config --global "protocol.$scheme.allow" always
git config --global http.followRedirects false
git config --global advice.detachedHead false
if [ -n "${GIT_TOKEN:-}" ]; then
  # $1 is git's action (get, store, erase); git writes the request's
  # `key=value` lines on standard input and closes it.
  git config --global "credential.$GIT_ORIGIN.helper" \
    '!f() { test "$1" = get || exit 0; protocol=; asked=; while IFS= read -r line; do case "$line" in protocol=*) protocol=${line#protocol=} ;; host=*) asked=${line#host=} ;; esac; done; test "$protocol" = "${GIT_ORIGIN%%://*}" && test "$asked" = "${GIT_ORIGIN#*://}" || exit 0; echo "username=${GIT_USERNAME:-x-access-token}"; echo "password=$GIT_TOKEN"; }; f'
fi

cd "$SOURCE"
git init --quiet .
git remote add origin "$GIT_REPO"
errors=$(mktemp)
resolved=
if [ -z "${GIT_REF:-}" ]; then
  git fetch --quiet --depth 1 origin HEAD
elif ! git fetch --quiet --depth 1 origin "$GIT_REF" 2>"$errors"; then
  case "$GIT_REF" in
    *[!0-9a-f]* | ? | ?? | ???) cat "$errors" >&2; fail "no branch or tag $GIT_REF in $GIT_REPO" ;;
  esac
  git fetch --quiet --filter=blob:none origin \
    '+refs/heads/*:refs/remotes/origin/*' '+refs/tags/*:refs/tags/*'
  resolved=$(git rev-parse --verify --quiet "$GIT_REF^{commit}") \
    || fail "no branch, tag or commit $GIT_REF in $GIT_REPO (an abbreviated commit id may be ambiguous: give more digits)"
  case "$resolved" in
    "$GIT_REF"*) ;;
    *) fail "$GIT_REF names no commit of $GIT_REPO" ;;
  esac
fi
rm -f "$errors"
commit=${resolved:-$(git rev-parse --verify 'FETCH_HEAD^{commit}')}
git checkout --quiet --detach "$commit"

# Paths, with every symbolic link resolved, must stay in the checkout.
root=$(pwd -P)
inside() {
  case "$1" in
    "$root" | "$root"/*) return 0 ;;
  esac
  return 1
}
context=$(cd "$root/${CONTEXT_DIR:-.}" 2>/dev/null && pwd -P) \
  || fail "context_dir ${CONTEXT_DIR:-.} is not a directory of the repository at $commit"
inside "$context" || fail "context_dir $CONTEXT_DIR leads out of the repository (through a symbolic link)"
dockerfile=
if [ -e "$context/$DOCKERFILE" ] || [ -L "$context/$DOCKERFILE" ]; then
  dockerfile=$(readlink -f "$context/$DOCKERFILE") || dockerfile=
  [ -n "$dockerfile" ] && inside "$dockerfile" \
    || fail "dockerfile $DOCKERFILE leads out of the repository (through a symbolic link)"
  [ -f "$dockerfile" ] || fail "dockerfile $DOCKERFILE is not a file of the repository at $commit"
fi
case "$STRATEGY" in
  auto) if [ -n "$dockerfile" ]; then strategy=dockerfile; else strategy=buildpacks; fi ;;
  dockerfile)
    [ -n "$dockerfile" ] || fail "the repository has no ${CONTEXT_DIR:+$CONTEXT_DIR/}$DOCKERFILE at $commit"
    strategy=dockerfile
    ;;
  *) strategy=$STRATEGY ;;
esac
printf '%s' "$commit" >"$FACTS/commit"
printf '%s' "$strategy" >"$FACTS/strategy"
printf '%s' "$context" >"$FACTS/context"
printf '%s' "$dockerfile" >"$FACTS/dockerfile"
echo "commit $commit, strategy $strategy"
