package operator_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/operator"
	"github.com/challenge-operator/challenge-operator/internal/testcluster"
	"github.com/challenge-operator/challenge-operator/internal/values"
)

const (
	timeout  = 30 * time.Second
	interval = 50 * time.Millisecond
)

// internalCIDRs are the test cluster's pod and service ranges and the metadata address.
var internalCIDRs = []string{"10.244.0.0/16", "10.96.0.0/12", "169.254.169.254/32"}

var (
	k8s     client.Client
	cluster *testcluster.Cluster
	nsCount atomic.Int32
)

// TestMain starts the control plane and the operator once for the package.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	root := testcluster.RepoRoot()
	var err error
	cluster, err = testcluster.Start(ctx, testcluster.Options{CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting control plane:", err)
		return 1
	}
	defer cluster.Stop()
	operatorLog, err := os.Create(filepath.Join(cluster.LogDir, "operator.log"))
	must(err)
	logger := zap.New(zap.WriteTo(operatorLog), zap.UseDevMode(true))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
	fmt.Fprintln(os.Stderr, "control plane and operator logs:", cluster.LogDir)

	scheme := runtime.NewScheme()
	must(clientgoscheme.AddToScheme(scheme))
	must(ctfv1alpha1.AddToScheme(scheme))
	mgr, err := ctrl.NewManager(cluster.Config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  operator.CacheOptions(nil),
	})
	must(err)
	must(operator.Setup(mgr, operator.Options{
		WatchesFile: watchesFile(root), MaxConcurrentReconciles: 4,
		Values: values.Settings{InternalCIDRs: internalCIDRs},
	}))
	k8s, err = client.New(cluster.Config, client.Options{Scheme: scheme})
	must(err)

	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		return 1
	}
	return code
}

// watchesFile is the project's watches.yaml with the chart path made absolute,
// since tests run in the package directory.
func watchesFile(root string) string {
	f, err := os.CreateTemp("", "watches-*.yaml")
	must(err)
	_, err = fmt.Fprintf(f, "- group: ctf.challenge-operator.io\n  version: v1alpha1\n  kind: Challenge\n  chart: %s\n",
		filepath.Join(root, "charts", "challenge"))
	must(err)
	must(f.Close())
	return f.Name()
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// namespace creates a namespace of the test's own, deleted when it ends.
func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("t%d", nsCount.Add(1))}}
	NewWithT(t).Expect(k8s.Create(context.Background(), ns)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	return ns.Name
}

// newChallenge returns a valid Challenge; mutate it before creating it.
func newChallenge(ns, name, participant string) *ctfv1alpha1.Challenge {
	return &ctfv1alpha1.Challenge{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: ctfv1alpha1.ChallengeSpec{
			Participant: participant,
			Image:       "registry.example/ctf/web-intro:1.0",
			Ports:       []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080}},
		},
	}
}

// eventuallyPhase waits until the Challenge reports phase and returns it.
func eventuallyPhase(t *testing.T, ch *ctfv1alpha1.Challenge, phase ctfv1alpha1.Phase) *ctfv1alpha1.Challenge {
	t.Helper()
	got := &ctfv1alpha1.Challenge{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(ch), got)).To(Succeed())
		g.Expect(got.Status.Phase).To(Equal(phase), "reason %s: %s", got.Status.Reason, got.Status.Message)
	}, timeout, interval).Should(Succeed())
	return got
}
