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

var check = filepath.Join(controlplane.RepoRoot(), "config", "argocd", "ctf.challenge-operator.io", "Challenge")

// TestArgoCDHealth runs health.lua as Argo CD does (the object as the
// global obj, the returned table as the health) on every case of
// health_test.yaml.
func TestArgoCDHealth(t *testing.T) {
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

		L := lua.NewState(lua.Options{SkipOpenLibs: true})
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

// TestArgoCDConfigMapCarriesTheCheck: the argocd-cm patch embeds health.lua
// as it is.
func TestArgoCDConfigMapCarriesTheCheck(t *testing.T) {
	g := NewWithT(t)
	script, err := os.ReadFile(filepath.Join(check, "health.lua"))
	g.Expect(err).NotTo(HaveOccurred())
	raw, err := os.ReadFile(filepath.Join(check, "..", "..", "argocd-cm.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var cm struct {
		Data map[string]string `json:"data"`
	}
	g.Expect(yaml.Unmarshal(raw, &cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("resource.customizations.health.ctf.challenge-operator.io_Challenge", string(script)))
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
