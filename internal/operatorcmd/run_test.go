package operatorcmd

import (
	"io"
	"testing"

	. "github.com/onsi/gomega"
)

// TestDefaultNamespaces: organiser Secrets and shared Services come from the
// operator's own namespace unless the flags name others; canaries run in
// the pool's namespace, else the operator's own; outside a pod (no
// POD_NAMESPACE) nothing else is defaulted.
func TestDefaultNamespaces(t *testing.T) {
	g := NewWithT(t)
	var o Options
	o.defaultNamespaces("challenge-operator-system")
	g.Expect(o.Operator.Values.FlagSecretNamespaces).To(Equal([]string{"challenge-operator-system"}))
	g.Expect(o.Operator.Values.SharedServiceNamespaces).To(Equal([]string{"challenge-operator-system"}))
	g.Expect(o.Operator.CanaryNamespace).To(Equal("challenge-operator-system"))

	pooled, fs := NewFlagSet()
	g.Expect(fs.Parse([]string{"--pool-namespace=ctf-pool"})).To(Succeed())
	pooled.defaultNamespaces("challenge-operator-system")
	g.Expect(pooled.Operator.CanaryNamespace).To(Equal("ctf-pool"), "beside the pool, where platforms have no rights either")

	named, fs := NewFlagSet()
	g.Expect(fs.Parse([]string{"--flag-secret-namespaces=ctf-secrets"})).To(Succeed())
	g.Expect(fs.Parse([]string{"--canary-namespace=ctf-canaries"})).To(Succeed())
	named.defaultNamespaces("challenge-operator-system")
	g.Expect(named.Operator.CanaryNamespace).To(Equal("ctf-canaries"), "the flag wins")
	g.Expect(named.Operator.Values.FlagSecretNamespaces).To(Equal([]string{"ctf-secrets"}), "the flag wins")
	g.Expect(named.Operator.Values.SharedServiceNamespaces).To(Equal([]string{"challenge-operator-system"}))

	var outside Options
	outside.defaultNamespaces("")
	g.Expect(outside.Operator.Values.FlagSecretNamespaces).To(BeEmpty())
}

// TestClusterDomainFlag: cluster.local by default, a domain as DNS reads it,
// and a value that is no domain refused when parsed.
func TestClusterDomainFlag(t *testing.T) {
	g := NewWithT(t)
	o, fs := NewFlagSet()
	g.Expect(o.Operator.Values.ClusterDomain).To(Equal("cluster.local"))
	g.Expect(fs.Lookup("cluster-domain").DefValue).To(Equal("cluster.local"), "what the install chart's schema shows")
	g.Expect(fs.Parse([]string{"--cluster-domain=K8s.Example."})).To(Succeed())
	g.Expect(o.Operator.Values.ClusterDomain).To(Equal("k8s.example"))
	for _, bad := range []string{"", "a b", "-x.example", "x..example"} {
		_, fs := NewFlagSet()
		fs.SetOutput(io.Discard)
		g.Expect(fs.Parse([]string{"--cluster-domain=" + bad})).NotTo(Succeed(), bad)
	}
}

// TestTeamBudgetFlags: no budget unless the admin sets one; quantities as
// Kubernetes writes them; a negative one refused.
func TestTeamBudgetFlags(t *testing.T) {
	g := NewWithT(t)
	o, fs := NewFlagSet()
	g.Expect(fs.Parse(nil)).To(Succeed())
	g.Expect(o.Operator.TeamBudgetCPU.IsZero()).To(BeTrue())
	g.Expect(o.Operator.TeamBudgetMemory.IsZero()).To(BeTrue())

	o, fs = NewFlagSet()
	g.Expect(fs.Parse([]string{"--team-budget-cpu=1500m", "--team-budget-memory=2Gi"})).To(Succeed())
	g.Expect(o.Operator.TeamBudgetCPU.String()).To(Equal("1500m"))
	g.Expect(o.Operator.TeamBudgetMemory.String()).To(Equal("2Gi"))

	_, fs = NewFlagSet()
	fs.SetOutput(io.Discard)
	g.Expect(fs.Parse([]string{"--team-budget-cpu=-1"})).To(MatchError(ContainSubstring("negative")))
	g.Expect(fs.Parse([]string{"--team-budget-memory=lots"})).NotTo(Succeed())
}
