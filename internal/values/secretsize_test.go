package values

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// TestCheckSecretSize: the flag, the secretEnv values and the secret files
// together fit Helm's release record, or the instance is refused with the
// sizes, never a value.
func TestCheckSecretSize(t *testing.T) {
	entry := func(n int) any { return map[string]any{"key": "file.0", "value": strings.Repeat("s", n)} }
	for _, tc := range []struct {
		name  string
		vals  map[string]any
		error bool
	}{
		{"nothing", map[string]any{}, false},
		{"a flag and a few values", map[string]any{"flag": map[string]any{"value": "CTF{x}"}, "secretEnv": []any{entry(100)}, "secretData": []any{entry(64 << 10)}}, false},
		{"exactly the bound", map[string]any{"secretData": []any{entry(MaxSecretBytes - 6), entry(0)}, "flag": map[string]any{"value": "CTF{x}"}}, false},
		{"eight containers of eight 64 KiB files", map[string]any{"secretData": func() []any {
			out := []any{}
			for range 64 {
				out = append(out, entry(64<<10))
			}
			return out
		}()}, true},
		{"one byte over, by the flag", map[string]any{"secretData": []any{entry(MaxSecretBytes)}, "flag": map[string]any{"value": "x"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := checkSecretSize(tc.vals)
			if !tc.error {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(lifecycle.IsReason(err, lifecycle.ReasonSecretFileInvalid)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).NotTo(ContainSubstring("sss"), "no value in the error")
		})
	}
}
