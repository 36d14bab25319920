package values

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// PrimaryHostVariable holds the primary component's host name in every
// component's environment.
const PrimaryHostVariable = "PRIMARY_HOST"

// HostVariable is the variable holding a component's host name: REDIS_HOST
// for "redis", WEB_BOT_HOST for "web-bot".
func HostVariable(component string) string {
	return strings.ToUpper(strings.ReplaceAll(component, "-", "_")) + "_HOST"
}

// workloadsOf are the values of an instance's workloads: its primary one's
// (vals itself, whose keys are the primary's) first, then each component's.
func workloadsOf(vals map[string]any) []map[string]any {
	comps, _ := vals["components"].([]any)
	out := make([]map[string]any, 0, 1+len(comps))
	out = append(out, vals)
	for _, c := range comps {
		if comp, ok := c.(map[string]any); ok {
			out = append(out, comp)
		}
	}
	return out
}

// sidecarsOf are the values of a workload's sidecars.
func sidecarsOf(w map[string]any) []map[string]any {
	sidecars, _ := w["sidecars"].([]any)
	out := make([]map[string]any, 0, len(sidecars))
	for _, sc := range sidecars {
		if m, ok := sc.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// containerRunValues are one container of a pod as the chart's
// challenge.container renders it: a workload's main container's, or a
// sidecar's.
type containerRunValues struct {
	containerValues
	Name  string                      `json:"name"`
	Image string                      `json:"image"`
	Ports []ctfv1alpha1.ChallengePort `json:"ports"`
	// Hosts are the instance's <NAME>_HOST variables, first in the
	// container's environment so that Env may use them.
	Hosts                  []ctfv1alpha1.EnvVar   `json:"hosts"`
	Env                    []ctfv1alpha1.EnvVar   `json:"env"`
	Resources              *ctfv1alpha1.Resources `json:"resources,omitempty"`
	ReadOnlyRootFilesystem bool                   `json:"readOnlyRootFilesystem"`
	// Flag is how the container receives the instance's flag, as the
	// primary's flag values say it: its secretName is the instance's Secret
	// whenever the container reads a key of it.
	Flag map[string]any `json:"flag"`
	// SecretEnv are the container's variables read from the instance's
	// Secret, each under a key of its own (componentEnvKey, sidecarEnvKey).
	SecretEnv []secretEnvValues `json:"secretEnv"`
}

// componentValues are one component as charts/challenge renders it: a
// workload of the same keys as the primary one's (the chart's
// challenge.workloads), so one template renders both and lowPortSysctl reads
// both alike.
type componentValues struct {
	containerRunValues
	ObjectName     string         `json:"objectName"`
	Replicas       int32          `json:"replicas"`
	InternetEgress bool           `json:"internetEgress"`
	Security       securityValues `json:"security"`
	Expose         map[string]any `json:"expose"`
	// ExposePorts are its other exposed ports (portExposureValues).
	ExposePorts []any `json:"exposePorts"`
}

// secretEnvValues are one variable of a container read from a key of the
// instance's Secret; the value is there, written by the translator.
type secretEnvValues struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// componentEnvKey is the key of a component's secretEnv value in the
// instance's Secret: "<component>.env.<NAME>", never one of the primary's
// ("env.<NAME>", whose NAME has no dot) nor another component's.
func componentEnvKey(component, name string) string {
	return component + ".env." + name
}

// componentFlag is the flag values of a component's container: the
// template's flag delivered as comp.Flag says, or none.
func componentFlag(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, comp *ctfv1alpha1.Component) map[string]any {
	return flagValuesFor(instanceSecret(c, tmpl), comp.Flag)
}

// instanceSecret is the name of the instance's Secret, "" when it has none.
func instanceSecret(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) string {
	if needsSecret(tmpl) {
		return identity.FlagSecret(c.Name)
	}
	return ""
}

// componentSecretEnv are a component's secretEnv as its container reads them.
func componentSecretEnv(w *workload) []secretEnvValues {
	out := make([]secretEnvValues, 0, len(w.secretEnv))
	for _, e := range w.secretEnv {
		out = append(out, secretEnvValues{Name: e.Name, Key: w.secretEnvKey(e.Name)})
	}
	return out
}

// hostValues are the <NAME>_HOST variables of an instance with components
// (none without): the primary's, then each component's that has a Service.
func hostValues(release string, components []ctfv1alpha1.Component) []ctfv1alpha1.EnvVar {
	if len(components) == 0 {
		return []ctfv1alpha1.EnvVar{}
	}
	out := []ctfv1alpha1.EnvVar{{Name: PrimaryHostVariable, Value: release}}
	for _, c := range components {
		if hasService(&c) {
			out = append(out, ctfv1alpha1.EnvVar{Name: HostVariable(c.Name), Value: identity.ComponentObject(release, c.Name)})
		}
	}
	return out
}

// componentsFor returns the values of the template's components (the
// instance's workloads but the primary): each its own container (hosts first
// in its environment), security context, resource floor, low-port sysctl and
// exposure.
func componentsFor(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, components []workload, hosts []ctfv1alpha1.EnvVar, settings Settings) ([]any, error) {
	out := make([]any, 0, len(components))
	for i := range components {
		w := &components[i]
		comp := w.component
		expose, err := componentExpose(w, settings)
		if err != nil {
			return nil, err
		}
		exposePorts, err := portExposureValues(w, settings)
		if err != nil {
			return nil, fmt.Errorf("component %s: %w", comp.Name, err)
		}
		v := componentValues{
			containerRunValues: containerRunValues{
				containerValues: containerValuesFor(&comp.Container, w.filePrefix(), componentProbes(comp)),
				Name:            comp.Name, Image: comp.Image, Ports: orEmptyList(comp.Ports), Hosts: hosts, Env: orEmptyList(comp.Env),
				Resources: comp.Resources, ReadOnlyRootFilesystem: !comp.WritableRootFilesystem,
				Flag: componentFlag(c, tmpl, comp), SecretEnv: componentSecretEnv(w),
			},
			ObjectName: identity.ComponentObject(c.Name, comp.Name), Replicas: componentReplicas(comp),
			InternetEgress: comp.InternetEgress, Security: securityValuesFor(w.security), Expose: expose, ExposePorts: exposePorts,
		}
		m, err := toMap(v)
		if err != nil {
			return nil, err
		}
		if m["sidecars"], err = sidecarsFor(w.workloadName(), w.sidecars, hosts, w.security.ExtendedResources, instanceSecret(c, tmpl)); err != nil {
			return nil, err
		}
		lowPortSysctl(m)
		m["resources"] = withExtendedResources(diskFloor(m), w.security.ExtendedResources)
		out = append(out, m)
	}
	return out, nil
}

// componentExpose is how a component is reached: internal (ClusterIP)
// unless its template exposes it, then with a host of its own
// (ComponentHost) and the Gateway its route attaches to.
func componentExpose(w *workload, settings Settings) (map[string]any, error) {
	comp := w.component
	expose := map[string]any{"type": string(ctfv1alpha1.ExposeClusterIP)}
	if comp.Expose != nil {
		m, err := toMap(comp.Expose)
		if err != nil {
			return nil, err
		}
		merge(expose, m)
	}
	expose["host"] = w.host
	expose["https"] = comp.Expose != nil && comp.Expose.TLS != nil
	if err := settings.gateway(expose); err != nil {
		return nil, fmt.Errorf("component %s: %w", comp.Name, err)
	}
	return expose, nil
}

// Exposed reports whether a component's first port is reached from
// outside its instance (its exposure).
func Exposed(comp *ctfv1alpha1.Component) bool {
	return comp.Expose != nil && comp.Expose.Type != "" && comp.Expose.Type != ctfv1alpha1.ExposeClusterIP
}

// Reachable reports whether any port of a component is reached from
// outside its instance: its first by its exposure, or another by exposePorts.
func Reachable(comp *ctfv1alpha1.Component) bool {
	return Exposed(comp) || len(comp.ExposePorts) > 0
}

// portExposureValues are the values of w's exposePorts: each port's name
// and its exposure, on a host of its own (identity.PortHost), with the
// Gateway its route attaches to.
func portExposureValues(w *workload, settings Settings) ([]any, error) {
	out := make([]any, 0, len(w.exposePorts))
	for _, e := range w.exposePorts {
		expose := map[string]any{"type": string(e.Type), "host": w.portHosts[e.Port], "https": e.TLS != nil}
		if e.TLS != nil && e.TLS.SecretName != "" {
			expose["tls"] = map[string]any{"secretName": e.TLS.SecretName}
		}
		if e.IngressClassName != "" {
			expose["ingressClassName"] = e.IngressClassName
		}
		if e.Gateway != nil {
			// settings.gateway holds it to --gateways.
			expose["gateway"] = map[string]any{"namespace": e.Gateway.Namespace, nameKey: e.Gateway.Name}
		}
		if err := settings.gateway(expose); err != nil {
			return nil, fmt.Errorf("exposePorts %s: %w", e.Port, err)
		}
		out = append(out, map[string]any{"port": e.Port, "expose": expose})
	}
	return out, nil
}

// checkExposedPorts refuses a workload's exposePorts that name a port its
// values no longer have (the template's ports replaced by a Challenge's).
func checkExposedPorts(workload string, exposures []ctfv1alpha1.PortExposure, ports any) error {
	list, _ := ports.([]any)
	for _, e := range exposures {
		if !slices.ContainsFunc(list, func(p any) bool { m, _ := p.(map[string]any); return m[nameKey] == e.Port }) {
			return lifecycle.Errorf(lifecycle.ReasonPolicyViolation, "%s: exposePorts names port %q, which its ports do not have", workload, e.Port)
		}
	}
	return nil
}

// componentProbes are a component's probes; without a readiness probe, a
// TCP probe on its first TCP port, as the chart gives the primary component.
func componentProbes(c *ctfv1alpha1.Component) probeValues {
	p := probesFor(c.Probes)
	if p.Readiness != nil {
		return p
	}
	for _, port := range c.Ports {
		if port.Protocol == "" || port.Protocol == ctfv1alpha1.ProtocolTCP {
			p.Readiness = probeFor(&ctfv1alpha1.Probe{TCP: &ctfv1alpha1.TCPProbe{Port: port.Name}, PeriodSeconds: ptr.To(DefaultReadinessPeriod)})
			break
		}
	}
	return p
}

// DefaultReadinessPeriod is how often a component's default readiness
// probe checks its port, as the chart's readinessProbe.periodSeconds does
// the primary's.
const DefaultReadinessPeriod int32 = 2
