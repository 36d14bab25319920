package instancer

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/token"
)

// stuck is a client whose lists wait for the request's end.
type stuck struct{ client.Client }

func (stuck) List(ctx context.Context, _ client.ObjectList, _ ...client.ListOption) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestATimedOutRequestIsAnErrorAsDeclared: a request the instancer could
// not answer in time was answered 503 with the JSON of a timeout error but
// as text/plain (http.TimeoutHandler's sniffing), an answer openapi.json
// does not declare; it is now application/json and not stored.
func TestATimedOutRequestIsAnErrorAsDeclared(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(ctfv1alpha1.AddToScheme(scheme)).To(Succeed())
	keys := token.Keys{"k": []byte(strings.Repeat("k", 32))}
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "k"), keys["k"], 0o600)).To(Succeed())
	srv := &Server{Options: Options{Namespace: "ctf", KeyDir: dir},
		Client: stuck{fake.NewClientBuilder().WithScheme(scheme).Build()}, requestTimeout: 100 * time.Millisecond}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	tok, err := token.Mint(keys, "", "team-a", time.Hour, time.Now())
	g.Expect(err).NotTo(HaveOccurred())

	req, _ := http.NewRequest("GET", ts.URL+"/api/v1/templates", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	body, err := io.ReadAll(res.Body)
	g.Expect(err).NotTo(HaveOccurred())
	_ = res.Body.Close()
	CheckAnswer(t, req, nil, res, body)
	g.Expect(res.StatusCode).To(Equal(http.StatusServiceUnavailable))
	g.Expect(res.Header.Get("Content-Type")).To(Equal("application/json"))
	g.Expect(res.Header.Get("Cache-Control")).To(Equal("no-store"))
	var e apiError
	g.Expect(json.Unmarshal(body, &e)).To(Succeed())
	g.Expect(e.Code).To(Equal("timeout"))
}
