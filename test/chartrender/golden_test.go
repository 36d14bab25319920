package chartrender_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/security"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/chartrender"
)

// update rewrites the golden files from what the chart renders now: only for
// a change meant to alter what instances run, said so in its commit.
var update = flag.Bool("update", false, "rewrite testdata/golden from the current chart")

// goldenSettings open the operator's flags wide enough for every case to
// compose: a domain, a Gateway, sandboxes and capabilities.
var goldenSettings = values.Settings{
	IngressDomain:         "ctf.example",
	Gateways:              []ctfv1alpha1.GatewayRef{{Namespace: "gateways", Name: "public"}},
	IngressFromNamespaces: []string{"ingress-nginx"},
	FlagSecretNamespaces:  []string{"ctf-organiser"},
	Security: security.Bounds{
		MaxProfile: ctfv1alpha1.ProfilePrivileged, SandboxRuntimeClasses: []string{"gvisor"},
		AllowedCapabilities: []string{"SYS_ADMIN"}, NodeSelectors: []string{"ctf.example/kvm=true"},
		Tolerations: []string{"ctf.example/kvm"}, ExtendedResources: []string{"devices.kubevirt.io/kvm"},
	},
}

type goldenCase struct {
	name     string
	settings func(*values.Settings)
	ch       func(*ctfv1alpha1.Challenge)
	tmpl     *ctfv1alpha1.ChallengeTemplateSpec
	// inputs stands for what the translator reads from the cluster: the
	// organiser's Secrets, shared Services, a Gateway, a claimant. The flags
	// are always CTF{golden} and CTF{golden-<name>}.
	inputs values.Inputs
}

func port(name string, n int32) ctfv1alpha1.ChallengePort {
	return ctfv1alpha1.ChallengePort{Name: name, Port: n}
}

func quantity(s string) *ctfv1alpha1.Quantity { q := ctfv1alpha1.Quantity(s); return &q }

var organiserKey = ctfv1alpha1.SecretKeyRef{Namespace: "ctf-organiser", Name: "flag-key", Key: "key"}

// gatewayOn8443 stands for goldenSettings' Gateway as the translator reads
// it: HTTP and HTTPS listeners on port 8443, for every host.
var gatewayOn8443 = map[ctfv1alpha1.GatewayRef]*gatewayv1.Gateway{{Namespace: "gateways", Name: "public"}: {Spec: gatewayv1.GatewaySpec{
	Listeners: []gatewayv1.Listener{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 8443}, {Name: "https", Protocol: gatewayv1.HTTPSProtocolType, Port: 8443}},
}}}

// goldenCases cover every branch of the chart's workload, Service,
// NetworkPolicy, exposure, files and namespace templates.
var goldenCases = []goldenCase{
	{name: "no-template", ch: func(c *ctfv1alpha1.Challenge) {
		c.Spec.Image = "registry.example/ctf/plain:1"
		c.Spec.Template = ""
		c.Spec.Ports = []ctfv1alpha1.ChallengePort{port("nc", 31337)}
	}},
	{name: "no-template-default-port", ch: func(c *ctfv1alpha1.Challenge) {
		c.Spec.Image = "registry.example/ctf/plain:1"
		c.Spec.Template = ""
		c.Spec.Ports = nil
	}},
	{name: "minimal", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{Image: "registry.example/ctf/nc:1", Ports: []ctfv1alpha1.ChallengePort{port("nc", 1337)}}},
	{name: "everything-primary", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/web:2", Ports: []ctfv1alpha1.ChallengePort{port("http", 8080), {Name: "dns", Port: 5353, Protocol: ctfv1alpha1.ProtocolUDP}},
		Env:       []ctfv1alpha1.EnvVar{{Name: "MODE", Value: "ctf"}, {Name: "EMPTY"}},
		Resources: &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{CPU: quantity("1"), Memory: quantity("512Mi")}},
		SecretEnv: []ctfv1alpha1.SecretEnvVar{{Name: "API_KEY", Secret: ctfv1alpha1.SecretKeyRef{Namespace: "ctf-organiser", Name: "api", Key: "key"}}},
		Container: ctfv1alpha1.Container{
			Command: []ctfv1alpha1.Argument{"/bin/server"}, Args: []ctfv1alpha1.Argument{"--port", "8080"}, WorkingDir: "/srv",
			Probes: &ctfv1alpha1.Probes{
				Readiness: &ctfv1alpha1.Probe{HTTP: &ctfv1alpha1.HTTPProbe{Path: "/health", Port: "http"}, PeriodSeconds: ptr.To[int32](3)},
				Startup:   &ctfv1alpha1.Probe{TCP: &ctfv1alpha1.TCPProbe{Port: "http"}, FailureThreshold: ptr.To[int32](30)},
				Liveness:  &ctfv1alpha1.Probe{Exec: &ctfv1alpha1.ExecProbe{Command: []ctfv1alpha1.Argument{"/bin/true"}}, TimeoutSeconds: ptr.To[int32](2)},
			},
			Files:   []ctfv1alpha1.File{{Path: "/etc/app/app.conf", Content: "listen 8080\n"}, {Path: "/srv/run.sh", Content: "#!/bin/sh\n", Mode: ptr.To[int32](0o555)}},
			Scratch: []ctfv1alpha1.ScratchMount{{Path: "/var/cache/app"}, {Path: "/run", SizeLimit: quantity("8Mi"), Memory: true}},
		},
		Flag:   &ctfv1alpha1.FlagSpec{Dynamic: &ctfv1alpha1.DynamicFlag{SecretKey: organiserKey}, FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountFile, Path: "/flag.txt", FileMode: ptr.To[int32](0o400)}},
		Egress: []ctfv1alpha1.EgressRule{{Name: "api", CIDR: "203.0.113.0/24", Ports: []ctfv1alpha1.ChallengePort{port("https", 443)}}},
		Policy: &ctfv1alpha1.InstancePolicy{InternetEgress: true, MaxCPU: quantity("2"), MaxMemory: quantity("1Gi")},
	}, inputs: values.Inputs{Secrets: map[ctfv1alpha1.SecretKeyRef]string{{Namespace: "ctf-organiser", Name: "api", Key: "key"}: "k"}}},
	{name: "flag-env-image-tmp", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/env:1", Ports: []ctfv1alpha1.ChallengePort{port("nc", 9999)},
		Container: ctfv1alpha1.Container{KeepImageTmp: true},
		Flag:      &ctfv1alpha1.FlagSpec{Static: &organiserKey, FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountEnv, EnvName: "FLAG", Path: "/flag/flag.txt"}},
	}},
	{name: "low-port-baseline", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/nginx:1", Ports: []ctfv1alpha1.ChallengePort{port("http", 80)},
		Security: &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileBaseline, RunAsUser: ptr.To[int64](0),
			Capabilities: &ctfv1alpha1.Capabilities{Add: []ctfv1alpha1.Capability{"NET_BIND_SERVICE", "CHOWN"}}},
	}},
	{name: "privileged-sandbox", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/kernel:1", Ports: []ctfv1alpha1.ChallengePort{port("nc", 1337)},
		Security: &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfilePrivileged, Privileged: ptr.To(true), RuntimeClassName: "gvisor",
			NodeSelector: map[string]ctfv1alpha1.LabelValue{"ctf.example/kvm": "true"}, Tolerations: []ctfv1alpha1.Toleration{{Key: "ctf.example/kvm", Effect: "NoSchedule"}},
			ExtendedResources: map[string]int32{"devices.kubevirt.io/kvm": 1}},
	}},
	{name: "ingress-tls", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/web:1", Ports: []ctfv1alpha1.ChallengePort{port("http", 8080)},
		Expose: &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeIngress, IngressClassName: "nginx", TLS: &ctfv1alpha1.IngressTLS{SecretName: "wildcard"}},
	}},
	{name: "httproute-port", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/web:1", Ports: []ctfv1alpha1.ChallengePort{port("http", 8080)},
		Expose: &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeHTTPRoute},
	}, inputs: values.Inputs{Gateways: gatewayOn8443}},
	{name: "tlsroute", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/pwn:1", Ports: []ctfv1alpha1.ChallengePort{port("nc", 1337)},
		Expose: &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeTLSRoute},
	}},
	{name: "nodeport", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/pwn:1", Ports: []ctfv1alpha1.ChallengePort{port("nc", 1337)},
		Expose: &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeNodePort},
	}},
	{name: "loadbalancer", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/pwn:1", Ports: []ctfv1alpha1.ChallengePort{port("nc", 1337)},
		Expose: &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeLoadBalancer}, Policy: &ctfv1alpha1.InstancePolicy{LoadBalancer: true},
	}},
	{name: "namespace-per-instance", settings: func(s *values.Settings) { s.NamespacePerInstance = true }, tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/nc:1", Ports: []ctfv1alpha1.ChallengePort{port("nc", 1337)},
		Components: []ctfv1alpha1.Component{{Name: "db", Image: "registry.example/ctf/db:1", Ports: []ctfv1alpha1.ChallengePort{port("sql", 5432)}}},
	}},
	{name: "components", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/app:1", Ports: []ctfv1alpha1.ChallengePort{port("http", 8080)},
		Expose: &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeIngress},
		Env:    []ctfv1alpha1.EnvVar{{Name: "DB", Value: "$(DB_HOST):5432"}},
		Flag:   &ctfv1alpha1.FlagSpec{Static: &organiserKey, FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountFile, Path: "/flag"}},
		Components: []ctfv1alpha1.Component{
			{Name: "db", Image: "registry.example/ctf/db:1", Ports: []ctfv1alpha1.ChallengePort{port("sql", 5432)},
				Env: []ctfv1alpha1.EnvVar{{Name: "POSTGRES_DB", Value: "ctf"}}, WritableRootFilesystem: true,
				Container: ctfv1alpha1.Container{Scratch: []ctfv1alpha1.ScratchMount{{Path: "/var/lib/postgresql/data", SizeLimit: quantity("256Mi")}}}},
			{Name: "bot", Image: "registry.example/ctf/bot:1", InternetEgress: true,
				Resources: &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{Memory: quantity("1Gi")}},
				Container: ctfv1alpha1.Container{Command: []ctfv1alpha1.Argument{"node", "bot.js"}, KeepImageTmp: true,
					Files: []ctfv1alpha1.File{{Path: "/app/bot.js", Content: "visit()\n"}}}},
			{Name: "admin", Image: "registry.example/ctf/admin:1", Ports: []ctfv1alpha1.ChallengePort{port("web", 80)},
				Expose:    &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeHTTPRoute, TLS: &ctfv1alpha1.IngressTLS{}},
				Container: ctfv1alpha1.Container{Probes: &ctfv1alpha1.Probes{Liveness: &ctfv1alpha1.Probe{HTTP: &ctfv1alpha1.HTTPProbe{Path: "/", Port: "web"}}}},
				Security:  &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileBaseline, RunAsUser: ptr.To[int64](0)}},
			{Name: "cache", Image: "registry.example/ctf/redis:7", Ports: []ctfv1alpha1.ChallengePort{{Name: "resp", Port: 6379}, {Name: "udp", Port: 6380, Protocol: ctfv1alpha1.ProtocolUDP}},
				Expose: &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeTLSRoute}},
		},
	}},
	{name: "pooled-claimed-shared", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/nc:1", Ports: []ctfv1alpha1.ChallengePort{port("nc", 1337)},
		Components: []ctfv1alpha1.Component{{Name: "bot", Image: "registry.example/ctf/bot:1"}},
	}, inputs: values.Inputs{Claimant: "team-claimant", Shared: []values.SharedService{{
		Namespace: "ctf-organiser", Selector: map[string]string{"app": "admin-bot"},
		Ports: []values.SharedPort{{Port: intstr.FromInt32(3000), Protocol: corev1.ProtocolTCP}, {Port: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}},
	}}}},
	{name: "addresses", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/app:1", Ports: []ctfv1alpha1.ChallengePort{port("http", 8080)},
		Expose: &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeHTTPRoute, TLS: &ctfv1alpha1.IngressTLS{}},
		Env: []ctfv1alpha1.EnvVar{{Name: "BASE_URL", Value: "$(CHALLENGE_URL)"}, {Name: "PLAIN", Value: "x"}, {Name: "API", Value: "$(BASE_URL)api"},
			{Name: "SHELL", Value: "$(SHELL_PUBLIC_HOST):$(SHELL_PUBLIC_PORT)"}, {Name: "ESCAPED", Value: "$$(CHALLENGE_URL)"}},
		Components: []ctfv1alpha1.Component{{Name: "shell", Image: "registry.example/ctf/shell:1", Ports: []ctfv1alpha1.ChallengePort{port("ssh", 2222)},
			Expose: &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeTLSRoute}, Env: []ctfv1alpha1.EnvVar{{Name: "SELF", Value: "$(SHELL_PUBLIC_HOST)"}, {Name: "APP", Value: "$(CHALLENGE_URL)"}}}},
	}, inputs: values.Inputs{Gateways: gatewayOn8443}}, // HTTPS on 8443
	{name: "expose-ports", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/app:1", Ports: []ctfv1alpha1.ChallengePort{port("http", 8080), port("nc", 1337), port("admin", 9000)},
		Expose: &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeHTTPRoute},
		ExposePorts: []ctfv1alpha1.PortExposure{{Port: "nc", Type: ctfv1alpha1.ExposeTLSRoute},
			{Port: "admin", Type: ctfv1alpha1.ExposeIngress, TLS: &ctfv1alpha1.IngressTLS{}}},
		Components: []ctfv1alpha1.Component{{Name: "shell", Image: "registry.example/ctf/shell:1",
			Ports:       []ctfv1alpha1.ChallengePort{port("metrics", 9100), port("ssh", 2222)},
			ExposePorts: []ctfv1alpha1.PortExposure{{Port: "ssh", Type: ctfv1alpha1.ExposeTLSRoute}}}},
	}},
	{name: "sidecars", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/app:1", Ports: []ctfv1alpha1.ChallengePort{port("app", 8080)},
		Expose:    &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeIngress},
		Container: ctfv1alpha1.Container{Files: []ctfv1alpha1.File{{Path: "/etc/app.conf", Content: "bind 127.0.0.1:8080\n"}}},
		Sidecars: []ctfv1alpha1.Sidecar{{Name: "proxy", Image: "registry.example/ctf/nginx:1", Ports: []ctfv1alpha1.ChallengePort{port("http", 80)},
			Env:       []ctfv1alpha1.EnvVar{{Name: "UPSTREAM", Value: "127.0.0.1:8080"}},
			Resources: &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{Memory: quantity("64Mi")}},
			Container: ctfv1alpha1.Container{
				Args:    []ctfv1alpha1.Argument{"nginx", "-g", "daemon off;"},
				Probes:  &ctfv1alpha1.Probes{Readiness: &ctfv1alpha1.Probe{HTTP: &ctfv1alpha1.HTTPProbe{Path: "/", Port: "http"}}},
				Files:   []ctfv1alpha1.File{{Path: "/etc/nginx/conf.d/default.conf", Content: "server { listen 80; }\n"}},
				Scratch: []ctfv1alpha1.ScratchMount{{Path: "/var/cache/nginx", SizeLimit: quantity("32Mi")}},
			}}},
		Components: []ctfv1alpha1.Component{
			{Name: "db", Image: "registry.example/ctf/db:1", Ports: []ctfv1alpha1.ChallengePort{port("sql", 5432)},
				Security: &ctfv1alpha1.Security{RunAsUser: ptr.To[int64](999), RunAsGroup: ptr.To[int64](999)},
				Sidecars: []ctfv1alpha1.Sidecar{{Name: "exporter", Image: "registry.example/ctf/exporter:1", Ports: []ctfv1alpha1.ChallengePort{port("metrics", 9187)},
					Container: ctfv1alpha1.Container{KeepImageTmp: true, WorkingDir: "/srv", Files: []ctfv1alpha1.File{{Path: "/etc/queries.yaml", Content: "pg: {}\n", Mode: ptr.To[int32](0o400)}}}}}},
			{Name: "bot", Image: "registry.example/ctf/bot:1",
				Sidecars: []ctfv1alpha1.Sidecar{{Name: "browser", Image: "registry.example/ctf/chrome:1", Ports: []ctfv1alpha1.ChallengePort{port("cdp", 9222)}}}},
		},
	}},
	{name: "bare-names", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/web:1", Ports: []ctfv1alpha1.ChallengePort{port("http", 8080)},
		BareNames: &ctfv1alpha1.BareNames{Primary: "web"},
		Components: []ctfv1alpha1.Component{
			{Name: "db", Image: "registry.example/ctf/db:1", Ports: []ctfv1alpha1.ChallengePort{port("sql", 5432)}},
			{Name: "flag", Image: "registry.example/ctf/flag:1", Ports: []ctfv1alpha1.ChallengePort{port("http", 8081)}},
		},
	}},
	{name: "bare-names-own-namespace", settings: func(s *values.Settings) {
		s.NamespacePerInstance = true
		s.ClusterDomain = "k8s.example"
	}, tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/web:1", Ports: []ctfv1alpha1.ChallengePort{port("http", 8080)},
		BareNames:  &ctfv1alpha1.BareNames{Primary: "app"},
		Components: []ctfv1alpha1.Component{{Name: "bot", Image: "registry.example/ctf/bot:1"}},
	}},
	{name: "component-replicas", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/web:1", Ports: []ctfv1alpha1.ChallengePort{port("http", 8080)},
		Policy:     &ctfv1alpha1.InstancePolicy{MaxReplicas: ptr.To[int32](3)},
		Components: []ctfv1alpha1.Component{{Name: "worker", Image: "registry.example/ctf/worker:1", Replicas: ptr.To[int32](3)}},
	}},
	{name: "component-flag-secretenv", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/app:1", Ports: []ctfv1alpha1.ChallengePort{port("http", 8080)},
		Flag: &ctfv1alpha1.FlagSpec{Static: &organiserKey, FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountFile, Path: "/flag"}},
		Components: []ctfv1alpha1.Component{
			{Name: "flagsvc", Image: "registry.example/ctf/flagsvc:1", Ports: []ctfv1alpha1.ChallengePort{port("flag", 8081)},
				Flag: &ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountEnv, EnvName: "FLAG"}},
			{Name: "db", Image: "registry.example/ctf/db:1", Ports: []ctfv1alpha1.ChallengePort{port("sql", 5432)},
				Flag:      &ctfv1alpha1.FlagDelivery{Path: "/root/flag.txt", FileMode: ptr.To[int32](0o400)},
				SecretEnv: []ctfv1alpha1.SecretEnvVar{{Name: "POSTGRES_PASSWORD", Secret: ctfv1alpha1.SecretKeyRef{Namespace: "ctf-organiser", Name: "db", Key: "password"}}}},
		},
	}, inputs: values.Inputs{Secrets: map[ctfv1alpha1.SecretKeyRef]string{{Namespace: "ctf-organiser", Name: "db", Key: "password"}: "pw"}}},
	{name: "env-from-secretenv", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/app:1", Ports: []ctfv1alpha1.ChallengePort{port("http", 8080)},
		SecretEnv: []ctfv1alpha1.SecretEnvVar{{Name: "DB_PASSWORD", Secret: ctfv1alpha1.SecretKeyRef{Namespace: "ctf-organiser", Name: "db", Key: "password"}}},
		Env:       []ctfv1alpha1.EnvVar{{Name: "DATABASE_URL", Value: "postgres://app:$(DB_PASSWORD)@db/app"}, {Name: "MODE", Value: "ctf"}},
	}, inputs: values.Inputs{Secrets: map[ctfv1alpha1.SecretKeyRef]string{{Namespace: "ctf-organiser", Name: "db", Key: "password"}: "pw"}}},
	{name: "secret-files", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/app:1", Ports: []ctfv1alpha1.ChallengePort{port("https", 8443)},
		Container: ctfv1alpha1.Container{SecretFiles: []ctfv1alpha1.SecretFile{
			{Path: "/etc/tls/key.pem", Secret: ctfv1alpha1.SecretKeyRef{Namespace: "ctf-organiser", Name: "tls", Key: "key"}, Mode: ptr.To[int32](0o400)},
			{Path: "/etc/app/config.ini", Secret: ctfv1alpha1.SecretKeyRef{Namespace: "ctf-organiser", Name: "app", Key: "config"}}}},
		Components: []ctfv1alpha1.Component{{Name: "bot", Image: "registry.example/ctf/bot:1",
			Container: ctfv1alpha1.Container{SecretFiles: []ctfv1alpha1.SecretFile{
				{Path: "/home/bot/netrc", Secret: ctfv1alpha1.SecretKeyRef{Namespace: "ctf-organiser", Name: "bot", Key: "netrc"}}}}}},
	}, inputs: values.Inputs{Secrets: map[ctfv1alpha1.SecretKeyRef]string{
		{Namespace: "ctf-organiser", Name: "tls", Key: "key"}:    "-----BEGIN KEY-----\nk\n-----END KEY-----\n",
		{Namespace: "ctf-organiser", Name: "app", Key: "config"}: "[app]\n", {Namespace: "ctf-organiser", Name: "bot", Key: "netrc"}: "machine x\n"}}},
	{name: "memory-tmp", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/nc:1", Ports: []ctfv1alpha1.ChallengePort{port("nc", 1337)},
		Container:  ctfv1alpha1.Container{MemoryTmp: true},
		Components: []ctfv1alpha1.Component{{Name: "bot", Image: "registry.example/ctf/bot:1", Container: ctfv1alpha1.Container{MemoryTmp: true}}},
	}},
	{name: "named-flags", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/app:1", Ports: []ctfv1alpha1.ChallengePort{port("http", 8080)},
		Flags: []ctfv1alpha1.NamedFlag{
			{Name: "web", PerTeam: &ctfv1alpha1.PerTeamFlag{Format: "CTF{%s}"}, FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountFile, Path: "/flag/web.txt"}},
			{Name: "env", Static: &organiserKey, FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountEnv, EnvName: "FLAG"}},
			{Name: "root", PerTeam: &ctfv1alpha1.PerTeamFlag{}, Component: "db", FlagDelivery: ctfv1alpha1.FlagDelivery{Path: "/root/flag.txt", FileMode: ptr.To[int32](0o400)}},
			{Name: "bot", PerTeam: &ctfv1alpha1.PerTeamFlag{}, Component: "bot", Sidecar: "browser", FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountEnv, EnvName: "COOKIE"}},
		},
		Components: []ctfv1alpha1.Component{
			{Name: "db", Image: "registry.example/ctf/db:1", Ports: []ctfv1alpha1.ChallengePort{port("sql", 5432)}},
			{Name: "bot", Image: "registry.example/ctf/bot:1", Sidecars: []ctfv1alpha1.Sidecar{{Name: "browser", Image: "registry.example/ctf/chrome:1"}}},
		},
	}},
	{name: "shared", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/admin-bot:1", Ports: []ctfv1alpha1.ChallengePort{port("http", 8080)}, Sharing: ctfv1alpha1.SharingShared,
	}},
	{name: "pooled-per-team-flags", tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/app:1", Ports: []ctfv1alpha1.ChallengePort{port("http", 8080)}, Pool: &ctfv1alpha1.PoolSpec{Max: 2},
		Flags: []ctfv1alpha1.NamedFlag{
			{Name: "web", PerTeam: &ctfv1alpha1.PerTeamFlag{Format: "CTF{%s}"}, FlagDelivery: ctfv1alpha1.FlagDelivery{Path: "/flag/web.txt"}},
			{Name: "bot", PerTeam: &ctfv1alpha1.PerTeamFlag{}, Component: "bot", Sidecar: "browser", FlagDelivery: ctfv1alpha1.FlagDelivery{Path: "/run/cookie/flag"}},
			{Name: "static", Static: &organiserKey, FlagDelivery: ctfv1alpha1.FlagDelivery{Path: "/etc/static-flag"}},
		},
		Components: []ctfv1alpha1.Component{
			{Name: "bot", Image: "registry.example/ctf/bot:1", Sidecars: []ctfv1alpha1.Sidecar{{Name: "browser", Image: "registry.example/ctf/chrome:1"}}},
		},
	}},
	{name: "values-overrides", ch: func(c *ctfv1alpha1.Challenge) {
		c.Spec.Values = &ctfv1alpha1.Values{Replicas: ptr.To[int32](2), ImagePullPolicy: "Always", ImagePullSecrets: []ctfv1alpha1.ObjectName{"pull"},
			Env: []ctfv1alpha1.EnvVar{{Name: "FROM_VALUES", Value: "1"}}}
	}, tmpl: &ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/nc:1", Ports: []ctfv1alpha1.ChallengePort{port("nc", 1337)},
		OverridableValues: []ctfv1alpha1.ValuePath{"replicas", "imagePullPolicy", "imagePullSecrets", "env"},
		Policy:            &ctfv1alpha1.InstancePolicy{MaxReplicas: ptr.To[int32](2)},
	}},
}

// TestChartRendersAsGolden pins what the chart renders for each case: a
// change to the chart or its values that would change what a Running
// instance runs (and restart it on the operator's upgrade) fails here.
func TestChartRendersAsGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			got := renderCase(t, tc)
			path := filepath.Join("testdata", "golden", tc.name+".yaml")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the chart renders %s differently from %s:\n%s", tc.name, path, firstDifference(want, got))
			}
		})
	}
}

func renderCase(t *testing.T, tc goldenCase) []byte {
	t.Helper()
	settings := goldenSettings
	if tc.settings != nil {
		tc.settings(&settings)
	}
	ch := &ctfv1alpha1.Challenge{
		ObjectMeta: metav1.ObjectMeta{Name: "golden", Namespace: "ctf-teams"},
		Spec:       ctfv1alpha1.ChallengeSpec{Participant: "team-1", Template: "golden-template"},
	}
	var tmpl *ctfv1alpha1.ChallengeTemplate
	if tc.tmpl != nil {
		tmpl = &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "golden-template"}, Spec: *tc.tmpl}
	}
	if tc.ch != nil {
		tc.ch(ch)
	}
	in := tc.inputs
	in.Flag = "CTF{golden}"
	if tmpl != nil && len(tmpl.Spec.Flags) > 0 {
		in.Flags = map[string]string{}
		for _, f := range tmpl.Spec.Flags {
			in.Flags[f.Name] = "CTF{golden-" + f.Name + "}"
		}
	}
	vals, err := values.ComposeWith(ch, tmpl, settings, in)
	if err != nil {
		t.Fatalf("composing %s: %v", tc.name, err)
	}
	got, err := chartrender.Render(ch, vals)
	if err != nil {
		t.Fatalf("rendering %s: %v", tc.name, err)
	}
	return got
}

// firstDifference shows the first line where got departs from want.
func firstDifference(want, got []byte) string {
	w, g := bytes.Split(want, []byte("\n")), bytes.Split(got, []byte("\n"))
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl []byte
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if !bytes.Equal(wl, gl) {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + string(wl) + "\n  got:  " + string(gl)
		}
	}
	return "(same lines)"
}
