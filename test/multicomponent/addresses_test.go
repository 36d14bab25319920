package multicomponent_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// TestAddressesAsValues: an application that reads BASE_URL, PUBLIC_HOST or
// a peer's public address gets them from the operator's address variables,
// in any container: the instance's URL on the Gateway's HTTPS listener
// (port 8443, in the URL), its port, and an exposed component's host and
// port. Each variable that uses one comes after the ones it uses, so
// Kubernetes expands it; one that uses none keeps its place.
func TestAddressesAsValues(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h.Template(t, "web-addr", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Ports = ports("http", 8080)
		s.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeHTTPRoute, TLS: &ctfv1alpha1.IngressTLS{}}
		s.Env = []ctfv1alpha1.EnvVar{{Name: "BASE_URL", Value: "$(CHALLENGE_URL)"}, {Name: "MODE", Value: "ctf"},
			{Name: "API_URL", Value: "$(BASE_URL)api"}, {Name: "PUBLIC", Value: "$(CHALLENGE_HOST):$(CHALLENGE_PORT)"},
			{Name: "SHELL_ADDR", Value: "$(SHELL_PUBLIC_HOST):$(SHELL_PUBLIC_PORT)"}}
		s.Components = []ctfv1alpha1.Component{{Name: "shell", Image: "ghcr.io/example/shell:1", Ports: ports("ssh", 2222),
			Expose: &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeTLSRoute},
			Env:    []ctfv1alpha1.EnvVar{{Name: "APP_URL", Value: "$(CHALLENGE_URL)"}, {Name: "ME", Value: "$(SHELL_PUBLIC_HOST)"}}}}
	})
	ns := h.Namespace(t, nil)
	ch := builders.FromTemplate(ns, "web-addr", "team-a", "web-addr")
	g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	got := h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	web, shell := got.Status.Endpoints[0], got.Status.Endpoints[1]
	g.Expect(web.URL).To(Equal("https://" + web.Host + ":8443/"))

	app := deployment(g, got, "web-addr").Spec.Template.Spec.Containers[0]
	g.Expect(app.Env).To(HaveExactElements(
		corev1.EnvVar{Name: values.PrimaryHostVariable, Value: "web-addr"},
		corev1.EnvVar{Name: "SHELL_HOST", Value: "web-addr--shell"},
		corev1.EnvVar{Name: "MODE", Value: "ctf"},
		corev1.EnvVar{Name: "CHALLENGE_HOST", Value: web.Host},
		corev1.EnvVar{Name: "CHALLENGE_URL", Value: web.URL},
		corev1.EnvVar{Name: "CHALLENGE_PORT", Value: "8443"},
		corev1.EnvVar{Name: "SHELL_PUBLIC_HOST", Value: shell.Host},
		corev1.EnvVar{Name: "SHELL_PUBLIC_PORT", Value: "443"},
		corev1.EnvVar{Name: "BASE_URL", Value: "$(CHALLENGE_URL)"},
		corev1.EnvVar{Name: "API_URL", Value: "$(BASE_URL)api"},
		corev1.EnvVar{Name: "PUBLIC", Value: "$(CHALLENGE_HOST):$(CHALLENGE_PORT)"},
		corev1.EnvVar{Name: "SHELL_ADDR", Value: "$(SHELL_PUBLIC_HOST):$(SHELL_PUBLIC_PORT)"},
	))
	g.Expect(expand(app.Env, "API_URL")).To(Equal(web.URL+"api"), "as the kubelet expands it")
	g.Expect(expand(app.Env, "SHELL_ADDR")).To(Equal(shell.Host + ":443"))

	sh := deployment(g, got, "web-addr--shell").Spec.Template.Spec.Containers[0]
	g.Expect(expand(sh.Env, "APP_URL")).To(Equal(web.URL), "a component's container too")
	g.Expect(expand(sh.Env, "ME")).To(Equal(shell.Host))
}

// expand is the value of the variable name as the kubelet expands env in
// order: a $(VAR) of a variable defined before it is replaced, any other
// left as it is.
func expand(env []corev1.EnvVar, name string) string {
	defined := map[string]string{}
	for _, e := range env {
		v := e.Value
		for _, ref := range values.References(e.Value) {
			if val, ok := defined[ref]; ok {
				v = strings.ReplaceAll(v, "$("+ref+")", val)
			}
		}
		defined[e.Name] = v
	}
	return defined[name]
}

// TestPortsExposedEachTheirWay: HTTP by host on one port and TLS-routed TCP
// on another, each on a host of its own, and a component whose SSH port
// only is exposed: the status lists each port where teams reach it, the
// component's its exposed port only, each port's route is on the Gateway
// chosen for it (the primary's nc on the admin's second one), each port's
// address is in variables of its own (CHALLENGE_NC_PUBLIC_HOST,
// SHELL_SSH_PUBLIC_PORT), and its NetworkPolicy admits the Gateway's
// proxies.
func TestPortsExposedEachTheirWay(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h.Template(t, "web-ports", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Ports = []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080, Protocol: ctfv1alpha1.ProtocolTCP}, {Name: "nc", Port: 1337, Protocol: ctfv1alpha1.ProtocolTCP}}
		s.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeHTTPRoute}
		s.ExposePorts = []ctfv1alpha1.PortExposure{{Port: "nc", Type: ctfv1alpha1.ExposeTLSRoute, Gateway: &adminGateway}}
		s.Env = []ctfv1alpha1.EnvVar{{Name: "NC_ADDR", Value: "$(CHALLENGE_NC_PUBLIC_HOST):$(CHALLENGE_NC_PUBLIC_PORT)"}}
		s.Components = []ctfv1alpha1.Component{{Name: "shell", Image: "ghcr.io/example/shell:1",
			Ports:       []ctfv1alpha1.ChallengePort{{Name: "metrics", Port: 9100, Protocol: ctfv1alpha1.ProtocolTCP}, {Name: "ssh", Port: 2222, Protocol: ctfv1alpha1.ProtocolTCP}},
			ExposePorts: []ctfv1alpha1.PortExposure{{Port: "ssh", Type: ctfv1alpha1.ExposeTLSRoute}},
			Env:         []ctfv1alpha1.EnvVar{{Name: "SSH_ADDR", Value: "$(SHELL_SSH_PUBLIC_HOST) $(SHELL_SSH_PUBLIC_PORT)"}}}}
	})
	ns := h.Namespace(t, nil)
	ch := builders.FromTemplate(ns, "web-ports", "team-a", "web-ports")
	g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	got := h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

	g.Expect(got.Status.Endpoints).To(HaveLen(3), "the primary's two ports, the component's exposed one")
	web, nc, ssh := got.Status.Endpoints[0], got.Status.Endpoints[1], got.Status.Endpoints[2]
	g.Expect(web.URL).To(Equal("http://" + web.Host + "/"))
	g.Expect(nc.Name).To(Equal("nc"))
	g.Expect(nc.Host).To(MatchRegexp(`^web-ports-nc-[0-9a-f]{10}\.%s$`, harness.IngressDomain), "a host of its own")
	g.Expect(nc.Connect).To(Equal("ncat --ssl " + nc.Host + " 443"))
	g.Expect(ssh.Component).To(Equal("shell"))
	g.Expect(ssh.Name).To(Equal("ssh"))
	g.Expect(ssh.Host).To(MatchRegexp(`^web-ports-shell-ssh-[0-9a-f]{10}\.%s$`, harness.IngressDomain))
	g.Expect(ssh.Connect).To(Equal("ncat --ssl " + ssh.Host + " 443"))
	g.Expect(map[string]bool{web.Host: true, nc.Host: true, ssh.Host: true}).To(HaveLen(3), "three hosts")

	// Each exposed port's address in variables of its own, as teams reach it.
	app := deployment(g, got, "web-ports").Spec.Template.Spec.Containers[0]
	g.Expect(expand(app.Env, "NC_ADDR")).To(Equal(nc.Host+":443"), "as the kubelet expands it")
	sh := deployment(g, got, "web-ports--shell").Spec.Template.Spec.Containers[0]
	g.Expect(expand(sh.Env, "SSH_ADDR")).To(Equal(ssh.Host+" 443"), "a component's port too")

	for name, want := range map[string]struct {
		host string
		on   ctfv1alpha1.GatewayRef
	}{"web-ports.nc": {nc.Host, adminGateway}, "web-ports--shell.ssh": {ssh.Host, gateway}} {
		route := &gatewayv1.TLSRoute{}
		g.Expect(h.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, route)).To(Succeed())
		g.Expect(route.Spec.Hostnames).To(Equal([]gatewayv1.Hostname{gatewayv1.Hostname(want.host)}))
		g.Expect(route.Spec.ParentRefs).To(HaveExactElements(And(HaveField("Name", gatewayv1.ObjectName(want.on.Name)),
			HaveField("Namespace", HaveValue(Equal(gatewayv1.Namespace(want.on.Namespace)))))), "%s on the Gateway chosen for it", name)
		g.Expect(route.Spec.Rules[0].BackendRefs).To(HaveExactElements(HaveField("BackendObjectReference.Name", gatewayv1.ObjectName(strings.TrimSuffix(strings.TrimSuffix(name, ".nc"), ".ssh")))))
	}
	np := networkPolicy(g, got, "web-ports--shell")
	g.Expect(np.Spec.Ingress[0].From).To(ContainElement(HaveField("NamespaceSelector.MatchLabels", HaveKeyWithValue("kubernetes.io/metadata.name", gateway.Namespace))),
		"the Gateway's proxies reach the component's exposed port")
	g.Expect(h.Client.Delete(ctx, got)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(h.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-ports.nc"}, &gatewayv1.TLSRoute{}))
	}, harness.Timeout, harness.Interval).Should(BeTrue(), "a port's route goes with the instance")
}
