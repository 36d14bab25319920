package chartrender_test

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/chartrender"
)

// TestSchemaRefusesSidecarValues: the chart's schema holds a sidecar's
// values, the primary's and a component's, to what the operator writes: no
// security setting of its own, never a writable root filesystem, never the
// primary container's name, its files keyed "<workload>.<sidecar>.f<n>".
func TestSchemaRefusesSidecarValues(t *testing.T) {
	var sidecarsCase goldenCase
	for _, tc := range goldenCases {
		if tc.name == "sidecars" {
			sidecarsCase = tc
		}
	}
	for _, tt := range []struct {
		name   string
		mutate func(sidecar map[string]any)
		want   string // in the error; "" for accepted
	}{
		{"as the operator writes it", func(map[string]any) {}, ""},
		{"a securityContext of its own", func(s map[string]any) {
			s["security"] = map[string]any{"container": map[string]any{"privileged": true}}
		}, "security"},
		{"a writable root filesystem", func(s map[string]any) { s["readOnlyRootFilesystem"] = false }, "readOnlyRootFilesystem"},
		{"named as the primary's container", func(s map[string]any) { s["name"] = "challenge" }, "name"},
		{"a file keyed as the primary's", func(s map[string]any) { s["files"].([]any)[0].(map[string]any)["key"] = "f0" }, "key"},
		{"a file keyed as a component's", func(s map[string]any) { s["files"].([]any)[0].(map[string]any)["key"] = "db.f0" }, "key"},
		{"a pull policy of its own", func(s map[string]any) { s["imagePullPolicy"] = "Always" }, "imagePullPolicy"},
	} {
		for _, where := range []string{"primary", "component"} {
			t.Run(tt.name+", "+where, func(t *testing.T) {
				ch := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "golden", Namespace: "ctf-teams"},
					Spec: ctfv1alpha1.ChallengeSpec{Participant: "team-1", Template: "golden-template"}}
				tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "golden-template"}, Spec: *sidecarsCase.tmpl}
				vals, err := values.Compose(ch, tmpl, goldenSettings)
				if err != nil {
					t.Fatal(err)
				}
				sidecars := vals["sidecars"].([]any)
				if where == "component" {
					sidecars = vals["components"].([]any)[0].(map[string]any)["sidecars"].([]any)
				}
				tt.mutate(sidecars[0].(map[string]any))
				_, err = chartrender.Render(ch, vals)
				switch {
				case tt.want == "" && err != nil:
					t.Fatalf("refused: %v", err)
				case tt.want != "" && err == nil:
					t.Fatal("rendered")
				case tt.want != "" && !strings.Contains(err.Error(), tt.want):
					t.Fatalf("refused for another reason: %v", err)
				}
			})
		}
	}
}

// TestSidecarsRenderPassesTheGate: what the chart renders for the golden
// sidecars case, in either namespace mode, passes the gate under the
// Expectation the translator computes beside its values; the same render is
// refused under an Expectation of no sidecars, on the first workload that
// has one.
func TestSidecarsRenderPassesTheGate(t *testing.T) {
	var tc goldenCase
	for _, c := range goldenCases {
		if c.name == "sidecars" {
			tc = c
		}
	}
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("namespace per instance %v", own), func(t *testing.T) {
			g := NewWithT(t)
			settings := goldenSettings
			settings.NamespacePerInstance = own
			ch := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "golden", Namespace: "ctf-teams"},
				Spec: ctfv1alpha1.ChallengeSpec{Participant: "team-1", Template: "golden-template"}}
			tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "golden-template"}, Spec: *tc.tmpl}
			manifest, err := chartrender.Manifest(ch, tmpl, settings)
			g.Expect(err).NotTo(HaveOccurred())
			in, err := values.Expectation(ch, tmpl, settings, gateLimits(settings), "", nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(policy.Check(manifest, in)).To(Succeed())

			for i := range in.Workloads {
				in.Workloads[i].Sidecars = nil
			}
			var v *policy.Violation
			g.Expect(errors.As(policy.Check(manifest, in), &v)).To(BeTrue())
			g.Expect(v.Rule).To(Equal("containers"))
			g.Expect(v.Detail).To(ContainSubstring(`exactly ["db"]`), "the first Deployment judged")
		})
	}
}

// gateLimits are the operator's default ceilings, with the network
// boundaries of settings, as the operator hands the gate.
func gateLimits(settings values.Settings) policy.Limits {
	l := policy.Limits{CPU: resource.MustParse("2"), Memory: resource.MustParse("2Gi"), EphemeralStorage: resource.MustParse("1Gi"), MaxReplicas: 1,
		IngressFromNamespaces: settings.IngressFromNamespaces, IngressDomain: settings.IngressDomain, DNSNamespace: settings.EffectiveDNSNamespace()}
	for _, c := range settings.EffectiveInternalCIDRs() {
		l.InternalCIDRs = append(l.InternalCIDRs, netip.MustParsePrefix(c))
	}
	for _, gw := range settings.Gateways {
		l.Gateways = append(l.Gateways, types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name})
	}
	return l
}
