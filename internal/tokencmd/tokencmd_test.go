package tokencmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/challenge-operator/challenge-operator/internal/token"
)

func TestRunMintsForAnInstancersAudienceAndLifetime(t *testing.T) {
	dir := t.TempDir()
	key := strings.Repeat("k", 32)
	if err := os.WriteFile(filepath.Join(dir, "2026"), []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	// A certificate mounted beside the key is not a second key to choose from.
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), []byte(strings.Repeat("c", 64)), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string
		// audience the minted token must verify for.
		audience string
	}{
		{name: "the default audience", args: []string{"--team", "team-a"}, audience: token.Audience},
		{name: "an instancer's own audience", args: []string{"--team", "team-a", "--audience", "ctf-2026"}, audience: "ctf-2026"},
		{name: "a week", args: []string{"--team", "team-a", "--ttl", "168h"}, audience: token.Audience},
		{name: "beyond the instancer's maximum", args: []string{"--team", "team-a", "--ttl", "87600h"}, wantErr: "longer than --max-lifetime"},
		{name: "within a raised maximum", args: []string{"--team", "team-a", "--ttl", "720h", "--max-lifetime", "720h"}, wantErr: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var out bytes.Buffer
			err := Run(append([]string{"--key-dir", dir}, tt.args...), &out)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			if tt.audience == "" {
				return
			}
			v := token.Verifier{Keys: token.Keys{"2026": []byte(key)}, Audience: tt.audience}
			team, err := v.Verify(strings.TrimSpace(out.String()), time.Now())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(team).To(Equal("team-a"))
		})
	}
}
