package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// statusField is the status every kind with one may carry: the API server
// keeps a write's status out of the object (status subresource).
const statusField = "status"

// The gate's rules read some fields of each object and leave the rest alone, so a field no rule
// reads would be applied unjudged: a pod's topologySpreadConstraints, a Service's
// loadBalancerClass, whatever the next Kubernetes adds to its types. Decoding strictly refuses a
// field the gate's Go types do not know; the tables below refuse the fields they know but no rule
// judges. Each kind lists the paths that may be set: a path covers everything under it, and a
// path ending in {} allows only an empty object (a typed client's zero value). A field another
// rule refuses outright (hostPath, nodeName, initContainers, ...) needs no entry: that rule
// refuses it first, naming itself. A null value is no value.

// judgedMetadata are judged on every object: kind, name and namespace (their own rules), the
// labels and annotations (metadata-key and the identity labels), and the owner reference the
// Helm reconciler writes after the gate, which a stored release record carries (owners).
var judgedMetadata = []string{
	"apiVersion", "kind", "metadata.name", "metadata.namespace", "metadata.labels", "metadata.annotations",
	"metadata.ownerReferences",
}

// judgedPod is a Deployment's pod spec as the chart renders it.
var judgedPod = []string{
	// service-account; placement (the template's or nothing); host-namespace (false only).
	"serviceAccountName", "serviceAccount", "automountServiceAccountToken",
	"runtimeClassName", "nodeSelector", "tolerations", "dnsPolicy", "shareProcessNamespace",
	"hostNetwork", "hostPID", "hostIPC", "hostUsers",
	// Exactly the template's (security-context), or the restricted standard; termination-grace.
	"securityContext", "terminationGracePeriodSeconds",
	// The chart's false; true would only add the namespace's Service addresses to the environment.
	"enableServiceLinks",
	// Exactly the workload's bare name, the instance's headless Service and its one search domain,
	// with bare names only (bare-names).
	"hostname", "subdomain", "dnsConfig.searches",
	// The admin's, by name: credentials the node pulls with, nothing the pod reads.
	"imagePullSecrets",
	// volume: scratch space (sized by resources), the flag Secret and the files ConfigMap.
	"volumes[].name", "volumes[].emptyDir.sizeLimit", "volumes[].emptyDir.medium",
	"volumes[].secret.secretName", "volumes[].secret.defaultMode",
	"volumes[].secret.items[].key", "volumes[].secret.items[].path", "volumes[].secret.items[].mode", // the workload's secret files
	"volumes[].configMap.name", "volumes[].configMap.items[].key", "volumes[].configMap.items[].path",
	"volumes[].configMap.items[].mode",
}

// judgedContainer is each container of the pod as the chart renders it, its main one's and its
// sidecars' alike.
var judgedContainer = []string{
	// image-registry; what runs, inside the container.
	"name", "image", "imagePullPolicy", "command", "args", "workingDir",
	// The pod's own ports (host-port).
	"ports[].name", "ports[].containerPort", "ports[].protocol",
	// Values, or a key of the flag Secret (secret-ref).
	"env[].name", "env[].value", "env[].valueFrom.secretKeyRef.name", "env[].valueFrom.secretKeyRef.key",
	// resources; exactly the template's (security-context), or the restricted standard.
	"resources.limits", "resources.requests", "securityContext",
	"volumeMounts[].name", "volumeMounts[].mountPath", "volumeMounts[].subPath", "volumeMounts[].readOnly",
}

// judgedProbe is a probe as the chart renders a template's: the kubelet checks the pod itself
// (probe-host), and the probe decides nothing but whether the pod is ready or restarted.
var judgedProbe = []string{
	"httpGet.path", "httpGet.port", "tcpSocket.port", "exec.command",
	"periodSeconds", "initialDelaySeconds", "timeoutSeconds", "failureThreshold",
}

// judgedNetworkPeer and judgedNetworkPort are a NetworkPolicy rule's peers (network-egress,
// network-ingress) and ports, which only narrow a rule.
var (
	judgedNetworkPeer = []string{"ipBlock", "namespaceSelector", "podSelector"}
	judgedNetworkPort = []string{"port", "protocol", "endPort"}
)

// judgedRoute is what a TLSRoute and an HTTPRoute share (gateway-route, ingress-host).
var judgedRoute = []string{
	"spec.parentRefs[].group", "spec.parentRefs[].kind", "spec.parentRefs[].namespace", "spec.parentRefs[].name",
	"spec.useDefaultGateways", "spec.hostnames",
	"spec.rules[].backendRefs[].group", "spec.rules[].backendRefs[].kind", "spec.rules[].backendRefs[].namespace",
	"spec.rules[].backendRefs[].name", "spec.rules[].backendRefs[].port",
	statusField, // the API server keeps a write's status out of the object (status subresource)
}

// judgedFields lists, per kind, the fields besides judgedMetadata that may be set.
var judgedFields = map[string][]string{
	"Deployment": slices.Concat(
		[]string{
			"spec.replicas", "spec.selector", // replicas, selector
			"spec.revisionHistoryLimit", // how many old ReplicaSets, all scaled to zero, are kept
			"spec.strategy{}",           // its zero value only: a strategy could surge pods past the replicas
			"spec.template.metadata.labels", "spec.template.metadata.annotations",
			statusField, // the API server keeps a write's status out of the object
		},
		under("spec.template.spec.", judgedPod),
		under("spec.template.spec.containers[].", judgedContainer),
		under("spec.template.spec.containers[].readinessProbe.", judgedProbe),
		under("spec.template.spec.containers[].startupProbe.", judgedProbe),
		under("spec.template.spec.containers[].livenessProbe.", judgedProbe),
	),
	"Service": {
		"spec.type", "spec.selector", // service, selector
		"spec.clusterIP", "spec.publishNotReadyAddresses", // the headless Service's None and true only (service-cluster-ip, service, bare-names)
		"spec.ports[].name", "spec.ports[].port", "spec.ports[].targetPort", "spec.ports[].protocol",
		statusField,
	},
	"ServiceAccount": {"automountServiceAccountToken"}, // service-account
	"Secret":         {"type", "data", "stringData"},   // secret
	"ConfigMap":      {"data"},                         // the files, text only
	"Namespace":      {"spec{}", statusField},          // namespace-metadata judges the rest
	"ResourceQuota":  {"spec", statusField},            // exactly the operator's (resource-quota)
	"LimitRange":     {"spec.limits"},                  // exactly the operator's (limit-range)
	"NetworkPolicy": slices.Concat(
		[]string{"spec.podSelector", "spec.policyTypes"}, // selector, network-policy
		under("spec.ingress[].from[].", judgedNetworkPeer), under("spec.ingress[].ports[].", judgedNetworkPort),
		under("spec.egress[].to[].", judgedNetworkPeer), under("spec.egress[].ports[].", judgedNetworkPort),
	),
	"Ingress": {
		"spec.ingressClassName", "spec.rules[].host", "spec.tls[].hosts", "spec.tls[].secretName", // ingress-class, ingress-host, ingress-tls
		"spec.rules[].http.paths[].path", "spec.rules[].http.paths[].pathType", // paths under the instance's own host
		"spec.rules[].http.paths[].backend.service.name", "spec.rules[].http.paths[].backend.service.port", // ingress
		statusField,
	},
	"TLSRoute":  judgedRoute,
	"HTTPRoute": judgedRoute,
}

// under prefixes every path.
func under(prefix string, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = prefix + p
	}
	return out
}

// fieldTree is the fields of a value that may be set: nil children allow everything under it.
type fieldTree struct {
	children map[string]*fieldTree
}

// judged is judgedFields as trees, one per kind.
var judged = func() map[string]*fieldTree {
	out := map[string]*fieldTree{}
	for kind, paths := range judgedFields {
		t := &fieldTree{children: map[string]*fieldTree{}}
		for _, p := range slices.Concat(judgedMetadata, paths) {
			t.add(p)
		}
		out[kind] = t
	}
	return out
}()

// add allows one path: "a.b[].c" is field c of every item of list b of field a.
func (t *fieldTree) add(path string) {
	path, emptyOnly := strings.CutSuffix(path, "{}")
	for _, seg := range strings.Split(strings.ReplaceAll(path, "[]", ".[]"), ".") {
		if t.children == nil {
			t.children = map[string]*fieldTree{}
		}
		if t.children[seg] == nil {
			t.children[seg] = &fieldTree{}
		}
		t = t.children[seg]
	}
	if emptyOnly {
		t.children = map[string]*fieldTree{}
	}
}

// unjudged returns the path of the first field of v (in key order) that t does not allow, or "".
func (t *fieldTree) unjudged(path string, v any) string {
	if t.children == nil {
		return ""
	}
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if v[k] == nil {
				continue
			}
			p := k
			if path != "" {
				p = path + "." + k
			}
			child := t.children[k]
			if child == nil {
				return p
			}
			if bad := child.unjudged(p, v[k]); bad != "" {
				return bad
			}
		}
	case []any:
		item := t.children["[]"]
		for i, e := range v {
			p := fmt.Sprintf("%s[%d]", path, i)
			if item == nil {
				return p
			}
			if bad := item.unjudged(p, e); bad != "" {
				return bad
			}
		}
	}
	return ""
}

// fields refuses a set field the tables do not list: no rule judged it. It runs after every other
// rule of the object, which name what they refuse more precisely.
func (c *checker) fields(o *object) error {
	t, ok := judged[o.kind]
	if !ok {
		return o.violation(ruleUnjudged, "no field of a %s is judged", o.kind)
	}
	if path := t.unjudged("", o.raw); path != "" {
		return o.violation(ruleUnjudged, "%s is not a field the gate judges", path)
	}
	return nil
}

// owners allows one owner reference only, the instance's Challenge: the Helm reconciler writes it
// on each namespaced object after the gate, and a stored release record carries it. Another
// owner's deletion would take the object with it, or wait for it.
func (c *checker) owners(o *object) error {
	refs := o.obj.GetOwnerReferences()
	if len(refs) == 0 {
		return nil
	}
	r := refs[0]
	if len(refs) > 1 || r.APIVersion != ctfv1alpha1.GroupVersion.String() || r.Kind != "Challenge" || r.Name != c.in.Release {
		return o.violation(ruleOwner, "the only owner reference may be the instance's Challenge %q", c.in.Release)
	}
	return nil
}
