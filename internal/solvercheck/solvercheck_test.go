package solvercheck

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

func TestConnectionInfo(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ConnectionInfo(&ctfv1alpha1.Endpoint{Host: "10.0.0.7", Port: 31337})).To(Equal("nc 10.0.0.7 31337"))
	g.Expect(ConnectionInfo(&ctfv1alpha1.Endpoint{Host: "web.ctf.example", Port: 443, URL: "https://web.ctf.example/"})).To(Equal("https://web.ctf.example/"))
	g.Expect(ConnectionInfo(&ctfv1alpha1.Endpoint{Host: "pwn.ctf.example", Port: 443, Connect: "ncat --ssl pwn.ctf.example 443"})).To(Equal("ncat --ssl pwn.ctf.example 443"))
}

func TestFlagEnv(t *testing.T) {
	g := NewWithT(t)
	g.Expect(FlagEnv("admin-panel")).To(Equal("FLAG_ADMIN_PANEL"))
	g.Expect(FlagEnv("user")).To(Equal("FLAG_USER"))
}

func canary() *ctfv1alpha1.Challenge {
	return &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "web-solver-abcde", Namespace: "ctf-pool", UID: "uid-canary"}}
}

// TestJobIsRestricted: whatever the organiser's image, the solver runs as
// no root, with no token, no service links, no capability, a read-only
// root and a deadline, once.
func TestJobIsRestricted(t *testing.T) {
	g := NewWithT(t)
	check := &ctfv1alpha1.SolverCheck{Image: "registry.example/solver:1", Command: []ctfv1alpha1.Argument{"python3"}, Args: []ctfv1alpha1.Argument{"solve.py"},
		Timeout: &metav1.Duration{Duration: 45 * time.Second}}
	job := Job(check, canary(), &ctfv1alpha1.Endpoint{Host: "10.0.0.7", Port: 31337}, 3)
	g.Expect(job.Name).To(Equal("web-solver-abcde-run-3"))
	g.Expect(job.Labels).To(HaveKeyWithValue(ctfv1alpha1.SolverLabel, "web-solver-abcde"))
	g.Expect(job.OwnerReferences).To(ConsistOf(HaveField("UID", BeEquivalentTo("uid-canary"))))
	g.Expect(*job.Spec.BackoffLimit).To(BeZero())
	g.Expect(*job.Spec.ActiveDeadlineSeconds).To(BeEquivalentTo(45))
	pod := job.Spec.Template.Spec
	g.Expect(*pod.AutomountServiceAccountToken).To(BeFalse())
	g.Expect(*pod.EnableServiceLinks).To(BeFalse())
	g.Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
	g.Expect(*pod.SecurityContext.RunAsUser).NotTo(BeZero())
	g.Expect(pod.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
	c := pod.Containers[0]
	g.Expect(c.Command).To(Equal([]string{"python3"}))
	g.Expect(c.Args).To(Equal([]string{"solve.py", "--connection-info", "nc 10.0.0.7 31337"}))
	g.Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: "CONNECTION_INFO", Value: "nc 10.0.0.7 31337"}))
	g.Expect(c.EnvFrom[0].SecretRef.Name).To(Equal("web-solver-abcde-solver"))
	g.Expect(*c.SecurityContext.AllowPrivilegeEscalation).To(BeFalse())
	g.Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
	g.Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
	g.Expect(c.Resources.Limits).To(HaveKey(corev1.ResourceMemory))
}

// TestNetworkPolicyReachesTheEndpointOnly: DNS, and the endpoint's address
// and port (an IP) or the ingress controllers (a name); nothing inbound.
func TestNetworkPolicyReachesTheEndpointOnly(t *testing.T) {
	g := NewWithT(t)
	byIP := NetworkPolicy(canary(), &ctfv1alpha1.Endpoint{Host: "10.0.0.7", Port: 31337, Protocol: ctfv1alpha1.ProtocolTCP}, []string{"ingress-nginx"})
	g.Expect(byIP.Spec.PodSelector.MatchLabels).To(Equal(map[string]string{ctfv1alpha1.SolverLabel: "web-solver-abcde"}))
	g.Expect(byIP.Spec.Ingress).To(BeEmpty())
	g.Expect(byIP.Spec.Egress).To(HaveLen(2))
	g.Expect(byIP.Spec.Egress[0].To).To(BeEmpty(), "DNS")
	g.Expect(byIP.Spec.Egress[0].Ports).To(HaveLen(2))
	g.Expect(byIP.Spec.Egress[1].To[0].IPBlock.CIDR).To(Equal("10.0.0.7/32"))
	g.Expect(byIP.Spec.Egress[1].Ports).To(HaveLen(1))
	g.Expect(byIP.Spec.Egress[1].Ports[0].Port.IntValue()).To(Equal(31337))

	udp := NetworkPolicy(canary(), &ctfv1alpha1.Endpoint{Host: "fd00::7", Port: 9999, Protocol: ctfv1alpha1.ProtocolUDP}, nil)
	g.Expect(udp.Spec.Egress[1].To[0].IPBlock.CIDR).To(Equal("fd00::7/128"))
	g.Expect(*udp.Spec.Egress[1].Ports[0].Protocol).To(Equal(corev1.ProtocolUDP))

	byName := NetworkPolicy(canary(), &ctfv1alpha1.Endpoint{Host: "web.ctf.example", Port: 443}, []string{"ingress-nginx"})
	g.Expect(byName.Spec.Egress[1].To[0].IPBlock).To(BeNil())
	g.Expect(byName.Spec.Egress[1].To[0].NamespaceSelector.MatchExpressions[0].Values).To(Equal([]string{"ingress-nginx"}))
}

func TestOutcome(t *testing.T) {
	g := NewWithT(t)
	job := func(conds ...batchv1.JobCondition) *batchv1.Job {
		return &batchv1.Job{Status: batchv1.JobStatus{Conditions: conds}}
	}
	done, _, _ := Outcome(job())
	g.Expect(done).To(BeFalse())
	done, passed, _ := Outcome(job(batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}))
	g.Expect(done && passed).To(BeTrue())
	done, passed, why := Outcome(job(batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline"}))
	g.Expect(done).To(BeTrue())
	g.Expect(passed).To(BeFalse())
	g.Expect(why).To(Equal("DeadlineExceeded: Job was active longer than specified deadline"))
	done, _, _ = Outcome(job(batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionFalse}))
	g.Expect(done).To(BeFalse())
}
