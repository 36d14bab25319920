package values

import (
	"slices"

	sdkhandler "github.com/operator-framework/operator-lib/handler"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/security"
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
	return expectation(c, tmpl, settings, limits, claimant, shared, vals)
}

// expectation is Expectation for c's composed values vals, which the
// translator has at hand (nil unless settings.NamespacePerInstance), under
// limits, the ceilings of c's template (policy.LimitsFor), which the
// translator has checked the values against.
func expectation(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, settings Settings, limits policy.Limits, claimant string, shared []SharedService, vals map[string]any) (policy.Instance, error) {
	in := policy.Instance{
		Release:          c.Name,
		Namespace:        c.Namespace,
		OwnNamespace:     settings.NamespacePerInstance,
		Labels:           identity.Labels(c, tmpl),
		Workloads:        expectedWorkloads(c, tmpl, limits.IngressDomain),
		Limits:           limits,
		Keys:             settings.Keys,
		OwnerAnnotations: OwnerAnnotations(c),
	}
	components := len(in.Workloads) - 1 // beside the primary workload
	if tmpl != nil {
		if claimant != "" {
			claimedIdentity(&in, c, claimant)
		}
		if components > 0 {
			in.InstancePods = identity.InstancePods(c)
		}
		for _, s := range shared {
			in.SharedServices = append(in.SharedServices, policy.SharedPeer{Namespace: s.Namespace, Selector: s.Selector})
		}
		if needsSecret(tmpl) {
			in.FlagSecret = identity.FlagSecret(c.Name)
		}
		if tmpl.Spec.IsShared() {
			in.EveryInstancePod = ctfv1alpha1.InstanceLabel
		}
	}
	if settings.NamespacePerInstance {
		in.Namespace = identity.Namespace(c)
		var err error
		if in.Quota, in.LimitRange, err = NamespaceBoundsOf(vals); err != nil {
			return policy.Instance{}, err
		}
	}
	expectBareNames(&in, c, tmpl, settings)
	return in, nil
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
// without a template), may be: its primary workload first, always exposed,
// then each of tmpl's components.
func expectedWorkloads(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, domain string) []policy.Workload {
	podSecurity := security.ForTemplate(tmpl)
	out := []policy.Workload{{Labels: identity.Labels(c, tmpl), Selector: identity.Selector(c), Security: &podSecurity,
		Exposed: true, Host: identity.Host(c, domain), Sidecars: sidecarNames(templateSidecars(tmpl))}}
	if tmpl == nil {
		return out
	}
	out[0].PortHosts = portHosts(c, "", tmpl.Spec.ExposePorts, domain)
	out[0].SecretFiles = slices.Concat(secretFileKeys("", tmpl.Spec.SecretFiles), sidecarSecretFileKeys(identity.PrimaryWorkload, tmpl.Spec.Sidecars),
		namedFlagKeys(tmpl.Spec.Flags, "", false))
	var primaryFlag *ctfv1alpha1.FlagDelivery
	if tmpl.Spec.Flag != nil {
		primaryFlag = &tmpl.Spec.Flag.FlagDelivery
	}
	out[0].SecretEnv = append(secretEnvKeys(primaryFlag, tmpl.Spec.SecretEnv, primaryEnvKey, identity.PrimaryWorkload, tmpl.Spec.Sidecars),
		namedFlagKeys(tmpl.Spec.Flags, "", true)...)
	for i := range tmpl.Spec.Components {
		comp := &tmpl.Spec.Components[i]
		sec := security.ForComponent(comp, tmpl.Spec.Flags)
		out = append(out, policy.Workload{Name: comp.Name, Labels: identity.ComponentLabels(c, tmpl, comp.Name),
			Selector: identity.ComponentSelector(c, comp.Name), Security: &sec, Exposed: Exposed(comp), Host: identity.ComponentHost(c, comp.Name, domain),
			PortHosts: portHosts(c, comp.Name, comp.ExposePorts, domain), Sidecars: sidecarNames(comp.Sidecars),
			SecretFiles: slices.Concat(secretFileKeys(comp.Name+".", comp.SecretFiles), sidecarSecretFileKeys(comp.Name, comp.Sidecars),
				namedFlagKeys(tmpl.Spec.Flags, comp.Name, false)),
			SecretEnv: append(secretEnvKeys(comp.Flag, comp.SecretEnv, func(name string) string { return componentEnvKey(comp.Name, name) }, comp.Name, comp.Sidecars),
				namedFlagKeys(tmpl.Spec.Flags, comp.Name, true)...)})
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

// OwnerAnnotations are what the post-renderer (package gate) writes, as
// helm-operator-plugins' owner post-renderer did, on the instance's objects
// outside the Challenge's namespace (operator-lib's annotation handler
// keys) to name the Challenge c.
func OwnerAnnotations(c metav1.Object) map[string]string {
	return map[string]string{
		sdkhandler.NamespacedNameAnnotation: c.GetNamespace() + "/" + c.GetName(),
		sdkhandler.TypeAnnotation:           "Challenge." + ctfv1alpha1.GroupVersion.Group,
	}
}

// sidecarSecretFileKeys are the keys of a workload's sidecars' secret files.
func sidecarSecretFileKeys(workload string, sidecars []ctfv1alpha1.Sidecar) []string {
	out := make([]string, 0, len(sidecars))
	for _, sc := range sidecars {
		out = append(out, secretFileKeys(sidecarFilePrefix(workload, sc.Name), sc.SecretFiles)...)
	}
	return out
}

// secretEnvKeys are the keys of the instance's Secret a workload's
// environment reads: "flag" when its main container (flag) or a sidecar
// takes the flag in a variable, its main container's secretEnv (keyed by
// key) and its sidecars' (sidecarEnvKey).
func secretEnvKeys(flag *ctfv1alpha1.FlagDelivery, env []ctfv1alpha1.SecretEnvVar, key func(string) string, workload string, sidecars []ctfv1alpha1.Sidecar) []string {
	var out []string
	flagEnv := func(f *ctfv1alpha1.FlagDelivery) bool { return f != nil && f.Mount == ctfv1alpha1.FlagMountEnv }
	if flagEnv(flag) || slices.ContainsFunc(sidecars, func(sc ctfv1alpha1.Sidecar) bool { return flagEnv(sc.Flag) }) {
		out = append(out, "flag")
	}
	for _, e := range env {
		out = append(out, key(e.Name))
	}
	for _, sc := range sidecars {
		for _, e := range sc.SecretEnv {
			out = append(out, sidecarEnvKey(workload, sc.Name, e.Name))
		}
	}
	return out
}
