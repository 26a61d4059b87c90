#!/usr/bin/env bash
# Builds the envtest control-plane binaries (kube-apiserver, etcd, kubectl) from
# Go modules into $1, so tests need no download bucket. Skips the build when the
# directory already holds runnable binaries of the pinned version.
#
#   hack/envtest/build.sh "$HOME/.local/share/kubebuilder-envtest/k8s/1.37.2-linux-amd64"
#
# Set ENVTEST_EXTRA_BINARIES="kube-controller-manager" to build it too.
set -euo pipefail

dest=${1:?usage: build.sh DEST_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
k8s_version=$(cd "$here" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
k8s_version=${k8s_version#v}
[ -n "$k8s_version" ] || { echo "no k8s.io/kubernetes version in $here/go.mod" >&2; exit 1; }
minor=$(echo "$k8s_version" | cut -d. -f2)
binaries="kube-apiserver etcd kubectl ${ENVTEST_EXTRA_BINARIES:-}"

runnable() {
  [ -x "$dest/kube-apiserver" ] && [ -x "$dest/etcd" ] && [ -x "$dest/kubectl" ] || return 1
  "$dest/kube-apiserver" --version 2>/dev/null | grep -q "v$k8s_version" || return 1
  "$dest/etcd" --version >/dev/null 2>&1 || return 1
  for b in ${ENVTEST_EXTRA_BINARIES:-}; do [ -x "$dest/$b" ] || return 1; done
}

if runnable; then
  echo "envtest assets v$k8s_version present in $dest"
  exit 0
fi

echo "building envtest assets v$k8s_version into $dest (cold: about 10 minutes)"
mkdir -p "$dest"
tmp=$(mktemp -d "$dest/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="$ldflags -X $pkg.gitVersion=v$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done

pkgs=()
for b in $binaries; do
  case $b in
    etcd) pkgs+=(go.etcd.io/etcd/server/v3) ;;
    *) pkgs+=("k8s.io/kubernetes/cmd/$b") ;;
  esac
done

(cd "$here" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}")
[ -f "$tmp/server" ] && mv "$tmp/server" "$tmp/etcd"
for b in $binaries; do mv -f "$tmp/$b" "$dest/$b"; done
"$dest/kube-apiserver" --version
# sed, not head: head exits after one line and etcd, still writing, dies of
# SIGPIPE, which pipefail turns into a failed build.
"$dest/etcd" --version | sed -n 1p
