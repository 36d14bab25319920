package operator

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/security"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// TestChartPassesTheGate renders charts/challenge as the translator composes
// its values, with every feature on, and holds it to the gate exactly as the
// operator does: the chart, the enforced values and the gate must agree, or
// every release would be refused. (Pure: the template is at hand, and
// nothing here is decided by an API server.)
func TestChartPassesTheGate(t *testing.T) {
	tmpl := &ctfv1alpha1.ChallengeTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: ctfv1alpha1.ChallengeTemplateSpec{
			Image:  "registry.example/web:1",
			Ports:  []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080, Protocol: ctfv1alpha1.ProtocolTCP}},
			Expose: &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeIngress},
			Flag: &ctfv1alpha1.FlagSpec{
				Static:       &ctfv1alpha1.SecretKeyRef{Namespace: "ctf", Name: "flags", Key: "web"},
				FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountFile, Path: "/flag/flag.txt"},
			},
			Egress: []ctfv1alpha1.EgressRule{{Name: "checker", CIDR: "203.0.113.0/24"}},
			Policy: &ctfv1alpha1.InstancePolicy{InternetEgress: true},
		},
	}
	profiles := map[string]*ctfv1alpha1.Security{
		"restricted": nil,
		"baseline, root": {Profile: ctfv1alpha1.ProfileBaseline, RunAsUser: ptr.To[int64](0), AllowPrivilegeEscalation: ptr.To(true),
			Capabilities: &ctfv1alpha1.Capabilities{Add: []ctfv1alpha1.Capability{"NET_BIND_SERVICE", "SETUID"}}},
		"privileged, sandboxed": {Profile: ctfv1alpha1.ProfilePrivileged, Privileged: ptr.To(true), RuntimeClassName: "gvisor",
			SeccompProfile: &ctfv1alpha1.Confinement{Type: ctfv1alpha1.ConfinementLocalhost, LocalhostProfile: "ctf/jail.json"}},
	}
	bounds := security.Bounds{MaxProfile: ctfv1alpha1.ProfilePrivileged, SandboxRuntimeClasses: []string{"gvisor"}, LocalhostProfiles: []string{"ctf/jail.json"}}
	for name, sec := range profiles {
		for _, perInstance := range []bool{false, true} {
			t.Run(name+map[bool]string{false: ", shared namespace", true: ", namespace per instance"}[perInstance], func(t *testing.T) {
				g := NewWithT(t)
				tmpl := tmpl.DeepCopy()
				tmpl.Spec.Security = sec
				tmpl.Spec.Command = []ctfv1alpha1.Argument{"/app/run", "--flag-file=/flag/flag.txt"}
				tmpl.Spec.Ports = append(tmpl.Spec.Ports, ctfv1alpha1.ChallengePort{Name: "web", Port: 80, Protocol: ctfv1alpha1.ProtocolTCP})
				tmpl.Spec.Scratch = []ctfv1alpha1.ScratchMount{{Path: "/var/cache/app"}, {Path: "/run", Memory: true}}
				tmpl.Spec.Files = []ctfv1alpha1.File{{Path: "/etc/app/app.conf", Content: "key: \"{{ x }}\"\n---\nkind: Secret\n", Mode: ptr.To[int32](0o400)}}
				ch := &ctfv1alpha1.Challenge{
					ObjectMeta: metav1.ObjectMeta{Name: "web-team1", Namespace: "ctf-teams"},
					Spec:       ctfv1alpha1.ChallengeSpec{Participant: "team1", Template: "web"},
				}
				settings := values.Settings{NamespacePerInstance: perInstance, IngressFromNamespaces: []string{"ingress-nginx"}, IngressDomain: "ctf.example",
					Security: bounds}
				manifest, in, err := RenderForGate(ch, tmpl, Options{Values: settings})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(policy.Check(manifest, in)).To(Succeed())
				g.Expect(string(manifest)).To(ContainSubstring("net.ipv4.ip_unprivileged_port_start"), "port 80 without root")
				if !perInstance {
					return
				}
				level := string(security.ProfileOf(sec))
				g.Expect(string(manifest)).To(ContainSubstring("pod-security.kubernetes.io/enforce: "+strconv.Quote(level)), "a namespace of its own enforces the profile")
			})
		}
	}
}

// TestChartQuotesEveryValue reads the chart's templates: every action that
// prints a value quotes it, or prints it as YAML, an integer or an indented
// block, so no value can add a line of its own (the instance namespace's name
// was once printed bare).
func TestChartQuotesEveryValue(t *testing.T) {
	g := NewWithT(t)
	paths, err := filepath.Glob(filepath.Join(controlplane.RepoRoot(), "charts", "challenge", "templates", "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(paths).NotTo(BeEmpty())
	action := regexp.MustCompile(`{{[^-/][^}]*}}`)
	safe := regexp.MustCompile(`\| quote|toYaml|^{{ int(64)? |nindent|^{{ (end|else)`)
	for _, path := range paths {
		data, err := os.ReadFile(path)
		g.Expect(err).NotTo(HaveOccurred())
		for i, line := range strings.Split(string(data), "\n") {
			for _, a := range action.FindAllString(line, -1) {
				g.Expect(safe.MatchString(a)).To(BeTrue(), "%s:%d prints %s unquoted", filepath.Base(path), i+1, a)
			}
		}
	}
}
