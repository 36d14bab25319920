package values

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// sidecarEnvKey is the key of a sidecar's secretEnv value in the instance's
// Secret: "<workload>.<sidecar>.env.<NAME>", which no other container's key
// can be (sidecarFilePrefix).
func sidecarEnvKey(workload, sidecar, name string) string {
	return sidecarFilePrefix(workload, sidecar) + "env." + name
}

// sidecarsFor are the values of a workload's sidecars (workload is
// identity.PrimaryWorkload or a component's name; secretName the instance's
// Secret, "" without one), each with the instance's hosts, its flag and
// secretEnv as a component's,
// its files keyed sidecarFilePrefix, its probes as given (no default
// readiness: its workload's main container has one) and the resource floor
// and extended resources of any container of the workload. Never nil: the
// chart's schema wants a list.
func sidecarsFor(workload string, sidecars []ctfv1alpha1.Sidecar, hosts []ctfv1alpha1.EnvVar, extended corev1.ResourceList, secretName string) ([]any, error) {
	out := make([]any, 0, len(sidecars))
	for i := range sidecars {
		s := &sidecars[i]
		secretEnv := make([]secretEnvValues, 0, len(s.SecretEnv))
		for _, e := range s.SecretEnv {
			secretEnv = append(secretEnv, secretEnvValues{Name: e.Name, Key: sidecarEnvKey(workload, s.Name, e.Name)})
		}
		// A sidecar writes in /tmp and its scratch directories only, and
		// has no default readiness probe: its port is not its workload's.
		m, err := toMap(containerRunValues{
			containerValues: containerValuesFor(&s.Container, sidecarFilePrefix(workload, s.Name), probesFor(s.Probes)),
			Name:            s.Name, Image: s.Image, Ports: orEmptyList(s.Ports), Hosts: orEmptyList(hosts), Env: orEmptyList(s.Env),
			Resources: s.Resources, ReadOnlyRootFilesystem: true, Flag: flagValuesFor(secretName, s.Flag), SecretEnv: secretEnv,
		})
		if err != nil {
			return nil, err
		}
		m["resources"] = withExtendedResources(diskFloor(m), extended)
		out = append(out, m)
	}
	return out, nil
}

// sidecarFilePrefix starts the keys of a sidecar's files in the instance's
// one ConfigMap: "<workload>.<sidecar>.", so that they never meet the
// primary's ("f<n>"), a component's ("<component>.f<n>") or another
// workload's sidecar's, whatever the names (none has a dot).
func sidecarFilePrefix(workload, sidecar string) string {
	return workload + "." + sidecar + "."
}

// podPorts are the ports of a workload's pod in its values (the primary's
// or a component's): its main container's, then its sidecars', which share
// its network namespace and so its unprivileged-port sysctl.
func podPorts(vals map[string]any) []any {
	ports, _ := vals["ports"].([]any)
	sidecars := sidecarsOf(vals)
	if len(sidecars) == 0 {
		return ports
	}
	out := slices.Clone(ports)
	for _, sc := range sidecars {
		p, _ := sc["ports"].([]any)
		out = append(out, p...)
	}
	return out
}

// hasService reports whether the chart renders a Service for comp: when its
// pod has a port, its main container's or a sidecar's.
func hasService(comp *ctfv1alpha1.Component) bool {
	return len(comp.Ports) > 0 || slices.ContainsFunc(comp.Sidecars, func(s ctfv1alpha1.Sidecar) bool { return len(s.Ports) > 0 })
}

// sidecarNames are the names of sidecars, in order: the containers the gate
// expects beside their workload's main one.
func sidecarNames(sidecars []ctfv1alpha1.Sidecar) []string {
	if len(sidecars) == 0 {
		return nil
	}
	out := make([]string, len(sidecars))
	for i, s := range sidecars {
		out[i] = s.Name
	}
	return out
}
