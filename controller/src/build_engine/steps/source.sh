# The `source` step (Berth's git image; POSIX sh: BusyBox's in the image,
# dash in the tests): fetches GIT_REF of GIT_REPO into SOURCE and writes
# into FACTS what later steps go by: `commit`, `strategy`, and the
# symlink-free absolute paths `context` and `dockerfile`. Every value comes
# in the environment, so none is ever parsed as shell.
#
# - Nothing but GIT_ORIGIN's scheme is spoken (`protocol.allow`), redirects
#   are refused (`http.followRedirects=false`: a redirect is an error, see
#   git-config(1)), and no system configuration is read.
# - The host's name is resolved once, here (`getent ahosts`: glibc's, or
#   musl's in Alpine's musl-utils), and every address it gives must be
#   public: not loopback, link-local, private, shared (100.64.0.0/10),
#   unique-local, multicast or otherwise reserved; unless GIT_ADDRESSES is
#   `any` (the operator allows the host a private network). Then git is
#   held to those very addresses (`http.curloptResolve`, libcurl's
#   CURLOPT_RESOLVE), so a second answer of the name server cannot lead the
#   fetch elsewhere.
# - A repository that cannot be reached (not resolved, refused, no answer,
#   no access) is said to be so in those words and no others: what failed
#   where would tell a stranger what lies behind the addresses tried.
# - The credential, when there is one (GIT_TOKEN, GIT_USERNAME), is in no
#   URL, argument or file: a helper configured for GIT_ORIGIN alone
#   (`credential.<url>.helper`) reads it from the environment, and answers
#   only when git asks for exactly that protocol and host.
# - A push's commit (GIT_REF, with GIT_BRANCH the app's branch) is built
#   only if it is on that branch: its head, or an ancestor of it (the
#   branch's history is fetched without file contents to tell). GIT_BRANCH
#   `HEAD` is the repository's default branch, as the repository says (its
#   HEAD; no branch can be named HEAD): a push payload's word for it is
#   its signer's to choose.
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

unreachable() {
  fail "the repository $GIT_REPO could not be reached: check its URL, and for a private repository its git_secret"
}

# Whether an address (as getent prints it) may be reached without the
# operator's leave.
public_address() {
  printf '%s\n' "$1" | awk '
    function refuse() { exit 1 }
    function pad(hextet) { while (length(hextet) < 4) hextet = "0" hextet; return hextet }
    /^[0-9.]+$/ {
      if (split($0, o, ".") != 4) refuse()
      a = o[1] + 0; b = o[2] + 0; c = o[3] + 0
      if (a == 0 || a == 10 || a == 127 || a >= 224) refuse()
      if (a == 100 && b >= 64 && b <= 127) refuse()
      if (a == 169 && b == 254) refuse()
      if (a == 172 && b >= 16 && b <= 31) refuse()
      if (a == 192 && b == 168) refuse()
      if (a == 192 && b == 0 && c == 0) refuse()
      if (a == 198 && (b == 18 || b == 19)) refuse()
      exit 0
    }
    /:/ {
      x = tolower($0)
      # Unspecified, loopback, IPv4-mapped and -compatible.
      if (x ~ /^::/) refuse()
      split(x, h, ":")
      first = pad(h[1]); second = pad(h[2])
      if (first == "0000" || first == "0100") refuse()
      # Link-local (and the old site-local), unique-local (fd00:ec2::254
      # among them), multicast.
      if (first ~ /^fe[89a-f]/ || first ~ /^f[cd]/ || first ~ /^ff/) refuse()
      # NAT64: an IPv4 address inside.
      if (first == "0064" && second == "ff9b") refuse()
      exit 0
    }
    { refuse() }'
}

scheme=${GIT_ORIGIN%%://*}
authority=${GIT_ORIGIN#*://}
case "$authority" in
  *:*) host=${authority%:*} port=${authority##*:} ;;
  *) host=$authority port=443 ;;
esac
[ "$scheme" = https ] || [ "$authority" != "$host" ] || port=80
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

# Resolved once; refused unless public; pinned.
addresses=$(getent ahosts "$host" 2>/dev/null | awk '!seen[$1]++ { print $1 }') || addresses=
[ -n "$addresses" ] || unreachable
pinned=
for address in $addresses; do
  if [ "${GIT_ADDRESSES:-public}" != any ]; then
    public_address "$address" || unreachable
  fi
  case "$address" in *:*) address="[$address]" ;; esac
  pinned=${pinned:+$pinned,}$address
done
git config --global http.curloptResolve "$host:$port:$pinned"

cd "$SOURCE"
git init --quiet .
git remote add origin "$GIT_REPO"
# Reached at all? Its answer is not repeated either way.
git ls-remote --quiet origin HEAD >/dev/null 2>&1 || unreachable
errors=$(mktemp)
resolved=
if [ -n "${GIT_BRANCH:-}" ]; then
  # A push: the commit must be on the app's branch (a fork's, or one
  # pushed elsewhere, is not built).
  if [ "$GIT_BRANCH" = HEAD ]; then
    remote=HEAD named="the default branch"
  else
    remote="refs/heads/$GIT_BRANCH" named="the branch $GIT_BRANCH"
  fi
  branch="+$remote:refs/remotes/origin/pushed-to"
  git fetch --quiet --depth 1 origin "$branch" 2>"$errors" \
    || { cat "$errors" >&2; fail "no ${named#the } in $GIT_REPO"; }
  if [ "$(git rev-parse --verify "refs/remotes/origin/pushed-to^{commit}")" != "$GIT_REF" ]; then
    # Not its head (the branch moved on since): its history, without file
    # contents, says whether the commit is in it.
    git fetch --quiet --unshallow --filter=blob:none origin "$branch"
    git merge-base --is-ancestor "$GIT_REF" refs/remotes/origin/pushed-to 2>/dev/null \
      || fail "commit $GIT_REF is not on $named of $GIT_REPO: a push builds only the commits of the app's branch"
  fi
  resolved=$GIT_REF
elif [ -z "${GIT_REF:-}" ]; then
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
