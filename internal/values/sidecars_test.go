package values

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/security"
)

func sidecarTemplate(mutate func(*ctfv1alpha1.ChallengeTemplateSpec)) *ctfv1alpha1.ChallengeTemplate {
	tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: ctfv1alpha1.ChallengeTemplateSpec{
		Image: "ghcr.io/x/web:1", Ports: []ctfv1alpha1.ChallengePort{{Name: "app", Port: 8080}},
	}}
	if mutate != nil {
		mutate(&tmpl.Spec)
	}
	return tmpl
}

func composeTemplate(t *testing.T, tmpl *ctfv1alpha1.ChallengeTemplate, settings Settings) map[string]any {
	t.Helper()
	c := challenge(func(s *ctfv1alpha1.ChallengeSpec) {
		*s = ctfv1alpha1.ChallengeSpec{Participant: "team-1", Template: tmpl.Name}
	})
	got, err := Compose(c, tmpl, settings)
	if err != nil {
		t.Fatalf("composing: %v", err)
	}
	return got
}

// TestSidecarValues: a sidecar's values have the keys of a main container's:
// the instance's hosts first in its environment, its own env, command line,
// explicit probes only (no default readiness), the resource floor under its
// own resources and the workload's extended resources, a read-only root
// filesystem, /tmp unless it keeps the image's, its scratch and its files.
func TestSidecarValues(t *testing.T) {
	g := NewWithT(t)
	tmpl := sidecarTemplate(func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Security = &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfilePrivileged, RuntimeClassName: "gvisor",
			ExtendedResources: map[string]int32{"devices.kubevirt.io/kvm": 1}}
		s.Sidecars = []ctfv1alpha1.Sidecar{{Name: "proxy", Image: "nginx:1", Ports: []ctfv1alpha1.ChallengePort{{Name: "http", Port: 80}},
			Env:       []ctfv1alpha1.EnvVar{{Name: "UPSTREAM", Value: "127.0.0.1:8080"}},
			Resources: &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{Memory: ptr.To(ctfv1alpha1.Quantity("64Mi"))}},
			Container: ctfv1alpha1.Container{Command: []ctfv1alpha1.Argument{"nginx"}, Args: []ctfv1alpha1.Argument{"-g", "daemon off;"}, WorkingDir: "/etc/nginx",
				Probes:  &ctfv1alpha1.Probes{Liveness: &ctfv1alpha1.Probe{TCP: &ctfv1alpha1.TCPProbe{Port: "http"}}},
				Scratch: []ctfv1alpha1.ScratchMount{{Path: "/var/cache/nginx"}},
				Files:   []ctfv1alpha1.File{{Path: "/etc/nginx/nginx.conf", Content: "events {}"}}}}}
		s.Components = []ctfv1alpha1.Component{{Name: "db", Image: "postgres:16", Ports: []ctfv1alpha1.ChallengePort{{Name: "pg", Port: 5432}},
			Sidecars: []ctfv1alpha1.Sidecar{{Name: "exporter", Image: "exporter:1", Container: ctfv1alpha1.Container{KeepImageTmp: true}}}}}
	})
	got := composeTemplate(t, tmpl, Settings{Security: security.Bounds{MaxProfile: ctfv1alpha1.ProfilePrivileged,
		SandboxRuntimeClasses: []string{"gvisor"}, ExtendedResources: []string{"devices.kubevirt.io/kvm"}}})

	hosts := []any{map[string]any{"name": "PRIMARY_HOST", "value": "web"}, map[string]any{"name": "DB_HOST", "value": "web--db"}}
	g.Expect(got["sidecars"]).To(Equal([]any{map[string]any{
		"name": "proxy", "image": "nginx:1", "ports": []any{map[string]any{"name": "http", "port": float64(80)}},
		"hosts": hosts, "env": []any{map[string]any{"name": "UPSTREAM", "value": "127.0.0.1:8080"}}, "lateEnv": []any{}, "addresses": []any{},
		"command": []any{"nginx"}, "args": []any{"-g", "daemon off;"}, "workingDir": "/etc/nginx",
		"probes": map[string]any{"liveness": map[string]any{"tcpSocket": map[string]any{"port": "http"}}},
		"resources": map[string]any{
			"limits":   map[string]any{"cpu": "500m", "memory": "64Mi", "ephemeral-storage": "256Mi", "devices.kubevirt.io/kvm": "1"},
			"requests": map[string]any{"cpu": "50m", "memory": "64Mi", "ephemeral-storage": "64Mi", "devices.kubevirt.io/kvm": "1"},
		},
		"readOnlyRootFilesystem": true, "mountTmp": true, "memoryTmp": false, "secretFiles": []any{}, "secretEnv": []any{},
		"flag":    map[string]any{"enabled": false, "secretName": "", "mount": "File", "path": DefaultFlagPath, "envName": "", "fileMode": float64(DefaultFlagFileMode)},
		"scratch": []any{map[string]any{"path": "/var/cache/nginx", "sizeLimit": "64Mi", "medium": ""}},
		"files":   []any{map[string]any{"key": "challenge.proxy.f0", "path": "/etc/nginx/nginx.conf", "content": "events {}", "mode": float64(0o444)}},
	}}), "the primary's sidecar")

	db := got["components"].([]any)[0].(map[string]any)
	exporter := db["sidecars"].([]any)[0].(map[string]any)
	g.Expect(exporter).To(HaveKeyWithValue("mountTmp", false), "keepImageTmp")
	g.Expect(exporter).To(HaveKeyWithValue("hosts", hosts))
	g.Expect(exporter).To(HaveKeyWithValue("probes", map[string]any{}), "no default readiness probe: its port is not its workload's")
	g.Expect(exporter).To(HaveKeyWithValue("ports", []any{}))
	g.Expect(exporter["resources"]).To(HaveKeyWithValue("limits", map[string]any{"cpu": "500m", "memory": "256Mi", "ephemeral-storage": "256Mi"}),
		"the floor, and none of the primary's extended resources: the component's security grants none")
}

// TestSidecarsEnforced: the primary's sidecars are the template's on every
// render, none without a template or without sidecars: no layer of values
// reaches them.
func TestSidecarsEnforced(t *testing.T) {
	g := NewWithT(t)
	got, err := ForChallenge(challenge(nil))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(HaveKeyWithValue("sidecars", []any{}))

	plain := composeTemplate(t, sidecarTemplate(func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Components = []ctfv1alpha1.Component{{Name: "db", Image: "postgres:16"}}
		s.OverridableValues = []ctfv1alpha1.ValuePath{"sidecars"}
	}), Settings{})
	g.Expect(plain).To(HaveKeyWithValue("sidecars", []any{}))
	g.Expect(plain["components"].([]any)[0]).To(HaveKeyWithValue("sidecars", []any{}))
}

// TestSidecarFileKeys: the keys of every file of an instance, the
// primary's, its sidecars', its components' and theirs, are unique in its
// one ConfigMap, whatever the names (a component named like a sidecar, a
// sidecar named like a key).
func TestSidecarFileKeys(t *testing.T) {
	g := NewWithT(t)
	files := func(n int) []ctfv1alpha1.File {
		out := make([]ctfv1alpha1.File, n)
		for i := range out {
			out[i] = ctfv1alpha1.File{Path: "/etc/f" + string(rune('0'+i)), Content: "x"}
		}
		return out
	}
	sidecar := func(name string) ctfv1alpha1.Sidecar {
		return ctfv1alpha1.Sidecar{Name: name, Image: "x:1", Container: ctfv1alpha1.Container{Files: files(2)}}
	}
	tmpl := sidecarTemplate(func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Files = files(2)
		s.Sidecars = []ctfv1alpha1.Sidecar{sidecar("f0"), sidecar("db"), sidecar("proxy")}
		s.Components = []ctfv1alpha1.Component{
			{Name: "f0", Image: "x:1", Container: ctfv1alpha1.Container{Files: files(2)}, Sidecars: []ctfv1alpha1.Sidecar{sidecar("f1")}},
			{Name: "db", Image: "x:1", Container: ctfv1alpha1.Container{Files: files(2)}, Sidecars: []ctfv1alpha1.Sidecar{sidecar("proxy"), sidecar("f0")}},
			{Name: "proxy", Image: "x:1", Container: ctfv1alpha1.Container{Files: files(1)}},
		}
	})
	got := composeTemplate(t, tmpl, Settings{})
	var keys []string
	collect := func(workload map[string]any) {
		for _, f := range workload["files"].([]any) {
			keys = append(keys, f.(map[string]any)["key"].(string))
		}
		for _, s := range workload["sidecars"].([]any) {
			for _, f := range s.(map[string]any)["files"].([]any) {
				keys = append(keys, f.(map[string]any)["key"].(string))
			}
		}
	}
	collect(got)
	for _, c := range got["components"].([]any) {
		collect(c.(map[string]any))
	}
	g.Expect(keys).To(HaveLen(2 + 3*2 + 2 + 2 + 2 + 2*2 + 1))
	g.Expect(keys).To(ConsistOf("f0", "f1", "challenge.f0.f0", "challenge.f0.f1", "challenge.db.f0", "challenge.db.f1",
		"challenge.proxy.f0", "challenge.proxy.f1", "f0.f0", "f0.f1", "f0.f1.f0", "f0.f1.f1", "db.f0", "db.f1",
		"db.proxy.f0", "db.proxy.f1", "db.f0.f0", "db.f0.f1", "proxy.f0"), "every key once")
}

// TestSidecarLowPort: a sidecar's port below 1024 lets the pod's non-root
// processes bind it, as its main container's would: the sysctl is the
// pod's, the lowest of all its containers' ports.
func TestSidecarLowPort(t *testing.T) {
	sysctl := func(port string) []any {
		return []any{map[string]any{"name": policy.UnprivilegedPortSysctl, "value": port}}
	}
	proxy := func(port int32) []ctfv1alpha1.Sidecar {
		return []ctfv1alpha1.Sidecar{{Name: "proxy", Image: "nginx:1", Ports: []ctfv1alpha1.ChallengePort{{Name: "http", Port: port}}}}
	}
	for _, tt := range []struct {
		name      string
		primary   []ctfv1alpha1.Sidecar
		component []ctfv1alpha1.Sidecar
		want      []any // the primary's sysctls
		wantComp  []any // the component's
	}{
		{name: "no sidecar"},
		{name: "a sidecar on a high port", primary: proxy(8081), component: proxy(9000)},
		{name: "the primary's sidecar on 80", primary: proxy(80), want: sysctl("80")},
		{name: "a component's sidecar on 443", component: proxy(443), wantComp: sysctl("443")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := composeTemplate(t, sidecarTemplate(func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Sidecars = tt.primary
				s.Components = []ctfv1alpha1.Component{{Name: "db", Image: "postgres:16", Ports: []ctfv1alpha1.ChallengePort{{Name: "pg", Port: 5432}},
					Sidecars: tt.component}}
			}), Settings{})
			pod := func(w map[string]any) any { return w["security"].(map[string]any)["pod"].(map[string]any)["sysctls"] }
			if tt.want == nil {
				g.Expect(pod(got)).To(BeNil())
			} else {
				g.Expect(pod(got)).To(Equal(tt.want))
			}
			comp := got["components"].([]any)[0].(map[string]any)
			if tt.wantComp == nil {
				g.Expect(pod(comp)).To(BeNil())
			} else {
				g.Expect(pod(comp)).To(Equal(tt.wantComp))
			}
		})
	}
}

// TestSidecarHosts: a component whose only ports are its sidecar's has a
// Service, and so a <NAME>_HOST.
func TestSidecarHosts(t *testing.T) {
	g := NewWithT(t)
	got := hostValues("web", []ctfv1alpha1.Component{
		{Name: "bot", Sidecars: []ctfv1alpha1.Sidecar{{Name: "browser", Ports: []ctfv1alpha1.ChallengePort{{Name: "cdp", Port: 9222}}}}},
		{Name: "worker", Sidecars: []ctfv1alpha1.Sidecar{{Name: "log"}}},
	})
	g.Expect(got).To(Equal([]ctfv1alpha1.EnvVar{{Name: "PRIMARY_HOST", Value: "web"}, {Name: "BOT_HOST", Value: "web--bot"}}))
}

// TestCheckBuiltSidecars: sidecars render, but not yet their secrets or a
// memory-backed /tmp: a template using one is refused, naming the sidecar
// TestSidecarsExpected: the gate expects each workload's sidecars, by
// name, from the same template as its values; none without.
func TestSidecarsExpected(t *testing.T) {
	g := NewWithT(t)
	tmpl := sidecarTemplate(func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Sidecars = []ctfv1alpha1.Sidecar{{Name: "proxy", Image: "nginx:1"}, {Name: "bot", Image: "bot:1"}}
		s.Components = []ctfv1alpha1.Component{{Name: "db", Image: "postgres:16", Sidecars: []ctfv1alpha1.Sidecar{{Name: "exporter", Image: "e:1"}}},
			{Name: "cache", Image: "redis:7"}}
	})
	c := challenge(func(s *ctfv1alpha1.ChallengeSpec) {
		*s = ctfv1alpha1.ChallengeSpec{Participant: "team-1", Template: tmpl.Name}
	})
	in, err := Expectation(c, tmpl, Settings{}, policy.Limits{}, "", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(in.Workloads).To(HaveLen(3))
	g.Expect(in.Workloads[0].Sidecars).To(Equal([]string{"proxy", "bot"}))
	g.Expect(in.Workloads[1].Sidecars).To(Equal([]string{"exporter"}))
	g.Expect(in.Workloads[2].Sidecars).To(BeEmpty())

	in, err = Expectation(c, nil, Settings{}, policy.Limits{}, "", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(in.Workloads[0].Sidecars).To(BeEmpty(), "no template, no sidecar")
}
