package values

import (
	"helm.sh/helm/v3/pkg/chartutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/ctfflag"
	"github.com/challenge-operator/challenge-operator/internal/flagtag"
	"github.com/challenge-operator/challenge-operator/internal/organisersecret"
	"github.com/challenge-operator/challenge-operator/internal/policy"
)

// Rules are what the cluster admin holds every render to, whoever the team:
// the settings enforced on every instance, the ceilings the policy gate
// holds every release to (unless a template's policy says otherwise), and
// the flag key perTeam flags are made with. Its checks and its render read
// nothing from the cluster.
type Rules struct {
	// Settings are enforced on every instance.
	Settings Settings
	// Limits are the operator's ceilings the policy gate holds every
	// release to, unless a template's policy says otherwise.
	Limits policy.Limits
	// FlagCodec makes the teams' perTeam flags under the operator's flag
	// key; nil without one (--flag-key-file), which refuses them.
	FlagCodec *flagtag.Codec
}

// Rendered is one render of a Challenge, from one computation: its chart
// values, and what the policy gate lets the release they render contain.
type Rendered struct {
	Values   chartutil.Values
	Expected policy.Instance
}

// Check composes c's values, reading nothing, and holds them to the
// ceilings of tmpl (policy.LimitsFor), which it returns: what a render
// checks before admission, and CheckTemplate for the template alone.
func (r Rules) Check(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) (chartutil.Values, policy.Limits, error) {
	vals, err := Compose(c, tmpl, r.Settings)
	if err != nil {
		return nil, policy.Limits{}, err
	}
	limits, err := policy.LimitsFor(r.Limits, tmpl)
	if err != nil {
		return nil, policy.Limits{}, err
	}
	if err := checkDisk(vals, limits.EphemeralStorage); err != nil {
		return nil, policy.Limits{}, err
	}
	if err := checkComponentReplicas(tmpl, limits); err != nil {
		return nil, policy.Limits{}, err
	}
	return vals, limits, nil
}

// Render composes c's values with what was read for them (in), holds them
// to the size a release record takes, and says what the gate lets their
// release contain, under limits (Check's): the pure end of a render.
func (r Rules) Render(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, limits policy.Limits, in Inputs) (Rendered, error) {
	// One model of its workloads, which both the values and the gate's
	// expectation are made from.
	workloads := instanceWorkloads(c, tmpl, r.Settings.IngressDomain)
	vals, err := compose(c, tmpl, r.Settings, &in, workloads)
	if err != nil {
		return Rendered{}, err
	}
	if err := checkValuesSize(vals); err != nil {
		return Rendered{}, err
	}
	expected, err := expectation(c, tmpl, r.Settings, limits, workloads, in, vals)
	if err != nil {
		return Rendered{}, err
	}
	return Rendered{Values: vals, Expected: expected}, nil
}

// CheckTemplate refuses a template its instances could not be installed
// from under the cluster admin's bounds, whoever the team: what a render
// checks before admission that depends on the template alone (its values,
// security, lifetime, exposure, ceilings, the namespaces its flags come
// from and the flag key its perTeam flags need), with the reason naming
// the flag. Nothing is read from the cluster.
func (r Rules) CheckTemplate(tmpl *ctfv1alpha1.ChallengeTemplate) error {
	probe := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "template-check", Namespace: "template-check"},
		Spec: ctfv1alpha1.ChallengeSpec{Template: tmpl.Name, Participant: "template-check"}}
	if _, _, err := r.Check(probe, tmpl); err != nil {
		return err
	}
	if tmpl.Spec.Flag != nil {
		if err := r.Settings.checkFlagSecret(tmpl); err != nil {
			return err
		}
	}
	return r.CheckNamedFlags(tmpl)
}

// CheckNamedFlags refuses named flags the operator may not render: a
// static one from a namespace flags may not come from, a perTeam one
// without the operator's flag key. It reads nothing: a template's check
// judges them before any instance reads a flag.
func (r Rules) CheckNamedFlags(tmpl *ctfv1alpha1.ChallengeTemplate) error {
	for _, f := range tmpl.Spec.Flags {
		if f.Static != nil {
			if err := organisersecret.Namespaces(r.Settings.FlagSecretNamespaces).Allow(tmpl, "flag "+f.Name, f.Static.Namespace); err != nil {
				return err
			}
		}
		if f.PerTeam != nil && r.FlagCodec == nil {
			return ctfflag.ErrNoFlagKey
		}
	}
	return nil
}
