package solvercheck

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
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

// peers are the namespaces (or the CIDR) and pod selectors an egress
// rule names, each "<namespace>|<pods>" or "ip:<cidr>", with its ports.
func peers(rule networkingv1.NetworkPolicyEgressRule) []string {
	var out []string
	for _, p := range rule.To {
		switch {
		case p.IPBlock != nil:
			out = append(out, "ip:"+p.IPBlock.CIDR)
		case p.NamespaceSelector != nil && len(p.NamespaceSelector.MatchExpressions) > 0:
			out = append(out, fmt.Sprintf("in%v|%v", p.NamespaceSelector.MatchExpressions[0].Values, p.PodSelector))
		default:
			out = append(out, fmt.Sprintf("%s|%v", p.NamespaceSelector.MatchLabels[corev1.LabelMetadataName], p.PodSelector.MatchLabels))
		}
	}
	for _, p := range rule.Ports {
		out = append(out, fmt.Sprintf("%s/%s", *p.Protocol, p.Port.String()))
	}
	return out
}

// TestNetworkPolicyReachesItsCanaryOnly: a solver reaches the cluster DNS
// pods on port 53 and its canary's pods on the port its endpoint leads to;
// besides, the address of an endpoint at an IP, and the ingress
// namespaces only for a routed canary and only when there are some. No
// rule names every address, or every pod of a namespace it need not.
func TestNetworkPolicyReachesItsCanaryOnly(t *testing.T) {
	pods := map[string]string{ctfv1alpha1.InstanceLabel: "web-solver-abcde"}
	reach := func(routed bool, ingress ...string) Reach {
		return Reach{DNSNamespace: "kube-system", IngressNamespaces: ingress, Routed: routed, PodNamespace: "ctf-pool", Pods: pods}
	}
	dns := []string{"kube-system|map[k8s-app:kube-dns]", "UDP/53", "TCP/53"}
	canaryPods := func(port string) []string {
		return []string{"ctf-pool|map[ctf.challenge-operator.io/instance:web-solver-abcde]", port}
	}
	for _, tt := range []struct {
		name  string
		ep    ctfv1alpha1.Endpoint
		reach Reach
		want  [][]string
	}{
		{"ClusterIP, with ingress namespaces", ctfv1alpha1.Endpoint{Name: "nc", Host: "web-solver-abcde.ctf-pool.svc", Port: 1337, Protocol: ctfv1alpha1.ProtocolTCP},
			reach(false, "ingress-nginx"), [][]string{dns, canaryPods("TCP/nc")}},
		{"ClusterIP, without ingress namespaces", ctfv1alpha1.Endpoint{Name: "nc", Host: "web-solver-abcde.ctf-pool.svc", Port: 1337},
			reach(false), [][]string{dns, canaryPods("TCP/nc")}},
		{"NodePort", ctfv1alpha1.Endpoint{Name: "nc", Host: "10.0.0.7", Port: 31337, Protocol: ctfv1alpha1.ProtocolTCP},
			reach(false, "ingress-nginx"), [][]string{dns, canaryPods("TCP/nc"), {"ip:10.0.0.7/32", "TCP/31337"}}},
		{"a UDP load balancer at an IPv6 address", ctfv1alpha1.Endpoint{Name: "dns", Host: "fd00::7", Port: 9999, Protocol: ctfv1alpha1.ProtocolUDP},
			reach(false), [][]string{dns, canaryPods("UDP/dns"), {"ip:fd00::7/128", "UDP/9999"}}},
		{"Ingress, with ingress namespaces", ctfv1alpha1.Endpoint{Name: "http", Host: "web.ctf.example", Port: 443, URL: "https://web.ctf.example/"},
			reach(true, "ingress-nginx", "gateways"), [][]string{dns, canaryPods("TCP/http"), {"in[ingress-nginx gateways]|nil", "TCP/443", "TCP/80"}}},
		{"a TLSRoute on another port", ctfv1alpha1.Endpoint{Name: "nc", Host: "pwn.ctf.example", Port: 8443, Connect: "ncat --ssl pwn.ctf.example 8443"},
			reach(true, "gateways"), [][]string{dns, canaryPods("TCP/nc"), {"in[gateways]|nil", "TCP/8443", "TCP/80", "TCP/443"}}},
		{"Ingress, without ingress namespaces", ctfv1alpha1.Endpoint{Name: "http", Host: "web.ctf.example", Port: 80, URL: "http://web.ctf.example/"},
			reach(true), [][]string{dns, canaryPods("TCP/http")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			np := NetworkPolicy(canary(), &tt.ep, tt.reach)
			g.Expect(np.Name).To(Equal("web-solver-abcde-solver"))
			g.Expect(np.Spec.PodSelector.MatchLabels).To(Equal(map[string]string{ctfv1alpha1.SolverLabel: "web-solver-abcde"}))
			g.Expect(np.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress))
			g.Expect(np.Spec.Ingress).To(BeEmpty(), "nothing reaches the solver")
			var got [][]string
			for _, rule := range np.Spec.Egress {
				g.Expect(rule.To).NotTo(BeEmpty(), "every rule names its peers")
				g.Expect(rule.Ports).NotTo(BeEmpty(), "every rule names its ports")
				got = append(got, peers(rule))
			}
			g.Expect(got).To(Equal(tt.want))
			for _, rule := range np.Spec.Egress {
				for _, p := range rule.To {
					if s := p.NamespaceSelector; s != nil {
						for _, e := range s.MatchExpressions {
							g.Expect(e.Values).NotTo(BeEmpty(), "a selector the API server would refuse")
						}
					}
				}
			}
		})
	}
}

// TestCanaryIngressLetsItsSolverIn: the canary's pods admit its solver's
// pods, from the canary namespace, on the port the endpoint leads to,
// and nothing more; owned by the serving instance when there is one in
// the pods' namespace.
func TestCanaryIngressLetsItsSolverIn(t *testing.T) {
	g := NewWithT(t)
	pooled := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "web-pool-fghjk", Namespace: "ctf-warm", UID: "uid-pooled"}}
	reach := Reach{DNSNamespace: "kube-system", PodNamespace: "ctf-warm", Pods: map[string]string{ctfv1alpha1.InstanceLabel: pooled.Name}}
	np := CanaryIngress(canary(), &ctfv1alpha1.Endpoint{Name: "nc", Host: "web-pool-fghjk.ctf-warm.svc", Port: 1337}, reach, pooled)
	g.Expect(np.Namespace).To(Equal("ctf-warm"))
	g.Expect(np.Name).To(Equal("web-solver-abcde-from-solver"))
	g.Expect(np.Spec.PodSelector.MatchLabels).To(Equal(map[string]string{ctfv1alpha1.InstanceLabel: "web-pool-fghjk"}))
	g.Expect(np.Spec.PolicyTypes).To(Equal([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}), "the instance's own egress stands")
	g.Expect(np.Spec.Ingress).To(HaveLen(1))
	rule := np.Spec.Ingress[0]
	g.Expect(rule.From).To(HaveLen(1))
	g.Expect(rule.From[0].NamespaceSelector.MatchLabels).To(Equal(map[string]string{corev1.LabelMetadataName: "ctf-pool"}))
	g.Expect(rule.From[0].PodSelector.MatchLabels).To(Equal(map[string]string{ctfv1alpha1.SolverLabel: "web-solver-abcde"}))
	g.Expect(rule.Ports).To(HaveLen(1))
	g.Expect(rule.Ports[0].Port.String()).To(Equal("nc"))
	g.Expect(np.OwnerReferences).To(ConsistOf(HaveField("UID", BeEquivalentTo("uid-pooled"))))

	own := CanaryIngress(canary(), &ctfv1alpha1.Endpoint{Name: "nc", Port: 1337}, reach, nil)
	g.Expect(own.OwnerReferences).To(BeEmpty(), "a namespace of the instance's own goes with it")
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
