package operator_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/ctfflag"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

func TestTemplateValuesPrecedenceAndAllowlist(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	h.Template(t, "tpl-prec", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Values = harness.Values(`{"podAnnotations": {"tier": "template", "who": "template"},
			"image": "ignored.example/values-image:1", "resources": {"limits": {"memory": "300Mi"}}}`)
		s.OverridableValues = []ctfv1alpha1.ValuePath{"podAnnotations", "env"}
	})

	ch := builders.FromTemplate(ns, "prec", "team-a", "tpl-prec")
	ch.Spec.Values = harness.Values(`{"podAnnotations": {"who": "challenge"}}`)
	ch.Spec.Env = []ctfv1alpha1.EnvVar{{Name: "LEVEL", Value: "2"}}
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

	dep := &appsv1.Deployment{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), dep)).To(Succeed())
	pod := dep.Spec.Template
	g.Expect(pod.Annotations).To(HaveKeyWithValue("tier", "template"), "template values over chart defaults")
	g.Expect(pod.Annotations).To(HaveKeyWithValue("who", "challenge"), "Challenge spec.values over template values")
	g.Expect(pod.Spec.Containers[0].Image).To(Equal("registry.example/ctf/tpl-prec:1"), "typed template fields over values")
	g.Expect(pod.Spec.Containers[0].Resources.Limits.Memory().String()).To(Equal("300Mi"))
	g.Expect(pod.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "LEVEL", Value: "2"}))
	g.Expect(pod.Labels).To(HaveKeyWithValue(ctfv1alpha1.ChallengeLabel, "tpl-prec"))
	g.Expect(pod.Labels).To(HaveKeyWithValue(participantLabel, "team-a"), "enforced values over everything")

	refused := builders.FromTemplate(ns, "refused", "team-b", "tpl-prec")
	refused.Spec.Values = harness.Values(`{"replicas": 3, "podAnnotations": {"ok": "yes"}}`)
	refused.Spec.Image = "attacker.example/own-image:1"
	g.Expect(k8s.Create(ctx, refused)).To(Succeed())
	got := eventuallyPhase(t, refused, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("ValueNotAllowed"))
	g.Expect(got.Status.Message).To(ContainSubstring("does not allow overriding image, replicas"))
	g.Expect(got.Status.Message).NotTo(ContainSubstring("podAnnotations.ok"))
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(refused), &appsv1.Deployment{}))).To(BeTrue(), "nothing installed")

	g.Eventually(func(g Gomega) {
		tmpl := &ctfv1alpha1.ChallengeTemplate{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "tpl-prec"}, tmpl)).To(Succeed())
		g.Expect(tmpl.Status.ActiveInstances).To(Equal(int32(2)))
	}, timeout, interval).Should(Succeed())
}

func TestMissingTemplateHealsWhenItAppears(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	ch := builders.FromTemplate(ns, "early", "team-c", "tpl-later")
	g.Expect(k8s.Create(context.Background(), ch)).To(Succeed())
	got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("TemplateNotFound"))
	g.Expect(got.Status.Message).To(ContainSubstring(`ChallengeTemplate "tpl-later" does not exist`))

	h.Template(t, "tpl-later", nil)
	got = eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	g.Expect(got.Status.Endpoint.Port).To(Equal(int32(1337)))
}

// renewNow renews ch as a platform does, setting spec.renewedAt to now, and
// returns that time. Times are kept to the second, so a renewal within the
// second of the creation would move nothing: it waits until the clock is
// past it (an install takes less).
func renewNow(t *testing.T, ch *ctfv1alpha1.Challenge) metav1.Time {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(time.Now, timeout, interval).Should(BeTemporally(">=", ch.CreationTimestamp.Add(time.Second)))
	renewedAt := metav1.NewTime(time.Now().Truncate(time.Second))
	patch := client.MergeFrom(ch.DeepCopy())
	ch.Spec.RenewedAt = &renewedAt
	g.Expect(k8s.Patch(context.Background(), ch, patch)).To(Succeed())
	return renewedAt
}

func TestExpiryDeletesAndRenewalMovesIt(t *testing.T) {
	// Long enough for the steps below on a loaded CI machine, short enough to wait for.
	const lifetime = 10 * time.Second
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	h.Template(t, "tpl-short", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Lifetime = &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: lifetime}, MaxRenewals: ptr.To[int32](1)}
	})
	ch := builders.FromTemplate(ns, "short", "team-d", "tpl-short")
	renewed, refused := counted(g, "challenge_renewals_total", "reason", "Renewed"), counted(g, "challenge_renewals_total", "reason", "RenewalLimitReached")
	expired := counted(g, "challenge_expiries_total", "", "")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	g.Expect(got.Status.ExpiresAt).NotTo(BeNil())
	g.Expect(got.Status.ExpiresAt.Time).To(Equal(got.CreationTimestamp.Add(lifetime)))

	// Renew: expiry moves to a lifetime after the renewal.
	renewedAt := renewNow(t, got)
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
		g.Expect(got.Status.Renewals).To(Equal(int32(1)))
		g.Expect(got.Status.ExpiresAt.Time).To(BeTemporally(">", got.CreationTimestamp.Add(lifetime)))
		g.Expect(got.Status.ExpiresAt.Time).To(BeTemporally("<=", renewedAt.Add(lifetime)))
	}, timeout, interval).Should(Succeed())
	movedTo := got.Status.ExpiresAt.Time

	// A second renewal is beyond the template's limit.
	later := metav1.NewTime(renewedAt.Add(time.Second))
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.RenewedAt = &later
	g.Expect(k8s.Patch(ctx, got, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
		c := meta.FindStatusCondition(got.Status.Conditions, "Renewed")
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal("RenewalLimitReached"))
	}, timeout, interval).Should(Succeed())
	g.Expect(got.Status.ExpiresAt.Time).To(Equal(movedTo), "a refused renewal does not move expiry")
	g.Expect(got.Status.Renewals).To(Equal(int32(1)))

	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(ch), &ctfv1alpha1.Challenge{}))
	}, timeout, 20*time.Millisecond).Should(BeTrue())
	gone := time.Now()
	g.Expect(gone).To(BeTemporally(">=", movedTo), "not before expiry")
	g.Expect(gone).To(BeTemporally("<", movedTo.Add(5*time.Second)), "within seconds of expiry")
	expectEvents(t, ns, "short", "Expired", "Renewed", "RenewalLimitReached")
	// Other tests renew and expire at the same time: at least these.
	g.Expect(counted(g, "challenge_renewals_total", "reason", "Renewed")).To(BeNumerically(">=", renewed+1))
	g.Expect(counted(g, "challenge_renewals_total", "reason", "RenewalLimitReached")).To(BeNumerically(">=", refused+1))
	g.Expect(counted(g, "challenge_expiries_total", "", "")).To(BeNumerically(">=", expired+1))
}

func TestQuotaAndDuplicateWithoutWebhook(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	h.Template(t, "tpl-once", nil)
	h.Template(t, "tpl-capped", func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.MaxInstancesPerParticipant = ptr.To[int32](1) })

	first := builders.FromTemplate(ns, "first", "team-q", "tpl-once")
	g.Expect(k8s.Create(ctx, first)).To(Succeed())
	eventuallyPhase(t, first, ctfv1alpha1.PhaseRunning)

	dup := builders.FromTemplate(ns, "dup", "team-q", "tpl-once")
	g.Expect(k8s.Create(ctx, dup)).To(Succeed())
	got := eventuallyPhase(t, dup, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("QuotaExceeded"))
	g.Expect(got.Status.Message).To(ContainSubstring("already has an instance of tpl-once: " + ns + "/first"))

	over := builders.FromTemplate(ns, "over", "team-q", "tpl-capped")
	g.Expect(k8s.Create(ctx, over)).To(Succeed())
	got = eventuallyPhase(t, over, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("QuotaExceeded"))
	g.Expect(got.Status.Message).To(ContainSubstring("the limit is 1"))
	for _, name := range []string{"dup", "over"} {
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &appsv1.Deployment{}))).To(BeTrue(), "%s installed nothing", name)
		g.Expect(releaseSecrets(ctx, g, ns, name)).To(BeEmpty(), "%s has no release", name)
	}

	// Another participant is not affected.
	other := builders.FromTemplate(ns, "other", "team-r", "tpl-once")
	g.Expect(k8s.Create(ctx, other)).To(Succeed())
	eventuallyPhase(t, other, ctfv1alpha1.PhaseRunning)

	// When the first instance goes, the duplicate is admitted by itself.
	g.Expect(k8s.Delete(ctx, first)).To(Succeed())
	eventuallyPhase(t, dup, ctfv1alpha1.PhaseRunning)
}

func TestDynamicFlagPerParticipantAndNeverShown(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	organiser := harness.OrganiserNamespace
	key := []byte("hmac-key-for-tests-0123456789")
	g.Expect(k8s.Create(ctx, harness.OrganiserSecret("flag-key", map[string][]byte{"key": key}))).To(Succeed())
	h.Template(t, "tpl-flag", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Flag = &ctfv1alpha1.FlagSpec{Dynamic: &ctfv1alpha1.DynamicFlag{
			SecretKey: ctfv1alpha1.SecretKeyRef{Namespace: organiser, Name: "flag-key", Key: "key"},
			Format:    "CTF{%s}", Length: 24,
		}}
	})
	h.Template(t, "tpl-flag-env", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Flag = &ctfv1alpha1.FlagSpec{
			Dynamic:      &ctfv1alpha1.DynamicFlag{SecretKey: ctfv1alpha1.SecretKeyRef{Namespace: organiser, Name: "flag-key", Key: "key"}, Format: "CTF{%s}", Length: 24},
			FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountEnv, EnvName: "FLAG"},
		}
	})

	flags := map[string]string{}
	for _, p := range []string{"team-x", "team-y"} {
		ch := builders.FromTemplate(ns, "flag-"+p, p, "tpl-flag")
		g.Expect(k8s.Create(ctx, ch)).To(Succeed())
		got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
		g.Expect(got.Status.FlagSecretName).To(Equal("flag-" + p + "-flag"))
		flags[p] = flagOf(t, ns, got.Status.FlagSecretName)
		g.Expect(flags[p]).To(Equal(ctfflag.Derive(key, "tpl-flag", p, "CTF{%s}", 24)), "a platform can recompute it")

		dep := &appsv1.Deployment{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), dep)).To(Succeed())
		g.Expect(dep.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("Secret.SecretName", got.Status.FlagSecretName)))
		g.Expect(dep.Spec.Template.Spec.Containers[0].VolumeMounts).To(ContainElement(And(
			HaveField("MountPath", "/flag/flag.txt"), HaveField("ReadOnly", true))))
	}
	g.Expect(flags["team-x"]).NotTo(Equal(flags["team-y"]), "flags differ per participant")

	// Stable across reconciles: an upgrade leaves the flag as it was.
	ch := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "flag-team-x"}, ch)).To(Succeed())
	patch := client.MergeFrom(ch.DeepCopy())
	ch.Spec.RenewedAt = &metav1.Time{Time: time.Now().Truncate(time.Second)} // a new generation; spec.lifetime cannot be added
	g.Expect(k8s.Patch(ctx, ch, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), ch)).To(Succeed())
		g.Expect(ch.Status.ObservedGeneration).To(Equal(ch.Generation))
	}, timeout, interval).Should(Succeed())
	g.Expect(flagOf(t, ns, "flag-team-x-flag")).To(Equal(flags["team-x"]))

	envCh := builders.FromTemplate(ns, "flag-env", "team-z", "tpl-flag-env")
	g.Expect(k8s.Create(ctx, envCh)).To(Succeed())
	eventuallyPhase(t, envCh, ctfv1alpha1.PhaseRunning)
	dep := &appsv1.Deployment{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(envCh), dep)).To(Succeed())
	g.Expect(dep.Spec.Template.Spec.Containers[0].Env).To(ContainElement(And(
		HaveField("Name", "FLAG"), HaveField("ValueFrom.SecretKeyRef.Key", "flag"))))

	// The flag appears in no Challenge, Event or log line.
	var list ctfv1alpha1.ChallengeList
	g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var events eventsv1.EventList
	g.Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
	crs, _ := json.Marshal(list)
	evs, _ := json.Marshal(events)
	logs, err := os.ReadFile(h.LogFile)
	g.Expect(err).NotTo(HaveOccurred())
	for p, f := range flags {
		digest := strings.TrimSuffix(strings.TrimPrefix(f, "CTF{"), "}")
		g.Expect(string(crs)).NotTo(ContainSubstring(digest), "flag of %s in a Challenge", p)
		g.Expect(string(evs)).NotTo(ContainSubstring(digest), "flag of %s in an Event", p)
		g.Expect(string(logs)).NotTo(ContainSubstring(digest), "flag of %s in the operator's log", p)
	}
}

func flagOf(t *testing.T, ns, secret string) string {
	t.Helper()
	s := &corev1.Secret{}
	NewWithT(t).Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: secret}, s)).To(Succeed())
	return string(s.Data["flag"])
}

func TestNetworkPolicyIsolatesInstances(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	h.Template(t, "tpl-net", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Ports = []ctfv1alpha1.ChallengePort{{Name: "nc", Port: 1337}, {Name: "dns", Port: 5353, Protocol: ctfv1alpha1.ProtocolUDP}}
		s.Egress = []ctfv1alpha1.EgressRule{{Name: "checker", CIDR: "203.0.113.0/24", Ports: []ctfv1alpha1.ChallengePort{{Name: "https", Port: 443}}}}
	})
	ch := builders.FromTemplate(ns, "net", "team-n", "tpl-net")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

	np := &networkingv1.NetworkPolicy{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), np)).To(Succeed())
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	port := func(p int, proto *corev1.Protocol) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Port: ptr.To(intstr.FromInt(p)), Protocol: proto}
	}
	g.Expect(np.Spec.PodSelector.MatchLabels).To(Equal(map[string]string{
		ctfv1alpha1.NameLabel: "challenge", ctfv1alpha1.AppInstanceLabel: "net"}))
	g.Expect(np.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress))
	g.Expect(np.Spec.Ingress).To(Equal([]networkingv1.NetworkPolicyIngressRule{{
		Ports: []networkingv1.NetworkPolicyPort{port(1337, &tcp), port(5353, &udp)},
		From: []networkingv1.NetworkPolicyPeer{
			{IPBlock: outside(false)},
			{IPBlock: outside(true)},
			{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ingressNamespace}}},
		},
	}}), "only the instance's ports, from outside the cluster or from the ingress controller's namespace, never from another instance")
	g.Expect(np.Spec.Egress).To(Equal([]networkingv1.NetworkPolicyEgressRule{
		{
			Ports: []networkingv1.NetworkPolicyPort{port(53, &udp), port(53, &tcp)},
			To: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
				PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}}}},
		},
		{
			Ports: []networkingv1.NetworkPolicyPort{port(443, &tcp)},
			To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "203.0.113.0/24"}}},
		},
	}), "DNS and the template's named egress, nothing else")
}

func TestPodsPassTheRestrictedProfile(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	nsObj := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
	nsObj.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	nsObj.Labels["pod-security.kubernetes.io/enforce-version"] = "latest"
	g.Expect(k8s.Update(ctx, nsObj)).To(Succeed())

	// The admission check is real: a pod that is not restricted is refused here.
	bad := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "root", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	err := k8s.Create(ctx, bad)
	g.Expect(err).To(MatchError(ContainSubstring("violates PodSecurity")))

	ch := builders.Challenge(ns, "strict", "team-s")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	pod := instancePod(t, ns, "strict")
	g.Expect(pod.Spec.AutomountServiceAccountToken).To(Equal(ptr.To(false)))
	g.Expect(pod.Spec.Containers[0].Resources.Limits).NotTo(BeEmpty())
}

// TestExpiryOutlivesItsTemplate: a template deleted and re-created never
// clears an instance's expiry (it would live forever, renewing without limit).
func TestExpiryOutlivesItsTemplate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	spec := func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Lifetime = &ctfv1alpha1.LifetimePolicy{Max: &metav1.Duration{Duration: time.Hour}, MaxRenewals: ptr.To[int32](1)}
	}
	tmpl := h.Template(t, "tpl-gone", spec)
	ch := builders.FromTemplate(ns, "orphan", "team-g", "tpl-gone")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	g.Expect(got.Status.ExpiresAt).NotTo(BeNil(), "a template with only a maximum still bounds the lifetime")
	expiry := got.Status.ExpiresAt.Time
	g.Expect(expiry).To(Equal(got.CreationTimestamp.Add(time.Hour)))

	g.Expect(k8s.Delete(ctx, tmpl)).To(Succeed())
	got = eventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("TemplateNotFound"), got.Status.Message)
	g.Expect(got.Status.ExpiresAt).NotTo(BeNil())
	g.Expect(got.Status.ExpiresAt.Time).To(Equal(expiry), "kept while the template is gone")

	h.Template(t, "tpl-gone", spec)
	got = eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	g.Expect(got.Status.ExpiresAt.Time).To(Equal(expiry), "and after it is back")
}

// TestEveryRenewalCountsOnceWhateverTheClock: renewedAt in the past, the same
// value again, in the future (a platform clock ahead of the cluster's) and
// further in the future: each distinct value is counted exactly once, however
// many status writes follow, and a future one counts from when it is seen.
func TestEveryRenewalCountsOnceWhateverTheClock(t *testing.T) {
	const lifetime = time.Hour
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	h.Template(t, "tpl-renew", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Lifetime = &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: lifetime}, MaxRenewals: ptr.To[int32](10)}
		s.OverridableValues = []ctfv1alpha1.ValuePath{"env"}
	})
	ch := builders.FromTemplate(ns, "renew", "team-r", "tpl-renew")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	g.Expect(got.Status.Renewals).To(BeZero())

	renew := func(at time.Time) {
		t.Helper()
		patch := client.MergeFrom(got.DeepCopy())
		got.Spec.RenewedAt = &metav1.Time{Time: at.Truncate(time.Second)}
		g.Expect(k8s.Patch(ctx, got, patch)).To(Succeed())
	}
	// churn makes the operator write the status several times (an upgrade
	// goes Pending and back to Running) without touching renewedAt.
	churns := 0
	churn := func() {
		t.Helper()
		churns++
		patch := client.MergeFrom(got.DeepCopy())
		got.Spec.Env = []ctfv1alpha1.EnvVar{{Name: "CHURN", Value: strconv.Itoa(churns)}}
		g.Expect(k8s.Patch(ctx, got, patch)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning))
		}, timeout, interval).Should(Succeed())
	}
	// expiresBy is read once the renewal is seen: a future renewal counts from then.
	expectRenewals := func(n int32, expiresAfter time.Time, expiresBy func() time.Time, why string) {
		t.Helper()
		g.Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
			g.Expect(got.Status.Renewals).To(Equal(n), why)
		}, timeout, interval).Should(Succeed())
		g.Expect(got.Status.ExpiresAt.Time).To(BeTemporally(">=", expiresAfter), why)
		g.Expect(got.Status.ExpiresAt.Time).To(BeTemporally("<=", expiresBy()), why)
		churn()
		g.Consistently(func() int32 {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)
			return got.Status.Renewals
		}, 2*time.Second, interval).Should(Equal(n), "%s: counted once through later status writes", why)
	}

	past := time.Now().Add(-5 * time.Minute).Truncate(time.Second)
	renew(past)
	pastExpiry := func() time.Time { return past.Add(lifetime) }
	expectRenewals(1, past.Add(lifetime), pastExpiry, "a renewal in the past counts from its date")

	renew(past) // the same value again: nothing new
	expectRenewals(1, past.Add(lifetime), pastExpiry, "the same renewedAt again")

	before := time.Now().Truncate(time.Second)
	skewed := time.Now().Add(10 * time.Minute)
	renew(skewed)
	expectRenewals(2, before.Add(lifetime), func() time.Time { return time.Now().Add(lifetime) }, "a renewal in the future counts from when it is seen")

	before = time.Now().Truncate(time.Second)
	renew(skewed.Add(time.Second))
	expectRenewals(3, before.Add(lifetime), func() time.Time { return time.Now().Add(lifetime) }, "a later future renewal counts once more")
}

// TestFractionalRenewedAtCountsOnce: a renewedAt with a fraction of a second,
// as JavaScript's toISOString writes it, is one renewal, with a renewal limit
// and without one. Compared with the status (stored to the second) as read,
// it was counted again at every status write: thousands of renewals, or
// every renewal of the limit burnt by one request.
func TestFractionalRenewedAtCountsOnce(t *testing.T) {
	tests := []struct {
		name        string
		maxRenewals *int32
	}{
		{"without a limit", nil},
		{"with a limit", ptr.To[int32](3)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const lifetime = time.Hour
			g := NewWithT(t)
			ctx := context.Background()
			ns := namespace(t)
			tmpl := "tpl-fraction-" + strconv.Itoa(i)
			h.Template(t, tmpl, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Lifetime = &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: lifetime}, MaxRenewals: tt.maxRenewals}
			})
			ch := builders.FromTemplate(ns, "fraction", "team-f", tmpl)
			g.Expect(k8s.Create(ctx, ch)).To(Succeed())
			got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

			second := time.Now().UTC().Add(-time.Second).Truncate(time.Second)
			renewedAt := second.Format("2006-01-02T15:04:05") + ".5Z"
			patch := []byte(`{"spec":{"renewedAt":"` + renewedAt + `"}}`)
			g.Expect(k8s.Patch(ctx, got, client.RawPatch(types.MergePatchType, patch))).To(Succeed())

			g.Eventually(func(g Gomega) {
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
				g.Expect(got.Status.Renewals).To(Equal(int32(1)))
				g.Expect(renewedEvents(g, ns, "fraction")).To(Equal(1))
			}, timeout, interval).Should(Succeed())
			g.Expect(got.Status.ExpiresAt.Time).To(BeTemporally("==", second.Add(lifetime)), "a lifetime after the renewal's second")
			g.Consistently(func(g Gomega) {
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
				g.Expect(got.Status.Renewals).To(Equal(int32(1)), "counted once")
				g.Expect(renewedEvents(g, ns, "fraction")).To(Equal(1), "one Renewed Event")
			}, 3*time.Second, interval).Should(Succeed())
		})
	}
}

// renewedEvents counts the Renewed Events about a Challenge.
func renewedEvents(g Gomega, ns, name string) int {
	var events eventsv1.EventList
	g.Expect(k8s.List(context.Background(), &events, client.InNamespace(ns))).To(Succeed())
	n := 0
	for _, e := range events.Items {
		if e.Regarding.Kind == "Challenge" && e.Regarding.Name == name && e.Reason == "Renewed" {
			n++
		}
	}
	return n
}

// outside is the chart's IPv4 or IPv6 "outside the cluster": every address but
// the internal ranges of that family, the defaults and the suite's own.
func outside(v6 bool) *networkingv1.IPBlock {
	b := &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}
	if v6 {
		b.CIDR = "::/0"
	}
	for _, c := range (values.Settings{InternalCIDRs: internalCIDRs}).EffectiveInternalCIDRs() {
		if strings.Contains(c, ":") == v6 {
			b.Except = append(b.Except, c)
		}
	}
	return b
}
