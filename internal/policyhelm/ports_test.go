package policyhelm_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/policyhelm"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/chartrender"
)

// TestExposedPortsJudged: a template that exposes more ports, each on a
// host of its own, renders what the gate lets through, and the gate
// refuses each way such a render could reach further: another host, a
// port object of a port not exposed, a workload's object named as one.
func TestExposedPortsJudged(t *testing.T) {
	g := NewWithT(t)
	settings := values.Settings{IngressDomain: "ctf.example", Gateways: []ctfv1alpha1.GatewayRef{{Namespace: "gateways", Name: "public"}}}
	tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: ctfv1alpha1.ChallengeTemplateSpec{
		Image:  "registry.example/web:1",
		Ports:  []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080}, {Name: "nc", Port: 1337}, {Name: "debug", Port: 9229}},
		Expose: &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeHTTPRoute}, ExposePorts: []ctfv1alpha1.PortExposure{{Port: "nc", Type: ctfv1alpha1.ExposeTLSRoute}},
		Components: []ctfv1alpha1.Component{{Name: "shell", Image: "registry.example/shell:1",
			Ports:       []ctfv1alpha1.ChallengePort{{Name: "metrics", Port: 9100}, {Name: "ssh", Port: 2222}},
			ExposePorts: []ctfv1alpha1.PortExposure{{Port: "ssh", Type: ctfv1alpha1.ExposeIngress}}}},
	}}
	ch := builders.FromTemplate("ctf-teams", "web-team1", "team1", "web", builders.UID("5c6b7f0e"))
	ceilings := limits
	ceilings.IngressDomain, ceilings.Gateways = "ctf.example", []types.NamespacedName{{Namespace: "gateways", Name: "public"}}
	ceilings.EphemeralStorage = resource.MustParse("1Gi")
	expected, err := values.Expectation(ch, tmpl, settings, ceilings, "", nil)
	g.Expect(err).NotTo(HaveOccurred())
	manifest, err := chartrender.Manifest(ch, tmpl, settings)
	g.Expect(err).NotTo(HaveOccurred())
	text := string(manifest)
	g.Expect(text).To(ContainSubstring(`name: "web-team1.nc"`))
	g.Expect(text).To(ContainSubstring(`name: "web-team1--shell.ssh"`))
	g.Expect(policy.Check(manifest, expected)).To(Succeed())

	ncHost := expected.Workloads[0].PortHosts["nc"]
	g.Expect(ncHost).To(HavePrefix("web-team1-nc-"))
	g.Expect(ncHost).NotTo(Equal(expected.Workloads[0].Host))
	for _, tc := range []struct {
		name, from, to, rule string
	}{
		{"a port's route on the instance's host", ncHost, expected.Workloads[0].Host, "ingress-host"},
		{"a port's route on the component's port host", ncHost, expected.Workloads[1].PortHosts["ssh"], "ingress-host"},
		{"a route for a port not exposed", `name: "web-team1.nc"`, `name: "web-team1.debug"`, "name"},
		{"a component's port Ingress on the primary's", `name: "web-team1--shell.ssh"`, `name: "web-team1.ssh"`, "name"},
		{"a Service named as a port's route", "kind: Service\nmetadata:\n  name: \"web-team1--shell\"", "kind: Service\nmetadata:\n  name: \"web-team1.nc\"", "name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(text).To(ContainSubstring(tc.from))
			hostile := strings.Replace(text, tc.from, tc.to, 1)
			err := policy.Check([]byte(hostile), expected)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring("PolicyViolation: " + tc.rule + ":"))
		})
	}

	// A stored record of the instance is deleted whatever its template
	// exposes now: its ports' objects are its own; another instance's are not.
	gt := &policyhelm.Gate{Reader: noIngresses{}}
	g.Expect(gt.CheckRecord(context.Background(), ch, text, false)).To(Succeed(), "an uninstall goes ahead")
	other := strings.ReplaceAll(text, `name: "web-team1.nc"`, `name: "web-team2.nc"`)
	g.Expect(gt.CheckRecord(context.Background(), ch, other, false)).To(MatchError(ContainSubstring("PolicyViolation: name:")), "never another instance's")
}
