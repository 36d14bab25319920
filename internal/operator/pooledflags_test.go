package operator_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/controller"
	"github.com/challenge-operator/challenge-operator/internal/ctfflag"
	"github.com/challenge-operator/challenge-operator/internal/flagtag"
	"github.com/challenge-operator/challenge-operator/internal/identity"
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

// TestPooledPerTeamFlags: a pooled template with a perTeam flag. A team's
// claim gets the pool's running pod, unrestarted, and is not Running, nor
// shown an address, until the operator's writer has written that team's
// own flag into it and the kubelet reported it done; then it is. After the
// first team's instance is gone, a second team's claim gets its own flag
// the same way: a pooled instance is never handed from one team to another.
func TestPooledPerTeamFlags(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	newTemplate(t, "pooled-flags", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
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
		ch := fromTemplate(ns, "pf-"+team, team, "pooled-flags")
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
		g.Expect(writer.Name).To(Equal("flags-" + controller.FlagClaim(ch.UID) + "-0"))
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
			g.Expect(pod.Spec.EphemeralContainers[1].Name).To(Equal("flags-" + controller.FlagClaim(ch.UID) + "-1"))
		}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&pooled), &pooled)).To(Succeed())
		g.Expect(pooled.Annotations).To(HaveKeyWithValue(ctfv1alpha1.FlagsDeliveredAnnotation, controller.FlagClaim(ch.UID)))
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
