package action

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/storage/driver"
)

func TestRedactedCutsTheFlagOutOfErrors(t *testing.T) {
	const secret = "CTF{s3cr3t}\n"
	vals := map[string]any{"flag": map[string]any{"value": secret}}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"raw", errors.New("bad value CTF{s3cr3t}\n here"), "bad value [redacted] here"},
		{"Go-quoted", fmt.Errorf("flag.value: %q does not match", secret), `flag.value: "[redacted]" does not match`},
		{"trimmed", errors.New("got CTF{s3cr3t}"), "got [redacted]"},
		{"no flag in it", errors.New("quota exceeded"), "quota exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := redacted(tt.err, vals)
			g.Expect(got.Error()).To(Equal(tt.want))
			g.Expect(got.Error()).NotTo(ContainSubstring("s3cr3t"))
		})
	}
	g := NewWithT(t)
	g.Expect(redacted(nil, vals)).To(Succeed())
	g.Expect(errors.Is(redacted(fmt.Errorf("%w: CTF{s3cr3t}", driver.ErrReleaseNotFound), vals), driver.ErrReleaseNotFound)).To(BeTrue(), "still unwraps")
	g.Expect(redacted(errors.New("a b c"), map[string]any{"flag": map[string]any{"value": "b"}}).Error()).To(Equal("a b c"), "a flag too short to cut is left")
	g.Expect(redacted(errors.New("x"), map[string]any{}).Error()).To(Equal("x"), "no flag")
}

// TestRedactedCutsSecretEnvOutOfErrors: the values of a template's secretEnv
// live in the same Secret as the flag, and are cut out of errors as it is.
func TestRedactedCutsSecretEnvOutOfErrors(t *testing.T) {
	g := NewWithT(t)
	vals := map[string]any{
		"flag":      map[string]any{"value": "CTF{x-flag}"},
		"secretEnv": []any{map[string]any{"name": "API_KEY", "value": "sk-live-123456"}, map[string]any{"name": "PW", "value": "hunter2hunter2"}},
	}
	got := redacted(fmt.Errorf("secretEnv[1].value: %q is bad; also sk-live-123456 and CTF{x-flag}", "hunter2hunter2"), vals)
	g.Expect(got.Error()).To(Equal(`secretEnv[1].value: "[redacted]" is bad; also [redacted] and [redacted]`))
}

// TestRedactedCutsSecretDataOutOfErrors: a component's secretEnv values and
// the secret files live in the same Secret, and are cut out of errors too,
// a file's lines as Go and JSON quote them.
func TestRedactedCutsSecretDataOutOfErrors(t *testing.T) {
	g := NewWithT(t)
	key := "-----BEGIN KEY-----\nabc\n-----END KEY-----\n"
	vals := map[string]any{"secretData": []any{map[string]any{"key": "db.env.PW", "value": "db-password"}, map[string]any{"key": "file.0", "value": key}}}
	got := redacted(fmt.Errorf("secretData[1].value: %q is bad; secretData[0] db-password", key), vals)
	g.Expect(got.Error()).To(Equal(`secretData[1].value: "[redacted]" is bad; secretData[0] [redacted]`))
}
