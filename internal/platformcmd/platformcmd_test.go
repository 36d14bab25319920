package platformcmd

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/challenge-operator/challenge-operator/internal/platformauth"
	"github.com/challenge-operator/challenge-operator/internal/token"
)

// TestRunSignsEachCall: the subcommand's call passes the instancer's own
// check of a platform call (platformauth.Verifier) for the very body it
// sends, and prints the answer; a call it cannot make is refused before
// anything is sent.
func TestRunSignsEachCall(t *testing.T) {
	g := NewWithT(t)
	key := []byte("the platform's key, thirty-two bytes or more")
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "ctfd"), key, 0o600)).To(Succeed())
	replays := platformauth.NewReplayCache(0)
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		raw := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if err := (platformauth.Verifier{Keys: token.Keys{"ctfd": key}, Replays: replays}).Verify(raw, r.Method, r.URL.RequestURI(), body, time.Now()); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		got = append(got, r.URL.Path+" "+string(body))
		_, _ = w.Write([]byte(`{"verdict":"correct","accepted":true}`))
	}))
	defer srv.Close()

	var out bytes.Buffer
	g.Expect(Run([]string{"verify", "--url", srv.URL + "/", "--key-dir", dir, "--team", "team-a", "--template", "web", "--submission", "CTF{x}"}, &out, srv.Client())).To(Succeed())
	g.Expect(out.String()).To(Equal(`{"verdict":"correct","accepted":true}`))
	g.Expect(Run([]string{"solved", "--url", srv.URL, "--key-dir", dir, "--team", "team-a", "--template", "web"}, io.Discard, srv.Client())).To(Succeed())
	g.Expect(got).To(Equal([]string{
		`/api/v1/platform/verify {"submission":"CTF{x}","team":"team-a","template":"web"}`,
		`/api/v1/platform/solved {"team":"team-a","template":"web"}`,
	}))

	g.Expect(os.WriteFile(filepath.Join(dir, "other"), key, 0o600)).To(Succeed())
	for _, args := range [][]string{
		{"verify", "--url", srv.URL, "--key-dir", dir, "--team", "team-a", "--template", "web"},                  // two keys, no --kid
		{"verify", "--url", srv.URL, "--key-dir", dir, "--kid", "nope", "--team", "team-a", "--template", "web"}, // no such key
		{"verify", "--key-dir", dir, "--team", "team-a", "--template", "web"},                                    // no --url
		{"start", "--url", srv.URL},
	} {
		g.Expect(Run(args, io.Discard, srv.Client())).NotTo(Succeed(), "%v", args)
	}
	g.Expect(got).To(HaveLen(2), "nothing more was sent")
}
