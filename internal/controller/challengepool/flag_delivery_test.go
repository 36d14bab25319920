package challengepool

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// writerImageUser is the user of the writer's image, the operator's
// (distroless nonroot, USER 65532 in the Dockerfile).
const writerImageUser = 65532

// kubeletRefuses is the kubelet's check of a container's user before it
// creates it (kuberuntime's verifyRunAsNonRoot): the reason it gives for
// a refusal, "" when it starts it. One that must run as non-root (its own
// runAsNonRoot, else its pod's) is refused when its user (its own
// runAsUser, else its pod's, else its image's) is root.
func kubeletRefuses(pod *corev1.Pod, c *corev1.SecurityContext) string {
	var nonRoot *bool
	var uid *int64
	if sc := pod.Spec.SecurityContext; sc != nil {
		nonRoot, uid = sc.RunAsNonRoot, sc.RunAsUser
	}
	if c != nil && c.RunAsNonRoot != nil {
		nonRoot = c.RunAsNonRoot
	}
	if c != nil && c.RunAsUser != nil {
		uid = c.RunAsUser
	}
	if !ptr.Deref(nonRoot, false) || ptr.Deref(uid, writerImageUser) != 0 {
		return ""
	}
	return "container's runAsUser breaks non-root policy"
}

// instancePod is a pod as the chart renders one of a template of profile
// with the pod-level securityContext pod.
func instancePod(pod *corev1.PodSecurityContext, privilegeEscalation bool) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ctf-pool"},
		Spec: corev1.PodSpec{SecurityContext: pod, Containers: []corev1.Container{{Name: "challenge", Image: "registry.example/web:1",
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(false), AllowPrivilegeEscalation: ptr.To(privilegeEscalation),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}}},
	}
}

// TestTheFlagWriterIsOneTheKubeletStarts: whatever user a pooled
// instance's pod runs as, its flag writer is a container the kubelet
// starts (no runAsNonRoot beside uid 0), runs as the pod's user when it
// names one, keeps no capability nor privilege escalation, and leaves the
// pod within the Pod Security level it met without it.
func TestTheFlagWriterIsOneTheKubeletStarts(t *testing.T) {
	seccomp := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	tests := []struct {
		name string
		pod  *corev1.Pod
		user *int64
	}{
		{"restricted", instancePod(&corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000),
			RunAsNonRoot: ptr.To(true), FSGroup: ptr.To[int64](1000), SeccompProfile: seccomp}, false), ptr.To[int64](1000)},
		{"baseline, root", instancePod(&corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0), SeccompProfile: seccomp}, true), ptr.To[int64](0)},
		{"baseline, root, a group of its own", instancePod(&corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](1000),
			FSGroup: ptr.To[int64](1000), SeccompProfile: seccomp}, false), ptr.To[int64](0)},
		{"baseline, the image's user", instancePod(&corev1.PodSecurityContext{SeccompProfile: seccomp}, false), nil},
		{"no securityContext", instancePod(nil, false), nil},
	}
	evaluator, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	levelOf := func(pod *corev1.Pod) psaapi.Level {
		for _, level := range []psaapi.Level{psaapi.LevelRestricted, psaapi.LevelBaseline} {
			lv := psaapi.LevelVersion{Level: level, Version: psaapi.LatestVersion()}
			if psapolicy.AggregateCheckResults(evaluator.EvaluatePod(lv, &pod.ObjectMeta, &pod.Spec)).Allowed {
				return level
			}
		}
		return psaapi.LevelPrivileged
	}
	r := &FlagDeliveryReconciler{Image: "registry.example/challenge-operator:1"}
	flags := []*ctfv1alpha1.NamedFlag{{Name: "web", PerTeam: &ctfv1alpha1.PerTeamFlag{}, FlagDelivery: ctfv1alpha1.FlagDelivery{Path: "/flag/web.txt"}}}
	pooled := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "web-pool-1", Namespace: "ctf-pool"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			w := r.writer(pooled, tt.pod, "flags-0123456789-0", flags, map[string]string{"web": "00"})
			sc := w.SecurityContext
			g.Expect(kubeletRefuses(tt.pod, sc)).To(BeEmpty())
			g.Expect(sc.RunAsUser).To(Equal(tt.user), "the pod's user")
			if tt.user == nil || *tt.user != 0 {
				g.Expect(sc.RunAsNonRoot).To(HaveValue(BeTrue()), "never root unless the pod is")
			}
			g.Expect(ptr.Deref(sc.Privileged, false)).To(BeFalse())
			g.Expect(sc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
			g.Expect(sc.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
			g.Expect(sc.Capabilities).To(Equal(&corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}))
			g.Expect(sc.SeccompProfile).To(Equal(seccomp))

			before := levelOf(tt.pod)
			with := tt.pod.DeepCopy()
			with.Spec.EphemeralContainers = append(with.Spec.EphemeralContainers, w)
			g.Expect(levelOf(with)).To(Equal(before), "the writer widens no pod's level")
		})
	}
}

// claimPod is a pod of the primary workload whose kubelet reported the
// writers of claim given: an exit code each, -1 for one still running.
func claimPod(name, claim string, exits ...int32) corev1.Pod {
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ctf-pool"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for i, exit := range exits {
		st := corev1.ContainerStatus{Name: writerName(claim, i)}
		if exit < 0 {
			st.State.Running = &corev1.ContainerStateRunning{}
		} else {
			st.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: exit}
		}
		pod.Status.EphemeralContainerStatuses = append(pod.Status.EphemeralContainerStatuses, st)
	}
	return pod
}

// TestClaimFlags: a claim's flags are pending until every current pod of
// each workload with flags has a writer of the claim that exited 0 and the
// delivery was proven; a pod that came after the proof makes them pending
// again; a pod whose every writer failed fails them; a pod on its way out
// counts for nothing.
func TestClaimFlags(t *testing.T) {
	claimant := types.UID("5b1c7c52-2d7e-4a44-9b0a-3f0d1f6f0e11")
	claim := FlagClaim(claimant)
	tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: ctfv1alpha1.ChallengeTemplateSpec{
		Pool:  &ctfv1alpha1.PoolSpec{Min: 1, Max: 1},
		Flags: []ctfv1alpha1.NamedFlag{{Name: "web", PerTeam: &ctfv1alpha1.PerTeamFlag{}, FlagDelivery: ctfv1alpha1.FlagDelivery{Path: "/flag/web.txt"}}}}}
	static := tmpl.DeepCopy()
	static.Spec.Flags[0].PerTeam = nil
	static.Spec.Flags[0].Static = &ctfv1alpha1.SecretKeyRef{Namespace: "ctf", Name: "flags", Key: "web"}
	proven := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "web-pool-1", Annotations: map[string]string{ctfv1alpha1.FlagsDeliveredAnnotation: claim}}}
	unproven := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "web-pool-1", Annotations: map[string]string{}}}
	leaving := claimPod("web-0", claim)
	leaving.DeletionTimestamp = &metav1.Time{}
	ended := claimPod("web-0", claim, 2, 2, 2, 2, 2)
	ended.Status.Phase = corev1.PodFailed
	another := claimPod("web-1", "ffffffffff", 0)

	tests := []struct {
		name    string
		tmpl    *ctfv1alpha1.ChallengeTemplate
		pooled  *ctfv1alpha1.Challenge
		pods    []corev1.Pod
		pending bool
		failed  string
	}{
		{"no template", nil, unproven, nil, false, ""},
		{"no flag filled at claim", static, unproven, nil, false, ""},
		{"delivered and proven", tmpl, proven, []corev1.Pod{claimPod("web-1", claim, 3, 0)}, false, ""},
		{"delivered, not proven yet", tmpl, unproven, []corev1.Pod{claimPod("web-1", claim, 0)}, true, ""},
		{"proven, the pod gone", tmpl, proven, nil, true, ""},
		{"proven, a pod came since", tmpl, proven, []corev1.Pod{claimPod("web-1", claim, 0), claimPod("web-2", claim)}, true, ""},
		{"proven, the pod replaced", tmpl, proven, []corev1.Pod{leaving, claimPod("web-2", claim, -1)}, true, ""},
		{"a writer of another claim", tmpl, proven, []corev1.Pod{another}, true, ""},
		{"four writers failed", tmpl, unproven, []corev1.Pod{claimPod("web-1", claim, 2, 3, 2, 2)}, true, ""},
		{"five writers failed", tmpl, unproven, []corev1.Pod{claimPod("web-1", claim, 2, 3, 2, 2, 3)}, true,
			"the team's flags could not be written into pod ctf-pool/web-1: its 5 writers failed, the last with exit code 3; delete this Challenge to start another"},
		{"the failed pod ended, its successor delivered", tmpl, proven, []corev1.Pod{ended, claimPod("web-2", claim, 0)}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			pending, failed := ClaimFlags(tt.tmpl, tt.pooled, claimant, tt.pods)
			g.Expect(pending).To(Equal(tt.pending))
			g.Expect(failed).To(Equal(tt.failed))
		})
	}
}

// TestWriterNumber: only a writer of the claim has a number.
func TestWriterNumber(t *testing.T) {
	g := NewWithT(t)
	for i := range maxFlagWriters {
		g.Expect(writerNumber(writerName("0123456789", i), "0123456789")).To(Equal(i))
	}
	for _, name := range []string{"flags-0123456789-", "flags-0123456789-x", "flags-0123456789--1", "flags-9876543210-0", "debugger", "flags-0123456789"} {
		g.Expect(writerNumber(name, "0123456789")).To(Equal(-1), name)
	}
}
