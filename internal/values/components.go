package values

import (
	"fmt"
	"strings"

	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/policy"
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

// componentValues are one component as charts/challenge renders it: the same
// keys as the primary component's values, so the chart's helpers and
// lowPortSysctl read both alike.
type componentValues struct {
	containerValues
	Name                   string                      `json:"name"`
	ObjectName             string                      `json:"objectName"`
	Image                  string                      `json:"image"`
	Ports                  []ctfv1alpha1.ChallengePort `json:"ports"`
	Env                    []ctfv1alpha1.EnvVar        `json:"env"`
	Resources              *ctfv1alpha1.Resources      `json:"resources,omitempty"`
	ReadOnlyRootFilesystem bool                        `json:"readOnlyRootFilesystem"`
	InternetEgress         bool                        `json:"internetEgress"`
	Security               securityValues              `json:"security"`
	Expose                 map[string]any              `json:"expose"`
}

// hostValues are the <NAME>_HOST variables of an instance with components
// (none without): the primary's, then each component's that has a Service.
func hostValues(release string, components []ctfv1alpha1.Component) []ctfv1alpha1.EnvVar {
	if len(components) == 0 {
		return []ctfv1alpha1.EnvVar{}
	}
	out := []ctfv1alpha1.EnvVar{{Name: PrimaryHostVariable, Value: release}}
	for _, c := range components {
		if len(c.Ports) > 0 {
			out = append(out, ctfv1alpha1.EnvVar{Name: HostVariable(c.Name), Value: policy.ComponentObject(release, c.Name)})
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
		v := componentValues{
			containerValues: containerValuesFor(&comp.Container, comp.Name+".", componentProbes(comp)),
			Name:            comp.Name, ObjectName: policy.ComponentObject(release, comp.Name), Image: comp.Image, Ports: orEmptyList(comp.Ports),
			Env: append(append([]ctfv1alpha1.EnvVar{}, hosts...), comp.Env...), Resources: comp.Resources,
			ReadOnlyRootFilesystem: !comp.WritableRootFilesystem, InternetEgress: comp.InternetEgress, Security: securityValuesFor(sec),
			Expose: expose,
		}
		m, err := toMap(v)
		if err != nil {
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
	expose["host"] = ComponentHost(c, comp.Name, settings.IngressDomain)
	expose["https"] = comp.Expose != nil && comp.Expose.TLS != nil
	if err := settings.gateway(expose); err != nil {
		return nil, fmt.Errorf("component %s: %w", comp.Name, err)
	}
	return expose, nil
}

// Exposed reports whether a component is reached from outside its instance.
func Exposed(comp *ctfv1alpha1.Component) bool {
	return comp.Expose != nil && comp.Expose.Type != "" && comp.Expose.Type != ctfv1alpha1.ExposeClusterIP
}

// ComponentHost is the host of an instance's exposed component under domain
// ("" without one): "<name>-<component>-<hash>.<domain>", one DNS label, the
// component's name kept whole however long the instance's is.
func ComponentHost(c *ctfv1alpha1.Challenge, component, domain string) string {
	domain = strings.ToLower(strings.TrimSuffix(domain, "."))
	if domain == "" {
		return ""
	}
	name := c.Name
	if room := 52 - len(component) - 1; len(name) > room {
		name = strings.TrimRight(name[:room], "-")
	}
	return hostLabel(c, name+"-"+component, domain) + "." + domain
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

// ComponentSelectorLabels select the pods of an instance's component, as
// charts/challenge writes them: never the primary component's, whose
// app.kubernetes.io/name is "challenge", a name no component may take.
func ComponentSelectorLabels(c *ctfv1alpha1.Challenge, component string) map[string]string {
	return map[string]string{ctfv1alpha1.NameLabel: component, ctfv1alpha1.AppInstanceLabel: c.Name}
}

// ComponentLabels are the identity labels of a component's objects: the
// instance's, with the component's name.
func ComponentLabels(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, component string) map[string]string {
	l := IdentityLabels(c, tmpl)
	l[ctfv1alpha1.NameLabel] = component
	l[ctfv1alpha1.ComponentLabel] = component
	return l
}

// InstancePodLabels select every pod of an instance, whatever its component,
// and no other instance's in its namespace: the peer its NetworkPolicies let
// its components reach each other through.
func InstancePodLabels(c *ctfv1alpha1.Challenge) map[string]string {
	return map[string]string{ctfv1alpha1.InstanceLabel: c.Name}
}
