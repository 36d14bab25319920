#!/usr/bin/env bash
# The main job on one machine: a local control plane (kube-apiserver, etcd,
# controller-manager, scheduler, KWOK), the operator, and the sample Challenge
# going to Running with its endpoint. Cleans up at the end unless KEEP=1.
set -euo pipefail
cd "$(dirname "$0")/.."

assets="${KUBEBUILDER_ASSETS:?run through make demo}"
work="$(mktemp -d /tmp/challenge-demo-XXXX)"
export KUBECONFIG="$work/kubeconfig"
kubectl="$assets/kubectl"
pids=()
step() { printf '\n==> %s\n' "$*"; }
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

step "building the operator and the local cluster"
go build -o bin/manager .
go build -o bin/local-cluster ./internal/testcluster/cmd/local-cluster

step "starting the local control plane (logs in $work)"
bin/local-cluster --write-kubeconfig "$KUBECONFIG" --log-dir "$work" --crds config/crd/bases >"$work/local-cluster.out" 2>&1 &
pids+=($!)
for _ in $(seq 600); do
  [[ -s "$KUBECONFIG" ]] && break
  kill -0 "${pids[0]}" 2>/dev/null || { cat "$work/local-cluster.out"; exit 1; }
  sleep 0.1
done
"$kubectl" get nodes -o wide

step "running the operator (log: $work/operator.log)"
bin/manager --watches-file=watches.yaml --flag-secret-namespaces=default --metrics-bind-address=127.0.0.1:18080 \
  --health-probe-bind-address=127.0.0.1:18081 >"$work/operator.log" 2>&1 &
pids+=($!)

step "applying config/samples"
"$kubectl" apply -k config/samples
start=$(date +%s%N)
"$kubectl" wait --for=condition=Ready challenge --all -A --timeout=120s
echo "Ready after $(( ($(date +%s%N) - start) / 1000000 )) ms"
"$kubectl" get challenges -A -o wide
"$kubectl" get challenges -n default -o jsonpath='{range .items[*]}{.metadata.name}: {.status.phase} {.status.endpoint.address} expires {.status.expiresAt} flag in Secret {.status.flagSecretName}{"\n"}{end}'
"$kubectl" get challengetemplates
"$kubectl" get deploy,svc,networkpolicy,pods -n default -l ctf.challenge-operator.io/instance

if [[ "${KEEP:-0}" == "1" ]]; then
  step "left running: export KUBECONFIG=$KUBECONFIG; kubectl is $kubectl. Ctrl-C stops everything."
  wait "${pids[0]}"
  exit 0
fi

step "deleting the sample: the instance passes through Deleted and every object goes"
"$kubectl" delete -k config/samples --wait=true --timeout=60s
"$kubectl" get deploy,svc,networkpolicy,secrets -n default -l ctf.challenge-operator.io/instance
step "done; stopping the operator and the control plane"
