#!/usr/bin/env bash
# Builds the local control plane (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, etcd, kwok) from Go modules into a cache that
# survives fresh clones. A stamp holding the hash of the pinned versions makes
# a second run a no-op. Prints the directory on stdout.
set -euo pipefail

KUBE_VERSION=v1.35.4
KWOK_VERSION=v0.8.0
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="${TEST_BINS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/challenge-operator/k8s-${KUBE_VERSION}}"
stamp_input="$(cat "$0" "$here/tools/kube/go.mod" "$here/tools/kube/go.sum" "$here/tools/etcd/go.mod" "$here/tools/etcd/go.sum" | sha256sum | cut -c1-16)"

if [[ -f "$dest/.stamp" && "$(cat "$dest/.stamp")" == "$stamp_input" ]]; then
  echo "$dest"
  exit 0
fi

mkdir -p "$dest"
log() { echo "test-bins: $*" >&2; }
export CGO_ENABLED=0 GOFLAGS=-mod=mod

version_pkg=k8s.io/component-base/version
clientgo_version_pkg=k8s.io/client-go/pkg/version
ldflags="-s -w"
for pkg in "$version_pkg" "$clientgo_version_pkg"; do
  ldflags+=" -X $pkg.gitVersion=${KUBE_VERSION} -X $pkg.gitMajor=1 -X $pkg.gitMinor=35 -X $pkg.gitTreeState=clean"
done

start=$(date +%s)
(
  cd "$here/tools/kube"
  for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    log "building $cmd ${KUBE_VERSION} (a cold build takes minutes)"
    go build -trimpath -tags=selinux,notest,grpcnotrace -ldflags "$ldflags" -o "$dest/$cmd" "k8s.io/kubernetes/cmd/$cmd"
  done
)
(
  cd "$here/tools/etcd"
  log "building etcd"
  go build -trimpath -ldflags "-s -w" -o "$dest/etcd" .
)
log "building kwok ${KWOK_VERSION}"
GOBIN="$dest" GOFLAGS= go install "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}"

# KWOK drives fake nodes and pods through these stages; they ship in its module.
kwok_src="$(GOFLAGS= go env GOMODCACHE)/sigs.k8s.io/kwok@${KWOK_VERSION}/kustomize/stage"
mkdir -p "$dest/kwok-stages"
for f in node-fast/node-initialize node-heartbeat-with-lease/node-heartbeat-with-lease pod-fast/pod-ready pod-fast/pod-delete; do
  :
done
cp -r "$kwok_src" "$dest/kwok-stage-src"
chmod -R u+w "$dest/kwok-stage-src"

echo "$stamp_input" > "$dest/.stamp"
log "done in $(( $(date +%s) - start ))s: $dest"
echo "$dest"
