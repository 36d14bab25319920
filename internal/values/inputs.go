package values

import (
	"helm.sh/helm/v3/pkg/chartutil"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/endpoint"
)

// Inputs are what a render reads from the cluster beyond the Challenge and
// its template (render.Translator): who claimed a pooled instance, the values
// of the organiser's Secrets the template names, the shared Services it lets
// its instances reach, and the Gateways its routes attach to. ComposeWith
// writes each where the chart takes it; Compose, for the checks that read
// nothing, leaves them all out.
type Inputs struct {
	// Claimant is the team whose Challenge claimed the instance, a pooled
	// one; "" for any other.
	Claimant string
	// Flag is the value of the template's flag for the instance's team.
	Flag string
	// Flags are the values of the template's named flags, by name.
	Flags map[string]string
	// Secrets are the values of the Secrets and keys the template's
	// containers read (secretEnv, secret files), each read and checked
	// through the one trust check (organisersecret).
	Secrets map[ctfv1alpha1.SecretKeyRef]string
	// Shared are the organiser's Services the template lets its instances
	// reach.
	Shared []SharedService
	// Gateways are the Gateways the instance's routes attach to, as the
	// cache holds them: one not there yet is missing, and its route's
	// address names no port until it is.
	Gateways map[ctfv1alpha1.GatewayRef]*gatewayv1.Gateway
}

// ComposeWith returns the chart values of c, an instance of tmpl, as Compose
// does, with what the render read from the cluster (in) written where the
// chart takes it: nothing is written into them after.
func ComposeWith(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, settings Settings, in Inputs) (chartutil.Values, error) {
	return compose(c, tmpl, settings, &in, instanceWorkloads(c, tmpl, settings.IngressDomain))
}

// secretEnvValuesOf are the primary's secretEnv variables with their values
// (in, nil before any read: none), each under its key of the instance's
// Secret.
func secretEnvValuesOf(primary *workload, in *Inputs) []any {
	if in == nil {
		return []any{}
	}
	env := make([]any, 0, len(primary.secretEnv))
	for _, e := range primary.secretEnv {
		entry := envEntry(e.Name, in.Secrets[e.Secret])
		entry["key"] = primary.secretEnvKey(e.Name)
		env = append(env, entry)
	}
	return env
}

// primaryEnvKey is the key of the primary's secretEnv value in the
// instance's Secret, as it always was.
func primaryEnvKey(name string) string { return "env." + name }

// secretDataOf are the values of the instance's Secret beside its flag and
// the primary's secretEnv (in, nil before any read: none), each under the
// key its container reads, workload by workload: a component's secretEnv,
// then its main container's secret files, then its sidecars' secretEnv and
// secret files.
func secretDataOf(workloads []workload, in *Inputs) []any {
	data := []any{}
	if in == nil {
		return data
	}
	for i := range workloads {
		w := &workloads[i]
		if w.component != nil { // the primary's go to secretEnv
			for _, e := range w.secretEnv {
				data = append(data, secretEntry(w.secretEnvKey(e.Name), in.Secrets[e.Secret]))
			}
		}
		data = append(data, secretFileEntries(w.filePrefix(), w.secretFiles, in)...)
		for _, sc := range w.sidecars {
			for _, e := range sc.SecretEnv {
				data = append(data, secretEntry(sidecarEnvKey(w.workloadName(), sc.Name, e.Name), in.Secrets[e.Secret]))
			}
			data = append(data, secretFileEntries(sidecarFilePrefix(w.workloadName(), sc.Name), sc.SecretFiles, in)...)
		}
	}
	return data
}

// secretFileEntries are one container's secret files, keyed after prefix as
// secretFilesFor keys them.
func secretFileEntries(prefix string, files []ctfv1alpha1.SecretFile, in *Inputs) []any {
	out := make([]any, 0, len(files))
	for i, f := range files {
		out = append(out, secretEntry(secretFileKey(prefix, i), in.Secrets[f.Secret]))
	}
	return out
}

// secretEntry is one value of the instance's Secret as secretData holds it.
func secretEntry(key, value string) map[string]any {
	return map[string]any{"key": key, "value": value}
}

// sharedServicesOf are the NetworkPolicy's peers of the shared Services in
// (none before any read).
func sharedServicesOf(in *Inputs) ([]any, error) {
	if in == nil || len(in.Shared) == 0 {
		return []any{}, nil
	}
	m, err := toMap(map[string]any{"sharedServices": in.Shared})
	if err != nil {
		return nil, err
	}
	list, _ := m["sharedServices"].([]any)
	return list, nil
}

// RouteGateways are the Gateways the routes of an instance whose values are
// vals attach to: each exposure's (addressSources), when it is a route.
func RouteGateways(vals chartutil.Values) []ctfv1alpha1.GatewayRef {
	var out []ctfv1alpha1.GatewayRef
	for _, src := range addressSources(vals) {
		if ref, ok := routeGateway(src.expose); ok {
			out = append(out, ref)
		}
	}
	return out
}

// routeGateway is the Gateway an exposure's route attaches to, if it is a
// route (HTTPRoute, TLSRoute).
func routeGateway(exp map[string]any) (ctfv1alpha1.GatewayRef, bool) {
	gw, _ := exp["gateway"].(map[string]any)
	typ, _ := exp["type"].(string)
	if gw == nil || (typ != string(ctfv1alpha1.ExposeHTTPRoute) && typ != string(ctfv1alpha1.ExposeTLSRoute)) {
		return ctfv1alpha1.GatewayRef{}, false
	}
	ns, _ := gw["namespace"].(string)
	name, _ := gw[nameKey].(string)
	return ctfv1alpha1.GatewayRef{Namespace: ns, Name: name}, true
}

// withRoutePorts writes into the expose values of the instance, of each
// exposed component and of each exposed port the port of the Gateway
// listener its route is served on, when its address must name it (neither
// 80 for HTTP nor 443 for HTTPS or TLS), so that CHALLENGE_URL,
// CHALLENGE_PORT and the other address variables are the addresses
// status.endpoint shows. A Gateway not there yet leaves it out: the status
// waits for it too.
func withRoutePorts(vals map[string]any, gateways map[ctfv1alpha1.GatewayRef]*gatewayv1.Gateway) {
	for _, src := range addressSources(vals) {
		exp := src.expose
		ref, ok := routeGateway(exp)
		gw := gateways[ref]
		if !ok || gw == nil {
			continue
		}
		host, _ := exp["host"].(string)
		https, _ := exp["https"].(bool)
		http := exp["type"] == string(ctfv1alpha1.ExposeHTTPRoute)
		if l, ok := endpoint.Listener(gw, &endpoint.Route{Host: host, HTTP: http, TLS: https || !http}, nil); ok {
			if port := endpoint.URLPort(l.Port, https || !http); port != 0 {
				exp["port"] = int64(port)
			}
		}
	}
}
