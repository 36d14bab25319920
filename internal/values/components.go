package values

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/security"
)

// PrimaryHostVariable holds the primary component's host name in every
// component's environment.
const PrimaryHostVariable = "PRIMARY_HOST"

// HostVariable is the variable holding a component's host name: REDIS_HOST
// for "redis", WEB_BOT_HOST for "web-bot".
func HostVariable(component string) string {
	return strings.ToUpper(strings.ReplaceAll(component, "-", "_")) + "_HOST"
}

// componentValues are one component as charts/challenge renders it: a
// workload of the same keys as the primary one's (the chart's
// challenge.workloads), so one template renders both and lowPortSysctl reads
// both alike.
type componentValues struct {
	containerValues
	Name       string                      `json:"name"`
	ObjectName string                      `json:"objectName"`
	Image      string                      `json:"image"`
	Replicas   int32                       `json:"replicas"`
	Ports      []ctfv1alpha1.ChallengePort `json:"ports"`
	// Hosts are the instance's <NAME>_HOST variables, first in the
	// container's environment so that Env may use them.
	Hosts                  []ctfv1alpha1.EnvVar   `json:"hosts"`
	Env                    []ctfv1alpha1.EnvVar   `json:"env"`
	Resources              *ctfv1alpha1.Resources `json:"resources,omitempty"`
	ReadOnlyRootFilesystem bool                   `json:"readOnlyRootFilesystem"`
	InternetEgress         bool                   `json:"internetEgress"`
	Security               securityValues         `json:"security"`
	Expose                 map[string]any         `json:"expose"`
	// ExposePorts are its other exposed ports (portExposureValues).
	ExposePorts []any `json:"exposePorts"`
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

// componentsFor returns the values of the template's components: each its
// own container (hosts first in its environment), security context,
// resource floor, low-port sysctl and exposure.
func componentsFor(c *ctfv1alpha1.Challenge, components []ctfv1alpha1.Component, hosts []ctfv1alpha1.EnvVar, settings Settings) ([]any, error) {
	release := c.Name
	out := make([]any, 0, len(components))
	for i := range components {
		comp := &components[i]
		sec := security.ForComponent(comp)
		expose, err := componentExpose(c, comp, settings)
		if err != nil {
			return nil, err
		}
		exposePorts, err := portExposureValues(c, comp.Name, comp.ExposePorts, settings)
		if err != nil {
			return nil, fmt.Errorf("component %s: %w", comp.Name, err)
		}
		v := componentValues{
			containerValues: containerValuesFor(&comp.Container, comp.Name+".", componentProbes(comp)),
			Name:            comp.Name, ObjectName: identity.ComponentObject(release, comp.Name), Image: comp.Image, Replicas: componentReplicas(comp),
			Ports: orEmptyList(comp.Ports), Hosts: hosts, Env: orEmptyList(comp.Env), Resources: comp.Resources,
			ReadOnlyRootFilesystem: !comp.WritableRootFilesystem, InternetEgress: comp.InternetEgress, Security: securityValuesFor(sec),
			Expose: expose, ExposePorts: exposePorts,
		}
		m, err := toMap(v)
		if err != nil {
			return nil, err
		}
		if m["sidecars"], err = sidecarsFor(comp.Name, comp.Sidecars, hosts, sec.ExtendedResources); err != nil {
			return nil, err
		}
		lowPortSysctl(m)
		m["resources"] = withExtendedResources(resourceFloor(m["resources"]), sec.ExtendedResources)
		out = append(out, m)
	}
	return out, nil
}

// componentExpose is how a component is reached: internal (ClusterIP)
// unless its template exposes it, then with a host of its own
// (ComponentHost) and the Gateway its route attaches to.
func componentExpose(c *ctfv1alpha1.Challenge, comp *ctfv1alpha1.Component, settings Settings) (map[string]any, error) {
	expose := map[string]any{"type": string(ctfv1alpha1.ExposeClusterIP)}
	if comp.Expose != nil {
		m, err := toMap(comp.Expose)
		if err != nil {
			return nil, err
		}
		merge(expose, m)
	}
	expose["host"] = identity.ComponentHost(c, comp.Name, settings.IngressDomain)
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

// portExposureValues are the values of a workload's exposePorts (component
// "" for the primary one): each port's name and its exposure, on a host of
// its own (identity.PortHost), with the Gateway its route attaches to.
func portExposureValues(c *ctfv1alpha1.Challenge, component string, exposures []ctfv1alpha1.PortExposure, settings Settings) ([]any, error) {
	out := make([]any, 0, len(exposures))
	for _, e := range exposures {
		expose := map[string]any{"type": string(e.Type), "host": identity.PortHost(c, component, e.Port, settings.IngressDomain), "https": e.TLS != nil}
		if e.TLS != nil && e.TLS.SecretName != "" {
			expose["tls"] = map[string]any{"secretName": e.TLS.SecretName}
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
		if !slices.ContainsFunc(list, func(p any) bool { m, _ := p.(map[string]any); return m["name"] == e.Port }) {
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
