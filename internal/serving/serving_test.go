package serving_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/challenge-operator/challenge-operator/internal/serving"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

const namespace = "challenge-operator-system"

// TestMetricsAreServedToReadersOnly starts the metrics endpoint as the
// operator configures it, with the identity and the shipped ClusterRole
// (metrics-auth-role) of the operator's ServiceAccount, on a real API
// server: a scraper bound to the shipped metrics-reader ClusterRole reads
// the metrics; a ServiceAccount without it, no token and plain HTTP do not;
// and HTTP/2 is refused unless enabled.
func TestMetricsAreServedToReadersOnly(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cfg, cl := controlplane.StartAPIServer(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	g.Expect(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())

	gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "serving_test_marker", Help: "Present in a scrape."})
	gauge.Set(1)
	crmetrics.Registry.MustRegister(gauge)
	t.Cleanup(func() { crmetrics.Registry.Unregister(gauge) })

	operatorToken := serviceAccountToken(t, cs, "controller-manager")
	bindShippedRole(t, cl, "metrics_auth_role.yaml", "controller-manager")
	readerToken := serviceAccountToken(t, cs, "prometheus")
	bindShippedRole(t, cl, "metrics_reader_role.yaml", "prometheus")
	strangerToken := serviceAccountToken(t, cs, "stranger")

	asOperator := rest.AnonymousClientConfig(cfg)
	asOperator.BearerToken = operatorToken
	addr := startMetrics(t, serving.Options{MetricsAddr: "127.0.0.1:0", MetricsSecure: true}, asOperator)
	url := "https://" + addr + "/metrics"

	status, body, proto := scrape(t, url, readerToken)
	g.Expect(status).To(Equal(http.StatusOK), body)
	g.Expect(body).To(ContainSubstring("serving_test_marker 1"))
	g.Expect(proto).To(Equal(1), "HTTP/2 is off unless enabled")

	status, _, _ = scrape(t, url, strangerToken)
	g.Expect(status).To(Equal(http.StatusForbidden), "a ServiceAccount not bound to metrics-reader")
	status, _, _ = scrape(t, url, "")
	g.Expect(status).To(Equal(http.StatusUnauthorized), "no token")
	// controller-runtime answered a token the review rejects with a 500,
	// which the instancer-errors alert counts as a server error.
	forged := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": "https://kubernetes.default.svc",
		"sub": "system:serviceaccount:" + namespace + ":prometheus", "aud": []string{"https://kubernetes.default.svc"},
		"exp": time.Now().Add(time.Hour).Unix()})
	forgedToken, err := forged.SignedString([]byte("not the API server's key, thirty-two bytes"))
	g.Expect(err).NotTo(HaveOccurred())
	for name, token := range map[string]string{"not a token": "not-a-token", "a forged service account token": forgedToken} {
		status, body, _ = scrape(t, url, token)
		g.Expect(status).To(Equal(http.StatusUnauthorized), name)
		g.Expect(body).NotTo(ContainSubstring("serving_test_marker"))
	}
	// A review the API server refuses (the endpoint lacks metrics-auth-role)
	// is the server's failure: 500, and the alert fires.
	asStranger := rest.AnonymousClientConfig(cfg)
	asStranger.BearerToken = strangerToken
	misconfigured := startMetrics(t, serving.Options{MetricsAddr: "127.0.0.1:0", MetricsSecure: true}, asStranger)
	status, _, _ = scrape(t, "https://"+misconfigured+"/metrics", readerToken)
	g.Expect(status).To(Equal(http.StatusInternalServerError), "an endpoint that may not review tokens")
	// Go's TLS server answers plain HTTP with a 400, or the connection resets first.
	if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
		_ = resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest), "no plain HTTP")
	}

	withHTTP2 := startMetrics(t, serving.Options{MetricsAddr: "127.0.0.1:0", MetricsSecure: true, EnableHTTP2: true}, asOperator)
	_, _, proto = scrape(t, "https://"+withHTTP2+"/metrics", readerToken)
	g.Expect(proto).To(Equal(2), "--enable-http2 serves HTTP/2 (so the check above can fail)")
}

// startMetrics serves the metrics endpoint of opts with the identity of cfg
// until the test ends, and returns its address.
func startMetrics(t *testing.T, opts serving.Options, cfg *rest.Config) string {
	t.Helper()
	g := NewWithT(t)
	httpClient, err := rest.HTTPClientFor(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	srv, err := metricsserver.NewServer(opts.Metrics(), cfg, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done }) //nolint:errcheck // the server's end, whatever it returns
	bound := srv.(interface{ GetBindAddr() string })
	g.Eventually(bound.GetBindAddr, 10*time.Second, 20*time.Millisecond).ShouldNot(BeEmpty())
	return bound.GetBindAddr()
}

// scrape gets url with token (none when empty), offering HTTP/2, and
// returns the status, the body and the HTTP major version spoken.
func scrape(t *testing.T, url, token string) (status int, body string, proto int) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	httpClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		// The endpoint's certificate is self-signed when none is mounted.
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a test of a self-signed endpoint
		ForceAttemptHTTP2: true,
	}}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.ProtoMajor
}

// serviceAccountToken creates the ServiceAccount name and returns a token of it.
func serviceAccountToken(t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	ctx := context.Background()
	_, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// bindShippedRole creates the ClusterRole of config/rbac/common/file and
// binds it to the ServiceAccount account.
func bindShippedRole(t *testing.T, cl client.Client, file, account string) {
	t.Helper()
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "config", "rbac", "common", file))
	g.Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.ClusterRole{}
	g.Expect(yaml.Unmarshal(raw, role)).To(Succeed())
	g.Expect(role.Rules).NotTo(BeEmpty())
	g.Expect(cl.Create(context.Background(), role)).To(Succeed())
	g.Expect(cl.Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name + "-" + account},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: namespace}},
	})).To(Succeed())
	// The endpoint caches a denial for 30 s: start once the API server's
	// authorizer has seen the binding.
	for _, rule := range role.Rules {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:" + namespace + ":" + account}}
		if len(rule.NonResourceURLs) > 0 {
			sar.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: rule.NonResourceURLs[0], Verb: rule.Verbs[0]}
		} else {
			sar.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{Group: rule.APIGroups[0], Resource: rule.Resources[0], Verb: rule.Verbs[0]}
		}
		g.Eventually(func(g Gomega) {
			review := sar.DeepCopy()
			g.Expect(cl.Create(context.Background(), review)).To(Succeed())
			g.Expect(review.Status.Allowed).To(BeTrue())
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed(), "%s may %v", account, rule)
	}
}
