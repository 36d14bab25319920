#!/usr/bin/env bash
# Builds the local control plane (kube-apiserver, kube-controller-manager,
# kube-scheduler, etcd, kwok; kubectl with --with-kubectl), OLM's olm operator and Prometheus' promtool from Go
# modules into a cache that survives fresh clones. Stamps of the pinned versions make a second run a no-op.
# Prints the directory on stdout; progress goes to stderr.
set -euo pipefail

KUBE_VERSION=v1.35.4
KWOK_VERSION=v0.8.0
OLM_VERSION=v0.38.0
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="${TEST_BINS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/challenge-operator/k8s-${KUBE_VERSION}}"
stamp="$( (echo "$KUBE_VERSION $KWOK_VERSION $OLM_VERSION"; cat "$here"/tools/{etcd,kube,olm}/go.sum) | sha256sum | cut -c1-16)"
# promtool has a stamp of its own: a new Prometheus rebuilds promtool alone.
promtool_stamp="$(sha256sum <"$here/tools/promtool/go.sum" | cut -c1-16)"
log() { echo "test-bins: $*" >&2; }

build_kube() {
  local ldflags="-s -w" pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=${KUBE_VERSION} -X $pkg.gitMajor=1 -X $pkg.gitMinor=35 -X $pkg.gitTreeState=clean"
  done
  log "building $1 ${KUBE_VERSION} (a cold build takes several minutes)"
  (cd "$here/tools/kube" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -tags=selinux,notest,grpcnotrace -ldflags "$ldflags" -o "$dest/$1" "k8s.io/kubernetes/cmd/$1")
}

build() {
  export CGO_ENABLED=0 GOFLAGS=-mod=mod
  local start cmd
  start=$(date +%s)
  for cmd in kube-apiserver kube-controller-manager kube-scheduler; do
    build_kube "$cmd"
  done
  log "building etcd"
  (cd "$here/tools/etcd" && go build -trimpath -ldflags "-s -w" -o "$dest/etcd" .)
  log "building kwok ${KWOK_VERSION}"
  GOBIN="$dest" GOFLAGS= go install "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}"
  log "building olm ${OLM_VERSION}"
  (cd "$here/tools/olm" && go build -trimpath -ldflags "-s -w" -o "$dest/olm" github.com/operator-framework/operator-lifecycle-manager/cmd/olm)
  echo "$stamp" > "$dest/.stamp"
  log "built in $(( $(date +%s) - start ))s into $dest"
}

mkdir -p "$dest"
if [[ ! -f "$dest/.stamp" || "$(cat "$dest/.stamp")" != "$stamp" ]]; then
  rm -f "$dest/kubectl"
  build
fi
if [[ ! -x "$dest/promtool" || "$(cat "$dest/.promtool-stamp" 2>/dev/null)" != "$promtool_stamp" ]]; then
  log "building promtool (a cold build takes a few minutes)"
  (cd "$here/tools/promtool" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -tags remove_all_sd -ldflags "-s -w" \
    -o "$dest/promtool" github.com/prometheus/prometheus/cmd/promtool)
  echo "$promtool_stamp" > "$dest/.promtool-stamp"
fi
# kubectl is for the demo and for people, not for the tests: built on request.
if [[ "${1:-}" == "--with-kubectl" && ! -x "$dest/kubectl" ]]; then
  build_kube kubectl
fi

# KWOK drives fake nodes and pods through stages that ship in its module:
# nodes become Ready and keep a lease, pods become Ready at once and go when deleted.
stages="$(GOFLAGS= go env GOMODCACHE)/sigs.k8s.io/kwok@${KWOK_VERSION}/kustomize/stage"
if [[ ! -d "$stages" ]]; then
  GOFLAGS= go mod download "sigs.k8s.io/kwok@${KWOK_VERSION}" >&2
fi
mkdir -p "$dest/kwok-stages"
for f in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease pod/fast/pod-ready pod/fast/pod-delete; do
  install -m 0644 "$stages/$f.yaml" "$dest/kwok-stages/$(basename "$f").yaml"
done
echo "$dest"
