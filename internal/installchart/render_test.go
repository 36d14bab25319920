package installchart

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint/support"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/challenge-operator/challenge-operator/internal/instancercmd"
	"github.com/challenge-operator/challenge-operator/internal/manifests"
	"github.com/challenge-operator/challenge-operator/internal/operatorcmd"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// The release the tests render: kustomize's namespace, so that every name
// matches the kustomize installs'.
const (
	releaseName      = "challenge-operator"
	releaseNamespace = kustomizeNamespace
)

var root = controlplane.RepoRoot()

// kubeVersion is the control plane's the tests run against.
var kubeVersion = &chartutil.KubeVersion{Version: "v1.35.4", Major: "1", Minor: "35"}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(filepath.Join(root, Dir))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// render is `helm template` of the chart with vals, as the Helm SDK does it.
func render(t *testing.T, vals map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return renderIn(t, releaseNamespace, vals)
}

// renderIn renders the chart for a release in namespace.
func renderIn(t *testing.T, namespace string, vals map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	inst := action.NewInstall(&action.Configuration{})
	inst.ClientOnly, inst.DryRun, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = releaseName, namespace
	inst.KubeVersion = kubeVersion
	rel, err := inst.Run(loadChart(t), vals)
	if err != nil {
		return nil, err
	}
	return manifests.Decode(strings.NewReader(rel.Manifest))
}

func mustRender(t *testing.T, vals map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := render(t, vals)
	if err != nil {
		t.Fatalf("rendering %v: %v", vals, err)
	}
	return objs
}

// modeValues are the chart's values for a kustomize install mode.
func modeValues(m Mode) map[string]any {
	return map[string]any{"installMode": m.InstallMode, "instancer": map[string]any{"enable": m.Instancer}}
}

// everything switches every optional part on.
func everything(installMode string) map[string]any {
	return map[string]any{
		"installMode":   installMode,
		"webhook":       map[string]any{"enable": true},
		"instancer":     map[string]any{"enable": true},
		"prometheus":    map[string]any{"serviceMonitor": map[string]any{"enable": true}, "rules": map[string]any{"enable": true}},
		"grafana":       map[string]any{"dashboard": map[string]any{"enable": true}},
		"networkPolicy": map[string]any{"enable": true},
	}
}

func TestGeneratedPartsAreFresh(t *testing.T) {
	g := NewWithT(t)
	want, err := Generate(root)
	g.Expect(err).NotTo(HaveOccurred())
	have := map[string][]byte{}
	for _, p := range Generated {
		base := filepath.Join(root, Dir, p)
		g.Expect(filepath.Walk(base, func(path string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(filepath.Join(root, Dir), path)
			have[rel], err = os.ReadFile(path)
			return err
		})).To(Succeed())
	}
	g.Expect(slices.Sorted(maps.Keys(have))).To(Equal(slices.Sorted(maps.Keys(want))), "the generated files of %s: run make manifests", Dir)
	for p, data := range want {
		g.Expect(string(have[p])).To(Equal(string(data)), "%s/%s is stale: run make manifests", Dir, p)
	}
}

func TestChartLintsClean(t *testing.T) {
	combos := map[string]map[string]any{"defaults": nil}
	for _, m := range Modes {
		combos[m.Kustomization] = modeValues(m)
		combos["everything, "+m.InstallMode] = everything(m.InstallMode)
	}
	combos["webhook with a provided certificate"] = map[string]any{"webhook": map[string]any{"enable": true,
		"certificate": map[string]any{"source": "secret", "secretName": "webhook-tls", "caBundle": "Y2E="}}}
	combos["no metrics, no CRDs"] = map[string]any{"metrics": map[string]any{"enable": false}, "crd": map[string]any{"enable": false, "keep": true}}
	for name, vals := range combos {
		t.Run(name, func(t *testing.T) {
			lint := action.NewLint()
			lint.Strict, lint.Namespace, lint.KubeVersion = true, releaseNamespace, kubeVersion
			res := lint.Run([]string{filepath.Join(root, Dir)}, vals)
			for _, m := range res.Messages {
				// INFO is advice (an icon); WARNING and ERROR fail, as `helm lint --strict` does.
				if m.Severity > support.InfoSev {
					t.Errorf("helm lint: %s", m)
				}
			}
			for _, err := range res.Errors {
				t.Errorf("helm lint: %v", err)
			}
		})
	}
}

// rbacOf returns the RBAC objects and ServiceAccounts of objs by kind/name,
// without the labels the chart adds.
func rbacOf(objs []*unstructured.Unstructured) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, o := range objs {
		if !slices.Contains(rbacKinds, o.GetKind()) && o.GetKind() != "ServiceAccount" {
			continue
		}
		c := o.DeepCopy()
		c.SetLabels(nil)
		c.SetAnnotations(nil)
		out[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = c.Object
	}
	return out
}

func TestChartRendersTheRBACOfEachKustomizeInstall(t *testing.T) {
	for _, m := range Modes {
		t.Run(m.Kustomization, func(t *testing.T) {
			g := NewWithT(t)
			kustomized, err := manifests.Kustomize(filepath.Join(root, "config", m.Kustomization))
			g.Expect(err).NotTo(HaveOccurred())
			want := rbacOf(kustomized)
			g.Expect(want).NotTo(BeEmpty())
			// Optional parts add no rights.
			for _, vals := range []map[string]any{modeValues(m), everything(m.InstallMode)} {
				if !m.Instancer {
					vals["instancer"] = map[string]any{"enable": false}
				}
				have := rbacOf(mustRender(t, vals))
				g.Expect(slices.Sorted(maps.Keys(have))).To(Equal(slices.Sorted(maps.Keys(want))), "the chart's RBAC objects with %v", vals)
				for k, w := range want {
					g.Expect(have[k]).To(Equal(w), "%s", k)
				}
			}
		})
	}
}

// deployment returns the rendered Deployment called name.
func deployment(t *testing.T, objs []*unstructured.Unstructured, name string) appsv1.Deployment {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "Deployment" && o.GetName() == name {
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatalf("no Deployment %s", name)
	return appsv1.Deployment{}
}

func env(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func TestManagerMatchesItsInstallMode(t *testing.T) {
	for _, m := range Modes {
		t.Run(m.Kustomization, func(t *testing.T) {
			g := NewWithT(t)
			kustomized, err := manifests.Kustomize(filepath.Join(root, "config", m.Kustomization))
			g.Expect(err).NotTo(HaveOccurred())
			want := deployment(t, kustomized, "challenge-operator-controller-manager").Spec.Template.Spec.Containers[0]
			have := deployment(t, mustRender(t, modeValues(m)), "challenge-operator-controller-manager").Spec.Template.Spec.Containers[0]
			g.Expect(slices.Contains(have.Args, "--namespace-per-instance")).To(Equal(slices.Contains(want.Args, "--namespace-per-instance")))
			watch := env(have, "WATCH_NAMESPACE")
			g.Expect(watch).NotTo(BeNil())
			if m.InstallMode == "namespaced" {
				g.Expect(watch.Value).To(Equal(releaseNamespace), "a namespaced operator watches its own namespace")
			} else {
				g.Expect(watch.Value).To(BeEmpty(), "a cluster-wide operator watches every namespace")
			}
			g.Expect(have.SecurityContext).To(Equal(want.SecurityContext))
			g.Expect(have.Resources).To(Equal(want.Resources))
		})
	}
}

// parseArgs parses a rendered container's arguments with the binary's own
// flags, as the process would at start.
func parseArgs(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(&bytes.Buffer{})
	return fs.Parse(args)
}

func TestFlagValuesReachTheBinariesAsTheyParseThem(t *testing.T) {
	g := NewWithT(t)
	objs := mustRender(t, map[string]any{
		"manager": map[string]any{"flags": map[string]any{
			"max-pod-security":        "baseline",
			"sandbox-runtime-classes": []any{"gvisor", "kata"},
			"allowed-capabilities":    "SYS_PTRACE,NET_ADMIN",
			"max-instances":           500,
			"kube-api-qps":            150.5,
			"allow-load-balancer":     true,
			"ingress-domain":          "ctf.example.org",
			"zap-log-level":           "debug",
			"team-budget-cpu":         "1500m",
			"team-budget-memory":      "4Gi",
		}},
		"instancer": map[string]any{"enable": true, "flags": map[string]any{
			"allowed-origins":   []any{"https://ctf.example.org"},
			"starts-per-minute": 5,
			"cooldown":          "1m30s",
		}},
	})
	manager := deployment(t, objs, "challenge-operator-controller-manager").Spec.Template.Spec.Containers[0]
	opts, fs := operatorcmd.NewFlagSet()
	g.Expect(parseArgs(fs, manager.Args)).To(Succeed(), "the operator parses %q", manager.Args)
	g.Expect(fs.NArg()).To(BeZero())
	g.Expect(string(opts.Operator.Values.Security.MaxProfile)).To(Equal("baseline"))
	g.Expect(opts.Operator.Values.Security.SandboxRuntimeClasses).To(Equal([]string{"gvisor", "kata"}))
	g.Expect(opts.Operator.Values.Security.AllowedCapabilities).To(Equal([]string{"SYS_PTRACE", "NET_ADMIN"}))
	g.Expect(opts.Operator.MaxInstances).To(BeEquivalentTo(500))
	g.Expect(opts.KubeAPIQPS).To(Equal(150.5))
	g.Expect(opts.Operator.Limits.AllowLoadBalancer).To(BeTrue())
	g.Expect(opts.Operator.Values.IngressDomain).To(Equal("ctf.example.org"))
	g.Expect(opts.Operator.TeamBudgetCPU.String()).To(Equal("1500m"))
	g.Expect(opts.Operator.TeamBudgetMemory.String()).To(Equal("4Gi"))
	g.Expect(opts.LeaderElect).To(BeTrue())
	g.Expect(opts.Operator.WatchesFile).To(Equal("/watches.yaml"))

	instancer := deployment(t, objs, "challenge-operator-instancer").Spec.Template.Spec.Containers[0]
	g.Expect(instancer.Args[0]).To(Equal("instancer"))
	ifs := instancercmd.Flags()
	g.Expect(parseArgs(ifs, instancer.Args[1:])).To(Succeed(), "the instancer parses %q", instancer.Args)
	g.Expect(ifs.Lookup("starts-per-minute").Value.String()).To(Equal("5"))
	g.Expect(ifs.Lookup("cooldown").Value.String()).To(Equal("1m30s"))
	g.Expect(instancer.Args).To(ContainElement("--allowed-origins=https://ctf.example.org"))
}

func TestDefaultArgumentsParse(t *testing.T) {
	g := NewWithT(t)
	objs := mustRender(t, everything("namespacePerInstance"))
	manager := deployment(t, objs, "challenge-operator-controller-manager").Spec.Template.Spec.Containers[0]
	opts, fs := operatorcmd.NewFlagSet()
	g.Expect(parseArgs(fs, manager.Args)).To(Succeed())
	g.Expect(opts.Operator.Webhook).To(BeTrue())
	g.Expect(opts.Operator.Values.NamespacePerInstance).To(BeTrue())
	g.Expect(opts.Serving.Metrics().SecureServing).To(BeTrue())
	instancer := deployment(t, objs, "challenge-operator-instancer").Spec.Template.Spec.Containers[0]
	g.Expect(parseArgs(instancercmd.Flags(), instancer.Args[1:])).To(Succeed())
}

func TestValuesAreRefusedWithAReason(t *testing.T) {
	cases := []struct {
		name string
		vals map[string]any
		want string
	}{
		{"unknown key", map[string]any{"replicas": 2}, "replicas"},
		{"misspelt switch", map[string]any{"webhook": map[string]any{"enabled": true}}, "enabled"},
		{"unknown install mode", map[string]any{"installMode": "everywhere"}, "installMode"},
		{"unknown flag", map[string]any{"manager": map[string]any{"flags": map[string]any{"max-pod-securty": "baseline"}}}, "max-pod-securty"},
		{"a flag the chart sets", map[string]any{"manager": map[string]any{"flags": map[string]any{"namespace-per-instance": true}}}, "namespace-per-instance"},
		{"a flag moving the instancer's namespace", map[string]any{"instancer": map[string]any{"flags": map[string]any{"namespace": "kube-system"}}}, "namespace"},
		{"a profile that is none", map[string]any{"manager": map[string]any{"flags": map[string]any{"max-pod-security": "root"}}}, "max-pod-security"},
		{"a word with a comma in a list", map[string]any{"manager": map[string]any{"flags": map[string]any{"allowed-capabilities": []any{"SYS_ADMIN,NET_ADMIN"}}}}, "allowed-capabilities"},
		{"a duration that is none", map[string]any{"instancer": map[string]any{"flags": map[string]any{"cooldown": "soon"}}}, "cooldown"},
		{"a bool flag given a word", map[string]any{"manager": map[string]any{"flags": map[string]any{"allow-load-balancer": "yes"}}}, "allow-load-balancer"},
		{"a provided certificate without its CA", map[string]any{"webhook": map[string]any{"enable": true, "certificate": map[string]any{"source": "secret", "secretName": "tls"}}}, "caBundle"},
		{"a monitor without metrics", map[string]any{"metrics": map[string]any{"enable": false}, "prometheus": map[string]any{"serviceMonitor": map[string]any{"enable": true}}}, "needs metrics.enable"},
		{"a pool outside a namespaced install's namespace", map[string]any{"installMode": "namespaced", "manager": map[string]any{"flags": map[string]any{"pool-namespace": "pools"}}}, "pool-namespace"},
		{"an image name with a newline", map[string]any{"image": map[string]any{"repository": "ghcr.io/x\nkind: Secret"}}, "repository"},
		{"a name too long for its Services", map[string]any{"nameOverride": strings.Repeat("a", 29)}, "nameOverride"},
		{"a name starting with a digit", map[string]any{"nameOverride": "1ctf"}, "nameOverride"},
		{"metrics open to no one named", map[string]any{"networkPolicy": map[string]any{"enable": true, "metricsFrom": []any{}}}, "metricsFrom"},
		{"an empty peer", map[string]any{"networkPolicy": map[string]any{"enable": true, "metricsFrom": []any{map[string]any{}}}}, "metricsFrom"},
		{"an issuer without its name", map[string]any{"webhook": map[string]any{"enable": true, "certificate": map[string]any{"issuerRef": map[string]any{"kind": "ClusterIssuer"}}}}, "issuerRef"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := render(t, c.vals)
			if err == nil {
				t.Fatalf("values %v rendered", c.vals)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("the error does not name %q: %v", c.want, err)
			}
		})
	}
}

// byKind returns the rendered objects of kind.
func byKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

func TestWebhookIsTheGeneratedOne(t *testing.T) {
	g := NewWithT(t)
	generated, err := manifests.Kustomize(filepath.Join(root, "config", "webhook"))
	g.Expect(err).NotTo(HaveOccurred())
	// A mutating webhook has a validating one's fields and a reinvocation
	// policy: both are read as mutating ones.
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		var want admissionregistrationv1.MutatingWebhookConfiguration
		g.Expect(byKind(generated, kind)).To(HaveLen(1), kind)
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(byKind(generated, kind)[0].Object, &want)).To(Succeed())
		for _, mode := range []string{"cluster", "namespaced"} {
			rendered := byKind(mustRender(t, map[string]any{"installMode": mode, "webhook": map[string]any{"enable": true}}), kind)
			g.Expect(rendered).To(HaveLen(1), kind)
			var have admissionregistrationv1.MutatingWebhookConfiguration
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(rendered[0].Object, &have)).To(Succeed())
			expectGeneratedWebhooks(g, mode, want, have)
		}
	}
}

// expectGeneratedWebhooks checks the chart's webhooks (have) against
// config/webhook's (want: controller-gen's, patched) in installMode mode.
func expectGeneratedWebhooks(g Gomega, mode string, want, have admissionregistrationv1.MutatingWebhookConfiguration) {
	g.Expect(have.Webhooks).To(HaveLen(len(want.Webhooks)))
	for i, w := range want.Webhooks {
		h := have.Webhooks[i]
		g.Expect(h.ClientConfig.Service.Name).To(Equal("challenge-operator-webhook-service"))
		g.Expect(h.ClientConfig.Service.Namespace).To(Equal(releaseNamespace))
		g.Expect(h.ClientConfig.Service.Path).To(Equal(w.ClientConfig.Service.Path))
		if mode == "namespaced" {
			g.Expect(h.NamespaceSelector.MatchLabels).To(Equal(map[string]string{"kubernetes.io/metadata.name": releaseNamespace}),
				"a namespaced operator judges its own namespace's Challenges only")
		} else {
			g.Expect(h.NamespaceSelector).To(BeNil())
		}
		h.ClientConfig, w.ClientConfig, h.NamespaceSelector = admissionregistrationv1.WebhookClientConfig{}, admissionregistrationv1.WebhookClientConfig{}, nil
		g.Expect(h).To(Equal(w), "webhook %s as controller-gen wrote it", w.Name)
	}
	g.Expect(have.Annotations).To(HaveKeyWithValue("cert-manager.io/inject-ca-from", releaseNamespace+"/challenge-operator-serving-cert"))
}

func TestMonitorsAndPoliciesNameWhatExists(t *testing.T) {
	g := NewWithT(t)
	objs := mustRender(t, everything("cluster"))
	services := byKind(objs, "Service")
	jobs := map[string]bool{}
	for _, m := range byKind(objs, "ServiceMonitor") {
		selector, _, _ := unstructured.NestedStringMap(m.Object, "spec", "selector", "matchLabels")
		jobLabel, _, _ := unstructured.NestedString(m.Object, "spec", "jobLabel")
		var selected []*unstructured.Unstructured
		for _, s := range services {
			if labelsMatch(s.GetLabels(), selector) {
				selected = append(selected, s)
			}
		}
		g.Expect(selected).To(HaveLen(1), "ServiceMonitor %s selects one Service", m.GetName())
		ports, _, _ := unstructured.NestedSlice(selected[0].Object, "spec", "ports")
		g.Expect(ports).To(ContainElement(HaveKeyWithValue("name", "https")), "%s has the port %s scrapes", selected[0].GetName(), m.GetName())
		jobs[selected[0].GetLabels()[jobLabel]] = true
	}
	// The jobs the alerts select.
	g.Expect(jobs).To(Equal(map[string]bool{"challenge-operator": true, "challenge-operator-instancer": true}))

	for _, p := range byKind(objs, "NetworkPolicy") {
		selector, _, _ := unstructured.NestedStringMap(p.Object, "spec", "podSelector", "matchLabels")
		var pods []corev1.PodTemplateSpec
		for _, d := range byKind(objs, "Deployment") {
			dep := deployment(t, objs, d.GetName())
			if labelsMatch(dep.Spec.Template.Labels, selector) {
				pods = append(pods, dep.Spec.Template)
			}
		}
		g.Expect(pods).To(HaveLen(1), "NetworkPolicy %s selects one Deployment's pods", p.GetName())
		var named []string
		for _, port := range pods[0].Spec.Containers[0].Ports {
			named = append(named, port.Name)
		}
		rules, _, _ := unstructured.NestedSlice(p.Object, "spec", "ingress")
		for _, r := range rules {
			for _, port := range r.(map[string]any)["ports"].([]any) {
				g.Expect(named).To(ContainElement(port.(map[string]any)["port"]), "NetworkPolicy %s admits a port its pods have", p.GetName())
			}
		}
	}
}

func labelsMatch(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

// The chart's version and appVersion are the operator's (Makefile VERSION,
// which also versions the bundle and the image): bump them together.
func TestChartVersionIsTheOperators(t *testing.T) {
	g := NewWithT(t)
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	g.Expect(err).NotTo(HaveOccurred())
	m := regexp.MustCompile(`(?m)^VERSION \?= (\S+)$`).FindSubmatch(makefile)
	g.Expect(m).NotTo(BeNil(), "the Makefile sets VERSION")
	c := loadChart(t)
	g.Expect(c.Metadata.Version).To(Equal(string(m[1])), "Chart.yaml version")
	g.Expect(c.Metadata.AppVersion).To(Equal(string(m[1])), "Chart.yaml appVersion")
	g.Expect(c.Values["image"]).To(HaveKeyWithValue("repository", "ghcr.io/challenge-operator/challenge-operator"))
}

// The longest name the schema admits, in a namespace YAML would read as a
// number, renders objects the API server accepts: every name a DNS
// subdomain, every Service's a DNS-1035 label, every namespace a string.
func TestLongestNameAndANumericNamespaceRenderValidObjects(t *testing.T) {
	g := NewWithT(t)
	vals := everything("namespacePerInstance")
	vals["nameOverride"] = "ctf-" + strings.Repeat("x", 24)
	vals["webhook"] = map[string]any{"enable": true, "certificate": map[string]any{"source": "secret", "secretName": "2027", "caBundle": "Q0E="}}
	objs, err := renderIn(t, "2026", vals)
	g.Expect(err).NotTo(HaveOccurred())
	for _, o := range objs {
		id := o.GetKind() + " " + o.GetName()
		g.Expect(validation.IsDNS1123Subdomain(o.GetName())).To(BeEmpty(), id)
		if o.GetKind() == "Service" {
			g.Expect(validation.IsDNS1035Label(o.GetName())).To(BeEmpty(), id)
		}
		if ns, found, err := unstructured.NestedFieldNoCopy(o.Object, "metadata", "namespace"); found {
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ns).To(Equal("2026"), "%s: its namespace is a string", id)
		}
	}
	manager := deployment(t, objs, "ctf-"+strings.Repeat("x", 24)+"-controller-manager").Spec.Template.Spec
	g.Expect(env(manager.Containers[0], "WATCH_NAMESPACE").Value).To(BeEmpty())
	g.Expect(manager.Volumes).To(ContainElement(HaveField("Secret.SecretName", "2027")))
}

// Numbers in a values file reach Helm as float64: a large whole one still
// reaches the flag as written, not as 1e+06.
func TestFlagNumbersFromAValuesFileKeepTheirDigits(t *testing.T) {
	g := NewWithT(t)
	vals, err := chartutil.ReadValues([]byte("manager:\n  flags:\n    max-instances: 1000000\n    kube-api-qps: 150.5\n"))
	g.Expect(err).NotTo(HaveOccurred())
	manager := deployment(t, mustRender(t, vals), "challenge-operator-controller-manager").Spec.Template.Spec.Containers[0]
	g.Expect(manager.Args).To(ContainElements("--max-instances=1000000", "--kube-api-qps=150.5"))
	opts, fs := operatorcmd.NewFlagSet()
	g.Expect(parseArgs(fs, manager.Args)).To(Succeed())
	g.Expect(opts.Operator.MaxInstances).To(BeEquivalentTo(1000000))
}

// A dashboard whose sidecar label is cleared (null, to find it another way)
// renders without it rather than failing on the empty map.
func TestDashboardWithoutSidecarLabel(t *testing.T) {
	g := NewWithT(t)
	objs := mustRender(t, map[string]any{"grafana": map[string]any{"dashboard": map[string]any{"enable": true, "labels": nil}}})
	dashboards := byKind(objs, "ConfigMap")
	g.Expect(dashboards).To(HaveLen(1))
	g.Expect(dashboards[0].GetLabels()).NotTo(HaveKey("grafana_dashboard"))
	g.Expect(dashboards[0].GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/part-of", "challenge-operator"))
}

// The schema admits what the binaries parse, on samples of every kind of
// flag value: what it admits starts (the arguments parse); what the binary
// would refuse at start, crash-looping the pod, or read as nonsense (a
// negative count) fails `helm install` naming the flag.
func TestSchemaAdmitsWhatTheBinariesParse(t *testing.T) {
	cases := []struct {
		component, flag string
		value           any
		parses          bool
	}{
		{"manager", "zap-encoder", "console", true},
		{"manager", "zap-encoder", "xml", false},
		{"manager", "zap-log-level", "debug", true},
		{"manager", "zap-log-level", 2, true},
		{"manager", "zap-log-level", "verbose", false},
		{"manager", "zap-log-level", 0, false},
		{"manager", "zap-time-encoding", "rfc3339nano", true},
		{"manager", "zap-time-encoding", "nano", false},
		{"manager", "zap-stacktrace-level", "panic", true},
		{"manager", "zap-stacktrace-level", "warn", false},
		{"manager", "max-cpu", "500m", true},
		{"manager", "max-cpu", 2, true},
		{"manager", "max-cpu", 1.5, true},
		{"manager", "max-cpu", "two", false},
		{"manager", "max-memory", "1Gi", true},
		{"manager", "max-memory", "1GB", false},
		{"manager", "team-budget-cpu", "1500m", true},
		{"manager", "team-budget-cpu", 4, true},
		{"manager", "team-budget-cpu", "-1", false},
		{"manager", "team-budget-memory", "8Gi", true},
		{"manager", "team-budget-memory", "lots", false},
		{"manager", "max-instances", 500, true},
		{"manager", "max-instances", 3000000000, false},
		{"manager", "max-instances", -1, false},
		{"manager", "kube-api-burst", -5, false},
		{"manager", "internal-cidrs", "10.0.0.0/8, fd00::/8", true},
		{"manager", "internal-cidrs", []any{"10.0.0.0/8"}, true},
		{"manager", "internal-cidrs", "10.0.0.1", false},
		{"manager", "allow-egress-cidrs", []any{"10.96.0.10/32"}, true},
		{"manager", "allow-egress-cidrs", []any{"0.0.0.0/0"}, false},
		{"manager", "allow-egress-cidrs", "::/0", false},
		{"manager", "gateways", []any{"infra/ctf-gateway"}, true},
		{"manager", "gateways", "infra/a,infra/b", true},
		{"manager", "gateways", []any{"ctf-gateway"}, false},
		{"manager", "allowed-registries", "ghcr.io/ctf,registry.example", true},
		{"instancer", "cooldown", "1m30s", true},
		{"instancer", "cooldown", ".5s", true},
		{"instancer", "cooldown", 0, true},
		{"instancer", "cooldown", "soon", false},
		{"instancer", "cooldown", 30, false},
		{"instancer", "starts-per-minute", 5, true},
		{"instancer", "starts-per-minute", -1, false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s %s=%v", c.component, c.flag, c.value), func(t *testing.T) {
			g := NewWithT(t)
			vals := map[string]any{c.component: map[string]any{"flags": map[string]any{c.flag: c.value}}}
			if c.component == "instancer" {
				vals["instancer"].(map[string]any)["enable"] = true
			}
			objs, err := render(t, vals)
			if !c.parses {
				g.Expect(err).To(MatchError(ContainSubstring(c.flag)), "refused at install, naming the flag")
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			if c.component == "manager" {
				_, fs := operatorcmd.NewFlagSet()
				args := deployment(t, objs, "challenge-operator-controller-manager").Spec.Template.Spec.Containers[0].Args
				g.Expect(parseArgs(fs, args)).To(Succeed(), "the operator parses %q", args)
				return
			}
			args := deployment(t, objs, "challenge-operator-instancer").Spec.Template.Spec.Containers[0].Args
			g.Expect(parseArgs(instancercmd.Flags(), args[1:])).To(Succeed(), "the instancer parses %q", args)
		})
	}
}
