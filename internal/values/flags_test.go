package values

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/ctfflag"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// TestDeliverNamedFlagsRefusesCollisions: a named flag never takes a path
// or a variable its container has already, and names what it met, never a
// value.
func TestDeliverNamedFlagsRefusesCollisions(t *testing.T) {
	for _, tc := range []struct {
		name string
		flag ctfv1alpha1.NamedFlag
		want string
	}{
		{"a secret file's path", ctfv1alpha1.NamedFlag{Name: "a", FlagDelivery: ctfv1alpha1.FlagDelivery{Path: "/etc/key"}}, "delivered at /etc/key, where its container mounts something already (secretFiles)"},
		{"a template file's path", ctfv1alpha1.NamedFlag{Name: "a", FlagDelivery: ctfv1alpha1.FlagDelivery{Path: "/app/config"}}, "(files)"},
		{"a plain variable", ctfv1alpha1.NamedFlag{Name: "a", FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountEnv, EnvName: "MODE"}}, "variable MODE, which its container sets already (env)"},
		{"a secretEnv variable", ctfv1alpha1.NamedFlag{Name: "a", FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountEnv, EnvName: "API_KEY"}}, "(secretEnv)"},
		{"a component that is not there", ctfv1alpha1.NamedFlag{Name: "a", Component: "db"}, `component "db", which the template does not have`},
		{"a sidecar that is not there", ctfv1alpha1.NamedFlag{Name: "a", Sidecar: "proxy"}, `sidecar "proxy", which its workload does not have`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			vals := map[string]any{
				"env":         []any{map[string]any{"name": "MODE", "value": "x"}},
				"secretEnv":   []any{map[string]any{"name": "API_KEY", "key": "env.API_KEY", "value": "v"}},
				"files":       []any{map[string]any{"path": "/app/config", "key": "f0"}},
				"secretFiles": []any{map[string]any{"path": "/etc/key", "key": "file.0"}},
			}
			tmpl := &ctfv1alpha1.ChallengeTemplate{Spec: ctfv1alpha1.ChallengeTemplateSpec{Flags: []ctfv1alpha1.NamedFlag{tc.flag}}}
			err := deliverNamedFlags(vals, tmpl, map[string]string{"a": "CTF{never-shown}"})
			g.Expect(lifecycle.IsReason(err, lifecycle.ReasonFlagInvalid)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.want))
			g.Expect(err.Error()).NotTo(ContainSubstring("never-shown"))
		})
	}
}

// TestPerTeamFlagNeedsTheKey: without the operator's flag key a perTeam
// flag is refused with a reason naming the Secret to create; a static one
// needs no key.
func TestPerTeamFlagNeedsTheKey(t *testing.T) {
	g := NewWithT(t)
	tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: ctfv1alpha1.ChallengeTemplateSpec{
		Flags: []ctfv1alpha1.NamedFlag{{Name: "main", PerTeam: &ctfv1alpha1.PerTeamFlag{}}}}}
	err := Rules{}.CheckNamedFlags(tmpl)
	g.Expect(errors.Is(err, ctfflag.ErrNoFlagKey)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("challenge-operator-flag-key"))
}
