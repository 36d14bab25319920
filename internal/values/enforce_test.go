package values

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"

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
	tr := Rules{Settings: Settings{FlagSecretNamespaces: []string{"ctf-organiser"}}}
	err := tr.Settings.checkFlagSecret(tmpl)
	g.Expect(lifecycle.IsReason(err, lifecycle.ReasonPolicyViolation)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`"kube-system"`))
	tmpl.Spec.Flag.Static.Namespace = "ctf-organiser"
	g.Expect(tr.Settings.checkFlagSecret(tmpl)).To(Succeed())
}

func TestCheckKeys(t *testing.T) {
	tests := []struct {
		name    string
		vals    map[string]any
		keys    policy.Keys
		refused string // "" for none
	}{
		{"no metadata", map[string]any{"replicas": 1.0}, policy.Keys{}, ""},
		{"keys without a prefix", map[string]any{"podLabels": map[string]any{"tier": "web"}, "podAnnotations": map[string]any{"note": "x"}}, policy.Keys{}, ""},
		{"a prefixed pod label", map[string]any{"podLabels": map[string]any{"example.com/x": "y"}}, policy.Keys{}, `[podLabels "example.com/x"]`},
		{"the DNS label without a prefix", map[string]any{"podLabels": map[string]any{"k8s-app": "kube-dns"}}, policy.Keys{}, `podLabels "k8s-app"`},
		{"a prefixed expose annotation", map[string]any{"expose": map[string]any{"annotations": map[string]any{"nginx.ingress.kubernetes.io/server-snippet": "x"}}},
			policy.Keys{}, `expose.annotations "nginx.ingress.kubernetes.io/server-snippet"`},
		{"a prefix the admin allows", map[string]any{"podAnnotations": map[string]any{"example.com/x": "y"}}, policy.Keys{Allowed: []string{"example.com/"}}, ""},
		{"every refusal, sorted", map[string]any{
			"podLabels": map[string]any{"b.example/x": "1", "a.example/x": "1"}, "podAnnotations": map[string]any{"c.example/x": "1"},
		}, policy.Keys{}, `[podAnnotations "c.example/x" podLabels "a.example/x" podLabels "b.example/x"]`},
		{"metadata that is not a map is not read", map[string]any{"expose": "Ingress", "podLabels": []any{"example.com/x"}}, policy.Keys{}, ""},
		{"keys elsewhere are not metadata", map[string]any{"env": map[string]any{"example.com/x": "y"}}, policy.Keys{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := checkKeys(tt.vals, tt.keys)
			if tt.refused == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(lifecycle.IsReason(err, lifecycle.ReasonPolicyViolation)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.refused))
		})
	}
}

// TestResourceFloorEdges: resourceFloor read directly, on what Compose's
// typed fields never produce.
func TestResourceFloorEdges(t *testing.T) {
	defaults := resourceFloor(nil)
	withDefaults := func(kind, name, value string) map[string]any {
		out := resourceFloor(nil)
		out[kind].(map[string]any)[name] = value
		return out
	}
	tests := []struct {
		name string
		in   any
		want map[string]any
	}{
		{"not a map: the defaults", "lots", defaults},
		{"an unparsable quantity: the default", map[string]any{"limits": map[string]any{"cpu": "lots"}}, defaults},
		{"a quantity that is not a string: the default", map[string]any{"limits": map[string]any{"memory": 1.0}}, defaults},
		{"written canonically", map[string]any{"limits": map[string]any{"cpu": "0.25"}}, map[string]any{
			"requests": map[string]any{"cpu": "50m", "memory": "64Mi", "ephemeral-storage": "64Mi"},
			"limits":   map[string]any{"cpu": "250m", "memory": "256Mi", "ephemeral-storage": "256Mi"},
		}},
		{"a request above the default limit is lowered to it", map[string]any{"requests": map[string]any{"memory": "1Gi"}},
			withDefaults("requests", "memory", DefaultMemoryLimit)},
		{"other resources are kept", map[string]any{"limits": map[string]any{"nvidia.com/gpu": "1"}},
			withDefaults("limits", "nvidia.com/gpu", "1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(resourceFloor(tt.in)).To(Equal(tt.want))
		})
	}
	g := NewWithT(t)
	limits := map[string]any{"cpu": "2"}
	resourceFloor(map[string]any{"limits": limits})
	g.Expect(limits).To(Equal(map[string]any{"cpu": "2"}), "the values given are not written to")
}

// TestDiskFloor: the default ephemeral-storage limit holds the container's
// disk-backed /tmp and scratch directories, never less than
// DefaultEphemeralStorageLimit; memory-backed ones and an image's own /tmp
// do not count, and a limit the values set stays.
func TestDiskFloor(t *testing.T) {
	scratch := func(size, medium string) any {
		return map[string]any{"path": "/d", "sizeLimit": size, "medium": medium}
	}
	for _, tt := range []struct {
		name string
		ctr  map[string]any
		want string
	}{
		{"/tmp only", map[string]any{"mountTmp": true}, DefaultEphemeralStorageLimit},
		{"within the default", map[string]any{"mountTmp": true, "scratch": []any{scratch("192Mi", "")}}, DefaultEphemeralStorageLimit},
		{"/tmp and a 1Gi scratch", map[string]any{"mountTmp": true, "scratch": []any{scratch("1Gi", "")}}, "1088Mi"},
		{"/tmp in memory", map[string]any{"mountTmp": true, "memoryTmp": true, "scratch": []any{scratch("1Gi", "")}}, "1Gi"},
		{"the image's /tmp", map[string]any{"mountTmp": false, "scratch": []any{scratch("300Mi", ""), scratch("200Mi", "")}}, "500Mi"},
		{"scratch in memory", map[string]any{"mountTmp": true, "scratch": []any{scratch("1Gi", "Memory")}}, DefaultEphemeralStorageLimit},
		{"a scratch of the default size", map[string]any{"mountTmp": true, "scratch": []any{map[string]any{"path": "/d"}, scratch("200Mi", "")}}, "328Mi"},
		{"a limit the values set", map[string]any{"mountTmp": true, "scratch": []any{scratch("1Gi", "")},
			"resources": map[string]any{"limits": map[string]any{"ephemeral-storage": "100Mi"}}}, "100Mi"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := diskFloor(tt.ctr)["limits"].(map[string]any)["ephemeral-storage"]
			NewWithT(t).Expect(got).To(Equal(tt.want))
		})
	}
}

// TestCheckDisk: an instance whose default ephemeral-storage limit would be
// above the ceiling is refused, naming the container and the ceiling; one
// within it, one whose values set the limit, and one without a ceiling pass.
func TestCheckDisk(t *testing.T) {
	big := func(name string) map[string]any {
		ctr := map[string]any{"name": name, "mountTmp": true, "scratch": []any{map[string]any{"path": "/d", "sizeLimit": "1Gi"}}}
		ctr["resources"] = diskFloor(ctr)
		return ctr
	}
	small := map[string]any{"mountTmp": true, "resources": diskFloor(map[string]any{"mountTmp": true})}
	oneGi := resource.MustParse("1Gi")
	for _, tt := range []struct {
		name    string
		vals    map[string]any
		ceiling resource.Quantity
		want    string // "" passes
	}{
		{"within", small, oneGi, ""},
		{"the primary above", big(""), oneGi, "the /tmp and scratch directories of the primary container hold 1088Mi, above the ephemeral-storage ceiling 1Gi"},
		{"a component above", map[string]any{"mountTmp": true, "components": []any{big("db")}}, oneGi, "of component db hold 1088Mi"},
		{"no ceiling", big(""), resource.Quantity{}, ""},
		{"a higher ceiling", big(""), resource.MustParse("2Gi"), ""},
		{"its own limit", map[string]any{"mountTmp": true, "scratch": []any{map[string]any{"path": "/d", "sizeLimit": "1Gi"}},
			"resources": map[string]any{"limits": map[string]any{"ephemeral-storage": "1Gi"}}}, oneGi, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := checkDisk(tt.vals, tt.ceiling)
			if tt.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(lifecycle.IsReason(err, lifecycle.ReasonPolicyViolation)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
		})
	}
}
