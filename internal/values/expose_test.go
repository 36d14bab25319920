package values

import (
	"testing"

	. "github.com/onsi/gomega"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

func TestSettingsGateway(t *testing.T) {
	first := ctfv1alpha1.GatewayRef{Namespace: "gw", Name: "public"}
	second := ctfv1alpha1.GatewayRef{Namespace: "gw", Name: "internal"}
	both := []ctfv1alpha1.GatewayRef{first, second}
	named := func(ns, name string) map[string]any { return map[string]any{"namespace": ns, "name": name} }
	tests := []struct {
		name     string
		gateways []ctfv1alpha1.GatewayRef
		expose   map[string]any
		want     map[string]any // the gateway written; nil for none
		refused  string         // "" for no error
	}{
		{"not a route: any gateway named is dropped", both,
			map[string]any{"type": "Ingress", "gateway": named("gw", "public")}, nil, ""},
		{"no type at all", nil, map[string]any{}, nil, ""},
		{"TLSRoute takes the first by default", both, map[string]any{"type": "TLSRoute"}, named("gw", "public"), ""},
		{"HTTPRoute takes the first by default", both, map[string]any{"type": "HTTPRoute"}, named("gw", "public"), ""},
		{"a route names one listed", both,
			map[string]any{"type": "HTTPRoute", "gateway": named("gw", "internal")}, named("gw", "internal"), ""},
		{"a route names one not listed", both,
			map[string]any{"type": "TLSRoute", "gateway": named("kube-system", "internal")}, nil,
			"Gateway kube-system/internal is not one of --gateways (gw/public, gw/internal)"},
		{"a route without --gateways", nil, map[string]any{"type": "HTTPRoute"}, nil, "expose.type HTTPRoute needs a Gateway"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := Settings{Gateways: tt.gateways}.gateway(tt.expose)
			if tt.refused != "" {
				g.Expect(lifecycle.IsReason(err, lifecycle.ReasonPolicyViolation)).To(BeTrue(), "got %v", err)
				g.Expect(err.Error()).To(ContainSubstring(tt.refused))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			if tt.want == nil {
				g.Expect(tt.expose).NotTo(HaveKey("gateway"))
				return
			}
			g.Expect(tt.expose).To(HaveKeyWithValue("gateway", tt.want))
		})
	}
}

func TestWantsTLS(t *testing.T) {
	tls := &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeIngress, TLS: &ctfv1alpha1.IngressTLS{}}
	plain := &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeIngress}
	tests := []struct {
		name string
		// Each layer's expose, lowest precedence last: c's typed field, c's
		// values, the template's typed field, the template's values.
		challenge, challengeValues, template, templateValues *ctfv1alpha1.Expose
		noTemplate                                           bool
		want                                                 bool
	}{
		{name: "no layer exposes", noTemplate: true},
		{name: "exposed without TLS everywhere", challenge: plain, challengeValues: plain, template: plain, templateValues: plain},
		{name: "the Challenge's typed field", challenge: tls, noTemplate: true, want: true},
		{name: "the Challenge's values", challengeValues: tls, noTemplate: true, want: true},
		{name: "the template's typed field", template: tls, want: true},
		{name: "the template's values", templateValues: tls, want: true},
		{name: "one layer is enough whatever the others say", challenge: plain, templateValues: tls, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := instance(func(s *ctfv1alpha1.ChallengeSpec) {
				s.Expose = tt.challenge
				if tt.challengeValues != nil {
					s.Values = &ctfv1alpha1.Values{Expose: tt.challengeValues}
				}
			})
			var tmpl *ctfv1alpha1.ChallengeTemplate
			if !tt.noTemplate {
				tmpl = template(func(s *ctfv1alpha1.ChallengeTemplateSpec) {
					s.Expose = tt.template
					if tt.templateValues != nil {
						s.Values = &ctfv1alpha1.Values{Expose: tt.templateValues}
					}
				})
			}
			NewWithT(t).Expect(WantsTLS(c, tmpl)).To(Equal(tt.want))
		})
	}
}

func TestExposed(t *testing.T) {
	tests := []struct {
		name   string
		expose *ctfv1alpha1.Expose
		want   bool
	}{
		{"no expose", nil, false},
		{"no type", &ctfv1alpha1.Expose{}, false},
		{"ClusterIP", &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeClusterIP}, false},
		{"NodePort", &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeNodePort}, true},
		{"HTTPRoute", &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeHTTPRoute}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Exposed(&ctfv1alpha1.Component{Name: "bot", Expose: tt.expose})).To(Equal(tt.want))
		})
	}
}

func TestComponentExpose(t *testing.T) {
	gateways := Settings{IngressDomain: "ctf.example", Gateways: []ctfv1alpha1.GatewayRef{{Namespace: "gw", Name: "public"}}}
	host := identity.ComponentHost(instance(nil), "bot", "ctf.example")
	tests := []struct {
		name     string
		expose   *ctfv1alpha1.Expose
		settings Settings
		want     map[string]any
		refused  string
	}{
		{"internal unless exposed", nil, gateways,
			map[string]any{"type": "ClusterIP", "host": host, "https": false}, ""},
		{"no host without a domain", nil, Settings{},
			map[string]any{"type": "ClusterIP", "host": "", "https": false}, ""},
		{"an Ingress with TLS", &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeIngress, TLS: &ctfv1alpha1.IngressTLS{SecretName: "wild"}}, gateways,
			map[string]any{"type": "Ingress", "host": host, "https": true, "tls": map[string]any{"secretName": "wild"}}, ""},
		{"a route attaches to the default Gateway", &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeHTTPRoute}, gateways,
			map[string]any{"type": "HTTPRoute", "host": host, "https": false,
				"gateway": map[string]any{"namespace": "gw", "name": "public"}}, ""},
		{"a route without --gateways names the component", &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeTLSRoute}, Settings{},
			nil, "component bot: PolicyViolation: gateway: expose.type TLSRoute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tmpl := &ctfv1alpha1.ChallengeTemplate{Spec: ctfv1alpha1.ChallengeTemplateSpec{Components: []ctfv1alpha1.Component{{Name: "bot", Expose: tt.expose}}}}
			bot := instanceWorkloads(instance(nil), tmpl, tt.settings.IngressDomain)[1]
			got, err := componentExpose(&bot, tt.settings)
			if tt.refused != "" {
				g.Expect(lifecycle.IsReason(err, lifecycle.ReasonPolicyViolation)).To(BeTrue(), "got %v", err)
				g.Expect(err.Error()).To(ContainSubstring(tt.refused))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestHostValues(t *testing.T) {
	tests := []struct {
		name       string
		components []ctfv1alpha1.Component
		want       []ctfv1alpha1.EnvVar
	}{
		{"no components: no hosts, not even the primary's", nil, []ctfv1alpha1.EnvVar{}},
		{"the primary first, then each component with a port", []ctfv1alpha1.Component{
			{Name: "web-bot"},
			{Name: "redis", Ports: []ctfv1alpha1.ChallengePort{{Name: "redis", Port: 6379}}},
		}, []ctfv1alpha1.EnvVar{{Name: "PRIMARY_HOST", Value: "web"}, {Name: "REDIS_HOST", Value: "web--redis"}}},
		{"a component without a port has no Service, hence no host", []ctfv1alpha1.Component{{Name: "bot"}},
			[]ctfv1alpha1.EnvVar{{Name: "PRIMARY_HOST", Value: "web"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(hostValues("web", tt.components)).To(Equal(tt.want))
		})
	}
}

// TestAPortChoosesItsGateway: a port exposed by exposePorts attaches to the
// Gateway it names among --gateways (the first of them when it names none),
// whatever its workload's own exposure attaches to, and its Ingress to the
// class it names; a Gateway the admin did not list is refused, naming it.
func TestAPortChoosesItsGateway(t *testing.T) {
	public, admin := ctfv1alpha1.GatewayRef{Namespace: "gw", Name: "public"}, ctfv1alpha1.GatewayRef{Namespace: "gw-admin", Name: "admin"}
	settings := Settings{IngressDomain: "ctf.example", Gateways: []ctfv1alpha1.GatewayRef{public, admin}}
	exposureOf := func(e ctfv1alpha1.PortExposure) (map[string]any, error) {
		tmpl := &ctfv1alpha1.ChallengeTemplate{Spec: ctfv1alpha1.ChallengeTemplateSpec{ExposePorts: []ctfv1alpha1.PortExposure{e}}}
		got, err := portExposureValues(&instanceWorkloads(instance(nil), tmpl, settings.IngressDomain)[0], settings)
		if err != nil {
			return nil, err
		}
		return got[0].(map[string]any)["expose"].(map[string]any), nil
	}
	g := NewWithT(t)
	got, err := exposureOf(ctfv1alpha1.PortExposure{Port: "admin", Type: ctfv1alpha1.ExposeHTTPRoute, Gateway: &admin})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got["gateway"]).To(Equal(map[string]any{"namespace": "gw-admin", "name": "admin"}))
	got, err = exposureOf(ctfv1alpha1.PortExposure{Port: "nc", Type: ctfv1alpha1.ExposeTLSRoute})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got["gateway"]).To(Equal(map[string]any{"namespace": "gw", "name": "public"}), "the first of --gateways")
	got, err = exposureOf(ctfv1alpha1.PortExposure{Port: "web", Type: ctfv1alpha1.ExposeIngress, IngressClassName: "internal"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(HaveKeyWithValue("ingressClassName", "internal"), "the gate holds it to --ingress-classes")
	g.Expect(got).NotTo(HaveKey("gateway"))

	_, err = exposureOf(ctfv1alpha1.PortExposure{Port: "admin", Type: ctfv1alpha1.ExposeHTTPRoute, Gateway: &ctfv1alpha1.GatewayRef{Namespace: "kube-system", Name: "internal"}})
	g.Expect(lifecycle.IsReason(err, lifecycle.ReasonPolicyViolation)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("exposePorts admin: PolicyViolation: gateway: Gateway kube-system/internal is not one of --gateways"))
}
