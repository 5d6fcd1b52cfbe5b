#!/usr/bin/env bash
# Benchmarks of this tree and of an earlier revision, side by side in one run:
#   scripts/bench-compare.sh REV [ROUNDS]
# Each benchmark already measures Berth against a baseline of its own in the
# same process; here the two builds' benchmark binaries take turns, round
# after round (before, after, before, after…), each against a throwaway
# DynamoDB Local, so the machine's drift hits both alike. The cold start
# bench puts the earlier build's function binaries into its own rounds
# (BERTH_BENCH_BEFORE). Output: one file per benchmark, build and round in
# $BERTH_BENCH_OUT (default: a new folder under /tmp), named there at the end.
#
# The earlier revision is exported (git archive) to a folder of the cache,
# kept for the next run, and built into a target folder of its own: both
# builds name their release binaries alike.
set -euo pipefail
cd "$(dirname "$0")/.."

rev=${1:?usage: scripts/bench-compare.sh REV [ROUNDS]}
rounds=${2:-3}
benches=(requests apps audit_load deploy_latency)
functions=$(ls functions)
target=${CARGO_TARGET_DIR:-$PWD/target}
before_target=${BERTH_BENCH_BEFORE_TARGET:-$HOME/.cache/berth/target-bench-before}
out=${BERTH_BENCH_OUT:-$(mktemp -d /tmp/bench-compare.XXXXXX)}
commit=$(git rev-parse --verify "$rev^{commit}")
before_tree=$HOME/.cache/berth/bench-before/$commit
if [ ! -d "$before_tree" ]; then
    mkdir -p "$before_tree.partial"
    git archive "$commit" | tar -x -C "$before_tree.partial"
    mv "$before_tree.partial" "$before_tree"
fi

# Builds one tree's release binaries (functions, cold start baselines) and
# prints the path of each benchmark's executable, as "name path".
build() {
    local tree=$1 target_dir=$2
    (
        cd "$tree"
        export CARGO_TARGET_DIR=$target_dir
        for function in $functions; do
            cargo build --release --locked -q -p "berth-fn-$function" >&2
        done
        cargo build --release --locked -q --example bare_lambda --example bare_lambda_dynamodb >&2
        local bench_args=()
        for bench in "${benches[@]}" cold_start; do bench_args+=(--bench "$bench"); done
        cargo bench --locked --no-run --message-format=json "${bench_args[@]}" 2>/dev/null |
            python3 -c '
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("reason") == "compiler-artifact" and message.get("executable") \
            and "bench" in message["target"]["kind"]:
        print(message["target"]["name"], message["executable"])'
    )
}

echo "building $rev in $before_tree" >&2
build "$before_tree" "$before_target" >"$out/before.executables"
echo "building this tree" >&2
build "$PWD" "$target" >"$out/after.executables"

executable() { awk -v name="$2" '$1 == name { print $2 }' "$out/$1.executables"; }

for round in $(seq "$rounds"); do
    for bench in "${benches[@]}"; do
        for build in before after; do
            echo "round $round: $bench ($build)" >&2
            scripts/with-dynamodb.sh "$(executable "$build" "$bench")" --bench \
                >"$out/$bench.$build.$round.txt" 2>"$out/$bench.$build.$round.log"
        done
    done
done

echo "cold start, both builds in each round" >&2
BERTH_BENCH_BEFORE=$before_target/release scripts/with-dynamodb.sh \
    "$(executable after cold_start)" --bench >"$out/cold_start.txt" 2>"$out/cold_start.log"

echo "results in $out"
