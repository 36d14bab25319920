package operator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/pool"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// pooledTemplate creates a template with a warm pool of min..max and a
// static flag, and returns the flag.
func pooledTemplate(t *testing.T, name string, minSize, maxSize int32, mutate func(*ctfv1alpha1.ChallengeTemplateSpec)) string {
	t.Helper()
	ctx := context.Background()
	flag := "CTF{pooled-" + name + "}"
	secret := harness.OrganiserSecret("flag-"+name, map[string][]byte{"flag": []byte(flag)})
	NewWithT(t).Expect(k8s.Create(ctx, secret)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), secret) })
	h.Template(t, name, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Pool = &ctfv1alpha1.PoolSpec{Min: minSize, Max: maxSize}
		s.Flag = &ctfv1alpha1.FlagSpec{Static: &ctfv1alpha1.SecretKeyRef{Namespace: harness.OrganiserNamespace, Name: secret.Name, Key: "flag"}}
		s.Lifetime = &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: time.Hour}}
		if mutate != nil {
			mutate(s)
		}
	})
	return flag
}

// unclaimed lists a template's unclaimed pooled instances by phase.
func unclaimed(g Gomega, template string) map[string]ctfv1alpha1.Phase {
	var list ctfv1alpha1.ChallengeList
	g.Expect(k8s.List(context.Background(), &list, client.InNamespace(poolNamespace), client.MatchingLabels{ctfv1alpha1.PoolLabel: template})).To(Succeed())
	out := map[string]ctfv1alpha1.Phase{}
	for _, ch := range list.Items {
		if _, _, claimed := pool.Claimant(&ch); !claimed && ch.DeletionTimestamp.IsZero() {
			out[ch.Name] = ch.Status.Phase
		}
	}
	return out
}

// eventuallyPoolReady waits until template's pool holds n unclaimed
// instances, all Running, and its status says so.
func eventuallyPoolReady(t *testing.T, template string, n int32) map[string]ctfv1alpha1.Phase {
	t.Helper()
	var got map[string]ctfv1alpha1.Phase
	NewWithT(t).Eventually(func(g Gomega) {
		got = unclaimed(g, template)
		g.Expect(got).To(HaveLen(int(n)))
		for name, phase := range got {
			g.Expect(phase).To(Equal(ctfv1alpha1.PhaseRunning), name)
		}
		tmpl := &ctfv1alpha1.ChallengeTemplate{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: template}, tmpl)).To(Succeed())
		g.Expect(tmpl.Status.Pool).To(Equal(&ctfv1alpha1.PoolStatus{Size: n, Ready: n, Target: n}))
	}, timeout, interval).Should(Succeed())
	return got
}

// TestPoolClaim: a Challenge of a pooled template is Running in its first
// status, served by a pooled instance with the team's flag and expiry;
// two teams claiming at once get two instances; the pool refills; deleting
// the team's Challenge deletes its pooled instance and every object of it.
func TestPoolClaim(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	flag := pooledTemplate(t, "warm", 2, 2, nil)
	pooled := eventuallyPoolReady(t, "warm", 2)

	var podsBefore corev1.PodList
	g.Expect(k8s.List(ctx, &podsBefore, client.InNamespace(poolNamespace))).To(Succeed())
	ns := namespace(t)
	rec := record(t, ns, "web")
	ch := builders.FromTemplate(ns, "web", "team-warm", "warm")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	oneChange := []ctfv1alpha1.Phase{ctfv1alpha1.PhaseNone, ctfv1alpha1.PhaseRunning}
	g.Eventually(rec.phases, timeout, interval).Should(Equal(oneChange), "from the schema's default straight to Running: one status change")

	got := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
	g.Expect(got.Status.PooledInstance).NotTo(BeNil())
	claimed := *got.Status.PooledInstance
	g.Expect(claimed.Namespace).To(Equal(poolNamespace))
	g.Expect(pooled).To(HaveKey(claimed.Name), "one of the pool's ready instances")
	g.Expect(got.Status.Reason).To(Equal("Ready"))
	var conditions []string
	for _, c := range got.Status.Conditions {
		conditions = append(conditions, c.Type)
	}
	g.Expect(conditions).To(ConsistOf("Initialized", "Deployed", "Ready"), "no release of its own: none of the Helm reconciler's verdicts on one, nor its Paused")
	g.Expect(apimeta.FindStatusCondition(got.Status.Conditions, "Deployed").Reason).To(Equal("Claimed"))
	g.Expect(got.Status.Endpoint).NotTo(BeNil())
	g.Expect(got.Status.Endpoint.Host).To(ContainSubstring(claimed.Name), "the pooled instance's address")
	g.Expect(got.Status.ExpiresAt).NotTo(BeNil())
	g.Expect(got.Status.ExpiresAt.Time).To(BeTemporally("~", got.CreationTimestamp.Add(time.Hour), 2*time.Second), "the lifetime counts from the claim")
	g.Expect(got.Status.FlagSecretName).To(Equal(claimed.Name + "-flag"))
	secret := &corev1.Secret{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: poolNamespace, Name: got.Status.FlagSecretName}, secret)).To(Succeed())
	g.Expect(string(secret.Data["flag"])).To(Equal(flag), "the team's flag, there before the claim")

	owner := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: claimed.Namespace, Name: claimed.Name}, owner)).To(Succeed())
	g.Expect(owner.Annotations[ctfv1alpha1.ClaimantAnnotation]).To(Equal(fmt.Sprintf("%s/web/%s", ns, got.UID)))
	g.Expect(owner.OwnerReferences).To(BeEmpty(), "the template no longer owns a team's instance")
	g.Expect(owner.Status.ExpiresAt).To(BeNil(), "the claimant's lifetime governs it")

	// The instance's objects become the team's; its pods, whose labels change
	// only with a new pod, keep the pool's and are not restarted.
	instance := client.MatchingLabels{ctfv1alpha1.InstanceLabel: claimed.Name}
	g.Eventually(func(g Gomega) {
		for _, list := range []client.ObjectList{&appsv1.DeploymentList{}, &corev1.ServiceList{}, &corev1.SecretList{}} {
			g.Expect(k8s.List(ctx, list, client.InNamespace(poolNamespace), instance)).To(Succeed())
			items, err := apimeta.ExtractList(list)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(items).NotTo(BeEmpty())
			for _, o := range items {
				g.Expect(o.(client.Object).GetLabels()).To(HaveKeyWithValue(participantLabel, "team-warm"), "%T", o)
			}
		}
	}, timeout, interval).Should(Succeed())
	var pods corev1.PodList
	g.Expect(k8s.List(ctx, &pods, client.InNamespace(poolNamespace), instance)).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(1))
	g.Expect(pods.Items[0].Labels).To(HaveKeyWithValue(participantLabel, claimed.Name), "the pod keeps its labels")
	g.Expect(podsBefore.Items).To(ContainElement(HaveField("UID", pods.Items[0].UID)), "the pod that served the pool serves the team")
	readySince := apimeta.FindStatusCondition(got.Status.Conditions, "Ready").LastTransitionTime
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
	g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning))
	g.Expect(apimeta.FindStatusCondition(got.Status.Conditions, "Ready").LastTransitionTime).To(Equal(readySince), "Running throughout the relabelling")
	g.Expect(rec.phases()).To(Equal(oneChange), "and never anything else")

	// Two teams at once, while the pool refills: two different instances.
	a, b := builders.FromTemplate(ns, "web-a", "team-a", "warm"), builders.FromTemplate(ns, "web-b", "team-b", "warm")
	g.Expect(k8s.Create(ctx, a)).To(Succeed())
	g.Expect(k8s.Create(ctx, b)).To(Succeed())
	gotA, gotB := eventuallyPhase(t, a, ctfv1alpha1.PhaseRunning), eventuallyPhase(t, b, ctfv1alpha1.PhaseRunning)
	names := []string{claimed.Name}
	for _, c := range []*ctfv1alpha1.Challenge{gotA, gotB} {
		if c.Status.PooledInstance != nil {
			names = append(names, c.Status.PooledInstance.Name)
		}
	}
	slices.Sort(names)
	g.Expect(slices.Compact(slices.Clone(names))).To(Equal(names), "no instance claimed twice")

	eventuallyPoolReady(t, "warm", 2)

	g.Expect(k8s.Delete(ctx, got)).To(Succeed())
	h.EventuallyGone(t, got, timeout, "the team's Challenge goes once its instance is gone")
	h.EventuallyGone(t, owner, timeout, "its pooled instance goes with it")
	g.Eventually(func(g Gomega) {
		var deployments appsv1.DeploymentList
		g.Expect(k8s.List(ctx, &deployments, client.InNamespace(poolNamespace), client.MatchingLabels{ctfv1alpha1.InstanceLabel: claimed.Name})).To(Succeed())
		g.Expect(deployments.Items).To(BeEmpty())
	}, timeout, interval).Should(Succeed())
}

// TestPoolMissInstallsFresh: with the pool empty, a Challenge is installed
// as usual; the demand it showed grows the pool within its max.
func TestPoolMissInstallsFresh(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pooledTemplate(t, "cold", 0, 1, nil)
	ns := namespace(t)
	ch := builders.FromTemplate(ns, "web", "team-cold", "cold")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	g.Expect(got.Status.PooledInstance).To(BeNil(), "installed itself")
	g.Expect(got.Status.Endpoint.Host).To(ContainSubstring("web"))
	eventuallyPoolReady(t, "cold", 1)

	second := builders.FromTemplate(ns, "web-2", "team-cold-2", "cold")
	g.Expect(k8s.Create(ctx, second)).To(Succeed())
	g.Expect(eventuallyPhase(t, second, ctfv1alpha1.PhaseRunning).Status.PooledInstance).NotTo(BeNil(), "the grown pool serves the next")
}

// TestPoolTemplateEditReplacesUnclaimedOnly: a template edit replaces the
// pool's unclaimed instances and leaves a claimed one serving its team.
func TestPoolTemplateEditReplacesUnclaimedOnly(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pooledTemplate(t, "edited", 1, 1, nil)
	eventuallyPoolReady(t, "edited", 1)
	ns := namespace(t)
	ch := builders.FromTemplate(ns, "web", "team-edit", "edited")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	claimed := eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning).Status.PooledInstance
	g.Expect(claimed).NotTo(BeNil())
	before := eventuallyPoolReady(t, "edited", 1)

	tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "edited"}}
	g.Expect(harness.EditTemplate(ctx, k8s, tmpl, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Env = []ctfv1alpha1.EnvVar{{Name: "LEVEL", Value: "2"}}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		after := eventuallyPoolReady(t, "edited", 1)
		for name := range after {
			g.Expect(before).NotTo(HaveKey(name), "replaced")
		}
	}, timeout, interval).Should(Succeed())
	owner := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: claimed.Namespace, Name: claimed.Name}, owner)).To(Succeed())
	g.Expect(owner.DeletionTimestamp.IsZero()).To(BeTrue(), "the claimed instance stays the team's")
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
}

// TestPoolRefusesDynamicFlags: a pooled instance starts before its team is
// known, so a per-team flag cannot be in it: refused at admission.
func TestPoolRefusesDynamicFlags(t *testing.T) {
	tmpl := builders.Template("pooled-dynamic", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Image = "registry.example/ctf/web:1"
		s.Pool = &ctfv1alpha1.PoolSpec{Max: 2}
		s.Flag = &ctfv1alpha1.FlagSpec{Dynamic: &ctfv1alpha1.DynamicFlag{SecretKey: *organiserSecret()}}
	})
	err := k8s.Create(context.Background(), tmpl)
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("spec.pool cannot be used with flag.dynamic")))
	tmpl.Spec.Flag = nil
	tmpl.Spec.Pool = &ctfv1alpha1.PoolSpec{Min: 3, Max: 2}
	NewWithT(t).Expect(k8s.Create(context.Background(), tmpl)).To(MatchError(ContainSubstring("pool.min must not exceed pool.max")))
}

// TestClaimPassesTheInstallChecks: a Challenge of a pooled template is
// refused whatever its install would be refused, and the pool keeps its
// instance: a lifetime above the template's maximum, a second instance of
// the team (quota), a value the template does not let it set.
func TestClaimPassesTheInstallChecks(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pooledTemplate(t, "guarded", 1, 1, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Lifetime = &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: 10 * time.Minute}, Max: &metav1.Duration{Duration: 20 * time.Minute}}
	})
	eventuallyPoolReady(t, "guarded", 1)
	ns := namespace(t)
	owner := builders.FromTemplate(ns, "owned", "team-guard-dup", "guarded")
	g.Expect(k8s.Create(ctx, owner)).To(Succeed())
	g.Expect(eventuallyPhase(t, owner, ctfv1alpha1.PhaseRunning).Status.PooledInstance).NotTo(BeNil(), "a claim of the team's")
	tests := []struct {
		name, participant, reason string
		mutate                    func(*ctfv1alpha1.Challenge)
	}{
		{"a lifetime above the maximum", "team-guard-long", "LifetimeTooLong", func(c *ctfv1alpha1.Challenge) {
			c.Spec.Lifetime = &metav1.Duration{Duration: 700 * time.Hour}
		}},
		{"a second instance of the team", "team-guard-dup", "QuotaExceeded", nil},
		{"a value not allowed", "team-guard-env", "ValueNotAllowed", func(c *ctfv1alpha1.Challenge) {
			c.Spec.Env = []ctfv1alpha1.EnvVar{{Name: "LEVEL", Value: "9"}}
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			pooled := eventuallyPoolReady(t, "guarded", 1)
			ch := builders.FromTemplate(ns, fmt.Sprintf("refused-%d", i), tt.participant, "guarded")
			if tt.mutate != nil {
				tt.mutate(ch)
			}
			g.Expect(k8s.Create(ctx, ch)).To(Succeed())
			got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
			g.Expect(got.Status.Reason).To(Equal(tt.reason), got.Status.Message)
			g.Expect(got.Status.PooledInstance).To(BeNil(), "nothing claimed")
			g.Expect(unclaimed(g, "guarded")).To(Equal(pooled), "the pool keeps its instance")
		})
	}
}

// TestPoolOpening: a template whose pool is {min 0, max 1} and whose
// opening, an hour ahead, fills two hours before it holds 3 ready pooled
// instances before the opening, above its max, says so in status.pool and
// in an Event, without any claim.
func TestPoolOpening(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	pooledTemplate(t, "opening", 0, 1, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Pool.Opening = &ctfv1alpha1.PoolOpening{Time: metav1.NewTime(at), Size: 3, FillBefore: &metav1.Duration{Duration: 2 * time.Hour}}
	})
	g.Eventually(func(g Gomega) {
		got := unclaimed(g, "opening")
		g.Expect(got).To(HaveLen(3))
		for name, phase := range got {
			g.Expect(phase).To(Equal(ctfv1alpha1.PhaseRunning), name)
		}
		tmpl := &ctfv1alpha1.ChallengeTemplate{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "opening"}, tmpl)).To(Succeed())
		g.Expect(tmpl.Status.Pool).NotTo(BeNil())
		st := *tmpl.Status.Pool
		g.Expect(st.Opening).NotTo(BeNil())
		g.Expect(st.Opening.Time).To(BeTemporally("==", at), "the opening that holds the pool")
		st.Opening = nil
		g.Expect(st).To(Equal(ctfv1alpha1.PoolStatus{Size: 3, Ready: 3, Target: 3}), "the opening's target, above max")
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		var opening []string
		for _, e := range templateEvents(g, "opening") {
			if strings.HasPrefix(e, pool.ReasonOpening+": ") {
				opening = append(opening, e)
			}
		}
		g.Expect(opening).To(ConsistOf(pool.ReasonOpening + ": growing the pool to 3 for the opening at " + at.Format(time.RFC3339)))
	}, timeout, interval).Should(Succeed())
	g.Expect(time.Now()).To(BeTemporally("<", at), "all before the opening")
}

// TestPoolOpeningAdmission: an opening's size is 1..1000 and may exceed
// the pool's max; its time is RFC 3339; its durations are positive and at
// most a day, defaulted to 15m and 30m.
func TestPoolOpeningAdmission(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		opening map[string]any
		refused string // "" when admitted
	}{
		{"size above max, durations defaulted", map[string]any{"time": "2026-11-28T18:00:00Z", "size": 1000}, ""},
		{"a fraction of a second and an offset", map[string]any{"time": "2026-11-28T19:00:00.5+01:00", "size": 3, "fillBefore": "24h", "holdFor": "1m30s"}, ""},
		{"size 0", map[string]any{"time": "2026-11-28T18:00:00Z", "size": 0}, "spec.pool.opening.size"},
		{"size 1001", map[string]any{"time": "2026-11-28T18:00:00Z", "size": 1001}, "spec.pool.opening.size"},
		{"no size", map[string]any{"time": "2026-11-28T18:00:00Z"}, "spec.pool.opening.size"},
		{"no time", map[string]any{"size": 3}, "spec.pool.opening.time"},
		{"a time without a zone", map[string]any{"time": "2026-11-28T18:00:00", "size": 3}, "spec.pool.opening.time"},
		{"a date alone", map[string]any{"time": "2026-11-28", "size": 3}, "spec.pool.opening.time"},
		{"fillBefore 0s", map[string]any{"time": "2026-11-28T18:00:00Z", "size": 3, "fillBefore": "0s"}, "must be positive and at most 24h"},
		{"fillBefore 25h", map[string]any{"time": "2026-11-28T18:00:00Z", "size": 3, "fillBefore": "25h"}, "must be positive and at most 24h"},
		{"holdFor 24h1s", map[string]any{"time": "2026-11-28T18:00:00Z", "size": 3, "holdFor": "24h1s"}, "must be positive and at most 24h"},
		{"holdFor negative", map[string]any{"time": "2026-11-28T18:00:00Z", "size": 3, "holdFor": "-1m"}, "spec.pool.opening.holdFor"},
		{"holdFor in days", map[string]any{"time": "2026-11-28T18:00:00Z", "size": 3, "holdFor": "1d"}, "spec.pool.opening.holdFor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tmpl := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": ctfv1alpha1.GroupVersion.String(), "kind": "ChallengeTemplate",
				"metadata": map[string]any{"name": "opening-admission"},
				"spec": map[string]any{
					"image": "registry.example/ctf/web:1",
					"ports": []any{map[string]any{"name": "nc", "port": 1337}},
					"pool":  map[string]any{"max": 1, "opening": tt.opening},
				},
			}}
			err := k8s.Create(ctx, tmpl, client.DryRunAll)
			if tt.refused != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.refused)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			opening, _, _ := unstructured.NestedMap(tmpl.Object, "spec", "pool", "opening")
			g.Expect(opening).To(HaveKey("fillBefore"), "defaulted")
			g.Expect(opening).To(HaveKey("holdFor"), "defaulted")
		})
	}
	NewWithT(t).Expect(k8s.Create(ctx, builders.Template("opening-admission", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Image = "registry.example/ctf/web:1"
		s.Pool = &ctfv1alpha1.PoolSpec{Max: 1, Opening: &ctfv1alpha1.PoolOpening{Time: metav1.NewTime(time.Now()), Size: 2}}
	}), client.DryRunAll)).To(Succeed(), "the typed client's object, with its durations unset")
}
