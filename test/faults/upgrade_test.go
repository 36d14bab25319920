package faults_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// previousRelease is the operator an upgrade starts from: the last commit
// before the change that brought this test. Move it forward at each release.
const previousRelease = "81a7e1da2c7b25e1b71b76ac06fde1e7d16f861b"

// TestUpgradeIsSeamless upgrades the operator under Running instances, as a
// rollout on a Saturday night would: the previous release, built from the
// repository's history with its own CRDs, brings them to Running (some
// renewed); it is stopped, the current CRDs are applied and the current
// operator started. Once it has reconciled every instance: no pod was
// restarted or replaced, no Deployment changed, no Helm upgrade ran, expiry
// and renewals are what they were, every stored Challenge still decodes,
// and a new instance starts.
func TestUpgradeIsSeamless(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	previous, previousCRDs := buildPrevious(t)
	currentCRDs := filepath.Join(controlplane.RepoRoot(), "config", "crd", "bases")
	applyCRDs(t, previousCRDs)
	t.Cleanup(func() { applyCRDs(t, currentCRDs) })
	ns := namespace(t, "upgrade")

	lasting := builders.Template("upgrade-lasting", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Image = "registry.example/ctf/lasting:1"
		s.Lifetime = &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: 2 * time.Hour}, MaxRenewals: ptr.To[int32](3)}
	})
	g.Expect(k8s.Create(ctx, lasting)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, lasting) })

	// The previous release runs with the chart it shipped with, as its image does.
	previousWatches, err := harness.WatchesFileFor(filepath.Join(previousCRDs, "..", "..", ".."))
	g.Expect(err).NotTo(HaveOccurred())
	old := startOperatorBinary(t, previous, "upgrade-from", "--leader-elect", "--watches-file="+previousWatches)
	chs := make([]*ctfv1alpha1.Challenge, 0, sc.Upgrade)
	for i := range sc.Upgrade {
		ch := challenge(ns, i)
		if i%3 == 2 {
			ch = builders.FromTemplate(ns, ch.Name, ch.Spec.Participant, lasting.Name)
		}
		chs = append(chs, ch)
	}
	g.Expect(createAll(chs)).To(Succeed())
	eventuallyAllRunning(t, ns, sc.Upgrade, within(sc.Upgrade))
	renewLasting(t, ns, lasting.Name)
	eventuallyAllRunning(t, ns, sc.Upgrade, within(sc.Upgrade)) // a renewal's reconcile passes through Pending
	before := snapshot(t, ns)
	g.Expect(before.renewed).To(BeNumerically(">", 0))

	old.Stop()
	applyCRDs(t, currentCRDs)
	addr, err := controlplane.FreeAddress()
	g.Expect(err).NotTo(HaveOccurred())
	start := time.Now()
	startOperator(t, "upgrade-to", "--leader-elect", "--metrics-bind-address="+addr, "--metrics-secure=false")
	// The Helm reconciler goes through every instance once it starts: after
	// as many reconciles, any upgrade it would run has run.
	g.Eventually(func() int { return helmReconciles("http://" + addr + "/metrics") }, within(sc.Upgrade), interval).
		Should(BeNumerically(">=", sc.Upgrade))
	reconciled := time.Since(start)
	g.Expect(before.changes(snapshot(t, ns))).To(BeEmpty(), "nothing of a Running instance changed")
	expectOneReleaseEach(t, ns)

	newcomer := challenge(ns, sc.Upgrade)
	g.Expect(k8s.Create(ctx, newcomer)).To(Succeed())
	eventuallyAllRunning(t, ns, sc.Upgrade+1, within(1))
	deleteAllAndCheck(t, ns, within(sc.Upgrade))
	report(t, measurement{Fault: "upgrade from the previous release: every instance reconciled, nothing restarted", Challenges: sc.Upgrade, Times: 1,
		Seconds: seconds([]time.Duration{reconciled})})
}

// buildPrevious builds the operator of previousRelease from the
// repository's history and returns the binary and its CRDs' directory.
func buildPrevious(t *testing.T) (bin, crds string) {
	t.Helper()
	root := controlplane.RepoRoot()
	src := filepath.Join(cluster.LogDir, "previous-release")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", previousRelease)
	extract := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	extract.Stdin = pipe
	var stderr strings.Builder
	archive.Stderr = &stderr
	if err := extract.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s (a clone with its history is needed): %v: %s", previousRelease, err, stderr.String())
	}
	if err := extract.Wait(); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(cluster.LogDir, "manager-previous")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the previous release: %v\n%s", err, out)
	}
	return bin, filepath.Join(src, "config", "crd", "bases")
}

// applyCRDs replaces the cluster's Challenge CRDs with those of dir, as an
// upgrade applies its CRDs before its operator starts, and waits until they
// are served.
func applyCRDs(t *testing.T, dir string) {
	t.Helper()
	_, err := envtest.InstallCRDs(cluster.Config, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true})
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), dir)
}

// renewLasting renews each Challenge of template in ns once and waits until
// the operator has counted every renewal.
func renewLasting(t *testing.T, ns, template string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	items, err := challenges(ctx, ns)
	g.Expect(err).NotTo(HaveOccurred())
	// Times are kept to the second: renew once the clock is past every creation.
	g.Eventually(time.Now, 10*time.Second, interval).Should(BeTemporally(">=", time.Now().Truncate(time.Second).Add(time.Second)))
	renewedAt := metav1.NewTime(time.Now().Truncate(time.Second))
	for i := range items {
		if items[i].Spec.Template != template {
			continue
		}
		patch := client.MergeFrom(items[i].DeepCopy())
		items[i].Spec.RenewedAt = &renewedAt
		g.Expect(k8s.Patch(ctx, &items[i], patch)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		items, err := challenges(ctx, ns)
		g.Expect(err).NotTo(HaveOccurred())
		for _, ch := range items {
			if ch.Spec.Template == template {
				g.Expect(ch.Status.Renewals).To(Equal(int32(1)), ch.Name)
			}
		}
	}, within(len(items)), interval).Should(Succeed())
}

// instanceState is what an upgrade must leave as it was.
type instanceState struct {
	pods        map[string]string // name: UID
	deployments map[string]string // name: UID and generation
	releases    map[string]string // release Secret: its status
	statuses    map[string]string // Challenge: phase, readyAt, expiresAt, renewals
	renewed     int
}

func snapshot(t *testing.T, ns string) instanceState {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	s := instanceState{pods: map[string]string{}, deployments: map[string]string{}, releases: map[string]string{}, statuses: map[string]string{}}
	owned := client.MatchingLabels{ctfv1alpha1.InstanceNamespaceLabel: ns}
	var pods corev1.PodList
	g.Expect(k8s.List(ctx, &pods, owned)).To(Succeed())
	for _, p := range pods.Items {
		s.pods[p.Namespace+"/"+p.Name] = string(p.UID)
	}
	var deployments appsv1.DeploymentList
	g.Expect(k8s.List(ctx, &deployments, owned)).To(Succeed())
	for _, d := range deployments.Items {
		s.deployments[d.Namespace+"/"+d.Name] = fmt.Sprintf("%s generation %d", d.UID, d.Generation)
	}
	var releases corev1.SecretList
	g.Expect(k8s.List(ctx, &releases, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"})).To(Succeed())
	for _, r := range releases.Items {
		s.releases[r.Name] = r.Labels["status"]
	}
	items, err := challenges(ctx, ns)
	g.Expect(err).NotTo(HaveOccurred())
	for _, ch := range items {
		st := ch.Status
		s.statuses[ch.Name] = fmt.Sprintf("%s ready %v expires %v renewals %d", st.Phase, st.ReadyAt, st.ExpiresAt, st.Renewals)
		if st.Renewals > 0 {
			s.renewed++
		}
	}
	g.Expect(s.pods).NotTo(BeEmpty())
	return s
}

// changes lists what differs in after, a few of each kind.
func (s instanceState) changes(after instanceState) []string {
	var out []string
	for _, kind := range []struct {
		name          string
		before, after map[string]string
	}{{"pod", s.pods, after.pods}, {"Deployment", s.deployments, after.deployments},
		{"release", s.releases, after.releases}, {"status", s.statuses, after.statuses}} {
		n := 0
		for key := range mapsUnion(kind.before, kind.after) {
			if b, a := kind.before[key], kind.after[key]; a != b && n < 5 {
				out = append(out, fmt.Sprintf("%s %s: %q -> %q", kind.name, key, b, a))
				n++
			}
		}
	}
	return out
}

func mapsUnion(a, b map[string]string) map[string]bool {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}

// helmReconciles is how many reconciles the Helm reconciler has finished,
// from the operator's metrics at url; 0 until they are served.
func helmReconciles(url string) int {
	resp, err := http.Get(url) //nolint:gosec // the test's own operator on loopback
	if err != nil {
		return 0
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0
	}
	n := 0
	for _, m := range regexp.MustCompile(`(?m)^controller_runtime_reconcile_total\{controller="challenge-controller",result="[a-z_]+"\} (\d+)$`).FindAllStringSubmatch(string(body), -1) {
		v, _ := strconv.Atoi(m[1])
		n += v
	}
	return n
}
