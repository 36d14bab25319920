package values

import (
	sdkhandler "github.com/operator-framework/operator-lib/handler"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/policy"
)

// Expectation is what the policy gate lets the release of c, an instance of tmpl
// (nil without a template), contain, under the operator's ceilings base: the
// identity, security and network peers its values were composed with. The
// translator computes it beside the values, from the same template and the
// same reads, so the two cannot disagree. claimant is the team whose
// Challenge claimed c, a pooled instance ("" for any other); shared are the
// organiser's Services its template lets it reach, as read for its values.
func Expectation(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, settings Settings, base policy.Limits, claimant string, shared []SharedService) (policy.Instance, error) {
	limits, err := policy.LimitsFor(base, tmpl)
	if err != nil {
		return policy.Instance{}, err
	}
	if err := checkComponentReplicas(tmpl, limits); err != nil {
		return policy.Instance{}, err
	}
	var vals map[string]any
	if settings.NamespacePerInstance {
		// The namespace's quota is the values': compose them as the
		// translator does.
		if vals, err = Compose(c, tmpl, settings); err != nil {
			return policy.Instance{}, err
		}
	}
	return expectation(c, tmpl, settings, limits, instanceWorkloads(c, tmpl, limits.IngressDomain), Inputs{Claimant: claimant, Shared: shared}, vals)
}

// expectation is Expectation for c's workloads and its values vals
// composed from them with in (vals may be nil unless
// settings.NamespacePerInstance), under limits, the ceilings of c's template
// (policy.LimitsFor), which the values have been checked against.
func expectation(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, settings Settings, limits policy.Limits, workloads []workload, in Inputs, vals map[string]any) (policy.Instance, error) {
	inst := policy.Instance{
		Release:          c.Name,
		Namespace:        c.Namespace,
		OwnNamespace:     settings.NamespacePerInstance,
		Labels:           identity.Labels(c, tmpl),
		Workloads:        expectedWorkloads(c, tmpl, workloads),
		Limits:           limits,
		Keys:             settings.Keys,
		OwnerAnnotations: OwnerAnnotations(c),
	}
	components := len(inst.Workloads) - 1 // beside the primary workload
	if tmpl != nil {
		if in.Claimant != "" {
			claimedIdentity(&inst, c, in.Claimant)
		}
		if components > 0 {
			inst.InstancePods = identity.InstancePods(c)
		}
		for _, s := range in.Shared {
			inst.SharedServices = append(inst.SharedServices, policy.SharedPeer{Namespace: s.Namespace, Selector: s.Selector})
		}
		if needsSecret(tmpl) {
			inst.FlagSecret = identity.FlagSecret(c.Name)
		}
		if tmpl.Spec.IsShared() {
			inst.EveryInstancePod = ctfv1alpha1.InstanceLabel
		}
	}
	if settings.NamespacePerInstance {
		inst.Namespace = identity.Namespace(c)
		var err error
		if inst.Quota, inst.LimitRange, err = NamespaceBoundsOf(vals); err != nil {
			return policy.Instance{}, err
		}
	}
	expectBareNames(&inst, c, tmpl, settings)
	return inst, nil
}

// claimedIdentity makes in the identity of a pooled instance c that team's
// Challenge claimed: its objects carry the team's participant, its pods the
// one they started with.
func claimedIdentity(in *policy.Instance, c *ctfv1alpha1.Challenge, team string) {
	in.PodParticipant = c.Spec.Participant
	in.Labels[ctfv1alpha1.ParticipantLabel] = team
	for i := range in.Workloads {
		in.Workloads[i].Labels[ctfv1alpha1.ParticipantLabel] = team
	}
}

// expectedWorkloads says what each workload of c, an instance of tmpl (nil
// without a template), may be, from the workloads its values were composed
// from: its primary workload first, always exposed, then each of tmpl's
// components.
func expectedWorkloads(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, workloads []workload) []policy.Workload {
	var flags []ctfv1alpha1.NamedFlag
	if tmpl != nil {
		flags = tmpl.Spec.Flags
	}
	out := make([]policy.Workload, 0, len(workloads))
	for i := range workloads {
		w := &workloads[i]
		labels, selector := identity.Labels(c, tmpl), identity.Selector(c)
		if w.component != nil {
			labels, selector = identity.ComponentLabels(c, tmpl, w.name), identity.ComponentSelector(c, w.name)
		}
		out = append(out, policy.Workload{Name: w.name, Labels: labels, Selector: selector, Security: &w.security, Exposed: w.exposed(),
			Host: w.host, PortHosts: w.portHosts, Sidecars: sidecarNames(w.sidecars), SecretFiles: w.secretFileKeys(flags), SecretEnv: w.secretEnvKeys(flags)})
	}
	return out
}

// portHosts are the hosts of a workload's exposePorts, by port name; nil
// without any.
func portHosts(c *ctfv1alpha1.Challenge, component string, exposures []ctfv1alpha1.PortExposure, domain string) map[string]string {
	if len(exposures) == 0 {
		return nil
	}
	out := make(map[string]string, len(exposures))
	for _, e := range exposures {
		out[e.Port] = identity.PortHost(c, component, e.Port, domain)
	}
	return out
}

// secretFileKeys are the keys of a container's secret files, as
// secretFilesFor keys them.
func secretFileKeys(prefix string, files []ctfv1alpha1.SecretFile) []string {
	out := make([]string, 0, len(files))
	for _, f := range secretFilesFor(prefix, files) {
		out = append(out, f.Key)
	}
	return out
}

// OwnerAnnotations are what the post-renderer (package policyhelm) writes, as
// helm-operator-plugins' owner post-renderer did, on the instance's objects
// outside the Challenge's namespace (operator-lib's annotation handler
// keys) to name the Challenge c.
func OwnerAnnotations(c metav1.Object) map[string]string {
	return map[string]string{
		sdkhandler.NamespacedNameAnnotation: c.GetNamespace() + "/" + c.GetName(),
		sdkhandler.TypeAnnotation:           "Challenge." + ctfv1alpha1.GroupVersion.Group,
	}
}
