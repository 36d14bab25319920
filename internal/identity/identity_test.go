package identity

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

func TestInstanceNamespacesNeverCollide(t *testing.T) {
	g := NewWithT(t)
	ns := func(namespace, name string) string {
		return Namespace(&ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}})
	}
	g.Expect(ns("a-b", "c")).NotTo(Equal(ns("a", "b-c")), "the plain join of both is a-b-c")
	long := "x123456789012345678901234567890123456789012345678901"
	g.Expect(ns(long, "web-1")).NotTo(Equal(ns(long, "web-2")), "truncation would make these equal")
	for _, n := range []string{ns("a-b", "c"), ns(long, "web-1"), ns(long+long[:10], "y")} {
		g.Expect(len(n)).To(BeNumerically("<=", 63), n)
		g.Expect(n).To(MatchRegexp(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`))
	}
}

// TestInstanceHostsNeverCollide: every instance's host is one DNS label under
// the domain, the same name in two namespaces included, so a wildcard
// certificate covers them and no two instances share one.
func TestInstanceHostsNeverCollide(t *testing.T) {
	g := NewWithT(t)
	host := func(namespace, name, domain string) string {
		return Host(&ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}, domain)
	}
	g.Expect(host("teams", "web-team1", "ctf.example")).To(MatchRegexp(`^web-team1-[0-9a-f]{10}\.ctf\.example$`))
	g.Expect(host("a", "web", "ctf.example")).NotTo(Equal(host("b", "web", "ctf.example")))
	g.Expect(host("a", "web", "CTF.example.")).To(Equal(host("a", "web", "ctf.example")), "the domain as DNS reads it")
	g.Expect(host("a", "web", "")).To(BeEmpty(), "no domain, no host")
	label, _, _ := strings.Cut(host("a", strings.Repeat("w", 53), "ctf.example"), ".")
	g.Expect(len(label)).To(BeNumerically("<=", 63))
}

// TestInstanceHostsAreNotComputableFromPublicNames: a host was a hash of the
// namespace and name alone, which every team can compute for every other team
// from the template, the team and the namespace, and then find and flood its
// instance. It is now keyed by the Challenge's UID, which the API server draws
// at random; an instance whose status shows a host of the former kind (started
// before an upgrade) keeps it.
func TestInstanceHostsAreNotComputableFromPublicNames(t *testing.T) {
	g := NewWithT(t)
	const domain = "ctf.example"
	public := func(c *ctfv1alpha1.Challenge) string {
		sum := sha256.Sum256([]byte(c.Namespace + "/" + c.Name))
		return c.Name + "-" + hex.EncodeToString(sum[:])[:10] + "." + domain
	}
	c := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: "teams", Name: "web-team1", UID: "6f1f8a52-0d5e-4d4c-9a1e-2b7c3d4e5f60"}}
	host := Host(c, domain)
	g.Expect(host).To(MatchRegexp(`^web-team1-[0-9a-f]{10}\.ctf\.example$`))
	g.Expect(host).NotTo(Equal(public(c)), "not derivable from the namespace and name")

	again := c.DeepCopy()
	again.UID = "0a4a2d6e-8f31-4b0e-a3c6-7d2e9b1f4c85"
	g.Expect(Host(again, domain)).NotTo(Equal(host), "started again under the same name: a new host")

	upgraded := c.DeepCopy()
	upgraded.Status.Endpoint = &ctfv1alpha1.Endpoint{Host: public(c), Port: 80}
	g.Expect(Host(upgraded, domain)).To(Equal(public(c)), "a running instance keeps the host it had before an upgrade")
	comp := c.DeepCopy()
	sum := sha256.Sum256([]byte(c.Namespace + "/" + c.Name))
	oldComponentHost := "web-team1-admin-" + hex.EncodeToString(sum[:])[:10] + "." + domain
	comp.Status.Endpoints = []ctfv1alpha1.Endpoint{{Host: oldComponentHost, Port: 80}}
	g.Expect(ComponentHost(c, "admin", domain)).NotTo(Equal(oldComponentHost), "a component's host is keyed too")
	g.Expect(ComponentHost(comp, "admin", domain)).To(Equal(oldComponentHost))
	g.Expect(Host(comp, domain)).NotTo(Equal(public(c)), "only the host the status shows is kept")
}

// TestMayBeInstanceNamespace recognises every name Namespace gives,
// long namespaces and names included, and not a platform's namespace.
func TestMayBeNamespace(t *testing.T) {
	g := NewWithT(t)
	long := strings.Repeat("n", 60)
	for _, c := range [][2]string{{"ctf-teams", "web-team1"}, {long, "web"}, {"ctf", strings.Repeat("w", 63)}} {
		name := Namespace(&ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: c[0], Name: c[1]}})
		g.Expect(MayBeNamespace(name, []string{c[0]})).To(BeTrue(), name)
		g.Expect(MayBeNamespace(name, nil)).To(BeTrue(), name)
		g.Expect(MayBeNamespace(name, []string{"other"})).To(BeFalse(), name)
	}
	g.Expect(MayBeNamespace("ingress-nginx", nil)).To(BeFalse())
}

// TestComponentHost: one DNS label under the domain, the component's name
// whole however long the instance's, and different from the primary's.
func TestComponentHost(t *testing.T) {
	g := NewWithT(t)
	c := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: "ctf", Name: "web"}}
	g.Expect(ComponentHost(c, "shell", "ctf.example")).To(MatchRegexp(`^web-shell-[0-9a-f]{10}\.ctf\.example$`))
	g.Expect(ComponentHost(c, "shell", "ctf.example")).NotTo(Equal(Host(c, "ctf.example")))
	g.Expect(ComponentHost(c, "shell", "")).To(BeEmpty())
	long := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: "ctf", Name: "web"}}
	long.Name = "a-challenge-name-that-is-exactly-fifty-three-chars-x"
	for _, comp := range []string{"shell", "db"} {
		h := ComponentHost(long, comp, "ctf.example")
		label, _, _ := strings.Cut(h, ".")
		g.Expect(len(label)).To(BeNumerically("<=", 63))
		g.Expect(label).To(MatchRegexp(`-%s-[0-9a-f]{10}$`, comp))
	}
}

// TestPortHost: one more exposed port's host is a DNS label of its own,
// never the instance's or a component's, even where the readable parts
// coincide (a port named as a component), and fits a long name whole.
func TestPortHost(t *testing.T) {
	g := NewWithT(t)
	c := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: "ctf", Name: "web", UID: "u1"}}
	g.Expect(PortHost(c, "", "nc", "CTF.example.")).To(MatchRegexp(`^web-nc-[0-9a-f]{10}\.ctf\.example$`), "the domain as DNS reads it")
	g.Expect(PortHost(c, "shell", "ssh", "ctf.example")).To(MatchRegexp(`^web-shell-ssh-[0-9a-f]{10}\.ctf\.example$`))
	g.Expect(PortHost(c, "", "shell", "ctf.example")).NotTo(Equal(ComponentHost(c, "shell", "ctf.example")), "a port named as a component")
	g.Expect(PortHost(c, "", "nc", "ctf.example")).NotTo(Equal(Host(c, "ctf.example")))
	g.Expect(PortHost(c, "", "nc", "")).To(BeEmpty())
	long := c.DeepCopy()
	long.Name = "a-challenge-name-that-is-exactly-fifty-three-chars-x"
	label, _, _ := strings.Cut(PortHost(long, "shell", "a-fifteen-chars", "ctf.example"), ".")
	g.Expect(len(label)).To(BeNumerically("<=", 63))
	g.Expect(label).To(MatchRegexp(`-a-fifteen-chars-[0-9a-f]{10}$`), "the port's name kept whole")
}

// TestBareNamesService: the headless Service of an instance's bare names is
// a DNS-1035 label however long the release, and never the name of one of
// its components' objects nor of another instance's.
func TestBareNamesService(t *testing.T) {
	g := NewWithT(t)
	longest := "a" + strings.Repeat("b", 51) + "c" // a release is at most 53 characters
	for _, release := range []string{"web", "web-team1", longest} {
		name := BareNamesService(release)
		g.Expect(len(name)).To(BeNumerically("<=", 63), name)
		g.Expect(name).To(MatchRegexp(`^[a-z]([-a-z0-9]*[a-z0-9])?$`), "a Service name, and a pod's subdomain")
		component, ok := strings.CutPrefix(name, release+"--")
		g.Expect(ok).To(BeTrue())
		g.Expect(component).NotTo(MatchRegexp(`^[a-z]`), "a component's name starts with a letter")
	}
	g.Expect(BareNamesService("web")).NotTo(Equal(ComponentObject("web", "names")))
	g.Expect(BareNamesSearch("web", "ctf", "cluster.local")).To(Equal("web---names.ctf.svc.cluster.local"))
}
