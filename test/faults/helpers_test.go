package faults_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

const interval = 200 * time.Millisecond

// operatorProcess is one run of the operator binary.
type operatorProcess struct{ *controlplane.Process }

var processCount atomic.Int32

// startOperator runs the operator binary as its service account, with
// namespace-per-instance on (the mode with cluster-scoped objects to leak),
// and kills it when the test ends.
func startOperator(t *testing.T, name string, extra ...string) operatorProcess {
	t.Helper()
	return startOperatorBinary(t, managerBin, name, extra...)
}

// startOperatorBinary is startOperator with the operator binary bin.
func startOperatorBinary(t *testing.T, bin, name string, extra ...string) operatorProcess {
	t.Helper()
	args := append([]string{
		"--watches-file=" + watchesFile,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
		"--leader-election-namespace=" + harness.OperatorServiceAccount.Namespace,
		"--namespace-per-instance",
		"--flag-secret-namespaces=" + harness.OrganiserNamespace,
		"--ingress-domain=" + harness.IngressDomain,
	}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+operatorKubeconfig, "POD_NAMESPACE="+harness.OperatorServiceAccount.Namespace)
	p, err := controlplane.StartProcess(cmd, filepath.Join(cluster.LogDir, fmt.Sprintf("operator-%s-%d.log", name, processCount.Add(1))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return operatorProcess{p}
}

// logContains reports whether the process has logged s.
func (p operatorProcess) logContains(s string) bool {
	data, err := os.ReadFile(p.Log)
	return err == nil && strings.Contains(string(data), s)
}

// namespace creates a namespace for one test; its instances run in
// namespaces of their own.
func namespace(t *testing.T, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}
	NewWithT(t).Expect(k8s.Create(context.Background(), ns)).To(Succeed())
	return name
}

// challenge is a plain instance; i makes its name and participant unique.
func challenge(ns string, i int) *ctfv1alpha1.Challenge {
	name, team := fmt.Sprintf("c-%04d", i), fmt.Sprintf("team-%04d", i)
	if i%2 == 1 {
		return builders.FromTemplate(ns, name, team, pair)
	}
	return builders.Challenge(ns, name, team)
}

// createAll creates the Challenges with a few writers at once, as a platform
// under load would.
func createAll(chs []*ctfv1alpha1.Challenge) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(chs))
	next := atomic.Int32{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(chs); i = int(next.Add(1)) - 1 {
				if err := k8s.Create(context.Background(), chs[i]); err != nil {
					errs <- fmt.Errorf("creating %s: %w", chs[i].Name, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// challenges lists a namespace's Challenges.
func challenges(ctx context.Context, ns string) ([]ctfv1alpha1.Challenge, error) {
	var list ctfv1alpha1.ChallengeList
	err := k8s.List(ctx, &list, client.InNamespace(ns))
	return list.Items, err
}

// countPhase counts a namespace's Challenges in phase.
func countPhase(ns string, phase ctfv1alpha1.Phase) int {
	items, err := challenges(context.Background(), ns)
	if err != nil {
		return -1
	}
	n := 0
	for _, ch := range items {
		if ch.Status.Phase == phase && ch.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// eventuallyAllRunning waits until exactly want Challenges exist in ns, every
// one Running, and returns how long that took.
func eventuallyAllRunning(t *testing.T, ns string, want int, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	NewWithT(t).Eventually(func(g Gomega) {
		items, err := challenges(context.Background(), ns)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(items).To(HaveLen(want))
		var notRunning []string
		for _, ch := range items {
			if ch.Status.Phase != ctfv1alpha1.PhaseRunning {
				notRunning = append(notRunning, fmt.Sprintf("%s: %s %s %s", ch.Name, ch.Status.Phase, ch.Status.Reason, ch.Status.Message))
			}
		}
		sort.Strings(notRunning)
		g.Expect(notRunning).To(BeEmpty(), "%d not Running", len(notRunning))
	}, within, interval).Should(Succeed())
	return time.Since(start)
}

// leftovers names whatever is left of ns's instances: Challenges, release
// records, and objects with the instance labels, namespaced or not.
func leftovers(ctx context.Context, ns string) ([]string, error) {
	var left []string
	items, err := challenges(ctx, ns)
	if err != nil {
		return nil, err
	}
	for _, ch := range items {
		left = append(left, fmt.Sprintf("Challenge %s (finalizers %v)", ch.Name, ch.Finalizers))
	}
	var releases corev1.SecretList
	if err := k8s.List(ctx, &releases, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"}); err != nil {
		return nil, err
	}
	for _, s := range releases.Items {
		left = append(left, "release Secret "+s.Name)
	}
	owned := client.MatchingLabels{ctfv1alpha1.InstanceNamespaceLabel: ns}
	lists := map[string]client.ObjectList{
		"Namespace": &corev1.NamespaceList{}, "Deployment": &appsv1.DeploymentList{}, "ReplicaSet": &appsv1.ReplicaSetList{},
		"Pod": &corev1.PodList{}, "Service": &corev1.ServiceList{}, "ServiceAccount": &corev1.ServiceAccountList{},
		"Secret": &corev1.SecretList{}, "NetworkPolicy": &networkingv1.NetworkPolicyList{}, "Ingress": &networkingv1.IngressList{},
		"ResourceQuota": &corev1.ResourceQuotaList{}, "LimitRange": &corev1.LimitRangeList{},
	}
	for kind, list := range lists {
		if err := k8s.List(ctx, list, owned); err != nil {
			return nil, err
		}
		objs, err := apimeta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			o := obj.(client.Object)
			left = append(left, fmt.Sprintf("%s %s/%s", kind, o.GetNamespace(), o.GetName()))
		}
	}
	sort.Strings(left)
	return left, nil
}

// eventuallyNothingLeft waits until nothing of ns's instances is left and
// returns how long that took.
func eventuallyNothingLeft(t *testing.T, ns string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	NewWithT(t).Eventually(func(g Gomega) {
		left, err := leftovers(context.Background(), ns)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(left).To(BeEmpty())
	}, within, interval).Should(Succeed())
	return time.Since(start)
}

// deleteAllAndCheck deletes every Challenge of ns at once and waits until
// nothing of them is left.
func deleteAllAndCheck(t *testing.T, ns string, within time.Duration) time.Duration {
	t.Helper()
	NewWithT(t).Expect(k8s.DeleteAllOf(context.Background(), &ctfv1alpha1.Challenge{}, client.InNamespace(ns))).To(Succeed())
	return eventuallyNothingLeft(t, ns, within)
}

// expectOneReleaseEach checks every Challenge of ns has exactly one deployed
// release, its latest revision, no release left pending, and exactly one
// Deployment and one Service per component: nothing was installed twice.
func expectOneReleaseEach(t *testing.T, ns string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	items, err := challenges(ctx, ns)
	g.Expect(err).NotTo(HaveOccurred())
	var releases corev1.SecretList
	g.Expect(k8s.List(ctx, &releases, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"})).To(Succeed())
	type record struct {
		latest, deployed int
		statuses         []string
	}
	byName := map[string]*record{}
	for _, s := range releases.Items {
		r := byName[s.Labels["name"]]
		if r == nil {
			r = &record{}
			byName[s.Labels["name"]] = r
		}
		var version int
		_, _ = fmt.Sscan(s.Labels["version"], &version)
		r.latest = max(r.latest, version)
		r.statuses = append(r.statuses, s.Labels["status"])
		if s.Labels["status"] == "deployed" {
			g.Expect(r.deployed).To(BeZero(), "%s has two deployed releases", s.Labels["name"])
			r.deployed = version
		}
	}
	for _, ch := range items {
		r := byName[ch.Name]
		g.Expect(r).NotTo(BeNil(), "%s has no release", ch.Name)
		g.Expect(r.deployed).To(Equal(r.latest), "%s: the deployed release is the latest (statuses %v)", ch.Name, r.statuses)
		for _, kind := range []client.ObjectList{&appsv1.DeploymentList{}, &corev1.ServiceList{}} {
			g.Expect(k8s.List(ctx, kind, client.MatchingLabels{
				ctfv1alpha1.InstanceNamespaceLabel: ns, ctfv1alpha1.InstanceLabel: ch.Name,
			})).To(Succeed())
			want := 1
			if ch.Spec.Template == pair {
				want = 2 // the web application's and its redis's
			}
			g.Expect(apimeta.LenList(kind)).To(Equal(want), "%s: one %T per component", ch.Name, kind)
		}
	}
}

// seconds converts durations for the report.
func seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d.Milliseconds()) / 1000
	}
	return out
}
