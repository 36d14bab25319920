#!/usr/bin/env bash
# Builds, from Go modules, into a cache that survives fresh clones, what a caller needs and no more:
#   hack/test-bins.sh                 the tests: the local control plane (kube-apiserver, kube-controller-manager,
#                                     kube-scheduler, etcd, kwok), OLM's olm operator and Prometheus' promtool
#   hack/test-bins.sh --demo          the demo: the local control plane and kubectl
#   hack/test-bins.sh --with-kubectl  the tests' and kubectl
# Each binary has a stamp of what it is built from, so a second run is a no-op and a run that needs more (the tests
# after the demo) builds only what is missing. Independent builds run side by side, TEST_BINS_JOBS at a time (the
# number of cores by default, at most 2: each go build already compiles on every core, a second one fills the cores
# while the other links). Prints the directory on stdout; progress goes to stderr.
set -euo pipefail

KUBE_VERSION=v1.35.4
KWOK_VERSION=v0.8.0
OLM_VERSION=v0.38.0
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="${TEST_BINS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/challenge-operator/k8s-${KUBE_VERSION}}"
log() { echo "test-bins: $*" >&2; }

control_plane=(kube-apiserver kube-controller-manager kube-scheduler etcd kwok)
case "${1:-}" in
  "") wanted=("${control_plane[@]}" olm promtool) ;;
  --demo) wanted=("${control_plane[@]}" kubectl) ;;
  --with-kubectl) wanted=("${control_plane[@]}" olm promtool kubectl) ;;
  *) echo "usage: $0 [--demo | --with-kubectl]" >&2; exit 2 ;;
esac

hash16() { sha256sum | cut -c1-16; }
# stamp_of prints what a binary is built from: a new pin rebuilds the binaries it concerns alone.
stamp_of() {
  case "$1" in
    kube-* | kubectl) (echo "$KUBE_VERSION"; cat "$here/tools/kube/go.sum") | hash16 ;;
    etcd) hash16 <"$here/tools/etcd/go.sum" ;;
    kwok) echo "$KWOK_VERSION" | hash16 ;;
    olm) (echo "$OLM_VERSION"; cat "$here/tools/olm/go.sum") | hash16 ;;
    promtool) hash16 <"$here/tools/promtool/go.sum" ;;
  esac
}
current() { [[ -x "$dest/$1" && "$(cat "$dest/.stamp-$1" 2>/dev/null)" == "$(stamp_of "$1")" ]]; }
built() { stamp_of "$1" >"$dest/.stamp-$1"; }

# A cache filled before the stamps were per binary: its one stamp covered the control plane and olm (kubectl was
# deleted whenever they were rebuilt), .promtool-stamp promtool. Adopt what it vouches for rather than rebuild it.
adopt_old_stamps() {
  local old name
  old="$( (echo "$KUBE_VERSION $KWOK_VERSION $OLM_VERSION"; cat "$here"/tools/{etcd,kube,olm}/go.sum) | hash16)"
  if [[ "$(cat "$dest/.stamp" 2>/dev/null)" == "$old" ]]; then
    for name in "${control_plane[@]}" olm kubectl; do
      [[ -x "$dest/$name" && ! -f "$dest/.stamp-$name" ]] && built "$name"
    done
  fi
  if [[ -x "$dest/promtool" && ! -f "$dest/.stamp-promtool" &&
    "$(cat "$dest/.promtool-stamp" 2>/dev/null)" == "$(stamp_of promtool)" ]]; then
    built promtool
  fi
  rm -f "$dest/.promtool-stamp"
}

# build_kube builds the Kubernetes commands named in one go build, which compiles the packages they share once.
build_kube() {
  local ldflags="-s -w" pkg pkgs=() name
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=${KUBE_VERSION} -X $pkg.gitMajor=1 -X $pkg.gitMinor=35 -X $pkg.gitTreeState=clean"
  done
  for name in "$@"; do pkgs+=("k8s.io/kubernetes/cmd/$name"); done
  log "building $* ${KUBE_VERSION} (cold, the longest of the builds)"
  (cd "$here/tools/kube" && go build -trimpath -tags=selinux,notest,grpcnotrace -ldflags "$ldflags" -o "$dest/" "${pkgs[@]}")
  for name in "$@"; do built "$name"; done
}

build_one() {
  log "building $1"
  case "$1" in
    etcd) (cd "$here/tools/etcd" && go build -trimpath -ldflags "-s -w" -o "$dest/etcd" .) ;;
    kwok) GOBIN="$dest" GOFLAGS= go install "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}" ;;
    olm) (cd "$here/tools/olm" && go build -trimpath -ldflags "-s -w" -o "$dest/olm" \
      github.com/operator-framework/operator-lifecycle-manager/cmd/olm) ;;
    promtool) (cd "$here/tools/promtool" && go build -trimpath -tags remove_all_sd -ldflags "-s -w" \
      -o "$dest/promtool" github.com/prometheus/prometheus/cmd/promtool) ;;
  esac
  built "$1"
}

# run starts a build once fewer than $slots run; a build that fails leaves its binaries unstamped.
run() {
  while (($(jobs -rp | wc -l) >= slots)); do wait -n || true; done
  ("$@" >&2) &
}

mkdir -p "$dest"
# Two runs at once (make -j, a test beside the demo) take turns instead of writing the same files.
exec 9>"$dest/.lock"
flock 9
adopt_old_stamps

kube=() others=()
for name in "${wanted[@]}"; do
  current "$name" && continue
  case "$name" in
    kube-* | kubectl) kube+=("$name") ;;
    *) others+=("$name") ;;
  esac
done
if ((${#kube[@]} + ${#others[@]} > 0)); then
  export CGO_ENABLED=0 GOFLAGS=-mod=mod
  nproc="$(nproc 2>/dev/null || echo 1)"
  slots="${TEST_BINS_JOBS:-$((nproc < 2 ? 1 : 2))}"
  start=$(date +%s)
  # The Kubernetes build is the longest: it starts first, the others fill the other slot.
  ((${#kube[@]} == 0)) || run build_kube "${kube[@]}"
  for name in "${others[@]}"; do run build_one "$name"; done
  wait
  for name in "${kube[@]}" "${others[@]}"; do
    current "$name" || { log "building $name failed"; exit 1; }
  done
  all=("${kube[@]}" "${others[@]}")
  log "built ${all[*]} in $(($(date +%s) - start))s into $dest"
fi
# The tests find the cache by this stamp when KUBEBUILDER_ASSETS is unset (test/controlplane).
for name in "${control_plane[@]}"; do stamp_of "$name"; done | hash16 >"$dest/.stamp"

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
