package values

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// The instance's own address, in every container of an instance with a
// host of its own (Ingress, HTTPRoute, TLSRoute), and what its environment
// may build from it ("BASE_URL=$(CHALLENGE_URL)").
const (
	InstanceHostVariable = "CHALLENGE_HOST"
	InstanceURLVariable  = "CHALLENGE_URL"
	InstancePortVariable = "CHALLENGE_PORT"
)

// PublicVariables are the address variables of an exposed component: its
// own host, URL (HTTP exposures) and port, as teams reach it ("ADMIN" for
// "admin": ADMIN_PUBLIC_HOST, ADMIN_PUBLIC_URL, ADMIN_PUBLIC_PORT).
func PublicVariables(component string) (host, url, port string) {
	prefix := strings.ToUpper(strings.ReplaceAll(component, "-", "_")) + "_PUBLIC_"
	return prefix + "HOST", prefix + "URL", prefix + "PORT"
}

// PortVariables are the address variables of a workload's port exposed by
// exposePorts: its host, URL (HTTP exposures) and port, after the
// workload's name ("" the primary's, CHALLENGE) and the port's
// ("CHALLENGE_NC_PUBLIC_HOST" for the primary's port "nc",
// "SHELL_SSH_PUBLIC_PORT" for component shell's port "ssh"). The
// component's own are PublicVariables.
func PortVariables(component, port string) (host, url, portVar string) {
	workload := cmp.Or(component, "challenge")
	return PublicVariables(workload + "_" + port)
}

// addressVariables are the address variables of an instance whose values
// are vals: its own (when it has a host), each exposed component's, and
// each port's its workload exposes by exposePorts (PortVariables). NodePort
// and LoadBalancer addresses are left out: the API server and the cloud
// allocate them after the pods' template is rendered.
func addressVariables(vals map[string]any) map[string]string {
	out := map[string]string{}
	for _, v := range addressSources(vals) {
		addExposure(out, v.expose, v.host, v.url, v.port)
	}
	return out
}

// addressSource is one exposure whose address the variables host, url and
// port carry; what names it in an error.
type addressSource struct {
	expose          map[string]any
	host, url, port string
	what            string
}

// addressSources are the exposures of an instance whose values are vals
// whose addresses its containers may use: the primary's first port, each
// component's, and each workload's exposePorts.
func addressSources(vals map[string]any) []addressSource {
	var out []addressSource
	for i, w := range workloadsOf(vals) {
		name := ""
		if i > 0 {
			name, _ = w[nameKey].(string)
		}
		if exp, ok := w["expose"].(map[string]any); ok && (i == 0 || name != "") {
			host, url, port := InstanceHostVariable, InstanceURLVariable, InstancePortVariable
			if i > 0 {
				host, url, port = PublicVariables(name)
			}
			out = append(out, addressSource{expose: exp, host: host, url: url, port: port, what: workloadWhat(name)})
		}
		for _, e := range listOf(w, "exposePorts") {
			m, _ := e.(map[string]any)
			portName, _ := m["port"].(string)
			exp, _ := m["expose"].(map[string]any)
			if exp == nil || portName == "" || (i > 0 && name == "") {
				continue
			}
			host, url, port := PortVariables(name, portName)
			out = append(out, addressSource{expose: exp, host: host, url: url, port: port, what: workloadWhat(name) + "'s port " + portName})
		}
	}
	return out
}

// workloadWhat names a workload in a message.
func workloadWhat(component string) string {
	if component == "" {
		return "the primary"
	}
	return "component " + component
}

// checkAddressNames refuses an instance two of whose exposures would share
// an address variable (component "a" exposing its port "b" and a component
// "a-b" both make A_B_PUBLIC_HOST): one of them would silently hide the
// other's address.
func checkAddressNames(vals map[string]any) error {
	seen := map[string]string{}
	for _, v := range addressSources(vals) {
		if other, ok := seen[v.host]; ok {
			return lifecycle.Errorf(lifecycle.ReasonPolicyViolation, "exposePorts: %s and %s would both set %s (and its _URL and _PORT): rename a component or a port",
				other, v.what, v.host)
		}
		seen[v.host] = v.what
	}
	return nil
}

// addExposure adds an exposure's host, URL and port under the names given,
// when it has a host of its own. The URL is the one the chart writes into
// CHALLENGE_URL; the port is the URL's, or the TLS listener's for a
// TLSRoute (443 unless the translator read another from the Gateway).
func addExposure(out map[string]string, exp map[string]any, hostName, urlName, portName string) {
	typ, _ := exp["type"].(string)
	host, _ := exp["host"].(string)
	if host == "" || !slices.Contains([]string{string(ctfv1alpha1.ExposeIngress), string(ctfv1alpha1.ExposeHTTPRoute), string(ctfv1alpha1.ExposeTLSRoute)}, typ) {
		return
	}
	https, _ := exp["https"].(bool)
	port := exposePort(exp)
	out[hostName] = host
	if typ == string(ctfv1alpha1.ExposeTLSRoute) {
		if port == 0 {
			port = 443
		}
		out[portName] = fmt.Sprint(port)
		return
	}
	scheme, hostPort := "http", host
	if https {
		scheme = "https"
	}
	if port != 0 {
		hostPort = fmt.Sprintf("%s:%d", host, port)
	} else if https {
		port = 443
	} else {
		port = 80
	}
	out[urlName] = fmt.Sprintf("%s://%s/", scheme, hostPort)
	out[portName] = fmt.Sprint(port)
}

// exposePort is expose.port: the listener's port when a URL must name it.
func exposePort(exp map[string]any) int64 {
	switch p := exp["port"].(type) {
	case int64:
		return p
	case float64:
		return int64(p)
	case int:
		return int64(p)
	}
	return 0
}

// withAddresses lets every container's environment use the address
// variables and its own secretEnv variables: of each container's env (each
// workload's main container's and its sidecars'), the variables whose
// values use an address variable, a secretEnv variable of the same
// container, or a variable that does, move to lateEnv, which the chart
// writes after the container's secretEnv, the instance's own address
// (CHALLENGE_HOST, CHALLENGE_URL) and the other address variables those
// values use (addresses), so that Kubernetes expands them
// ("DATABASE_URL=postgres://app:$(DB_PASSWORD)@db/app"): the secret value
// never enters the values, only its name. A container whose env uses none
// renders as it always did. primarySecretEnv are the primary's main
// container's secretEnv, whose values are in vals only once read. Called
// once the listeners' ports are in the values (withRoutePorts); calling it
// again recomputes the addresses.
func withAddresses(vals map[string]any, primarySecretEnv []ctfv1alpha1.SecretEnvVar) {
	vars := addressVariables(vals)
	hostEnv := vars[InstanceHostVariable] != ""
	for i, w := range workloadsOf(vals) {
		secret := secretEnvNames(w)
		if i == 0 {
			secret = map[string]bool{}
			for _, e := range primarySecretEnv {
				secret[e.Name] = true
			}
		}
		containerAddresses(w, vars, secret, hostEnv)
		for _, sidecar := range sidecarsOf(w) {
			containerAddresses(sidecar, vars, secretEnvNames(sidecar), hostEnv)
		}
	}
}

// secretEnvNames are the names of the variables a container's values read
// from the instance's Secret (its secretEnv).
func secretEnvNames(ctr map[string]any) map[string]bool {
	out := map[string]bool{}
	for _, e := range listOf(ctr, "secretEnv") {
		name, _ := envPair(e)
		out[name] = true
	}
	return out
}

// containerAddresses splits one container's env (once), its secretEnv
// variables named by secret, and writes the address variables its lateEnv
// uses, but those the chart writes itself (CHALLENGE_HOST and CHALLENGE_URL
// when the instance has a host).
func containerAddresses(ctr map[string]any, vars map[string]string, secret map[string]bool, hostEnv bool) {
	if _, split := ctr["lateEnv"]; !split {
		env, _ := ctr["env"].([]any)
		early, late := splitLate(env, vars, secret)
		ctr["env"], ctr["lateEnv"] = early, late
	}
	late, _ := ctr["lateEnv"].([]any)
	used := map[string]bool{}
	for _, e := range late {
		_, value := envPair(e)
		for _, name := range References(value) {
			used[name] = true
		}
	}
	names := make([]string, 0, len(used))
	for name := range used {
		if _, ok := vars[name]; !ok || (hostEnv && (name == InstanceHostVariable || name == InstanceURLVariable)) {
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	addresses := make([]any, 0, len(names))
	for _, name := range names {
		addresses = append(addresses, envEntry(name, vars[name]))
	}
	ctr["addresses"] = addresses
}

// splitLate splits env into the variables that use no address variable nor
// secretEnv variable (secret) and those that do, directly or through an
// earlier one of them, each in its order. A variable named as an address
// variable stays early: the operator's own value comes after it and wins.
func splitLate(env []any, vars map[string]string, secret map[string]bool) (early, late []any) {
	early, late = []any{}, []any{}
	isLate := map[string]bool{}
	for _, e := range env {
		name, value := envPair(e)
		uses := false
		for _, ref := range References(value) {
			if _, addr := vars[ref]; addr || secret[ref] || isLate[ref] {
				uses = true
			}
		}
		if _, addr := vars[name]; uses && !addr {
			isLate[name] = true
			late = append(late, e)
			continue
		}
		early = append(early, e)
	}
	return early, late
}

// References are the variables a value uses as Kubernetes expands them:
// "$(NAME)", with "$$" escaping a dollar.
func References(value string) []string {
	var out []string
	for i := 0; i < len(value); i++ {
		if value[i] != '$' || i+1 >= len(value) {
			continue
		}
		switch value[i+1] {
		case '$':
			i++
		case '(':
			if end := strings.IndexByte(value[i+2:], ')'); end >= 0 {
				out = append(out, value[i+2:i+2+end])
				i += 2 + end
			}
		}
	}
	return out
}

// envEntry is an environment variable as the chart's values hold it.
func envEntry(name, value string) map[string]any {
	return map[string]any{nameKey: name, "value": value}
}

// envPair reads an environment variable of the chart's values.
func envPair(e any) (name, value string) {
	m, _ := e.(map[string]any)
	name, _ = m[nameKey].(string)
	value, _ = m["value"].(string)
	return name, value
}
