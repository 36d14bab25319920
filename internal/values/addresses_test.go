package values

import (
	"testing"

	. "github.com/onsi/gomega"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

func TestReferences(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  []string
	}{
		{"", nil},
		{"plain", nil},
		{"$(CHALLENGE_URL)", []string{"CHALLENGE_URL"}},
		{"$(A):$(B)/x", []string{"A", "B"}},
		{"$$(ESCAPED) $(REAL)", []string{"REAL"}},
		{"$$$(AFTER_ESCAPE)", []string{"AFTER_ESCAPE"}},
		{"$(UNCLOSED", nil},
		{"cost: 5$", nil},
	} {
		NewWithT(t).Expect(References(tc.value)).To(Equal(tc.want), tc.value)
	}
}

func env(pairs ...string) []any {
	out := []any{}
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, map[string]any{"name": pairs[i], "value": pairs[i+1]})
	}
	return out
}

func TestSplitLate(t *testing.T) {
	vars := map[string]string{"CHALLENGE_URL": "http://h/", "ADMIN_PUBLIC_HOST": "a.h"}
	for _, tc := range []struct {
		name                string
		env                 []any
		wantEarly, wantLate []any
	}{
		{"none uses an address: all early, in order", env("A", "1", "B", "$(A)"), env("A", "1", "B", "$(A)"), env()},
		{"a use and a use of that use, in order", env("BASE", "$(CHALLENGE_URL)", "X", "1", "API", "$(BASE)api"),
			env("X", "1"), env("BASE", "$(CHALLENGE_URL)", "API", "$(BASE)api")},
		{"a use before the late variable it names stays early (Kubernetes would not expand it either)", env("API", "$(BASE)api", "BASE", "$(CHALLENGE_URL)"),
			env("API", "$(BASE)api"), env("BASE", "$(CHALLENGE_URL)")},
		{"an escaped use is no use", env("LITERAL", "$$(CHALLENGE_URL)"), env("LITERAL", "$$(CHALLENGE_URL)"), env()},
		{"a variable named as an address stays early, so the operator's wins", env("ADMIN_PUBLIC_HOST", "$(CHALLENGE_URL)"),
			env("ADMIN_PUBLIC_HOST", "$(CHALLENGE_URL)"), env()},
		{"an unknown variable is no address", env("X", "$(NOT_AN_ADDRESS)"), env("X", "$(NOT_AN_ADDRESS)"), env()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			early, late := splitLate(tc.env, vars, nil)
			g.Expect(early).To(Equal(tc.wantEarly))
			g.Expect(late).To(Equal(tc.wantLate))
		})
	}
}

func TestAddressVariables(t *testing.T) {
	expose := func(typ, host string, https bool, port int64) map[string]any {
		return map[string]any{"type": typ, "host": host, "https": https, "port": port}
	}
	component := func(name string, exp map[string]any) map[string]any {
		return map[string]any{"name": name, "expose": exp}
	}
	for _, tc := range []struct {
		name string
		vals map[string]any
		want map[string]string
	}{
		{"an Ingress over HTTP", map[string]any{"expose": expose("Ingress", "i.ctf.example", false, 0)},
			map[string]string{"CHALLENGE_HOST": "i.ctf.example", "CHALLENGE_URL": "http://i.ctf.example/", "CHALLENGE_PORT": "80"}},
		{"an HTTPRoute on an HTTPS listener of port 8443", map[string]any{"expose": expose("HTTPRoute", "i.ctf.example", true, 8443)},
			map[string]string{"CHALLENGE_HOST": "i.ctf.example", "CHALLENGE_URL": "https://i.ctf.example:8443/", "CHALLENGE_PORT": "8443"}},
		{"an HTTPS Ingress", map[string]any{"expose": expose("Ingress", "i.ctf.example", true, 0)},
			map[string]string{"CHALLENGE_HOST": "i.ctf.example", "CHALLENGE_URL": "https://i.ctf.example/", "CHALLENGE_PORT": "443"}},
		{"a TLSRoute: no URL, the TLS listener's port", map[string]any{"expose": expose("TLSRoute", "i.ctf.example", false, 0)},
			map[string]string{"CHALLENGE_HOST": "i.ctf.example", "CHALLENGE_PORT": "443"}},
		{"a TLSRoute on a listener of port 8444", map[string]any{"expose": expose("TLSRoute", "i.ctf.example", false, 8444)},
			map[string]string{"CHALLENGE_HOST": "i.ctf.example", "CHALLENGE_PORT": "8444"}},
		{"a NodePort: allocated after the render, none", map[string]any{"expose": expose("NodePort", "i.ctf.example", false, 0)}, map[string]string{}},
		{"no domain, no host, none", map[string]any{"expose": expose("Ingress", "", false, 0)}, map[string]string{}},
		{"an exposed component's and an internal one's", map[string]any{"expose": expose("ClusterIP", "", false, 0), "components": []any{
			component("web-bot", expose("HTTPRoute", "b.ctf.example", false, 0)), component("db", expose("ClusterIP", "d.ctf.example", false, 0)),
		}}, map[string]string{"WEB_BOT_PUBLIC_HOST": "b.ctf.example", "WEB_BOT_PUBLIC_URL": "http://b.ctf.example/", "WEB_BOT_PUBLIC_PORT": "80"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(addressVariables(tc.vals)).To(Equal(tc.want))
		})
	}
}

func TestWithAddresses(t *testing.T) {
	g := NewWithT(t)
	vals := map[string]any{
		"expose": map[string]any{"type": "HTTPRoute", "host": "i.ctf.example", "https": false, "port": int64(0)},
		"env":    env("BASE", "$(CHALLENGE_URL)", "PORT", "$(CHALLENGE_PORT)", "BOT", "$(BOT_PUBLIC_URL)"),
		"components": []any{map[string]any{"name": "bot", "env": env("HOME_URL", "$(CHALLENGE_URL)"),
			"expose":   map[string]any{"type": "Ingress", "host": "b.ctf.example", "https": true},
			"sidecars": []any{map[string]any{"name": "browser", "env": env("START", "$(BOT_PUBLIC_URL)")}}}},
	}
	withAddresses(vals, nil)
	g.Expect(vals["env"]).To(Equal(env()))
	g.Expect(vals["lateEnv"]).To(Equal(env("BASE", "$(CHALLENGE_URL)", "PORT", "$(CHALLENGE_PORT)", "BOT", "$(BOT_PUBLIC_URL)")))
	g.Expect(vals["addresses"]).To(Equal(env("BOT_PUBLIC_URL", "https://b.ctf.example/", "CHALLENGE_PORT", "80")),
		"sorted, without CHALLENGE_HOST and CHALLENGE_URL, which the chart writes")
	bot := vals["components"].([]any)[0].(map[string]any)
	g.Expect(bot["lateEnv"]).To(Equal(env("HOME_URL", "$(CHALLENGE_URL)")))
	g.Expect(bot["addresses"]).To(BeEmpty())
	browser := bot["sidecars"].([]any)[0].(map[string]any)
	g.Expect(browser["lateEnv"]).To(Equal(env("START", "$(BOT_PUBLIC_URL)")), "a sidecar's too")
	g.Expect(browser["addresses"]).To(Equal(env("BOT_PUBLIC_URL", "https://b.ctf.example/")))

	// The Gateway's port read later: the addresses follow, the split stays.
	vals["expose"].(map[string]any)["port"] = int64(8080)
	withAddresses(vals, nil)
	g.Expect(vals["lateEnv"]).To(HaveLen(3))
	g.Expect(vals["addresses"]).To(ContainElement(map[string]any{"name": "CHALLENGE_PORT", "value": "8080"}))
}

// TestEnvUsesItsContainersSecretEnv: a variable built from a secretEnv
// variable of its own container ("postgres://app:$(DB_PASSWORD)@db/app"), or
// from one that is, moves after the secretEnv, so that Kubernetes expands
// it; one that names another container's secretEnv variable stays where it
// was, and Kubernetes leaves it as written: no container reads another's
// secret.
func TestEnvUsesItsContainersSecretEnv(t *testing.T) {
	g := NewWithT(t)
	vals := map[string]any{
		"env": env("DATABASE_URL", "postgres://app:$(DB_PASSWORD)@db/app", "DSN", "$(DATABASE_URL)?sslmode=disable", "PLAIN", "x"),
		"components": []any{map[string]any{"name": "db", "env": env("COPY", "$(DB_PASSWORD)", "OWN", "$(ROOT_PASSWORD)"),
			"secretEnv": []any{map[string]any{"name": "ROOT_PASSWORD", "key": "db.env.ROOT_PASSWORD"}}}},
	}
	withAddresses(vals, []ctfv1alpha1.SecretEnvVar{{Name: "DB_PASSWORD"}})
	g.Expect(vals["env"]).To(Equal(env("PLAIN", "x")))
	g.Expect(vals["lateEnv"]).To(Equal(env("DATABASE_URL", "postgres://app:$(DB_PASSWORD)@db/app", "DSN", "$(DATABASE_URL)?sslmode=disable")))
	g.Expect(vals["addresses"]).To(BeEmpty(), "a secretEnv variable is no address: the chart writes it already")
	db := vals["components"].([]any)[0].(map[string]any)
	g.Expect(db["env"]).To(Equal(env("COPY", "$(DB_PASSWORD)")), "the primary's secret is not the component's")
	g.Expect(db["lateEnv"]).To(Equal(env("OWN", "$(ROOT_PASSWORD)")))
}

// TestExposedPortsHaveAddressVariables: a port exposed by exposePorts has its
// own host, URL and port variables, after its workload's name (CHALLENGE for
// the primary's) and its own, which a container's env may use as it uses
// CHALLENGE_URL; two exposures that would share a variable are refused,
// naming both.
func TestExposedPortsHaveAddressVariables(t *testing.T) {
	g := NewWithT(t)
	vals := map[string]any{
		"expose": map[string]any{"type": "ClusterIP"},
		"exposePorts": []any{map[string]any{"port": "admin", "expose": map[string]any{"type": "Ingress", "host": "a.ctf.example", "https": true}},
			map[string]any{"port": "nc", "expose": map[string]any{"type": "TLSRoute", "host": "n.ctf.example", "https": false, "port": int64(8443)}}},
		"env": env("ADMIN", "$(CHALLENGE_ADMIN_PUBLIC_URL)", "NC", "$(CHALLENGE_NC_PUBLIC_HOST):$(CHALLENGE_NC_PUBLIC_PORT)"),
		"components": []any{map[string]any{"name": "shell", "expose": map[string]any{"type": "ClusterIP"},
			"exposePorts": []any{map[string]any{"port": "ssh", "expose": map[string]any{"type": "TLSRoute", "host": "s.ctf.example"}}},
			"env":         env("SELF", "$(SHELL_SSH_PUBLIC_HOST)")}},
	}
	g.Expect(checkAddressNames(vals)).To(Succeed())
	withAddresses(vals, nil)
	g.Expect(vals["addresses"]).To(Equal(env("CHALLENGE_ADMIN_PUBLIC_URL", "https://a.ctf.example/",
		"CHALLENGE_NC_PUBLIC_HOST", "n.ctf.example", "CHALLENGE_NC_PUBLIC_PORT", "8443")))
	shell := vals["components"].([]any)[0].(map[string]any)
	g.Expect(shell["addresses"]).To(Equal(env("SHELL_SSH_PUBLIC_HOST", "s.ctf.example")))

	// Component "shell-ssh" would set SHELL_SSH_PUBLIC_HOST too.
	vals["components"] = append(vals["components"].([]any), map[string]any{"name": "shell-ssh",
		"expose": map[string]any{"type": "Ingress", "host": "x.ctf.example"}})
	err := checkAddressNames(vals)
	g.Expect(lifecycle.IsReason(err, lifecycle.ReasonPolicyViolation)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("component shell's port ssh and component shell-ssh would both set SHELL_SSH_PUBLIC_HOST"))
}
