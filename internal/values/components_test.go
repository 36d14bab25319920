package values

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/security"
)

func TestHostVariable(t *testing.T) {
	g := NewWithT(t)
	g.Expect(HostVariable("redis")).To(Equal("REDIS_HOST"))
	g.Expect(HostVariable("web-bot")).To(Equal("WEB_BOT_HOST"))
}

// TestComponentValues: each component is rendered with the hosts first in its
// environment, its own security (restricted unless it says otherwise, never
// the template's), its resource floor and its files keyed by its name; a
// namespace of the instance's own holds every component, under the widest
// profile and a quota for each.
func TestComponentValues(t *testing.T) {
	g := NewWithT(t)
	tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: ctfv1alpha1.ChallengeTemplateSpec{
		Image: "ghcr.io/x/web:1", Ports: []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080}},
		Security: &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileBaseline},
		Components: []ctfv1alpha1.Component{
			{Name: "redis", Image: "redis:7", Ports: []ctfv1alpha1.ChallengePort{{Name: "redis", Port: 6379}},
				Env: []ctfv1alpha1.EnvVar{{Name: "A", Value: "$(PRIMARY_HOST)"}}},
			{Name: "bot", Image: "bot:1", Container: ctfv1alpha1.Container{Files: []ctfv1alpha1.File{{Path: "/etc/bot.conf", Content: "x"}}},
				Security: &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfilePrivileged, RuntimeClassName: "gvisor"}},
		},
	}}
	c := challenge(func(s *ctfv1alpha1.ChallengeSpec) {
		*s = ctfv1alpha1.ChallengeSpec{Participant: "team-1", Template: "web"}
	})
	got, err := Compose(c, tmpl, Settings{NamespacePerInstance: true, Security: security.Bounds{MaxProfile: ctfv1alpha1.ProfilePrivileged, SandboxRuntimeClasses: []string{"gvisor"}}})
	g.Expect(err).NotTo(HaveOccurred())
	hosts := []any{map[string]any{"name": "PRIMARY_HOST", "value": c.Name}, map[string]any{"name": "REDIS_HOST", "value": c.Name + "--redis"}}
	g.Expect(got["hosts"]).To(Equal(hosts), "the bot has no port, hence no Service and no host")
	comps := got["components"].([]any)
	g.Expect(comps).To(HaveLen(2))
	redis, bot := comps[0].(map[string]any), comps[1].(map[string]any)
	g.Expect(redis["objectName"]).To(Equal(c.Name + "--redis"))
	g.Expect(redis["hosts"]).To(Equal(hosts), "every workload's, as the primary's: first in its environment")
	g.Expect(redis["env"]).To(Equal([]any{map[string]any{"name": "A", "value": "$(PRIMARY_HOST)"}}))
	g.Expect(redis["replicas"]).To(BeEquivalentTo(1))
	g.Expect(redis["security"]).To(HaveKeyWithValue("profile", "restricted"), "not the template's baseline")
	g.Expect(redis["resources"]).To(HaveKeyWithValue("limits", HaveKeyWithValue("cpu", DefaultCPULimit)))
	g.Expect(redis["probes"]).To(HaveKeyWithValue("readiness", HaveKeyWithValue("tcpSocket", HaveKeyWithValue("port", "redis"))))
	g.Expect(bot["security"]).To(And(HaveKeyWithValue("profile", "privileged"), HaveKeyWithValue("runtimeClassName", "gvisor")))
	g.Expect(bot["files"]).To(ConsistOf(HaveKeyWithValue("key", "bot.f0")))
	g.Expect(bot["probes"]).To(BeEmpty(), "no port to probe")
	ns := got["namespacePerInstance"].(map[string]any)
	g.Expect(ns["profile"]).To(Equal("privileged"), "the widest of the components'")
	g.Expect(ns["quota"]).To(And(HaveKeyWithValue("pods", "12"), HaveKeyWithValue("limits.memory", "6Gi")), "a quota for each of three components")
}

// TestOneComponentRendersAsBefore: an instance without components gets no
// hosts and no components, so its render is unchanged.
func TestOneComponentRendersAsBefore(t *testing.T) {
	g := NewWithT(t)
	got, err := Compose(challenge(nil), nil, Settings{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got["hosts"]).To(BeEmpty())
	g.Expect(got["components"]).To(BeEmpty())
	g.Expect(got["namespacePerInstance"]).To(HaveKeyWithValue("quota", HaveKeyWithValue("pods", "4")))
}
