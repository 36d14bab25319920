package instancer

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/ctfflag"
	"github.com/challenge-operator/challenge-operator/internal/flagtag"
	"github.com/challenge-operator/challenge-operator/internal/platformauth"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// BenchmarkPlatformVerify is one flag verification as the platform makes
// it, through the instancer's handler: the call's signature and replay
// check, the body, the template (from the cache), the flag opened by
// flagtag and the answer. Run with -cpu 1 for calls per second on one core;
// the tokens are signed before the clock starts, as the platform signs them.
func BenchmarkPlatformVerify(b *testing.B) {
	scheme := runtime.NewScheme()
	if err := ctfv1alpha1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	key := []byte("the platform's key, thirty-two bytes or more")
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ctfd"), key, 0o600); err != nil {
		b.Fatal(err)
	}
	codec, err := flagtag.New([]byte("a flag key of sixteen bytes or more"))
	if err != nil {
		b.Fatal(err)
	}
	tmpl := builders.BareTemplate("web", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Flags = []ctfv1alpha1.NamedFlag{{Name: "main", PerTeam: &ctfv1alpha1.PerTeamFlag{Format: "CTF{%s}"}}}
	})
	s := &Server{Options: Options{Namespace: "ctf", PlatformKeyDir: dir, FlagCodec: codec},
		Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(tmpl).Build()}
	handler := s.Handler()
	now := time.Now()
	bodies, tokens := make([][]byte, b.N), make([]string, b.N)
	for i := range b.N {
		bodies[i] = fmt.Appendf(nil, `{"team":"team-%d","template":"web","submission":%q}`, i%500, ctfflag.PerTeam(codec, "web", "main", fmt.Sprint("team-", i%500), "CTF{%s}"))
		if tokens[i], err = platformauth.Sign(key, "ctfd", fmt.Sprintf("bench-call-%012d", i), http.MethodPost, "/api/v1/platform/verify", bodies[i], now, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/platform/verify", bytes.NewReader(bodies[i]))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tokens[i])
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"correct"`)) {
			b.Fatalf("call %d: %d %s", i, rec.Code, rec.Body)
		}
		if i == 0 { // the answer as openapi.json declares it, off the clock
			b.StopTimer()
			CheckAnswer(b, req, bodies[i], rec.Result(), rec.Body.Bytes())
			b.StartTimer()
		}
	}
}
