package importer_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/importer"
	"github.com/challenge-operator/challenge-operator/internal/operator"
	"github.com/challenge-operator/challenge-operator/internal/security"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

var h *harness.Harness

// sandbox is the runtime class the admin allows privileged templates in.
const sandbox = "gvisor"

// gateway is the Gateway of --gateways the routes of imported templates attach to.
var gateway = ctfv1alpha1.GatewayRef{Namespace: "gateways", Name: "ctf"}

func TestMain(m *testing.M) {
	os.Exit(harness.Run(m, harness.Options{AsServiceAccount: true, GatewayAPI: true, Operator: operator.Options{
		MaxConcurrentReconciles: 4,
		Values: values.Settings{Gateways: []ctfv1alpha1.GatewayRef{gateway}, IngressFromNamespaces: []string{gateway.Namespace},
			Security: security.Bounds{MaxProfile: ctfv1alpha1.ProfilePrivileged, SandboxRuntimeClasses: []string{sandbox}, AllowedCapabilities: []string{"SYS_ADMIN"}}},
	}}, &h, func() {
		rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: sandbox}, Handler: "runsc"}
		if err := h.Client.Create(context.Background(), rc); err != nil {
			panic(err)
		}
		if err := harness.CreateGateway(context.Background(), h.Client, gateway); err != nil {
			panic(err)
		}
	}))
}

// TestImportAndRun: each compose file and kCTF challenge written for the
// tests imports with exactly its report, applies as it is (the API server's
// strict validation), and, once the organiser has done what the report asks
// (a sandbox runtime class, an image), runs: every component Running.
func TestImportAndRun(t *testing.T) {
	for _, tc := range []struct {
		file string
		// check asserts the imported template.
		check  func(g Gomega, tmpl *ctfv1alpha1.ChallengeTemplate)
		report importer.Report
		// follow does what the report asks before instances run.
		follow func(*ctfv1alpha1.ChallengeTemplateSpec)
	}{
		{
			file: "web-redis/docker-compose.yml",
			check: func(g Gomega, tmpl *ctfv1alpha1.ChallengeTemplate) {
				g.Expect(tmpl.Spec.Image).To(Equal("ghcr.io/example/notes:1"))
				g.Expect(tmpl.Spec.Ports).To(Equal([]ctfv1alpha1.ChallengePort{{Name: "tcp-5000", Port: 5000, Protocol: "TCP"}}), "the container's port")
				g.Expect(tmpl.Spec.Env).To(ContainElement(ctfv1alpha1.EnvVar{Name: "REDIS_URL", Value: "redis://redis:6379/0"}), "redis answers to its name")
				g.Expect(tmpl.Spec.BareNames).To(Equal(&ctfv1alpha1.BareNames{Primary: "web"}))
				g.Expect(tmpl.Spec.Components).To(HaveExactElements(And(HaveField("Name", "redis"), HaveField("Image", "docker.io/library/redis:7-alpine"),
					HaveField("Scratch", []ctfv1alpha1.ScratchMount{{Path: "/data"}}))))
				g.Expect(tmpl.Spec.Security).To(BeNil(), "restricted")
			},
			report: importer.Report{Changed: []string{
				"service web: depends_on: components start together; readiness probes decide when the instance is Running",
				"service web: published ports 8080->5000: choose how teams reach them (expose.type Ingress, TLSRoute, NodePort; ClusterIP until then)",
				"services reach each other by their names (bareNames; the primary, web, answers to web)",
				"volume redis-data: an emptyDir of the instance's own, gone with it",
			}},
		},
		{
			file: "web-postgres/docker-compose.yml",
			check: func(g Gomega, tmpl *ctfv1alpha1.ChallengeTemplate) {
				g.Expect(tmpl.Spec.Image).To(Equal("web-postgres-app"), "the name docker compose gives the image it builds")
				g.Expect(tmpl.Spec.Env).To(ContainElement(ctfv1alpha1.EnvVar{Name: "DATABASE_URL", Value: "postgres://ctf:ctf@db:5432/ctf"}))
				g.Expect(*tmpl.Spec.Security.RunAsUser).To(BeEquivalentTo(1000))
				db := tmpl.Spec.Components[0]
				sql, err := os.ReadFile(filepath.Join("testdata", "web-postgres", "init.sql"))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(db.Files).To(Equal([]ctfv1alpha1.File{{Path: "/docker-entrypoint-initdb.d/init.sql", Content: string(sql)}}), "carried byte for byte")
				g.Expect(db.Probes.Readiness.Exec.Command).To(Equal([]ctfv1alpha1.Argument{"/bin/sh", "-c", "pg_isready -U ctf"}))
				g.Expect(*db.Probes.Readiness.PeriodSeconds).To(BeEquivalentTo(5))
				g.Expect(db.Scratch).To(Equal([]ctfv1alpha1.ScratchMount{{Path: "/var/run/postgresql", Memory: true}}))
			},
			report: importer.Report{
				NotCarried: []string{
					"service app: build context ./app: build and push the image, then set its image (web-postgres-app for now)",
					"service db: host path ./data at /var/lib/postgresql/data: use files for configuration and scratch for writable space",
				},
				Changed: []string{
					"service app: published ports 80->8000: choose how teams reach them (expose.type Ingress, TLSRoute, NodePort; ClusterIP until then)",
					"service db: healthcheck: the readiness probe",
					"service db: /docker-entrypoint-initdb.d/init.sql: a file of the template, read-only",
					"services reach each other by their names (bareNames; the primary, app, answers to app)",
				},
			},
			follow: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Image = "ghcr.io/example/web-postgres-app:1"
				s.Components[0].Scratch = append(s.Components[0].Scratch, ctfv1alpha1.ScratchMount{Path: "/var/lib/postgresql/data"})
			},
		},
		{
			file: "xss-bot/docker-compose.yml",
			check: func(g Gomega, tmpl *ctfv1alpha1.ChallengeTemplate) {
				g.Expect(tmpl.Spec.Values).To(BeNil(), "read_only: the default read-only root filesystem")
				g.Expect(tmpl.Spec.Components).To(HaveLen(2))
				bot := tmpl.Spec.Components[0]
				g.Expect(bot.Name).To(Equal("admin-bo"))
				g.Expect(bot.Env).To(Equal([]ctfv1alpha1.EnvVar{{Name: "TARGET", Value: "http://web:3000/"}}), "the primary answers to its name")
				g.Expect(bot.Security.Profile).To(Equal(ctfv1alpha1.ProfilePrivileged))
				g.Expect(bot.Security.Capabilities.Add).To(Equal([]ctfv1alpha1.Capability{"SYS_ADMIN"}))
				g.Expect(bot.Scratch).To(HaveExactElements(And(HaveField("Path", "/dev/shm"), HaveField("Memory", true))))
			},
			report: importer.Report{
				NotCarried: []string{
					"service admin-bot: environment ADMIN_PASSWORD has no value (it would come from the shell docker compose runs in)",
					"service sniffer: network_mode host",
				},
				Changed: []string{
					"service admin-bot: component admin-bo (a DNS label of at most 8 characters)",
					"service admin-bot: runs privileged: set security.runtimeClassName to one of the operator's --sandbox-runtime-classes (--max-pod-security=privileged)",
					"service sniffer: runs privileged: set security.runtimeClassName to one of the operator's --sandbox-runtime-classes (--max-pod-security=privileged)",
					"service web: published ports 3000->3000: choose how teams reach them (expose.type Ingress, TLSRoute, NodePort; ClusterIP until then)",
					"services reach each other by their names (bareNames; the primary, web, answers to web)",
				},
			},
			follow: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				for i := range s.Components {
					s.Components[i].Security.RuntimeClassName = sandbox
				}
			},
		},
		{
			file: "ssrf-proxy/docker-compose.yml",
			check: func(g Gomega, tmpl *ctfv1alpha1.ChallengeTemplate) {
				g.Expect(tmpl.Spec.BareNames).To(Equal(&ctfv1alpha1.BareNames{Primary: "app"}))
				g.Expect(tmpl.Spec.Ports).To(Equal([]ctfv1alpha1.ChallengePort{{Name: "tcp-8080", Port: 8080, Protocol: "TCP"}, {Name: "tcp-1337", Port: 1337, Protocol: "TCP"}}))
				g.Expect(tmpl.Spec.ExposePorts).To(Equal([]ctfv1alpha1.PortExposure{{Port: "tcp-1337", Type: ctfv1alpha1.ExposeTLSRoute}}), "the second published port, on a host of its own")
				g.Expect(tmpl.Spec.Env).To(Equal([]ctfv1alpha1.EnvVar{{Name: "FLAG_SERVICE", Value: "http://flag:8081/"}, {Name: "WORKERS", Value: "worker:9000"}}),
					"names in a participant's payload resolve as they are")
				g.Expect(tmpl.Spec.Sidecars).To(HaveExactElements(ctfv1alpha1.Sidecar{Name: "proxy", Image: "docker.io/library/nginx:1.27",
					Container: ctfv1alpha1.Container{MemoryTmp: true, Scratch: []ctfv1alpha1.ScratchMount{{Path: "/var/cache/nginx", Memory: true}}}}))
				g.Expect(tmpl.Spec.Components[0].SecretFiles).To(Equal([]ctfv1alpha1.SecretFile{{Path: "/run/secrets/flag",
					Secret: ctfv1alpha1.SecretKeyRef{Namespace: harness.OrganiserNamespace, Name: "ssrf-proxy", Key: "flag"}}}))
				g.Expect(tmpl.Spec.Components).To(HaveExactElements(HaveField("Name", "flag"),
					And(HaveField("Name", "worker"), HaveField("Replicas", HaveValue(BeEquivalentTo(3))))))
				g.Expect(*tmpl.Spec.Policy.MaxReplicas).To(BeEquivalentTo(3), "the template allows what its worker asks")
			},
			report: importer.Report{Changed: []string{
				"service app: published ports 80->8080: choose how teams reach them (expose.type Ingress, TLSRoute, NodePort; ClusterIP until then)",
				"service app: published port 31337->1337: on a host of its own as raw TCP inside TLS, by a TLSRoute (exposePorts; change its type if it serves otherwise)",
				"service flag: secret flag: the file /run/secrets/flag, from key flag of Secret ctf-organiser/ssrf-proxy: create it from ./flag.txt, labelled ctf.challenge-operator.io/organiser-secret=true",
				"deploy.replicas: a component's replicas, and policy.maxReplicas 3 for them",
				"service proxy: network_mode service:app: a sidecar in app's pod, on its localhost",
				"services reach each other by their names (bareNames; the primary, app, answers to app)",
			}},
			follow: func(*ctfv1alpha1.ChallengeTemplateSpec) {
				secret := harness.OrganiserSecret("ssrf-proxy", map[string][]byte{"flag": []byte("CTF{never-in-a-template}")})
				_ = h.Client.Create(context.Background(), secret) // there from a run before, when run again
			},
		},
		{
			file: "kctf-pwn/challenge.yaml",
			check: func(g Gomega, tmpl *ctfv1alpha1.ChallengeTemplate) {
				g.Expect(tmpl.Name).To(Equal("pwn-intro"))
				g.Expect(tmpl.Spec.Ports).To(Equal([]ctfv1alpha1.ChallengePort{{Name: "tcp-1337", Port: 1337, Protocol: "TCP"}}))
				g.Expect(tmpl.Spec.Env).To(Equal([]ctfv1alpha1.EnvVar{{Name: "TIMEOUT", Value: "60"}}))
				g.Expect(string(*tmpl.Spec.Resources.Limits.Memory)).To(Equal("512Mi"))
				sec := tmpl.Spec.Security
				g.Expect(sec.Profile).To(Equal(ctfv1alpha1.ProfilePrivileged), "nsjail")
				g.Expect(*sec.RunAsUser).To(BeZero())
				g.Expect(sec.SeccompProfile.Type).To(Equal(ctfv1alpha1.ConfinementUnconfined))
			},
			report: importer.Report{
				NotCarried: []string{"healthcheck: kCTF runs it as an image of its own; write it as a probe (probes.liveness.exec)"},
				Changed: []string{
					"network.public: choose how teams reach it (expose.type TLSRoute for ncat --ssl on a shared port, or NodePort; ClusterIP until then)",
					"the kCTF image (nsjail): runs privileged: set security.runtimeClassName to one of the operator's --sandbox-runtime-classes (--max-pod-security=privileged)",
					`the kCTF image (nsjail): or run the challenge's server without the jail, in restricted: command ["/home/user/chal"] and no security section`,
				},
			},
			follow: func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Security.RuntimeClassName = sandbox },
		},
		{
			file: "kctf-web/challenge.yaml",
			check: func(g Gomega, tmpl *ctfv1alpha1.ChallengeTemplate) {
				g.Expect(tmpl.Spec.Expose).To(Equal(&ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeIngress, TLS: &ctfv1alpha1.IngressTLS{}}))
			},
			report: importer.Report{
				NotCarried: []string{
					"image: kCTF builds it from the challenge's Dockerfile: build and push it, then set spec.image (web-xss-challenge for now)",
					"powDifficultySeconds 30: no proof of work in front of instances; the instancer's per-team limits bound starts",
					"allowConnectTo xss-bot: name it as a component or a shared Service (sharedServices)",
					"spec.horizontalPodAutoscalerSpec",
				},
				Changed: []string{
					"port 1337 (HTTPS): the instance's own host under --ingress-domain, behind an Ingress with TLS",
					"the kCTF image (nsjail): runs privileged: set security.runtimeClassName to one of the operator's --sandbox-runtime-classes (--max-pod-security=privileged)",
					`the kCTF image (nsjail): or run the challenge's server without the jail, in restricted: command ["/home/user/chal"] and no security section`,
				},
			},
			follow: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Image = "ghcr.io/example/web-xss:1"
				s.Security.RuntimeClassName = sandbox
			},
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			ctx := context.Background()
			res, err := importFile(ctx, filepath.Join("testdata", tc.file))
			g.Expect(err).NotTo(HaveOccurred())
			tc.check(g, res.Template)
			g.Expect(res.Report).To(Equal(tc.report), "the report, line by line")

			// Applied as it is, from its YAML, as kubectl apply would.
			y, err := res.YAML()
			g.Expect(err).NotTo(HaveOccurred())
			applied := &ctfv1alpha1.ChallengeTemplate{}
			g.Expect(yaml.UnmarshalStrict(y, applied)).To(Succeed())
			g.Expect(h.Client.Create(ctx, applied, client.FieldValidation("Strict"))).To(Succeed(), string(y))
			t.Cleanup(func() { _ = h.Client.Delete(context.Background(), applied) })

			if tc.follow != nil {
				g.Expect(harness.EditTemplate(ctx, h.Client, applied, tc.follow)).To(Succeed())
			}
			profile := security.ProfileOf(applied.Spec.Security)
			for _, c := range applied.Spec.Components {
				if p := security.ProfileOf(c.Security); p == ctfv1alpha1.ProfilePrivileged {
					profile = p
				}
			}
			ns := h.Namespace(t, map[string]string{"pod-security.kubernetes.io/enforce": string(profile)})
			ch := builders.FromTemplate(ns, applied.Name, "team-a", applied.Name)
			g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
			h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
			var deps appsv1.DeploymentList
			g.Expect(h.Client.List(ctx, &deps, client.InNamespace(ns))).To(Succeed())
			g.Expect(deps.Items).To(HaveLen(1+len(applied.Spec.Components)), "every component runs")
		})
	}
}

// importFile imports a kCTF challenge or a compose file, as the CLI does.
func importFile(ctx context.Context, path string) (importer.Result, error) {
	if filepath.Base(path) == "challenge.yaml" {
		data, err := os.ReadFile(path)
		if err != nil {
			return importer.Result{}, err
		}
		return importer.FromKCTF(data)
	}
	return importer.FromCompose(ctx, "", path, importer.Options{SecretNamespace: harness.OrganiserNamespace})
}
