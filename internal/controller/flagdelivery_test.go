package controller

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
