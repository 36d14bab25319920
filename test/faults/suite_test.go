// Package faults_test runs the operator's own binary, as its service account,
// on the local control plane and puts it through what a CTF weekend brings:
// SIGKILLs mid-burst, a lost leader, a control-plane restart, mass deletion and
// mass expiry, and an upgrade of the operator itself. Every test ends by
// deleting what it made and finding nothing left. `make test` runs each fault
// at a small scale; `make test-faults` (CHALLENGE_FAULTS=full) at the scale
// docs/reliability.md reports.
package faults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
	"github.com/challenge-operator/challenge-operator/test/harness"
	"github.com/challenge-operator/challenge-operator/test/operatorbuild"
)

// scale is how hard each fault is driven.
type scale struct {
	Name string
	// Burst is how many Challenges are created while the operator is killed Kills times.
	Burst, Kills int
	// FailoverBurst Challenges are created per leader lost; Failovers leaders are lost.
	FailoverBurst, Failovers int
	// RestartBurst Challenges are created around Restarts control-plane restarts.
	RestartBurst, Restarts int
	// DeleteAll Challenges are deleted at once while ExpireAll expire at once.
	DeleteAll, ExpireAll int
	// Claims Challenges claim from a warm pool of Pool instances.
	Claims, Pool int
	// Upgrade Challenges are Running while the operator is upgraded.
	Upgrade int
}

var scales = map[string]scale{
	"fast": {Name: "fast", Burst: 24, Kills: 3, FailoverBurst: 16, Failovers: 1, RestartBurst: 12, Restarts: 2, DeleteAll: 30, ExpireAll: 20, Claims: 10, Pool: 6, Upgrade: 100},
	"full": {Name: "full", Burst: 200, Kills: 6, FailoverBurst: 200, Failovers: 3, RestartBurst: 100, Restarts: 3, DeleteAll: 500, ExpireAll: 200, Claims: 150, Pool: 100, Upgrade: 300},
}

var (
	cluster *controlplane.Cluster
	k8s     client.WithWatch
	// managerBin is the operator built from this checkout.
	managerBin string
	// operatorKubeconfig impersonates the operator's service account.
	operatorKubeconfig string
	watchesFile        string
	sc                 scale
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	name := os.Getenv("CHALLENGE_FAULTS")
	if name == "" {
		name = "fast"
	}
	var ok bool
	if sc, ok = scales[name]; !ok {
		fmt.Fprintf(os.Stderr, "CHALLENGE_FAULTS=%s: want fast or full\n", name)
		return 2
	}
	ctx := context.Background()
	root := controlplane.RepoRoot()
	var err error
	cluster, err = controlplane.Start(ctx, controlplane.Options{CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting control plane:", err)
		return 1
	}
	defer cluster.Stop()
	defer operatorbuild.Remove()
	fmt.Fprintln(os.Stderr, "control plane and operator logs:", cluster.LogDir)
	if err := setup(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func setup(ctx context.Context) error {
	var err error
	if managerBin, err = operatorbuild.Binary(); err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := ctfv1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	if k8s, err = client.NewWithWatch(cluster.Config, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if _, err := harness.BindServiceAccount(ctx, cluster.Config, true); err != nil {
		return fmt.Errorf("binding the operator's roles: %w", err)
	}
	kubeconfig, err := clientcmd.LoadFromFile(cluster.Kubeconfig)
	if err != nil {
		return err
	}
	for _, user := range kubeconfig.AuthInfos {
		user.Impersonate = harness.ServiceAccountUser()
	}
	operatorKubeconfig = filepath.Join(cluster.LogDir, "operator.kubeconfig")
	if err := clientcmd.WriteToFile(*kubeconfig, operatorKubeconfig); err != nil {
		return err
	}
	watchesFile, err = harness.WatchesFile()
	if err != nil {
		return err
	}
	return k8s.Create(ctx, pairTemplate())
}

// pair is the template of every other Challenge of the suite: an instance of
// two components, a web application and its redis, so that every fault also
// meets instances whose objects are twice as many.
const pair = "pair"

func pairTemplate() *ctfv1alpha1.ChallengeTemplate {
	return builders.Template(pair, web, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Components = []ctfv1alpha1.Component{{Name: "redis", Image: "registry.example/ctf/redis:7",
			Ports: []ctfv1alpha1.ChallengePort{{Name: "redis", Port: 6379, Protocol: ctfv1alpha1.ProtocolTCP}}}}
	})
}

// web makes a template's primary the suite's web application, on http 8080.
func web(s *ctfv1alpha1.ChallengeTemplateSpec) {
	s.Image = "registry.example/ctf/web:1"
	s.Ports = []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080, Protocol: ctfv1alpha1.ProtocolTCP}}
}

// measurement is one fault's outcome, kept for docs/reliability.md.
type measurement struct {
	Scale      string    `json:"scale"`
	Fault      string    `json:"fault"`
	Challenges int       `json:"challenges"`
	Times      int       `json:"times"`
	Seconds    []float64 `json:"convergenceSeconds"`
	Leftovers  int       `json:"leftovers"`
}

// report logs m and, with FAULTS_REPORT set, appends it to that file as a JSON line.
func report(t *testing.T, m measurement) {
	t.Helper()
	m.Scale = sc.Name
	line, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("measured: %s", line)
	path := os.Getenv("FAULTS_REPORT")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if _, err := fmt.Fprintf(f, "%s\n", line); err != nil {
		t.Fatal(err)
	}
}
