package values

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

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

// secretsTemplate delivers the instance's flag to its primary (a file), a
// flag service (a variable) and a database (a file of root's alone), and a
// password to the database from the organiser's Secret.
func secretsTemplate() *ctfv1alpha1.ChallengeTemplate {
	key := ctfv1alpha1.SecretKeyRef{Namespace: "ctf-organiser", Name: "db", Key: "password"}
	return &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: ctfv1alpha1.ChallengeTemplateSpec{
		Image: "ghcr.io/x/web:1", Ports: []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080}},
		Flag: &ctfv1alpha1.FlagSpec{Static: &ctfv1alpha1.SecretKeyRef{Namespace: "ctf-organiser", Name: "flag", Key: "flag"}},
		Components: []ctfv1alpha1.Component{
			{Name: "flagsvc", Image: "flagsvc:1", Flag: &ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountEnv, EnvName: "FLAG"}},
			{Name: "db", Image: "db:1", Flag: &ctfv1alpha1.FlagDelivery{Path: "/flag", FileMode: ptr.To[int32](0o400)},
				SecretEnv: []ctfv1alpha1.SecretEnvVar{{Name: "POSTGRES_PASSWORD", Secret: key}}},
			{Name: "cache", Image: "redis:7"},
		},
	}}
}

// TestComponentSecrets: a component's flag is the instance's Secret's key
// "flag", delivered as its own flag values say (File by default, at the
// default path unless named, mode 0444 unless given); its secretEnv are keys
// of its own, never the primary's env.<NAME>; a component reading neither
// still names the instance's Secret, and one whose flag file is root's
// alone gets no fsGroup.
func TestComponentSecrets(t *testing.T) {
	g := NewWithT(t)
	c := challenge(func(s *ctfv1alpha1.ChallengeSpec) {
		*s = ctfv1alpha1.ChallengeSpec{Participant: "team-1", Template: "web"}
	})
	got, err := Compose(c, secretsTemplate(), Settings{})
	g.Expect(err).NotTo(HaveOccurred())
	secret := c.Name + "-flag"
	comps := got["components"].([]any)
	flagsvc, db, cache := comps[0].(map[string]any), comps[1].(map[string]any), comps[2].(map[string]any)
	g.Expect(flagsvc["flag"]).To(Equal(map[string]any{"enabled": true, "secretName": secret, "mount": "Env", "path": DefaultFlagPath,
		"envName": "FLAG", "fileMode": float64(DefaultFlagFileMode)}))
	g.Expect(db["flag"]).To(Equal(map[string]any{"enabled": true, "secretName": secret, "mount": "File", "path": "/flag",
		"envName": "", "fileMode": float64(0o400)}))
	g.Expect(cache["flag"]).To(HaveKeyWithValue("enabled", false))
	g.Expect(db["secretEnv"]).To(Equal([]any{map[string]any{"name": "POSTGRES_PASSWORD", "key": "db.env.POSTGRES_PASSWORD"}}))
	g.Expect(flagsvc["secretEnv"]).To(BeEmpty())
	g.Expect(db["security"]).To(HaveKeyWithValue("pod", Not(HaveKey("fsGroup"))), "the flag file is root's alone")
	g.Expect(cache["security"]).To(HaveKeyWithValue("pod", HaveKey("fsGroup")))
	g.Expect(got["secretData"]).To(BeEmpty(), "the translator reads the values")
}

// TestNeedsSecret: an instance has a Secret of its own when any of its
// workloads reads one of its keys, and only then.
func TestNeedsSecret(t *testing.T) {
	ref := ctfv1alpha1.SecretKeyRef{Namespace: "ctf-organiser", Name: "s", Key: "k"}
	for _, tt := range []struct {
		name string
		spec ctfv1alpha1.ChallengeTemplateSpec
		want bool
	}{
		{"nothing", ctfv1alpha1.ChallengeTemplateSpec{Components: []ctfv1alpha1.Component{{Name: "db"}}}, false},
		{"a flag", ctfv1alpha1.ChallengeTemplateSpec{Flag: &ctfv1alpha1.FlagSpec{Static: &ref}}, true},
		{"the primary's secretEnv", ctfv1alpha1.ChallengeTemplateSpec{SecretEnv: []ctfv1alpha1.SecretEnvVar{{Name: "A", Secret: ref}}}, true},
		{"the primary's secret file", ctfv1alpha1.ChallengeTemplateSpec{Container: ctfv1alpha1.Container{SecretFiles: []ctfv1alpha1.SecretFile{{Path: "/k", Secret: ref}}}}, true},
		{"a component's secretEnv", ctfv1alpha1.ChallengeTemplateSpec{Components: []ctfv1alpha1.Component{{Name: "db"},
			{Name: "x", SecretEnv: []ctfv1alpha1.SecretEnvVar{{Name: "A", Secret: ref}}}}}, true},
		{"a component's secret file", ctfv1alpha1.ChallengeTemplateSpec{Components: []ctfv1alpha1.Component{
			{Name: "x", Container: ctfv1alpha1.Container{SecretFiles: []ctfv1alpha1.SecretFile{{Path: "/k", Secret: ref}}}}}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(needsSecret(&ctfv1alpha1.ChallengeTemplate{Spec: tt.spec})).To(Equal(tt.want))
		})
	}
	NewWithT(t).Expect(needsSecret(nil)).To(BeFalse())
}
