package values

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/security"
)

func TestProbeFor(t *testing.T) {
	tests := []struct {
		name  string
		probe *ctfv1alpha1.Probe
		want  *corev1.Probe
	}{
		{"none", nil, nil},
		{"HTTP on a named port, no host", &ctfv1alpha1.Probe{HTTP: &ctfv1alpha1.HTTPProbe{Path: "/healthz", Port: "http"}},
			&corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}}},
		{"TCP on a named port", &ctfv1alpha1.Probe{TCP: &ctfv1alpha1.TCPProbe{Port: "pwn"}},
			&corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("pwn")}}}},
		{"exec", &ctfv1alpha1.Probe{Exec: &ctfv1alpha1.ExecProbe{Command: []ctfv1alpha1.Argument{"/bin/check", "-q"}}},
			&corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/check", "-q"}}}}},
		{"timings given", &ctfv1alpha1.Probe{TCP: &ctfv1alpha1.TCPProbe{Port: "pwn"},
			PeriodSeconds: ptr.To[int32](5), InitialDelaySeconds: ptr.To[int32](7), TimeoutSeconds: ptr.To[int32](2), FailureThreshold: ptr.To[int32](9)},
			&corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("pwn")}},
				PeriodSeconds: 5, InitialDelaySeconds: 7, TimeoutSeconds: 2, FailureThreshold: 9}},
		// Zero lets the API server default each timing (10s, 0s, 1s, 3).
		{"timings unset stay zero", &ctfv1alpha1.Probe{HTTP: &ctfv1alpha1.HTTPProbe{Path: "/", Port: "http"}},
			&corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(probeFor(tt.probe)).To(Equal(tt.want))
		})
	}
}

func TestProbesFor(t *testing.T) {
	g := NewWithT(t)
	g.Expect(probesFor(nil)).To(Equal(probeValues{}))
	tcp := &ctfv1alpha1.Probe{TCP: &ctfv1alpha1.TCPProbe{Port: "a"}}
	http := &ctfv1alpha1.Probe{HTTP: &ctfv1alpha1.HTTPProbe{Path: "/", Port: "b"}}
	exec := &ctfv1alpha1.Probe{Exec: &ctfv1alpha1.ExecProbe{Command: []ctfv1alpha1.Argument{"c"}}}
	got := probesFor(&ctfv1alpha1.Probes{Readiness: tcp, Startup: http, Liveness: exec})
	g.Expect(got).To(Equal(probeValues{Readiness: probeFor(tcp), Startup: probeFor(http), Liveness: probeFor(exec)}), "each in its place")
	got = probesFor(&ctfv1alpha1.Probes{Liveness: exec})
	g.Expect(got.Readiness).To(BeNil())
	g.Expect(got.Startup).To(BeNil())
	g.Expect(got.Liveness).NotTo(BeNil())
}

func TestComponentProbes(t *testing.T) {
	tcpPort := ctfv1alpha1.ChallengePort{Name: "redis", Port: 6379}
	udpPort := ctfv1alpha1.ChallengePort{Name: "dns", Port: 53, Protocol: ctfv1alpha1.ProtocolUDP}
	defaultProbe := probeFor(&ctfv1alpha1.Probe{TCP: &ctfv1alpha1.TCPProbe{Port: "redis"}, PeriodSeconds: ptr.To(DefaultReadinessPeriod)})
	own := &ctfv1alpha1.Probe{HTTP: &ctfv1alpha1.HTTPProbe{Path: "/", Port: "redis"}}
	tests := []struct {
		name  string
		comp  ctfv1alpha1.Component
		ready *corev1.Probe
	}{
		{"no port: none", ctfv1alpha1.Component{}, nil},
		{"UDP only: none", ctfv1alpha1.Component{Ports: []ctfv1alpha1.ChallengePort{udpPort}}, nil},
		{"the first TCP port", ctfv1alpha1.Component{Ports: []ctfv1alpha1.ChallengePort{udpPort, tcpPort}}, defaultProbe},
		{"its own probe wins", ctfv1alpha1.Component{Ports: []ctfv1alpha1.ChallengePort{tcpPort}, Container: ctfv1alpha1.Container{Probes: &ctfv1alpha1.Probes{Readiness: own}}}, probeFor(own)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(componentProbes(&tt.comp).Readiness).To(Equal(tt.ready))
		})
	}
}

func TestFilesFor(t *testing.T) {
	files := []ctfv1alpha1.File{{Path: "/etc/a.conf", Content: "a"}, {Path: "/opt/run.sh", Content: "b", Mode: ptr.To[int32](0o555)}}
	tests := []struct {
		name   string
		prefix string
		files  []ctfv1alpha1.File
		want   []fileValues
	}{
		{"none: an empty list, never null", "", nil, []fileValues{}},
		{"the primary's: keyed by index, 0444 by default", "", files, []fileValues{
			{Key: "f0", Path: "/etc/a.conf", Content: "a", Mode: DefaultFileMode},
			{Key: "f1", Path: "/opt/run.sh", Content: "b", Mode: 0o555},
		}},
		{"a component's: keyed after its name", "bot.", files[:1], []fileValues{{Key: "bot.f0", Path: "/etc/a.conf", Content: "a", Mode: 0o444}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(filesFor(tt.prefix, tt.files)).To(Equal(tt.want))
		})
	}
}

func TestScratchFor(t *testing.T) {
	tests := []struct {
		name   string
		mounts []ctfv1alpha1.ScratchMount
		want   []scratchValues
	}{
		{"none: an empty list, never null", nil, []scratchValues{}},
		{"a size by default, on disk", []ctfv1alpha1.ScratchMount{{Path: "/data"}},
			[]scratchValues{{Path: "/data", SizeLimit: DefaultScratchSize}}},
		{"its own size, in memory", []ctfv1alpha1.ScratchMount{{Path: "/run/x", SizeLimit: quantity("1Gi"), Memory: true}},
			[]scratchValues{{Path: "/run/x", SizeLimit: "1Gi", Medium: "Memory"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(scratchFor(tt.mounts)).To(Equal(tt.want))
		})
	}
}

func TestLowPortSysctl(t *testing.T) {
	port := func(n float64) any { return map[string]any{"name": "p", "port": n} }
	sysctl := func(v string) []any {
		return []any{map[string]any{"name": policy.UnprivilegedPortSysctl, "value": v}}
	}
	tests := []struct {
		name   string
		ports  []any
		noPod  bool
		sysctl any // nil for none written
	}{
		{"no ports", nil, false, nil},
		{"1024 and above need nothing", []any{port(1024), port(8080)}, false, nil},
		{"the lowest below 1024", []any{port(8080), port(443), port(80)}, false, sysctl("80")},
		{"1023", []any{port(1023)}, false, sysctl("1023")},
		{"port 1 still", []any{port(1)}, false, sysctl("1")},
		{"no pod security values to write into", []any{port(80)}, true, nil},
		{"a port that is not a number is skipped", []any{map[string]any{"port": "80"}, port(2000)}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			pod := map[string]any{}
			vals := map[string]any{"ports": tt.ports, "security": map[string]any{}}
			if !tt.noPod {
				vals["security"].(map[string]any)["pod"] = pod
			}
			lowPortSysctl(vals)
			if tt.sysctl == nil {
				g.Expect(pod).NotTo(HaveKey("sysctls"))
				g.Expect(vals["security"]).NotTo(HaveKey("sysctls"))
				return
			}
			g.Expect(pod).To(HaveKeyWithValue("sysctls", tt.sysctl))
		})
	}
	NewWithT(t).Expect(func() { lowPortSysctl(map[string]any{}) }).NotTo(Panic(), "values without ports or security")
}

func TestWithExtendedResources(t *testing.T) {
	g := NewWithT(t)
	floor := func() map[string]any { return resourceFloor(nil) }
	g.Expect(withExtendedResources(floor(), nil)).To(Equal(floor()), "none: the floor unchanged")
	got := withExtendedResources(floor(), corev1.ResourceList{"devices.kubevirt.io/kvm": resource.MustParse("1")})
	for _, k := range []string{"limits", "requests"} {
		g.Expect(got[k]).To(HaveKeyWithValue("devices.kubevirt.io/kvm", "1"), "in %s, equal to the limit", k)
		g.Expect(got[k]).To(HaveKeyWithValue("cpu", floor()[k].(map[string]any)["cpu"]), "the floor kept in %s", k)
	}
}

func TestContainerValuesFor(t *testing.T) {
	g := NewWithT(t)
	probes := probeValues{Liveness: &corev1.Probe{}}
	got := containerValuesFor(&ctfv1alpha1.Container{}, "", probes)
	g.Expect(got).To(Equal(containerValues{Command: []ctfv1alpha1.Argument{}, Args: []ctfv1alpha1.Argument{},
		Scratch: []scratchValues{}, MountTmp: true, Probes: probes, Files: []fileValues{}, SecretFiles: []secretFileValues{}}),
		"the image's own command line, /tmp mounted, lists never null")
	got = containerValuesFor(&ctfv1alpha1.Container{Command: []ctfv1alpha1.Argument{"/srv/run"}, Args: []ctfv1alpha1.Argument{"-v"}, WorkingDir: "/srv",
		KeepImageTmp: true, Files: []ctfv1alpha1.File{{Path: "/srv/a", Content: "a"}}}, "bot.", probeValues{})
	g.Expect(got.Command).To(Equal([]ctfv1alpha1.Argument{"/srv/run"}))
	g.Expect(got.Args).To(Equal([]ctfv1alpha1.Argument{"-v"}))
	g.Expect(got.WorkingDir).To(Equal("/srv"))
	g.Expect(got.MountTmp).To(BeFalse(), "the image keeps its /tmp")
	g.Expect(got.Files).To(ConsistOf(HaveField("Key", "bot.f0")), "files keyed after the prefix")
	g.Expect(containerValuesFor(&ctfv1alpha1.Container{MemoryTmp: true}, "", probeValues{}).MemoryTmp).To(BeTrue(), "/tmp in memory")
	g.Expect(containerValuesFor(&ctfv1alpha1.Container{}, "", probeValues{}).MemoryTmp).To(BeFalse(), "/tmp on disk by default")
}

// TestSecretFilesFor: each secret file is keyed by its index after the
// container's prefix, a key no secretEnv takes, with its path and its mode
// (0444 unless given).
func TestSecretFilesFor(t *testing.T) {
	g := NewWithT(t)
	ref := ctfv1alpha1.SecretKeyRef{Namespace: "ctf-organiser", Name: "tls", Key: "key"}
	files := []ctfv1alpha1.SecretFile{{Path: "/etc/tls/key.pem", Secret: ref, Mode: ptr.To[int32](0o400)}, {Path: "/etc/app.conf", Secret: ref}}
	g.Expect(secretFilesFor("", files)).To(Equal([]secretFileValues{{Key: "file.0", Path: "/etc/tls/key.pem", Mode: 0o400},
		{Key: "file.1", Path: "/etc/app.conf", Mode: DefaultFileMode}}))
	g.Expect(secretFilesFor("db.", files[1:])).To(Equal([]secretFileValues{{Key: "db.file.0", Path: "/etc/app.conf", Mode: DefaultFileMode}}))
	g.Expect(secretFilesFor("", nil)).To(Equal([]secretFileValues{}), "never null, for the chart's schema")
	g.Expect(secretFileKey("env.", 0)).NotTo(Equal(primaryEnvKey("file")), "a component named env: its file is not the primary's variable FILE")
	g.Expect(componentEnvKey("file", "A")).NotTo(Equal(secretFileKey("", 0)), "a component named file: its variable is not the primary's file")
}

func TestSecurityValuesFor(t *testing.T) {
	g := NewWithT(t)
	got := securityValuesFor(security.Context{Profile: ctfv1alpha1.ProfileRestricted})
	g.Expect(got.RuntimeClassName).To(BeEmpty())
	g.Expect(got.NodeSelector).To(Equal(map[string]string{}), "empty, never null, for the chart's schema")
	g.Expect(got.Tolerations).To(Equal([]corev1.Toleration{}))
	tol := []corev1.Toleration{{Key: "kvm", Operator: corev1.TolerationOpExists}}
	got = securityValuesFor(security.Context{Profile: ctfv1alpha1.ProfileBaseline, RuntimeClassName: ptr.To("gvisor"),
		NodeSelector: map[string]string{"kvm": "true"}, Tolerations: tol})
	g.Expect(got).To(Equal(securityValues{Profile: ctfv1alpha1.ProfileBaseline, RuntimeClassName: "gvisor",
		NodeSelector: map[string]string{"kvm": "true"}, Tolerations: tol}))
}
