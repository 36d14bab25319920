package operator_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/controller/challengepool"
	"github.com/challenge-operator/challenge-operator/internal/ctfflag"
	"github.com/challenge-operator/challenge-operator/internal/flagtag"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// kubeletWriters stands for the kubelet and the writer it runs: each
// ephemeral flag writer added to a pod of the pool is reported as the
// writer would end, from what the kubelet would give it: exit 0 when every
// value the Secret holds is the one its arguments expect, 3 (stale)
// otherwise; a writer named in fail exits 2 (its image could not write).
// KWOK's nodes run nothing, so the test answers for them, and only while
// on() says so.
func kubeletWriters(g Gomega, on func() bool, fail map[string]bool) {
	if !on() {
		return
	}
	ctx := context.Background()
	var pods corev1.PodList
	g.Expect(k8s.List(ctx, &pods, client.InNamespace(poolNamespace))).To(Succeed())
	for i := range pods.Items {
		pod := &pods.Items[i]
		reported := map[string]bool{}
		for _, st := range pod.Status.EphemeralContainerStatuses {
			reported[st.Name] = true
		}
		for _, c := range pod.Spec.EphemeralContainers {
			if reported[c.Name] {
				continue
			}
			if why := kubeletRefuses(pod, &c); why != "" {
				// The kubelet never starts it: it says why, and waits.
				pod.Status.EphemeralContainerStatuses = append(pod.Status.EphemeralContainerStatuses, corev1.ContainerStatus{
					Name: c.Name, Image: c.Image, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: why}}})
				continue
			}
			exit := int32(0)
			if fail[c.Name] {
				exit = 2
			}
			for j, env := range c.Env {
				secret := &corev1.Secret{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: env.ValueFrom.SecretKeyRef.Name}, secret)).To(Succeed())
				sum := sha256.Sum256(secret.Data[env.ValueFrom.SecretKeyRef.Key])
				if !strings.HasSuffix(c.Args[2+2*j], ":"+hex.EncodeToString(sum[:])) {
					exit = 3
				}
			}
			pod.Status.EphemeralContainerStatuses = append(pod.Status.EphemeralContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, Image: c.Image, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: "Completed"}}})
		}
		if len(pod.Status.EphemeralContainerStatuses) > len(reported) {
			g.Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
		}
	}
}

// writerImageUser is the user of the writer's image, the operator's
// (distroless nonroot, USER 65532 in the Dockerfile): the kubelet's
// fallback when neither the container nor its pod names one.
const writerImageUser = 65532

// kubeletRefuses is the kubelet's check of a container's user before it
// creates it (kuberuntime's verifyRunAsNonRoot), the reason it gives for a
// refusal, "" when it starts it: one that must run as non-root (its own
// runAsNonRoot, else its pod's) is refused when its user (its own
// runAsUser, else its pod's, else its image's) is root.
func kubeletRefuses(pod *corev1.Pod, c *corev1.EphemeralContainer) string {
	var nonRoot *bool
	var uid *int64
	if sc := pod.Spec.SecurityContext; sc != nil {
		nonRoot, uid = sc.RunAsNonRoot, sc.RunAsUser
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsNonRoot != nil {
			nonRoot = sc.RunAsNonRoot
		}
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
	}
	if nonRoot == nil || !*nonRoot {
		return ""
	}
	if uid == nil {
		uid = ptr.To[int64](writerImageUser)
	}
	if *uid == 0 {
		return "container's runAsUser breaks non-root policy (pod: \"" + pod.Name + "\", container: " + c.Name + ")"
	}
	return ""
}

// TestPooledPerTeamFlags: a pooled template with a perTeam flag. A team's
// claim gets the pool's running pod, unrestarted, and is not Running, nor
// shown an address, until the operator's writer has written that team's
// own flag into it and the kubelet reported it done; then it is. After the
// first team's instance is gone, a second team's claim gets its own flag
// the same way: a pooled instance is never handed from one team to another.
func TestPooledPerTeamFlags(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h.Template(t, "pooled-flags", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Pool = &ctfv1alpha1.PoolSpec{Min: 2, Max: 2}
		s.Lifetime = &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: 3600e9}}
		s.Flags = []ctfv1alpha1.NamedFlag{{Name: "web", PerTeam: &ctfv1alpha1.PerTeamFlag{Format: "CTF{%s}"}, FlagDelivery: ctfv1alpha1.FlagDelivery{Path: "/flag/web.txt"}}}
	})
	eventuallyPoolReady(t, "pooled-flags", 2)
	answering := false
	ns := namespace(t)
	codec := harness.FlagCodec()

	var previous string
	for _, team := range []string{"team-first", "team-second"} {
		ch := builders.FromTemplate(ns, "pf-"+team, team, "pooled-flags")
		g.Expect(k8s.Create(ctx, ch)).To(Succeed())

		// Claimed, the writer added, nothing reported yet: Pending, no address.
		var pooled ctfv1alpha1.Challenge
		g.Eventually(func(g Gomega) {
			got := &ctfv1alpha1.Challenge{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
			g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhasePending))
			g.Expect(got.Status.Reason).To(Equal("DeliveringFlags"))
			g.Expect(got.Status.Endpoint).To(BeNil(), "no address before the team's flags are in")
			g.Expect(got.Status.PooledInstance).NotTo(BeNil())
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: poolNamespace, Name: got.Status.PooledInstance.Name}, &pooled)).To(Succeed())
		}, timeout, interval).Should(Succeed())
		g.Expect(pooled.Name).NotTo(Equal(previous), "never the previous team's instance")
		previous = pooled.Name

		flag := ctfflag.PerTeam(codec, "pooled-flags", "web", team, "CTF{%s}")
		sum := sha256.Sum256([]byte(flag))
		var pods corev1.PodList
		g.Eventually(func(g Gomega) {
			g.Expect(k8s.List(ctx, &pods, client.InNamespace(poolNamespace), client.MatchingLabels{ctfv1alpha1.InstanceLabel: pooled.Name})).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(1))
			g.Expect(pods.Items[0].Spec.EphemeralContainers).To(HaveLen(1))
		}, timeout, interval).Should(Succeed())
		pod := pods.Items[0]
		g.Expect(pod.Status.ContainerStatuses).To(HaveEach(HaveField("RestartCount", BeZero())), "nothing restarted")
		writer := pod.Spec.EphemeralContainers[0]
		g.Expect(writer.Name).To(Equal("flags-" + challengepool.FlagClaim(ch.UID) + "-0"))
		g.Expect(writer.Image).To(Equal(flagWriterImage))
		g.Expect(writer.Args).To(Equal([]string{"write-flags", "--file", "/run/challenge-flags/flags-web/web.txt=FLAG_0:0444:" + hex.EncodeToString(sum[:])}))
		g.Expect(writer.Env).To(Equal([]corev1.EnvVar{{Name: "FLAG_0", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: identity.ClaimFlagSecret(pooled.Name)}, Key: "flag.web"}}}}))
		g.Expect(writer.VolumeMounts).To(Equal([]corev1.VolumeMount{{Name: "flags-web", MountPath: "/run/challenge-flags/flags-web"}}))
		g.Expect(writer.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
		g.Expect(pod.Spec.Containers[0].VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "flags-web", MountPath: "/flag", ReadOnly: true}))
		got := &ctfv1alpha1.Challenge{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
		g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhasePending), "still not Running: no proof yet")

		// The kubelet reports the writer done: the team's flag is in. The
		// second team's first writer fails: another is added, and that one
		// proves the delivery.
		fail := map[string]bool{}
		if team == "team-second" {
			fail[writer.Name] = true
		}
		answering = true
		g.Eventually(func(g Gomega) {
			kubeletWriters(g, func() bool { return answering }, fail)
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
			g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning))
		}, timeout, interval).Should(Succeed())
		answering = false
		g.Expect(got.Status.Endpoint).NotTo(BeNil())
		if team == "team-second" {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&pod), &pod)).To(Succeed())
			g.Expect(pod.Spec.EphemeralContainers).To(HaveLen(2), "a failed writer is followed by another")
			g.Expect(pod.Spec.EphemeralContainers[1].Name).To(Equal("flags-" + challengepool.FlagClaim(ch.UID) + "-1"))
		}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&pooled), &pooled)).To(Succeed())
		g.Expect(pooled.Annotations).To(HaveKeyWithValue(ctfv1alpha1.FlagsDeliveredAnnotation, challengepool.FlagClaim(ch.UID)))
		body, _ := ctfflag.BodyOf("CTF{%s}", flag)
		verdict, owner := codec.Verify("pooled-flags", "web", team, body)
		g.Expect(verdict).To(Equal(flagtag.Correct), "the team's own flag")
		g.Expect(owner).To(Equal(team))
		// The claim's upgrade brings the instance's own Secret (the status's
		// flagSecretName) to the same flag.
		g.Eventually(func(g Gomega) {
			secret := &corev1.Secret{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: poolNamespace, Name: identity.FlagSecret(pooled.Name)}, secret)).To(Succeed())
			g.Expect(string(secret.Data["flag.web"])).To(Equal(flag))
		}, timeout, interval).Should(Succeed())

		claimSecret := &corev1.Secret{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: poolNamespace, Name: identity.ClaimFlagSecret(pooled.Name)}, claimSecret)).To(Succeed())
		g.Expect(claimSecret.Data).To(Equal(map[string][]byte{"flag.web": []byte(flag)}), "the claim's Secret: the team's flag alone")
		g.Expect(claimSecret.OwnerReferences).To(ConsistOf(HaveField("UID", pooled.UID)), "gone with the pooled instance")

		g.Expect(k8s.Delete(ctx, got)).To(Succeed())
		h.EventuallyGone(t, got, timeout, "the team's Challenge goes")
		h.EventuallyGone(t, &pooled, timeout, "and its pooled instance with it")
		h.EventuallyGone(t, claimSecret, timeout, "and the claim's Secret with it")
	}
}

// perTeamPool makes a pooled template of one instance with a perTeam flag,
// changed further by mutate, and waits until its pool is ready.
func perTeamPool(t *testing.T, name string, mutate func(*ctfv1alpha1.ChallengeTemplateSpec)) {
	t.Helper()
	h.Template(t, name, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Pool = &ctfv1alpha1.PoolSpec{Min: 1, Max: 1}
		s.Lifetime = &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: 3600e9}}
		s.Flags = []ctfv1alpha1.NamedFlag{{Name: "web", PerTeam: &ctfv1alpha1.PerTeamFlag{Format: "CTF{%s}"}, FlagDelivery: ctfv1alpha1.FlagDelivery{Path: "/flag/web.txt"}}}
		if mutate != nil {
			mutate(s)
		}
	})
	eventuallyPoolReady(t, name, 1)
}

// claimDelivering creates ch, a Challenge of a pooled template with a
// perTeam flag, and waits until it claimed a pooled instance and waits for
// its flags, the first writer added to the instance's pod; it returns the
// pooled instance and its pod.
func claimDelivering(t *testing.T, ch *ctfv1alpha1.Challenge) (ctfv1alpha1.Challenge, corev1.Pod) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	var pooled ctfv1alpha1.Challenge
	var pod corev1.Pod
	g.Eventually(func(g Gomega) {
		got := &ctfv1alpha1.Challenge{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
		g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhasePending))
		g.Expect(got.Status.Reason).To(Equal("DeliveringFlags"))
		g.Expect(got.Status.PooledInstance).NotTo(BeNil())
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: poolNamespace, Name: got.Status.PooledInstance.Name}, &pooled)).To(Succeed())
		var pods corev1.PodList
		g.Expect(k8s.List(ctx, &pods, client.InNamespace(poolNamespace), client.MatchingLabels{ctfv1alpha1.InstanceLabel: pooled.Name})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1))
		pod = pods.Items[0]
		g.Expect(pod.Spec.EphemeralContainers).To(HaveLen(1))
	}, timeout, interval).Should(Succeed())
	return pooled, pod
}

// eventuallyRunning answers the pool's writers as the kubelet would (fail
// naming those that exit 2) until ch is Running, and returns it.
func eventuallyRunning(t *testing.T, ch *ctfv1alpha1.Challenge, fail map[string]bool) *ctfv1alpha1.Challenge {
	t.Helper()
	got := &ctfv1alpha1.Challenge{}
	NewWithT(t).Eventually(func(g Gomega) {
		kubeletWriters(g, func() bool { return true }, fail)
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(ch), got)).To(Succeed())
		g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning), "reason %s: %s", got.Status.Reason, got.Status.Message)
	}, timeout, interval).Should(Succeed())
	return got
}

// TestPooledFlagsReachARootPod: a pooled template that runs as root
// (baseline, runAsUser 0) gets its team's flags. The writer runs as the
// pod's user, root, so that a flag's file is the challenge's own (a 0400
// flag is its owner's alone), and does not ask for a non-root user, which
// the kubelet would refuse to start (the claimant then waited for ever);
// it keeps nothing else of root's: no capability, no privilege escalation,
// a read-only root filesystem, the runtime's seccomp profile.
func TestPooledFlagsReachARootPod(t *testing.T) {
	g := NewWithT(t)
	perTeamPool(t, "pooled-flags-root", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Security = &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileBaseline, RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0)}
	})
	ns := h.Namespace(t, map[string]string{"pod-security.kubernetes.io/enforce": "baseline"})
	ch := builders.FromTemplate(ns, "pfr-team-root", "team-root", "pooled-flags-root")
	_, pod := claimDelivering(t, ch)
	g.Expect(pod.Spec.SecurityContext.RunAsUser).To(HaveValue(BeZero()), "the pool's pod runs as root")

	writer := pod.Spec.EphemeralContainers[0]
	g.Expect(kubeletRefuses(&pod, &writer)).To(BeEmpty(), "a writer the kubelet starts")
	sc := writer.SecurityContext
	g.Expect(sc.RunAsUser).To(HaveValue(BeZero()), "the pod's user")
	g.Expect(sc.RunAsGroup).To(HaveValue(BeZero()), "the pod's group")
	g.Expect(ptr.Deref(sc.RunAsNonRoot, false)).To(BeFalse(), "no non-root user asked for")
	g.Expect(ptr.Deref(sc.Privileged, false)).To(BeFalse())
	g.Expect(sc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
	g.Expect(sc.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
	g.Expect(sc.Capabilities).To(Equal(&corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}))
	g.Expect(sc.SeccompProfile).To(Equal(&corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}))

	got := eventuallyRunning(t, ch, nil)
	g.Expect(got.Status.Endpoint).NotTo(BeNil())
}

// TestPooledFlagsWritersAllFail: a claim whose every writer fails (the
// kubelet reports five exits 2) ends in Error, FlagDeliveryFailed, with no
// address and a message naming the pod, and its pod gets no sixth writer.
// The pool holds its size meanwhile (a claimed instance is out of it). The
// team stops it (deletes it, as the instancer does), which takes the broken
// instance with it, and its next start of the template gets its flag and runs.
func TestPooledFlagsWritersAllFail(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	perTeamPool(t, "pooled-flags-fail", nil)
	ns := namespace(t)
	ch := builders.FromTemplate(ns, "pff-team-fail", "team-fail", "pooled-flags-fail")
	pooled, pod := claimDelivering(t, ch)
	fail := map[string]bool{}
	for i := range 5 {
		fail[fmt.Sprintf("flags-%s-%d", challengepool.FlagClaim(ch.UID), i)] = true
	}
	got := &ctfv1alpha1.Challenge{}
	g.Eventually(func(g Gomega) {
		kubeletWriters(g, func() bool { return true }, fail)
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
		g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhaseError), "reason %s: %s", got.Status.Reason, got.Status.Message)
	}, timeout, interval).Should(Succeed())
	g.Expect(got.Status.Reason).To(Equal("FlagDeliveryFailed"))
	g.Expect(got.Status.Message).To(ContainSubstring(pod.Name))
	g.Expect(got.Status.Message).To(ContainSubstring("5 writers"))
	g.Expect(got.Status.Endpoint).To(BeNil(), "no address without the team's flag")
	g.Expect(got.Status.Endpoints).To(BeEmpty())
	g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, "Stalled")).To(BeTrue(), "waiting will not help")
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&pod), &pod)).To(Succeed())
	g.Expect(pod.Spec.EphemeralContainers).To(HaveLen(5), "no sixth writer")
	eventuallyPoolReady(t, "pooled-flags-fail", 1)

	g.Expect(k8s.Delete(ctx, got)).To(Succeed())
	h.EventuallyGone(t, got, timeout, "the team's failed instance goes")
	h.EventuallyGone(t, &pooled, timeout, "and its broken pooled instance with it")
	again := builders.FromTemplate(ns, "pff-team-fail", "team-fail", "pooled-flags-fail")
	next, _ := claimDelivering(t, again)
	g.Expect(next.Name).NotTo(Equal(pooled.Name))
	running := eventuallyRunning(t, again, nil)
	g.Expect(running.Status.Endpoint).NotTo(BeNil())
}

// TestPooledFlagsFollowAReplacedPod: once a claim's flags are in and its
// team's instance Running, the instance's pod is replaced (an eviction, a
// node lost): the new pod holds no flag, so the team's instance is Pending,
// DeliveringFlags, without an address, until the new pod's own writer is
// reported done; then it is Running again.
func TestPooledFlagsFollowAReplacedPod(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	perTeamPool(t, "pooled-flags-replaced", nil)
	ch := builders.FromTemplate(namespace(t), "pfp-team-replaced", "team-replaced", "pooled-flags-replaced")
	pooled, pod := claimDelivering(t, ch)
	eventuallyRunning(t, ch, nil)

	g.Expect(k8s.Delete(ctx, &pod, client.GracePeriodSeconds(0))).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &ctfv1alpha1.Challenge{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
		g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhasePending))
		g.Expect(got.Status.Reason).To(Equal("DeliveringFlags"))
		g.Expect(got.Status.Endpoint).To(BeNil(), "no address while a pod lacks the team's flag")
		var pods corev1.PodList
		g.Expect(k8s.List(ctx, &pods, client.InNamespace(poolNamespace), client.MatchingLabels{ctfv1alpha1.InstanceLabel: pooled.Name})).To(Succeed())
		g.Expect(pods.Items).To(ConsistOf(And(
			HaveField("UID", Not(Equal(pod.UID))),
			HaveField("Spec.EphemeralContainers", ConsistOf(HaveField("Name", "flags-"+challengepool.FlagClaim(ch.UID)+"-0"))))))
	}, timeout, interval).Should(Succeed())

	got := eventuallyRunning(t, ch, nil)
	g.Expect(got.Status.Endpoint).NotTo(BeNil())
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&pooled), &pooled)).To(Succeed())
	g.Expect(pooled.Annotations).To(HaveKeyWithValue(ctfv1alpha1.FlagsDeliveredAnnotation, challengepool.FlagClaim(ch.UID)))
}
