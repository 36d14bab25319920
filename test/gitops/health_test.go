package gitops_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	lua "github.com/yuin/gopher-lua"
	"sigs.k8s.io/yaml"

	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// group is the API group's directory of config/argocd: one directory per
// kind, each with health.lua and its tests in Argo CD's layout.
var group = filepath.Join(controlplane.RepoRoot(), "config", "argocd", "ctf.challenge-operator.io")

// kinds are the kinds that have a health check.
var kinds = []string{"Challenge", "ChallengeTemplate"}

// TestArgoCDHealth runs each kind's health.lua as Argo CD does (the object
// as the global obj, the returned table as the health) on every case of its
// health_test.yaml.
func TestArgoCDHealth(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) { runHealthTests(t, filepath.Join(group, kind)) })
	}
}

// TestArgoCDHealthChecksAreListed: every kind directory is in kinds, so
// none is shipped untested.
func TestArgoCDHealthChecksAreListed(t *testing.T) {
	g := NewWithT(t)
	entries, err := os.ReadDir(group)
	g.Expect(err).NotTo(HaveOccurred())
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	g.Expect(dirs).To(ConsistOf(kinds))
}

func runHealthTests(t *testing.T, check string) {
	g := NewWithT(t)
	script, err := os.ReadFile(filepath.Join(check, "health.lua"))
	g.Expect(err).NotTo(HaveOccurred())
	var cases struct {
		Tests []struct {
			InputPath    string `json:"inputPath"`
			HealthStatus struct {
				Status  string `json:"status"`
				Message string `json:"message"`
			} `json:"healthStatus"`
		} `json:"tests"`
	}
	raw, err := os.ReadFile(filepath.Join(check, "health_test.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(yaml.UnmarshalStrict(raw, &cases)).To(Succeed())
	g.Expect(cases.Tests).NotTo(BeEmpty())

	statuses := map[string]bool{}
	for _, c := range cases.Tests {
		var obj map[string]any
		input, err := os.ReadFile(filepath.Join(check, c.InputPath))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(yaml.Unmarshal(input, &obj)).To(Succeed())

		L := argoCDState(g)
		L.SetGlobal("obj", toLua(L, obj))
		g.Expect(L.DoString(string(script))).To(Succeed(), c.InputPath)
		health, ok := L.Get(-1).(*lua.LTable)
		g.Expect(ok).To(BeTrue(), "%s: health.lua returns a table", c.InputPath)
		g.Expect(health.RawGetString("status").String()).To(Equal(c.HealthStatus.Status), c.InputPath)
		g.Expect(health.RawGetString("message").String()).To(Equal(c.HealthStatus.Message), c.InputPath)
		L.Close()
		statuses[c.HealthStatus.Status] = true
	}
	g.Expect(statuses).To(HaveKey("Healthy"))
	g.Expect(statuses).To(HaveKey("Progressing"))
	g.Expect(statuses).To(HaveKey("Degraded"))
}

// argoCDState is a Lua state with the libraries Argo CD opens for health
// checks, package, base (ipairs, pairs) and table, and no others (no
// string or math), so that a script that would fail there fails here.
func argoCDState(g Gomega) *lua.LState {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	for name, open := range map[string]lua.LGFunction{
		lua.LoadLibName: lua.OpenPackage,
		lua.BaseLibName: lua.OpenBase,
		lua.TabLibName:  lua.OpenTable,
	} {
		g.Expect(L.CallByParam(lua.P{Fn: L.NewFunction(open), Protect: true}, lua.LString(name))).To(Succeed())
	}
	return L
}

// TestArgoCDConfigMapCarriesTheChecks: the argocd-cm patch embeds each
// kind's health.lua as it is, and nothing else.
func TestArgoCDConfigMapCarriesTheChecks(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join(group, "..", "argocd-cm.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var cm struct {
		Data map[string]string `json:"data"`
	}
	g.Expect(yaml.Unmarshal(raw, &cm)).To(Succeed())
	want := map[string]string{}
	for _, kind := range kinds {
		script, err := os.ReadFile(filepath.Join(group, kind, "health.lua"))
		g.Expect(err).NotTo(HaveOccurred())
		want["resource.customizations.health.ctf.challenge-operator.io_"+kind] = string(script)
	}
	g.Expect(cm.Data).To(Equal(want))
}

// toLua converts a decoded JSON value into Lua values, as Argo CD hands
// objects to its scripts.
func toLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []any:
		t := L.NewTable()
		for i, e := range v {
			t.RawSetInt(i+1, toLua(L, e))
		}
		return t
	case map[string]any:
		t := L.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	}
	return lua.LNil
}
