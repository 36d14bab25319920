// Package serving configures what the operator's processes serve besides
// their own API: the metrics endpoint, over HTTPS to callers the API server
// authenticates and authorizes, and the TLS of the webhook server. The
// operator and the instancer bind the same flags.
package serving

import (
	"crypto/tls"
	"flag"

	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Options are the serving flags.
type Options struct {
	// MetricsAddr is the metrics endpoint's address; "0" disables it.
	MetricsAddr string
	// MetricsSecure serves metrics over HTTPS to authorized callers only.
	MetricsSecure bool
	// MetricsCertDir holds tls.crt and tls.key; without them the endpoint
	// serves a self-signed certificate.
	MetricsCertDir string
	// EnableHTTP2 lets the metrics and webhook endpoints speak HTTP/2.
	EnableHTTP2 bool
}

// Bind adds the flags to fs, metrics served on metricsAddr by default.
func (o *Options) Bind(fs *flag.FlagSet, metricsAddr string) {
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", metricsAddr, "Address the Prometheus metrics endpoint binds to; 0 disables it.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", true, "Serve metrics over HTTPS to callers the API server authenticates and allows to get /metrics (the metrics-reader ClusterRole); false serves plain HTTP to anyone who reaches the port.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", "", "Directory with the metrics endpoint's tls.crt and tls.key (a cert-manager Secret, mounted), reloaded when they change; empty: a self-signed certificate.")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", false, "Serve HTTP/2 on the metrics and webhook endpoints. Off by default: HTTP/2's stream cancellation (CVE-2023-44487, CVE-2023-39325) is a denial of service nothing here needs to risk.")
}

// Metrics are the metrics server's options.
func (o Options) Metrics() metricsserver.Options {
	opts := metricsserver.Options{
		BindAddress:   o.MetricsAddr,
		SecureServing: o.MetricsSecure,
		CertDir:       o.MetricsCertDir,
		TLSOpts:       o.TLSOpts(),
	}
	if o.MetricsSecure {
		// Each scrape's bearer token is reviewed (TokenReview) and its
		// user asked for "get /metrics" (SubjectAccessReview), both cached;
		// a token that does not authenticate is 401 (auth.go).
		opts.FilterProvider = withAuthenticationAndAuthorization
	}
	return opts
}

// TLSOpts restrict the TLS endpoints to HTTP/1.1 unless EnableHTTP2.
func (o Options) TLSOpts() []func(*tls.Config) {
	if o.EnableHTTP2 {
		return nil
	}
	return []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
}
