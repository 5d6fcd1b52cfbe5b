#!/usr/bin/env bash
# `make controller-image`: the controller's OCI image, built without a
# daemon (buildah, vfs storage, chroot isolation, FROM scratch: no base image
# is pulled), written as an OCI archive under the cargo target directory; its
# digest is printed last.
#   controller-image.sh                 build the image
#   controller-image.sh --context-only  only stage the build context (for
#                                       `docker build` / `podman build`)
# The binary is linked statically (glibc static-pie), so the image needs no
# library. BERTH_IMAGE_PROFILE=dev: from an unoptimized build (see below). The image is written with timestamp 0: the same binary gives the
# same digest.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-~/.cache/berth/target}
TARGET=x86_64-unknown-linux-gnu
# The user the controller runs as; infra/k8s/controller.yaml's runAsUser.
USER_ID=65532
out=$CARGO_TARGET_DIR/controller-image
context=$out/context
archive=$out/berth-controller.oci.tar

# BERTH_IMAGE_PROFILE=dev builds the binary unoptimized and without debug
# information: `make test` does, since a release build takes minutes even
# for a one-line change (thin LTO). What ships is the release build.
case ${BERTH_IMAGE_PROFILE:-release} in
  release) profile=(--release) built=release ;;
  dev) profile=(--config profile.dev.debug=0) built=debug ;;
  *) echo "controller-image: BERTH_IMAGE_PROFILE is release or dev" >&2; exit 1 ;;
esac
# The explicit --target keeps crt-static off build scripts and proc macros.
RUSTFLAGS="-C target-feature=+crt-static" \
  cargo build "${profile[@]}" --locked --target "$TARGET" -p berth-controller
binary=$CARGO_TARGET_DIR/$TARGET/$built/berth-controller
version=$("$binary" --version | awk '{ print $2 }')

rm -rf "$context"
mkdir -p "$context"
cp "$binary" "$context/berth-controller"
printf 'berth:x:%s:%s:berth-controller:/nonexistent:/sbin/nologin\n' "$USER_ID" "$USER_ID" >"$context/passwd"
printf 'berth:x:%s:\n' "$USER_ID" >"$context/group"
# The system's CA bundle, where each family of distributions keeps it
# (Debian, Ubuntu, Arch, Alpine; Fedora, RHEL; openSUSE).
ca_bundle=
for candidate in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt \
  /etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem /etc/ssl/ca-bundle.pem; do
  if [ -s "$candidate" ]; then ca_bundle=$candidate; break; fi
done
[ -n "$ca_bundle" ] || { echo "controller-image: no CA bundle found (install ca-certificates)" >&2; exit 1; }
cp "$ca_bundle" "$context/ca-certificates.crt"
if [ "${1:-}" = --context-only ]; then
  echo "build context: $context"
  echo "  docker build --build-arg VERSION=$version -t berth-controller:$version -f Containerfile $context"
  exit 0
fi

scripts/install-tools.sh image
# Storage of its own, so builds never meet other images on the machine.
buildah=(buildah --root "$out/storage" --runroot "$out/run" --storage-driver vfs)
image=localhost/berth-controller:$version
"${buildah[@]}" bud --quiet --isolation chroot --timestamp 0 --layers=false \
  --build-arg "VERSION=$version" -f Containerfile -t "$image" "$context" >/dev/null
# Written beside it and renamed: whoever reads the archive meanwhile reads a
# whole one.
rm -f "$archive.new"
"${buildah[@]}" push --quiet "$image" "oci-archive:$archive.new:berth-controller:$version"
"${buildah[@]}" rmi --all >/dev/null
mv "$archive.new" "$archive"
digest=$(skopeo inspect --format '{{.Digest}}' "oci-archive:$archive")
size=$(stat -c %s "$archive")
echo "image:   berth-controller:$version ($((size / 1024 / 1024)) MiB archive)"
echo "archive: $archive"
echo "digest:  $digest"
