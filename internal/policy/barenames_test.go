package policy

import (
	"errors"
	"maps"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
)

// bareNamesFixture is a valid release whose instance, of a primary "web" and its redis component,
// has bare names: each pod's hostname, subdomain and search domain, and the headless Service.
type bareNamesFixture struct {
	*componentFixture
	headless *corev1.Service
}

const headlessName = release + "---names"

func newBareNamesFixture(own bool) *bareNamesFixture {
	cf := newComponentFixture(own)
	search := headlessName + "." + cf.in.Namespace + ".svc.cluster.local"
	cf.in.BareNames = &BareNames{Service: headlessName, Search: search, Selector: instancePods}
	cf.in.Workloads[0].BareName, cf.in.Workloads[1].BareName = "web", redis
	for bare, p := range map[string]*corev1.PodSpec{"web": cf.pod(), redis: &cf.deploy.Spec.Template.Spec} {
		p.Hostname, p.Subdomain = bare, headlessName
		p.DNSConfig = &corev1.PodDNSConfig{Searches: []string{search}}
	}
	headless := service()
	headless.ObjectMeta = meta(headlessName)
	headless.Spec = corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true, Selector: maps.Clone(instancePods)}
	return &bareNamesFixture{componentFixture: cf, headless: headless}
}

func (bf *bareNamesFixture) render() []byte {
	if bf.headless != nil {
		bf.extra = append(bf.extra, bf.headless)
	}
	return bf.componentFixture.render()
}

func TestBareNamesPass(t *testing.T) {
	g := NewWithT(t)
	g.Expect(headlessName).To(Equal(identity.BareNamesService(release)))
	for _, own := range []bool{false, true} {
		bf := newBareNamesFixture(own)
		g.Expect(Check(bf.render(), bf.in)).To(Succeed(), "own namespace: %v", own)
	}
}

// TestBareNamesRefused: a pod answers to its own workload's bare name only, under its own
// instance's headless Service, and resolves through its own instance's search domain only, with
// the cluster's DNS; the headless Service names the instance's pods, all of them and no other's,
// and reaches nothing; none of it without bare names.
func TestBareNamesRefused(t *testing.T) {
	other := "web-team2---names"
	for _, tt := range []struct {
		name  string
		rule  string
		apply func(*bareNamesFixture)
	}{
		{"another instance's subdomain", ruleBareNames, func(bf *bareNamesFixture) { bf.pod().Subdomain = other }},
		{"a component under another instance's subdomain", ruleBareNames, func(bf *bareNamesFixture) {
			bf.deploy.Spec.Template.Spec.Subdomain = other
		}},
		{"a search domain of another namespace", ruleBareNames, func(bf *bareNamesFixture) {
			bf.pod().DNSConfig.Searches = []string{headlessName + ".ctf-team2.svc.cluster.local"}
		}},
		{"another instance's search domain", ruleBareNames, func(bf *bareNamesFixture) {
			bf.pod().DNSConfig.Searches = []string{other + "." + namespace + ".svc.cluster.local"}
		}},
		{"a second search domain", ruleBareNames, func(bf *bareNamesFixture) {
			bf.pod().DNSConfig.Searches = append(bf.pod().DNSConfig.Searches, "attacker.example")
		}},
		{"no search domain", ruleBareNames, func(bf *bareNamesFixture) { bf.pod().DNSConfig = nil }},
		{"nameservers", ruleBareNames, func(bf *bareNamesFixture) { bf.pod().DNSConfig.Nameservers = []string{"203.0.113.53"} }},
		{"resolver options", ruleBareNames, func(bf *bareNamesFixture) {
			bf.pod().DNSConfig.Options = []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("1")}}
		}},
		{"the resolver of its own", rulePlacement, func(bf *bareNamesFixture) { bf.pod().DNSPolicy = corev1.DNSNone }},
		{"the primary answering to its component's name", ruleBareNames, func(bf *bareNamesFixture) { bf.pod().Hostname = redis }},
		{"a component without its bare name", ruleBareNames, func(bf *bareNamesFixture) {
			bf.deploy.Spec.Template.Spec.Hostname = ""
		}},
		{"a headless Service selecting other pods", ruleSelector, func(bf *bareNamesFixture) {
			bf.headless.Spec.Selector = map[string]string{ctfv1alpha1.InstanceLabel: "web-team2"}
		}},
		{"a headless Service selecting every pod of the namespace", ruleSelector, func(bf *bareNamesFixture) { bf.headless.Spec.Selector = nil }},
		{"a headless Service selecting the primary's pods only", ruleSelector, func(bf *bareNamesFixture) { bf.headless.Spec.Selector = testSelector() }},
		{"a headless Service of another instance's labels", ruleLabels, func(bf *bareNamesFixture) {
			bf.headless.Labels[ctfv1alpha1.ParticipantLabel] = "team2"
		}},
		{"a names Service with a cluster IP", ruleClusterIP, func(bf *bareNamesFixture) { bf.headless.Spec.ClusterIP = "" }},
		{"a names Service of type NodePort", ruleService, func(bf *bareNamesFixture) { bf.headless.Spec.Type = corev1.ServiceTypeNodePort }},
		{"a names Service with ports", ruleBareNames, func(bf *bareNamesFixture) {
			bf.headless.Spec.Ports = []corev1.ServicePort{{Name: "main", Port: 8080, TargetPort: intstr.FromInt(8080)}}
		}},
		{"a names Service with externalIPs", ruleService, func(bf *bareNamesFixture) { bf.headless.Spec.ExternalIPs = []string{"203.0.113.7"} }},
		{"a names Service hiding unready pods", ruleBareNames, func(bf *bareNamesFixture) { bf.headless.Spec.PublishNotReadyAddresses = false }},
		{"the headless Service left out", ruleRequired, func(bf *bareNamesFixture) { bf.headless = nil }},
		{"a headless Service under another name", ruleName, func(bf *bareNamesFixture) { bf.headless.Name = release + "---peers" }},
		{"a Deployment under the headless Service's name", ruleName, func(bf *bareNamesFixture) {
			bf.extra = append(bf.extra, withName(bf.deploy.DeepCopy(), headlessName))
		}},
		{"bare names in an instance without them", ruleBareNames, func(bf *bareNamesFixture) {
			bf.in.BareNames = nil
			bf.headless = nil
		}},
		{"a headless Service in an instance without bare names", ruleName, func(bf *bareNamesFixture) {
			bf.in.BareNames = nil
			for _, p := range []*corev1.PodSpec{bf.pod(), &bf.deploy.Spec.Template.Spec} {
				p.Hostname, p.Subdomain, p.DNSConfig = "", "", nil
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			bf := newBareNamesFixture(false)
			tt.apply(bf)
			err := Check(bf.render(), bf.in)
			var v *Violation
			g.Expect(errors.As(err, &v)).To(BeTrue(), "want a Violation, got %v", err)
			g.Expect(v.Rule).To(Equal(tt.rule), v.Error())
		})
	}
}

// TestRecordsOfBareNames: a stored release record may list the headless Service of its
// instance's bare names, whatever its template says now, and never another instance's.
func TestRecordsOfBareNames(t *testing.T) {
	g := NewWithT(t)
	bf := newBareNamesFixture(false)
	manifest := bf.render()
	record := bf.in
	record.Workloads, record.AnyComponent, record.BareNames = record.Workloads[:1], true, nil
	g.Expect(CheckIdentity(manifest, record)).To(Succeed())
	bf = newBareNamesFixture(false)
	bf.headless.Name = "web-team2---names"
	g.Expect(CheckIdentity(bf.render(), record)).To(MatchError(ContainSubstring(ruleName)), "another instance's")
}
