package operator_test

import (
	"context"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/solvercheck"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// solveLikeAKubelet stands for the kubelet running solver pods until ctx
// ends: KWOK runs no image, so each solver pod ends as a real solver would,
// exit 0 when the flag its canary serves is the one it was given to expect
// (FLAG, from the operator's Secret), exit 1 otherwise. What the canary
// serves is its instance's own flag Secret, what a solve would read from
// the challenge, unless served says the challenge serves something else
// now (a dependency moved, a file was replaced): Helm would put a Secret
// edited by hand back at its next look, at a moment no test controls.
func solveLikeAKubelet(ctx context.Context, t *testing.T, served *atomic.Pointer[string]) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(poolNamespace), client.HasLabels{ctfv1alpha1.SolverLabel}); err != nil {
			continue
		}
		for i := range pods.Items {
			pod := &pods.Items[i]
			if pod.Status.Phase != corev1.PodRunning || len(pod.Spec.Containers) == 0 {
				continue
			}
			canary := pod.Labels[ctfv1alpha1.SolverLabel]
			expected, instance := &corev1.Secret{}, &corev1.Secret{}
			if k8s.Get(ctx, client.ObjectKey{Namespace: poolNamespace, Name: pod.Spec.Containers[0].EnvFrom[0].SecretRef.Name}, expected) != nil ||
				k8s.Get(ctx, client.ObjectKey{Namespace: poolNamespace, Name: identity.FlagSecret(canary)}, instance) != nil {
				continue
			}
			flag := string(instance.Data["flag"])
			if other := served.Load(); other != nil {
				flag = *other
			}
			exit, phase := int32(1), corev1.PodFailed
			if string(expected.Data["FLAG"]) == flag {
				exit, phase = 0, corev1.PodSucceeded
			}
			pod.Status.Phase = phase
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "solver", Image: pod.Spec.Containers[0].Image,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: "Completed",
					StartedAt: metav1.Now(), FinishedAt: metav1.Now()}}}}
			for j := range pod.Status.Conditions {
				if pod.Status.Conditions[j].Type == corev1.PodReady || pod.Status.Conditions[j].Type == corev1.ContainersReady {
					pod.Status.Conditions[j].Status = corev1.ConditionFalse
				}
			}
			if err := k8s.Status().Update(ctx, pod); err != nil {
				t.Logf("ending solver pod %s: %v", pod.Name, err)
			}
		}
	}
}

// gauge is the value of the gauge name for template, and whether it exists.
func gauge(g Gomega, name, template string) (float64, bool) {
	m := series(g, name, "template", template)
	return m.GetGauge().GetValue(), m != nil
}

// phaseCount is challenge_phase_count for template's instances in phase.
func phaseCount(g Gomega, template string, phase ctfv1alpha1.Phase) float64 {
	return seriesWith(g, "challenge_phase_count", map[string]string{"template": template, "phase": string(phase)}).GetGauge().GetValue()
}

// TestSolverCheck (issue 33): a template's solver runs as a restricted Job
// without a token against a canary of the operator's own, given ctfcli's
// --connection-info and the expected flag. It passes; then the flag the
// canary serves changes, and it fails: SolverHealthy False, an Event, the
// gauge at 0, and (onFailure Pause) a team's start waits, Queued with the
// reason. The challenge is mended, the next run passes, and the waiting
// start goes ahead.
func TestSolverCheck(t *testing.T) {
	g := NewWithT(t)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var served atomic.Pointer[string]
	go solveLikeAKubelet(ctx, t, &served)
	ns := namespace(t)

	secret := harness.OrganiserSecret("solver-flag", map[string][]byte{"flag": []byte("CTF{solvable}")})
	g.Expect(k8s.Create(ctx, secret)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), secret) })
	tmpl := h.Template(t, "solvable", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Flag = &ctfv1alpha1.FlagSpec{Static: &ctfv1alpha1.SecretKeyRef{Namespace: harness.OrganiserNamespace, Name: secret.Name, Key: "flag"}}
		s.SolverCheck = &ctfv1alpha1.SolverCheck{Image: "registry.example/ctf/solvable-solver:1", Args: []ctfv1alpha1.Argument{"solve.py"},
			Interval: &metav1.Duration{Duration: 10 * time.Second}, Timeout: &metav1.Duration{Duration: 5 * time.Second},
			OnFailure: ctfv1alpha1.SolverFailurePause}
	})
	healthy := func(status metav1.ConditionStatus, reason string) *ctfv1alpha1.ChallengeTemplate {
		t.Helper()
		got := &ctfv1alpha1.ChallengeTemplate{}
		g.Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tmpl), got)).To(Succeed())
			c := apimeta.FindStatusCondition(got.Status.Conditions, "SolverHealthy")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(status), c.Message)
			g.Expect(c.Reason).To(Equal(reason))
		}, 2*timeout, interval).Should(Succeed())
		return got
	}

	got := healthy(metav1.ConditionTrue, "SolverPassed")
	canaryName := got.Status.Solver.Canary
	canary := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: poolNamespace, Name: canaryName}, canary)).To(Succeed())
	g.Expect(canary.Labels).To(HaveKeyWithValue(ctfv1alpha1.SolverCanaryLabel, tmpl.Name))
	g.Expect(canary.Spec.Participant).To(Equal(canaryName), "no team's")
	g.Expect(canary.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning))
	g.Expect(phaseCount(g, tmpl.Name, ctfv1alpha1.PhaseRunning)).To(BeZero(), "the canary is no team's instance")
	g.Eventually(func(g Gomega) {
		v, ok := gauge(g, "challenge_solver_healthy", tmpl.Name)
		g.Expect(ok).To(BeTrue())
		g.Expect(v).To(BeEquivalentTo(1))
	}, timeout, interval).Should(Succeed())

	// The run: restricted, no token, ctfcli's convention, the expected flag
	// from a Secret of its own, and a NetworkPolicy to the endpoint and DNS.
	var jobs batchv1.JobList
	g.Expect(k8s.List(ctx, &jobs, client.InNamespace(poolNamespace), client.MatchingLabels{ctfv1alpha1.SolverLabel: canaryName})).To(Succeed())
	g.Expect(jobs.Items).NotTo(BeEmpty())
	pod := jobs.Items[0].Spec.Template.Spec
	g.Expect(*pod.AutomountServiceAccountToken).To(BeFalse())
	g.Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
	g.Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
	c := pod.Containers[0]
	g.Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
	g.Expect(*c.SecurityContext.AllowPrivilegeEscalation).To(BeFalse())
	g.Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
	ep := canary.Status.Endpoint
	g.Expect(c.Args).To(Equal([]string{"solve.py", "--connection-info", fmt.Sprintf("nc %s %d", ep.Host, ep.Port)}))
	g.Expect(*jobs.Items[0].Spec.BackoffLimit).To(BeZero())
	g.Expect(*jobs.Items[0].Spec.ActiveDeadlineSeconds).To(BeEquivalentTo(5))
	policy := &networkingv1.NetworkPolicy{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: poolNamespace, Name: canaryName + "-solver"}, policy)).To(Succeed())
	g.Expect(policy.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress))
	g.Expect(policy.Spec.Ingress).To(BeEmpty())
	g.Expect(policy.Spec.Egress).To(HaveLen(2), "DNS and the endpoint")

	// The flag the canary serves changes.
	served.Store(ptr.To("CTF{moved}"))
	got = healthy(metav1.ConditionFalse, "SolverFailed")
	g.Expect(apimeta.FindStatusCondition(got.Status.Conditions, "SolverHealthy").Message).To(ContainSubstring("new starts and claims wait"))
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tmpl), got)).To(Succeed())
		g.Expect(apimeta.FindStatusCondition(got.Status.Conditions, "Ready").Reason).To(Equal("SolverFailing"))
	}, timeout, interval).Should(Succeed())
	g.Expect(got.Status.Solver.ConsecutiveFailures).To(BeNumerically(">=", 1))
	v, _ := gauge(g, "challenge_solver_healthy", tmpl.Name)
	g.Expect(v).To(BeZero())
	g.Expect(counted(g, "challenge_solver_check_runs_total", "result", "failed")).To(BeNumerically(">=", 1))

	team := builders.FromTemplate(ns, "solvable-team", "team-solvable", tmpl.Name)
	g.Expect(k8s.Create(ctx, team)).To(Succeed())
	waiting := eventuallyPhase(t, team, ctfv1alpha1.PhaseQueued)
	g.Expect(waiting.Status.Message).To(ContainSubstring("paused"))

	// Mended: the next run passes, and the held start goes ahead.
	served.Store(nil)
	healthy(metav1.ConditionTrue, "SolverPassed")
	eventuallyPhase(t, team, ctfv1alpha1.PhaseRunning)
	g.Eventually(func(g Gomega) float64 { return phaseCount(g, tmpl.Name, ctfv1alpha1.PhaseRunning) }, timeout, interval).Should(BeEquivalentTo(1))
	g.Eventually(func(g Gomega) {
		g.Expect(templateEvents(g, tmpl.Name)).To(ContainElements(HavePrefix("SolverFailed: run"), HavePrefix("SolverPassed: the solver solves it again")))
	}, timeout, interval).Should(Succeed())
}

// TestSolverCheckAdmission: a solver check and a failure threshold are
// refused at admission when hostile or inconsistent, and defaulted.
func TestSolverCheckAdmission(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name    string
		spec    map[string]any
		refused string // "" when admitted
	}{
		{"defaults", map[string]any{"solverCheck": map[string]any{"image": "registry.example/ctf/solver:1"}}, ""},
		{"every field", map[string]any{"solverCheck": map[string]any{"image": "registry.example/ctf/solver:1", "command": []any{"python3"},
			"args": []any{"solve.py"}, "interval": "1m", "timeout": "30s", "onFailure": "Pause"}, "failures": map[string]any{"threshold": 5}}, ""},
		{"no image", map[string]any{"solverCheck": map[string]any{}}, "spec.solverCheck.image"},
		{"an image with a space", map[string]any{"solverCheck": map[string]any{"image": "a b"}}, "spec.solverCheck.image"},
		{"a timeout as long as the interval", map[string]any{"solverCheck": map[string]any{"image": "s:1", "interval": "1m", "timeout": "1m"}}, "timeout must be shorter than its interval"},
		{"an interval below 10s", map[string]any{"solverCheck": map[string]any{"image": "s:1", "interval": "5s", "timeout": "5s"}}, "must be between 10s and 24h"},
		{"a timeout above 30m", map[string]any{"solverCheck": map[string]any{"image": "s:1", "interval": "2h", "timeout": "31m"}}, "must be between 5s and 30m"},
		{"an unknown action", map[string]any{"solverCheck": map[string]any{"image": "s:1", "onFailure": "Restart"}}, "spec.solverCheck.onFailure"},
		{"a line break in an argument", map[string]any{"solverCheck": map[string]any{"image": "s:1", "args": []any{"a\nb"}}}, "spec.solverCheck.args[0]"},
		{"a negative threshold", map[string]any{"failures": map[string]any{"threshold": -1}}, "spec.failures.threshold"},
		{"a threshold above 100", map[string]any{"failures": map[string]any{"threshold": 101}}, "spec.failures.threshold"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := map[string]any{"image": "registry.example/ctf/web:1", "ports": []any{map[string]any{"name": "nc", "port": 1337}}}
			maps.Copy(spec, tt.spec)
			tmpl := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": ctfv1alpha1.GroupVersion.String(), "kind": "ChallengeTemplate",
				"metadata": map[string]any{"name": "solver-admission"}, "spec": spec,
			}}
			err := k8s.Create(ctx, tmpl, client.DryRunAll)
			if tt.refused != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.refused)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			if _, ok := tt.spec["solverCheck"]; ok {
				check, _, _ := unstructured.NestedMap(tmpl.Object, "spec", "solverCheck")
				g.Expect(check).To(HaveKey("interval"), "defaulted")
				g.Expect(check).To(HaveKey("timeout"), "defaulted")
				g.Expect(check).To(HaveKey("onFailure"), "defaulted")
			}
		})
	}
}

// TestSolverImageOutsideTheAdminsBounds: a solver's image is held to the
// registries the cluster admin allows, as an instance's are: one that
// would make the node pull from the metadata address runs no Job, and the
// template says why, without pausing anyone (no verdict).
func TestSolverImageOutsideTheAdminsBounds(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tmpl := h.Template(t, "solver-from-metadata", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.SolverCheck = &ctfv1alpha1.SolverCheck{Image: "169.254.169.254/solver:1", OnFailure: ctfv1alpha1.SolverFailurePause,
			Interval: &metav1.Duration{Duration: 10 * time.Second}, Timeout: &metav1.Duration{Duration: 5 * time.Second}}
	})
	got := &ctfv1alpha1.ChallengeTemplate{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tmpl), got)).To(Succeed())
		c := apimeta.FindStatusCondition(got.Status.Conditions, "SolverHealthy")
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionUnknown))
		g.Expect(c.Reason).To(Equal("ImageNotAllowed"))
		g.Expect(c.Message).To(ContainSubstring("is an IP address"))
		g.Expect(c.Message).To(ContainSubstring("--allowed-registries"))
	}, 2*timeout, interval).Should(Succeed())
	var jobs batchv1.JobList
	g.Expect(k8s.List(ctx, &jobs, client.InNamespace(poolNamespace), client.MatchingLabels{ctfv1alpha1.SolverLabel: got.Status.Solver.Canary})).To(Succeed())
	g.Expect(jobs.Items).To(BeEmpty())
	g.Expect(apimeta.IsStatusConditionTrue(got.Status.Conditions, "Ready")).To(BeTrue(), "nobody paused")
}

// eventuallySolverCanary is tmpl's solver canary once it is Running.
func eventuallySolverCanary(t *testing.T, tmpl *ctfv1alpha1.ChallengeTemplate) *ctfv1alpha1.Challenge {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	canary := &ctfv1alpha1.Challenge{}
	g.Eventually(func(g Gomega) {
		var list ctfv1alpha1.ChallengeList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(poolNamespace), client.MatchingLabels{ctfv1alpha1.SolverCanaryLabel: tmpl.Name})).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
		*canary = list.Items[0]
		g.Expect(canary.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning), "%s: %s", canary.Status.Reason, canary.Status.Message)
	}, 2*timeout, interval).Should(Succeed())
	return canary
}

// quickSolver is a solver check run often, which a test's kubelet answers.
func quickSolver(name string) *ctfv1alpha1.SolverCheck {
	return &ctfv1alpha1.SolverCheck{Image: "registry.example/ctf/" + name + "-solver:1",
		Interval: &metav1.Duration{Duration: 10 * time.Second}, Timeout: &metav1.Duration{Duration: 5 * time.Second}}
}

// TestSolverCanaryTakesNoPlace (issue 50, item 11): a solver canary is the
// operator's, no instance of the template's capacity. A shared template's
// organiser instance runs beside its canary whichever came first, and a
// per-team template's maxInstances are all the teams'.
func TestSolverCanaryTakesNoPlace(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go solveLikeAKubelet(ctx, t, &atomic.Pointer[string]{})
	ns := namespace(t)

	t.Run("a shared template's canary first", func(t *testing.T) {
		g := NewWithT(t)
		tmpl := h.Template(t, "shared-solved", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Sharing = ctfv1alpha1.SharingShared
			s.SolverCheck = quickSolver("shared-solved")
		})
		eventuallySolverCanary(t, tmpl)
		organisers := builders.FromTemplate(ns, "shared-solved", "organisers", tmpl.Name)
		g.Expect(k8s.Create(ctx, organisers)).To(Succeed())
		eventuallyPhase(t, organisers, ctfv1alpha1.PhaseRunning)
	})

	t.Run("a shared template's instance first", func(t *testing.T) {
		g := NewWithT(t)
		tmpl := h.Template(t, "shared-later-solved", func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Sharing = ctfv1alpha1.SharingShared })
		organisers := builders.FromTemplate(ns, "shared-later-solved", "organisers", tmpl.Name)
		g.Expect(k8s.Create(ctx, organisers)).To(Succeed())
		eventuallyPhase(t, organisers, ctfv1alpha1.PhaseRunning)
		g.Expect(harness.EditTemplate(ctx, k8s, tmpl.DeepCopy(), func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.SolverCheck = quickSolver("shared-later-solved")
		})).To(Succeed())
		eventuallySolverCanary(t, tmpl)
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(organisers), organisers)).To(Succeed())
		g.Expect(organisers.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning))
	})

	t.Run("a per-team template's maxInstances", func(t *testing.T) {
		g := NewWithT(t)
		tmpl := h.Template(t, "bounded-solved", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.MaxInstances = ptr.To[int32](1)
			s.SolverCheck = quickSolver("bounded-solved")
		})
		eventuallySolverCanary(t, tmpl)
		team := builders.FromTemplate(ns, "bounded-solved", ns+"-bounded", tmpl.Name)
		g.Expect(k8s.Create(ctx, team)).To(Succeed())
		eventuallyPhase(t, team, ctfv1alpha1.PhaseRunning)
		second := builders.FromTemplate(ns, "bounded-solved-2", ns+"-bounded-2", tmpl.Name)
		g.Expect(k8s.Create(ctx, second)).To(Succeed())
		got := eventuallyPhase(t, second, ctfv1alpha1.PhaseQueued)
		g.Expect(got.Status.Message).To(ContainSubstring("position 1"), "the bound still holds for teams")
	})
}

// TestSolverNetworkPolicyReachesItsCanaryOnly (issue 50, item 10): the
// solver of a canary exposed by ClusterIP may reach the cluster DNS pods
// on port 53 and its canary's pods on the port its endpoint names, nothing
// else (no port 53 anywhere, no pod of the ingress namespaces); and the
// canary's pods, which admit no in-cluster client of their own accord, admit
// its solver's pods on that port.
func TestSolverNetworkPolicyReachesItsCanaryOnly(t *testing.T) {
	g := NewWithT(t)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go solveLikeAKubelet(ctx, t, &atomic.Pointer[string]{})
	tmpl := h.Template(t, "solver-reach", func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.SolverCheck = quickSolver("solver-reach") })
	canary := eventuallySolverCanary(t, tmpl)
	g.Expect(canary.Status.Endpoint.Host).To(HaveSuffix(".svc"), "a ClusterIP canary")

	tcp, udp := ptr.To(corev1.ProtocolTCP), ptr.To(corev1.ProtocolUDP)
	named := intstr.FromString(canary.Status.Endpoint.Name)
	dns := intstr.FromInt32(53)
	egress := &networkingv1.NetworkPolicy{}
	g.Eventually(func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: poolNamespace, Name: canary.Name + "-solver"}, egress)
	}, timeout, interval).Should(Succeed())
	g.Expect(egress.Spec.PodSelector.MatchLabels).To(Equal(map[string]string{ctfv1alpha1.SolverLabel: canary.Name}))
	g.Expect(egress.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress))
	g.Expect(egress.Spec.Ingress).To(BeEmpty())
	g.Expect(egress.Spec.Egress).To(ConsistOf(
		networkingv1.NetworkPolicyEgressRule{
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: udp, Port: &dns}, {Protocol: tcp, Port: &dns}},
			To: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "kube-system"}},
				PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
			}},
		},
		networkingv1.NetworkPolicyEgressRule{
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: tcp, Port: &named}},
			To: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: poolNamespace}},
				PodSelector:       &metav1.LabelSelector{MatchLabels: identity.InstancePods(canary)},
			}},
		},
	))

	ingress := &networkingv1.NetworkPolicy{}
	g.Eventually(func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: poolNamespace, Name: canary.Name + "-from-solver"}, ingress)
	}, timeout, interval).Should(Succeed())
	g.Expect(ingress.Spec.PodSelector.MatchLabels).To(Equal(identity.InstancePods(canary)))
	g.Expect(ingress.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress))
	g.Expect(ingress.Spec.Ingress).To(ConsistOf(networkingv1.NetworkPolicyIngressRule{
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: tcp, Port: &named}},
		From: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: poolNamespace}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{ctfv1alpha1.SolverLabel: canary.Name}},
		}},
	}))
	g.Expect(ingress.OwnerReferences).To(ConsistOf(HaveField("UID", canary.UID)), "gone with its canary")
}

// TestSolverPoliciesAreValidWithoutIngressNamespaces (issue 50, item 10):
// for a canary reached by name through an Ingress, with no
// --ingress-from-namespaces, the API server stores the solver's policies
// as built, with no peer to any ingress namespace (before, a selector of
// no namespace was refused, and no run started at all).
func TestSolverPoliciesAreValidWithoutIngressNamespaces(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	canary := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "web-solver-bcdfg", Namespace: ns, UID: "uid-solver-canary"}}
	ep := &ctfv1alpha1.Endpoint{Name: "http", Host: "web-solver-bcdfg-0123456789.ctf.example", Port: 443, URL: "https://web-solver-bcdfg-0123456789.ctf.example/"}
	reach := solvercheck.Reach{DNSNamespace: "kube-system", Routed: true, PodNamespace: ns, Pods: identity.InstancePods(canary)}
	for _, want := range []*networkingv1.NetworkPolicy{solvercheck.NetworkPolicy(canary, ep, reach), solvercheck.CanaryIngress(canary, ep, reach, nil)} {
		want.OwnerReferences = nil // no such Challenge: the garbage collector would take it at once
		g.Expect(k8s.Create(ctx, want)).To(Succeed())
		got := &networkingv1.NetworkPolicy{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(want), got)).To(Succeed())
		g.Expect(got.Spec).To(Equal(want.Spec), "stored as built")
	}
	got := &networkingv1.NetworkPolicy{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: solvercheck.NetworkPolicyName(canary.Name)}, got)).To(Succeed())
	g.Expect(got.Spec.Egress).To(HaveLen(2), "DNS and the canary's pods, nothing through ingress namespaces there are none of")
	for _, rule := range got.Spec.Egress {
		for _, p := range rule.To {
			g.Expect(p.IPBlock).To(BeNil())
			g.Expect(p.NamespaceSelector.MatchExpressions).To(BeEmpty())
			g.Expect(p.NamespaceSelector.MatchLabels).To(HaveKeyWithValue(corev1.LabelMetadataName, BeElementOf("kube-system", ns)))
		}
	}
}
