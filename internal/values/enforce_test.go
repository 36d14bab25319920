package values

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/policy"
)

func TestEnforcedValuesAreSetOnEveryRender(t *testing.T) {
	g := NewWithT(t)
	got, err := Compose(challenge(nil), nil, Settings{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(HaveKeyWithValue("flag", HaveKeyWithValue("enabled", false)), "no flag unless a template gives one")
	g.Expect(got).To(HaveKeyWithValue("namespacePerInstance", HaveKeyWithValue("enabled", false)))
	g.Expect(got).To(HaveKeyWithValue("networkPolicy", And(
		HaveKeyWithValue("internalCIDRs", ConsistOf(toAny(defaultCIDRs())...)),
		HaveKeyWithValue("egress", BeEmpty()),
		HaveKeyWithValue("allowInternetEgress", false),
		HaveKeyWithValue("dnsNamespace", "kube-system"),
	)), "network boundaries are set even without operator flags or a template")
}

func defaultCIDRs() []string {
	out := []string{}
	for _, p := range policy.DefaultInternalCIDRs {
		out = append(out, p.String())
	}
	return out
}

// TestInternalCIDRsAddToTheDefaults: the operator's ranges are added to the
// private, link-local, loopback, unique-local and metadata ranges of both
// families, never put in their place (a cluster told only its pod range
// once left 169.254.169.254 and every IPv6 range open).
func TestInternalCIDRsAddToTheDefaults(t *testing.T) {
	g := NewWithT(t)
	got := Settings{InternalCIDRs: []string{"10.244.0.0/16", "10.0.0.0/8", "2001:db8::/32", "10.1.2.3/8"}}.EffectiveInternalCIDRs()
	g.Expect(got).To(Equal(append(defaultCIDRs(), "10.244.0.0/16", "2001:db8::/32")), "added once each, as networks")
	g.Expect(got).To(ContainElements("169.254.0.0/16", "168.63.129.16/32", "127.0.0.0/8", "fc00::/7", "fe80::/10", "::1/128", "fd00:ec2::254/128"))
	g.Expect(Settings{}.EffectiveInternalCIDRs()).To(Equal(defaultCIDRs()))
}

// TestNamespaceBoundsAreEnforced: the quota and limit range of a namespace
// of its own are set on every render from what the gate compares them with.
func TestNamespaceBoundsAreEnforced(t *testing.T) {
	g := NewWithT(t)
	got, err := Compose(challenge(nil), nil, Settings{NamespacePerInstance: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(HaveKeyWithValue("namespacePerInstance", And(
		HaveKeyWithValue("quota", HaveKeyWithValue("limits.cpu", "2")),
		HaveKeyWithValue("limitRange", HaveKeyWithValue("default", HaveKeyWithValue("memory", DefaultMemoryLimit))),
	)))
	quota, limits, err := NamespaceBounds(0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(quota).To(HaveLen(len(NamespaceQuota)))
	g.Expect(limits).To(HaveLen(1))
	g.Expect(limits[0].Default.Cpu().String()).To(Equal(DefaultCPULimit))
}

func TestResourceFloor(t *testing.T) {
	tests := []struct {
		name      string
		resources *ctfv1alpha1.Resources
		want      map[string]any
	}{
		{"nothing set: the defaults", nil, map[string]any{
			"requests": map[string]any{"cpu": "50m", "memory": "64Mi", "ephemeral-storage": "64Mi"},
			"limits":   map[string]any{"cpu": "500m", "memory": "256Mi", "ephemeral-storage": "256Mi"},
		}},
		{"only requests: limits still set", &ctfv1alpha1.Resources{Requests: &ctfv1alpha1.ResourceAmounts{CPU: quantity("100m")}}, map[string]any{
			"requests": map[string]any{"cpu": "100m", "memory": "64Mi", "ephemeral-storage": "64Mi"},
			"limits":   map[string]any{"cpu": "500m", "memory": "256Mi", "ephemeral-storage": "256Mi"},
		}},
		{"requests above limits are lowered to them", &ctfv1alpha1.Resources{
			Requests: &ctfv1alpha1.ResourceAmounts{CPU: quantity("2"), Memory: quantity("1Gi")},
			Limits:   &ctfv1alpha1.ResourceAmounts{CPU: quantity("10m"), Memory: quantity("32Mi")},
		}, map[string]any{
			"requests": map[string]any{"cpu": "10m", "memory": "32Mi", "ephemeral-storage": "64Mi"},
			"limits":   map[string]any{"cpu": "10m", "memory": "32Mi", "ephemeral-storage": "256Mi"},
		}},
		{"ephemeral storage below its request: the request lowered", &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{EphemeralStorage: quantity("32Mi")}}, map[string]any{
			"requests": map[string]any{"cpu": "50m", "memory": "64Mi", "ephemeral-storage": "32Mi"},
			"limits":   map[string]any{"cpu": "500m", "memory": "256Mi", "ephemeral-storage": "32Mi"},
		}},
		{"ephemeral storage passes through", &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{EphemeralStorage: quantity("1Gi")}}, map[string]any{
			"requests": map[string]any{"cpu": "50m", "memory": "64Mi", "ephemeral-storage": "64Mi"},
			"limits":   map[string]any{"cpu": "500m", "memory": "256Mi", "ephemeral-storage": "1Gi"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Compose(challenge(func(s *ctfv1alpha1.ChallengeSpec) { s.Resources = tt.resources }), nil, Settings{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got["resources"]).To(Equal(tt.want))
		})
	}
}

func TestReservedMetadataKeysAreRefused(t *testing.T) {
	for _, v := range []string{
		`{"podLabels": {"k8s-app": "kube-dns"}}`,
		`{"podLabels": {"ctf.challenge-operator.io/participant": "victim"}}`,
		`{"podLabels": {"app.kubernetes.io/instance": "other"}}`,
		`{"podAnnotations": {"container.apparmor.security.beta.kubernetes.io/challenge": "unconfined"}}`,
		`{"podAnnotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}}`,
		`{"expose": {"annotations": {"helm.sh/resource-policy": "keep"}}}`,
		`{"expose": {"annotations": {"helm.sh/hook": "pre-install"}}}`,
		`{"expose": {"annotations": {"meta.helm.sh/release-name": "other"}}}`,
	} {
		t.Run(v, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Compose(challenge(func(s *ctfv1alpha1.ChallengeSpec) { s.Values = raw(v) }), nil, Settings{})
			g.Expect(lifecycle.IsReason(err, lifecycle.ReasonPolicyViolation)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring("metadata-key"))
		})
	}
	g := NewWithT(t)
	allowed := Settings{Keys: policy.Keys{Allowed: []string{"service.beta.kubernetes.io/"}}}
	_, err := Compose(challenge(func(s *ctfv1alpha1.ChallengeSpec) {
		s.Values = raw(`{"expose": {"annotations": {"service.beta.kubernetes.io/aws-load-balancer-internal": "true"}}}`)
	}), nil, allowed)
	g.Expect(err).NotTo(HaveOccurred(), "an organiser may allow a reserved prefix on purpose")
	_, err = Compose(challenge(func(s *ctfv1alpha1.ChallengeSpec) {
		s.Values = raw(`{"expose": {"annotations": {"helm.sh/resource-policy": "keep"}}}`)
	}), nil, Settings{Keys: policy.Keys{Allowed: []string{"helm.sh/"}}})
	g.Expect(err).To(HaveOccurred(), "Helm's keys can never be allowed")
}

func TestFlagSecretsOnlyFromAllowedNamespaces(t *testing.T) {
	g := NewWithT(t)
	tmpl := template(func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Flag = &ctfv1alpha1.FlagSpec{Static: &ctfv1alpha1.SecretKeyRef{Namespace: "kube-system", Name: "bootstrap-token-abc", Key: "token-secret"}}
	})
	tr := Translator{Settings: Settings{FlagSecretNamespaces: []string{"ctf-organiser"}}}
	err := tr.Settings.checkFlagSecret(tmpl)
	g.Expect(lifecycle.IsReason(err, lifecycle.ReasonPolicyViolation)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`"kube-system"`))
	tmpl.Spec.Flag.Static.Namespace = "ctf-organiser"
	g.Expect(tr.Settings.checkFlagSecret(tmpl)).To(Succeed())
}

func TestInstanceNamespacesNeverCollide(t *testing.T) {
	g := NewWithT(t)
	ns := func(namespace, name string) string {
		return InstanceNamespace(&ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}})
	}
	g.Expect(ns("a-b", "c")).NotTo(Equal(ns("a", "b-c")), "the plain join of both is a-b-c")
	long := "x123456789012345678901234567890123456789012345678901"
	g.Expect(ns(long, "web-1")).NotTo(Equal(ns(long, "web-2")), "truncation would make these equal")
	for _, n := range []string{ns("a-b", "c"), ns(long, "web-1"), ns(long+long[:10], "y")} {
		g.Expect(len(n)).To(BeNumerically("<=", 63), n)
		g.Expect(n).To(MatchRegexp(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`))
	}
}

// TestInstanceHostsNeverCollide: every instance's host is one DNS label under
// the domain, the same name in two namespaces included, so a wildcard
// certificate covers them and no two instances share one.
func TestInstanceHostsNeverCollide(t *testing.T) {
	g := NewWithT(t)
	host := func(namespace, name, domain string) string {
		return InstanceHost(&ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}, domain)
	}
	g.Expect(host("teams", "web-team1", "ctf.example")).To(MatchRegexp(`^web-team1-[0-9a-f]{10}\.ctf\.example$`))
	g.Expect(host("a", "web", "ctf.example")).NotTo(Equal(host("b", "web", "ctf.example")))
	g.Expect(host("a", "web", "CTF.example.")).To(Equal(host("a", "web", "ctf.example")), "the domain as DNS reads it")
	g.Expect(host("a", "web", "")).To(BeEmpty(), "no domain, no host")
	label, _, _ := strings.Cut(host("a", strings.Repeat("w", 53), "ctf.example"), ".")
	g.Expect(len(label)).To(BeNumerically("<=", 63))
}

// TestInstanceHostsAreNotComputableFromPublicNames: a host was a hash of the
// namespace and name alone, which every team can compute for every other team
// from the template, the team and the namespace, and then find and flood its
// instance. It is now keyed by the Challenge's UID, which the API server draws
// at random; an instance whose status shows a host of the former kind (started
// before an upgrade) keeps it.
func TestInstanceHostsAreNotComputableFromPublicNames(t *testing.T) {
	g := NewWithT(t)
	const domain = "ctf.example"
	public := func(c *ctfv1alpha1.Challenge) string {
		sum := sha256.Sum256([]byte(c.Namespace + "/" + c.Name))
		return c.Name + "-" + hex.EncodeToString(sum[:])[:10] + "." + domain
	}
	c := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: "teams", Name: "web-team1", UID: "6f1f8a52-0d5e-4d4c-9a1e-2b7c3d4e5f60"}}
	host := InstanceHost(c, domain)
	g.Expect(host).To(MatchRegexp(`^web-team1-[0-9a-f]{10}\.ctf\.example$`))
	g.Expect(host).NotTo(Equal(public(c)), "not derivable from the namespace and name")

	again := c.DeepCopy()
	again.UID = "0a4a2d6e-8f31-4b0e-a3c6-7d2e9b1f4c85"
	g.Expect(InstanceHost(again, domain)).NotTo(Equal(host), "started again under the same name: a new host")

	upgraded := c.DeepCopy()
	upgraded.Status.Endpoint = &ctfv1alpha1.Endpoint{Host: public(c), Port: 80}
	g.Expect(InstanceHost(upgraded, domain)).To(Equal(public(c)), "a running instance keeps the host it had before an upgrade")
	comp := c.DeepCopy()
	sum := sha256.Sum256([]byte(c.Namespace + "/" + c.Name))
	oldComponentHost := "web-team1-admin-" + hex.EncodeToString(sum[:])[:10] + "." + domain
	comp.Status.Endpoints = []ctfv1alpha1.Endpoint{{Host: oldComponentHost, Port: 80}}
	g.Expect(ComponentHost(c, "admin", domain)).NotTo(Equal(oldComponentHost), "a component's host is keyed too")
	g.Expect(ComponentHost(comp, "admin", domain)).To(Equal(oldComponentHost))
	g.Expect(InstanceHost(comp, domain)).NotTo(Equal(public(c)), "only the host the status shows is kept")
}

// TestSpecErrorsAreTerminal: retrying cannot fix a spec error, so the
// reconcile is not retried with backoff; the watches wake it instead.
func TestSpecErrorsAreTerminal(t *testing.T) {
	g := NewWithT(t)
	c := challenge(func(s *ctfv1alpha1.ChallengeSpec) { s.Values = raw(`{"podLabels": {"k8s-app": "kube-dns"}}`) })
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Translator{}.Translate(t.Context(), &unstructured.Unstructured{Object: m})
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue(), "got %v", err)
	g.Expect(lifecycle.IsReason(err, lifecycle.ReasonPolicyViolation)).To(BeTrue(), "the reason survives the wrapping")

	c = challenge(func(s *ctfv1alpha1.ChallengeSpec) { s.Template = "missing" })
	m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Translator{Reader: failingReader{}}.Translate(t.Context(), &unstructured.Unstructured{Object: m})
	g.Expect(err).To(HaveOccurred())
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeFalse(), "a failed read is retried")
}

// failingReader fails every read, as an API server that is away would.
type failingReader struct{ client.Reader }

func (failingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("connection refused")
}

// TestMayBeInstanceNamespace recognises every name InstanceNamespace gives,
// long namespaces and names included, and not a platform's namespace.
func TestMayBeInstanceNamespace(t *testing.T) {
	g := NewWithT(t)
	long := strings.Repeat("n", 60)
	for _, c := range [][2]string{{"ctf-teams", "web-team1"}, {long, "web"}, {"ctf", strings.Repeat("w", 63)}} {
		name := InstanceNamespace(&ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: c[0], Name: c[1]}})
		g.Expect(MayBeInstanceNamespace(name, []string{c[0]})).To(BeTrue(), name)
		g.Expect(MayBeInstanceNamespace(name, nil)).To(BeTrue(), name)
		g.Expect(MayBeInstanceNamespace(name, []string{"other"})).To(BeFalse(), name)
	}
	g.Expect(MayBeInstanceNamespace("ingress-nginx", nil)).To(BeFalse())
}
