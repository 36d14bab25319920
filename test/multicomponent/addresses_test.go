package multicomponent_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/values"
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
	ch := harness.FromTemplate(ns, "web-addr", "team-a", "web-addr")
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
