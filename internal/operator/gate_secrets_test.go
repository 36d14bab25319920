package operator

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/values"
)

// secretsTemplate delivers the instance's flag and the organiser's Secrets
// beyond the primary: the flag to a flag service (a variable) and to a
// database (a file of root's alone), the database's password from a Secret.
func secretsTemplate() *ctfv1alpha1.ChallengeTemplate {
	ref := func(name, key string) ctfv1alpha1.SecretKeyRef {
		return ctfv1alpha1.SecretKeyRef{Namespace: "ctf", Name: name, Key: key}
	}
	flag := ref("flags", "web")
	return &ctfv1alpha1.ChallengeTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: ctfv1alpha1.ChallengeTemplateSpec{
			Image: "registry.example/web:1",
			Ports: []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080, Protocol: ctfv1alpha1.ProtocolTCP}},
			Flag:  &ctfv1alpha1.FlagSpec{Static: &flag, FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountFile, Path: "/flag/flag.txt"}},
			Container: ctfv1alpha1.Container{MemoryTmp: true, SecretFiles: []ctfv1alpha1.SecretFile{
				{Path: "/etc/tls/key.pem", Secret: ref("tls", "key"), Mode: ptr.To[int32](0o400)}, {Path: "/etc/app.ini", Secret: ref("app", "ini")}}},
			Sidecars: []ctfv1alpha1.Sidecar{{Name: "proxy", Image: "registry.example/proxy:1",
				Flag:      &ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountEnv, EnvName: "FLAG"},
				SecretEnv: []ctfv1alpha1.SecretEnvVar{{Name: "API_KEY", Secret: ref("proxy", "key")}},
				Container: ctfv1alpha1.Container{MemoryTmp: true, SecretFiles: []ctfv1alpha1.SecretFile{{Path: "/etc/proxy/token", Secret: ref("proxy", "token")}}}}},
			Components: []ctfv1alpha1.Component{
				{Name: "flagsvc", Image: "registry.example/flagsvc:1", Ports: []ctfv1alpha1.ChallengePort{{Name: "flag", Port: 8081}},
					Flag: &ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountEnv, EnvName: "FLAG"}},
				{Name: "db", Image: "registry.example/db:1", Ports: []ctfv1alpha1.ChallengePort{{Name: "sql", Port: 5432}},
					Flag:      &ctfv1alpha1.FlagDelivery{Path: "/root/flag.txt", FileMode: ptr.To[int32](0o400)},
					SecretEnv: []ctfv1alpha1.SecretEnvVar{{Name: "POSTGRES_PASSWORD", Secret: ref("db", "password")}},
					Container: ctfv1alpha1.Container{SecretFiles: []ctfv1alpha1.SecretFile{{Path: "/etc/db/server.key", Secret: ref("tls", "key")}}},
					Sidecars:  []ctfv1alpha1.Sidecar{{Name: "backup", Image: "registry.example/backup:1", Flag: &ctfv1alpha1.FlagDelivery{Path: "/flag"}}}},
			},
		},
	}
}

// TestChartWithSecretsPassesTheGate: the flag and the organiser's Secrets
// delivered beyond the primary (to components and sidecars), secret files and a memory-backed /tmp render
// into objects the gate accepts, in the shared namespace and in one of the
// instance's own.
func TestChartWithSecretsPassesTheGate(t *testing.T) {
	for _, perInstance := range []bool{false, true} {
		g := NewWithT(t)
		ch := &ctfv1alpha1.Challenge{
			ObjectMeta: metav1.ObjectMeta{Name: "web-team1", Namespace: "ctf-teams"},
			Spec:       ctfv1alpha1.ChallengeSpec{Participant: "team1", Template: "web"},
		}
		manifest, in, err := RenderForGate(ch, secretsTemplate(), Options{Values: values.Settings{NamespacePerInstance: perInstance}})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(in.FlagSecret).To(Equal("web-team1-flag"))
		g.Expect(in.Workloads[0].SecretFiles).To(Equal([]string{"file.0", "file.1", "challenge.proxy.file.0"}), "a sidecar's too, under its own prefix")
		g.Expect(in.Workloads[2].SecretFiles).To(Equal([]string{"db.file.0"}))
		g.Expect(string(manifest)).To(ContainSubstring(`key: "challenge.proxy.env.API_KEY"`), "a sidecar's secretEnv")
		g.Expect(string(manifest)).To(ContainSubstring(`- name: "proxy-secrets"`), "a sidecar's secret files, in a volume of its own")
		g.Expect(string(manifest)).To(ContainSubstring(`- name: "backup-flag"`), "a component's sidecar's flag file")
		g.Expect(string(manifest)).To(ContainSubstring(`- key: "db.file.0"`))
		g.Expect(string(manifest)).To(ContainSubstring(`medium: "Memory"`), "the primary's /tmp")
		g.Expect(policy.Check(manifest, in)).To(Succeed(), "namespace per instance: %v", perInstance)
	}
}
