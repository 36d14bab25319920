package multicomponent_test

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// gateway is the Gateway the admin lets instances attach to: TCP inside TLS
// on 443, passed through by SNI; HTTP on 80; HTTPS on 8443.
var gateway = ctfv1alpha1.GatewayRef{Namespace: "gateways", Name: "ctf"}

// adminGateway is a second Gateway the admin lists (--gateways), for the
// ports a template sends to it by name: one for organisers' admin pages.
var adminGateway = ctfv1alpha1.GatewayRef{Namespace: "gateways-admin", Name: "admin"}

// TestTCPOverTLSByName: a netcat challenge exposed by a TLSRoute is reached
// as "ncat --ssl <its own host> 443" on the Gateway's shared port: no node
// port, the route names the admin's Gateway, the instance's own host and its
// own Service only; an HTTPRoute gives a URL on the Gateway's HTTP or HTTPS
// listener. Deleting the instance removes its route.
func TestTCPOverTLSByName(t *testing.T) {
	for i, tc := range []struct {
		name    string
		expose  ctfv1alpha1.Expose
		kind    string
		connect func(host string) ctfv1alpha1.Endpoint
	}{
		{"TCP inside TLS", ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeTLSRoute}, "TLSRoute", func(host string) ctfv1alpha1.Endpoint {
			return ctfv1alpha1.Endpoint{Name: "nc", Host: host, Port: 443, Protocol: ctfv1alpha1.ProtocolTCP, Address: host + ":443",
				Connect: "ncat --ssl " + host + " 443"}
		}},
		{"HTTP", ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeHTTPRoute}, "HTTPRoute", func(host string) ctfv1alpha1.Endpoint {
			return ctfv1alpha1.Endpoint{Name: "nc", Host: host, Port: 80, Protocol: ctfv1alpha1.ProtocolTCP, Address: host + ":80",
				URL: "http://" + host + "/"}
		}},
		{"HTTPS", ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeHTTPRoute, TLS: &ctfv1alpha1.IngressTLS{}}, "HTTPRoute", func(host string) ctfv1alpha1.Endpoint {
			return ctfv1alpha1.Endpoint{Name: "nc", Host: host, Port: 8443, Protocol: ctfv1alpha1.ProtocolTCP, Address: host + ":8443",
				URL: "https://" + host + ":8443/"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			ctx := context.Background()
			name := fmt.Sprintf("routed-%d", i)
			h.Template(t, name, func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Expose = &tc.expose })
			ns := h.Namespace(t, nil)
			ch := builders.FromTemplate(ns, name, "team-a", name)
			g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
			got := h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
			host := got.Status.Endpoint.Host
			g.Expect(host).To(MatchRegexp(`^%s-[0-9a-f]{10}\.%s$`, name, harness.IngressDomain), "the instance's own host")
			g.Expect(*got.Status.Endpoint).To(Equal(tc.connect(host)))

			route := map[string]client.Object{"TLSRoute": &gatewayv1.TLSRoute{}, "HTTPRoute": &gatewayv1.HTTPRoute{}}[tc.kind]
			g.Expect(h.Client.Get(ctx, client.ObjectKeyFromObject(ch), route)).To(Succeed())
			var spec gatewayv1.CommonRouteSpec
			var hostnames []gatewayv1.Hostname
			var backends []gatewayv1.BackendRef
			switch r := route.(type) {
			case *gatewayv1.TLSRoute:
				spec, hostnames, backends = r.Spec.CommonRouteSpec, r.Spec.Hostnames, r.Spec.Rules[0].BackendRefs
			case *gatewayv1.HTTPRoute:
				spec, hostnames, backends = r.Spec.CommonRouteSpec, r.Spec.Hostnames, []gatewayv1.BackendRef{r.Spec.Rules[0].BackendRefs[0].BackendRef}
			}
			g.Expect(spec.ParentRefs).To(HaveExactElements(HaveField("Name", gatewayv1.ObjectName(gateway.Name))))
			g.Expect(*spec.ParentRefs[0].Namespace).To(BeEquivalentTo(gateway.Namespace))
			g.Expect(hostnames).To(Equal([]gatewayv1.Hostname{gatewayv1.Hostname(host)}))
			g.Expect(backends).To(HaveExactElements(And(HaveField("Name", gatewayv1.ObjectName(ch.Name)), HaveField("Port", ptr.To(gatewayv1.PortNumber(1337))))))
			svc := &corev1.Service{}
			g.Expect(h.Client.Get(ctx, client.ObjectKeyFromObject(ch), svc)).To(Succeed())
			g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP), "no node port")

			dep := &appsv1.Deployment{}
			g.Expect(h.Client.Get(ctx, client.ObjectKeyFromObject(ch), dep)).To(Succeed())
			env := dep.Spec.Template.Spec.Containers[0].Env
			g.Expect(env).To(ContainElement(corev1.EnvVar{Name: "CHALLENGE_HOST", Value: host}))
			if tc.kind == "TLSRoute" {
				g.Expect(env).NotTo(ContainElement(HaveField("Name", "CHALLENGE_URL")), "no URL for raw TCP")
			} else {
				// The listener's port once went missing here (https://host/ for 8443).
				g.Expect(env).To(ContainElement(corev1.EnvVar{Name: "CHALLENGE_URL", Value: got.Status.Endpoint.URL}), "the URL the status shows")
			}

			g.Expect(h.Client.Delete(ctx, ch)).To(Succeed())
			h.EventuallyGone(t, route, harness.Timeout, "the route goes with its instance")
		})
	}
}

// TestRouteOnAGatewayNobodyAllowed: a template naming a Gateway the admin
// did not list ends in Error/PolicyViolation naming the flag, with nothing
// applied.
func TestRouteOnAGatewayNobodyAllowed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h.Template(t, "stray-route", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeTLSRoute, Gateway: &ctfv1alpha1.GatewayRef{Namespace: "kube-system", Name: "internal"}}
	})
	ns := h.Namespace(t, nil)
	ch := builders.FromTemplate(ns, "stray-route", "team-a", "stray-route")
	g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	got := h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("PolicyViolation"))
	g.Expect(got.Status.Message).To(ContainSubstring("Gateway kube-system/internal is not one of --gateways (gateways/ctf, gateways-admin/admin)"))
	var routes gatewayv1.TLSRouteList
	g.Expect(h.Client.List(ctx, &routes, client.InNamespace(ns))).To(Succeed())
	g.Expect(routes.Items).To(BeEmpty(), "nothing applied")
}

// TestAnExposedComponent: a web application and a shell teams also connect
// to, over TCP inside TLS: the shell has its own host, route and endpoint,
// admits the outside (the Gateway's proxies among it) on its port, and the
// status lists both endpoints, the web's first.
func TestAnExposedComponent(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h.Template(t, "web-shell", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		webApp(s)
		s.Components = []ctfv1alpha1.Component{{Name: "shell", Image: "ghcr.io/example/shell:1", Ports: ports("ssh", 2222),
			Expose: &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeTLSRoute}}}
	})
	ns := h.Namespace(t, nil)
	ch := builders.FromTemplate(ns, "web-shell", "team-a", "web-shell")
	g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	got := h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

	g.Expect(got.Status.Endpoints).To(HaveLen(2))
	web, shell := got.Status.Endpoints[0], got.Status.Endpoints[1]
	g.Expect(*got.Status.Endpoint).To(Equal(web), "the primary component's first")
	g.Expect(web.URL).To(HavePrefix("https://web-shell-"))
	g.Expect(shell.Component).To(Equal("shell"))
	g.Expect(shell.Host).To(MatchRegexp(`^web-shell-shell-[0-9a-f]{10}\.%s$`, harness.IngressDomain), "a host of its own")
	g.Expect(shell.Connect).To(Equal("ncat --ssl " + shell.Host + " 443"))

	route := &gatewayv1.TLSRoute{}
	g.Expect(h.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-shell--shell"}, route)).To(Succeed())
	g.Expect(route.Spec.Hostnames).To(Equal([]gatewayv1.Hostname{gatewayv1.Hostname(shell.Host)}))
	g.Expect(route.Spec.Rules[0].BackendRefs).To(HaveExactElements(HaveField("Name", gatewayv1.ObjectName("web-shell--shell"))))
	np := networkPolicy(g, got, "web-shell--shell")
	g.Expect(np.Spec.Ingress).To(HaveLen(2))
	g.Expect(np.Spec.Ingress[0].From).To(ContainElement(HaveField("NamespaceSelector.MatchLabels", HaveKeyWithValue("kubernetes.io/metadata.name", gateway.Namespace))),
		"the Gateway's proxies connect")
	g.Expect(np.Spec.Ingress[0].From).To(ContainElement(HaveField("IPBlock.CIDR", "0.0.0.0/0")), "and the outside")
}
