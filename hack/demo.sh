#!/usr/bin/env bash
# The main job on one machine: a local control plane (kube-apiserver, etcd,
# controller-manager, scheduler, KWOK), the operator, and the sample Challenge
# going to Running with its endpoint, and the instancer with a team's link.
# It stays up until Ctrl-C, then deletes every instance (each passes through
# Deleted) and stops what it started. ONESHOT=1 does that at once instead.
set -euo pipefail
cd "$(dirname "$0")/.."

assets="${KUBEBUILDER_ASSETS:?run through make demo}"
work="$(mktemp -d /tmp/challenge-demo-XXXX)"
export KUBECONFIG="$work/kubeconfig"
kubectl="$assets/kubectl"
pids=()
step() { printf '\n==> %s\n' "$*"; }
# Children run in sessions of their own: the Ctrl-C that ends the wait below
# must not reach them before the instances are torn down.
start() { setsid "$@" & pids+=($!); }
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

step "building the operator and the local cluster"
go build -o bin/manager .
go build -o bin/local-cluster ./test/controlplane/cmd/local-cluster

step "starting the local control plane (logs in $work)"
start bin/local-cluster --write-kubeconfig "$KUBECONFIG" --log-dir "$work" --crds config/crd/bases >"$work/local-cluster.out" 2>&1
for _ in $(seq 600); do
  [[ -s "$KUBECONFIG" ]] && break
  kill -0 "${pids[0]}" 2>/dev/null || { cat "$work/local-cluster.out"; exit 1; }
  sleep 0.1
done
"$kubectl" get nodes -o wide

step "running the operator and its instancer (log: $work/operator.log)"
# The instancer's token key, as the Secret volume config/instancer mounts.
mkdir -m 700 "$work/instancer-keys"
head -c 32 /dev/urandom | base64 >"$work/instancer-keys/demo"
# The flag key that seals each team's perTeam flags (the Secret
# challenge-operator-flag-key both Deployments mount), and the platform's
# key for the instancer's platform API (challenge-operator-platform-key).
head -c 32 /dev/urandom | base64 >"$work/flag-key"
mkdir -m 700 "$work/platform-keys"
head -c 32 /dev/urandom | base64 >"$work/platform-keys/ctfd"
# Metrics as in a cluster: HTTPS, for a token allowed by the metrics-reader ClusterRole.
start bin/manager --watches-file=watches.yaml --flag-secret-namespaces=default --flag-key-file="$work/flag-key" --metrics-bind-address=127.0.0.1:18080 \
  --health-probe-bind-address=127.0.0.1:18081 >"$work/operator.log" 2>&1
# The instancer is a process of its own, as in config/instancer (log: $work/instancer.log).
start bin/manager instancer --bind-address=127.0.0.1:18443 --key-dir="$work/instancer-keys" --namespace=default \
  --flag-key-file="$work/flag-key" --platform-key-dir="$work/platform-keys" \
  --metrics-bind-address=0 --health-probe-bind-address=127.0.0.1:18082 >"$work/instancer.log" 2>&1

step "applying config/samples"
"$kubectl" apply -k config/samples
start=$(date +%s%N)
"$kubectl" wait --for=condition=Ready challenge --all -A --timeout=120s
echo "Ready after $(( ($(date +%s%N) - start) / 1000000 )) ms"
"$kubectl" get challenges -A -o wide
"$kubectl" get challenges -n default -o jsonpath='{range .items[*]}{.metadata.name}: {.status.phase} {.status.endpoint.address} expires {.status.expiresAt} flag in Secret {.status.flagSecretName}{"\n"}{end}'
"$kubectl" get challengetemplates
"$kubectl" get deploy,svc,networkpolicy,pods -n default -l ctf.challenge-operator.io/instance

step "the instancer: a team starts its own instance"
link=$(bin/manager token --key-dir "$work/instancer-keys" --team team-demo --ttl 8h --url http://127.0.0.1:18443/)
token=${link#*#token=}
for _ in $(seq 100); do curl -fsS -o /dev/null http://127.0.0.1:18443/api/v1/openapi.json 2>/dev/null && break; sleep 0.1; done
started=$(curl -fsS -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -d '{"template":"pwn-intro"}' http://127.0.0.1:18443/api/v1/instances)
echo "$started"
instance=$(sed -n 's/.*"name":"\([^"]*\)".*/\1/p' <<<"$started")
"$kubectl" wait --for=jsonpath='{.status.phase}'=Running "challenge/$instance" -n default --timeout=120s
curl -fsS -H "Authorization: Bearer $token" http://127.0.0.1:18443/api/v1/instances/pwn-intro; echo
echo "Open the team's page (token in the fragment): $link"

step "the platform asks whose a flag is (each call signed with the platform's key)"
flag=$("$kubectl" get secret -n default pwn-intro-team-red-flag -o jsonpath='{.data.flag\.main}' | base64 -d)
verify() { bin/manager platform verify --url http://127.0.0.1:18443/ --key-dir "$work/platform-keys" --template pwn-intro --team "$1" --submission "$2"; echo; }
verify team-red "$flag"      # its own flag: correct
verify team-demo "$flag"     # team-red's flag from team-demo: shared, owner team-red, an Event on both instances
verify team-demo 'CTF{guess}'
"$kubectl" get events -n default --field-selector reason=SharedFlag -o custom-columns=OBJECT:.involvedObject.name,MESSAGE:.message

teardown() {
  step "deleting the samples and the team's instance: each passes through Deleted and every object goes"
  curl -fsS -X DELETE -H "Authorization: Bearer $token" http://127.0.0.1:18443/api/v1/instances/pwn-intro; echo
  "$kubectl" wait --for=delete "challenge/$instance" -n default --timeout=60s
  "$kubectl" delete -k config/samples --wait=true --timeout=60s
  "$kubectl" get deploy,svc,networkpolicy,secrets -n default -l ctf.challenge-operator.io/instance
  step "done; stopping the operator and the control plane"
}

if [[ "${ONESHOT:-0}" != "1" ]]; then
  step "running: export KUBECONFIG=$KUBECONFIG; kubectl is $kubectl. Ctrl-C deletes the instances, then stops everything."
  trap 'trap - INT TERM' INT TERM
  wait "${pids[0]}" || true
fi
teardown
