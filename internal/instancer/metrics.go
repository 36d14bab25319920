package instancer

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "challenge_instancer_requests_total",
		Help: "Instancer requests by route and status code.",
	}, []string{"route", "code"})
	durations = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "challenge_instancer_request_duration_seconds",
		Help:    "Time to answer instancer requests (event streams: to their end), by route.",
		Buckets: prometheus.ExponentialBuckets(0.005, 4, 8),
	}, []string{"route"})

	flagVerifications = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "challenge_instancer_flag_verifications_total",
		Help: "The platform's flag verifications, by template and verdict (correct, wrong, shared: another team's flag).",
	}, []string{"template", "verdict"})
	sharedFlags = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "challenge_instancer_shared_flags_total",
		Help: "Submissions of another team's flag, by template: each is also an Event on both teams' instances.",
	}, []string{"template"})
	solveStops = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "challenge_instancer_solve_stops_total",
		Help: "Instances stopped because their team solved the template (destroyOnSolve), by template.",
	}, []string{"template"})

	proofsOfWork = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "challenge_instancer_proofs_of_work_total",
		Help: "Proofs of work sent with starts and renewals of templates that ask for one, by action and outcome (accepted; required: none sent; wrong, expired, other_purpose: for another team, template or action; replayed: used already on this replica).",
	}, []string{"action", "outcome"})

	nameConflicts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "challenge_instancer_instance_name_conflicts_total",
		Help: "Starts that found their instance's name held by a Challenge not of the team's (another team's, or not made by an instancer) and took the next name.",
	})

	tokenKeys = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "challenge_instancer_token_keys",
		Help: "Token keys in force: the valid key files present at the last reload.",
	})
	skippedKeyFiles = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "challenge_instancer_token_key_files_skipped",
		Help: "Files of the key directory skipped at the last reload, by reason (name: not a key id; short: under 32 bytes; unreadable; directory: the directory itself).",
	}, []string{"reason"})
	revocations = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "challenge_instancer_token_revocations",
		Help: "Teams whose tokens are revoked up to a time.",
	})
	skippedRevocationFiles = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "challenge_instancer_token_revocation_files_invalid",
		Help: "Revocation files not named as a team or holding no time (which revokes every token of the team), or 1 when the directory could not be read.",
	})
)

// registerMetrics adds the instancer's metrics to the registry its process
// serves, once, when an instancer is made: the operator's binary holds this
// package too, and its metrics should not list an instancer it does not run.
var registerMetrics = sync.OnceFunc(func() {
	metrics.Registry.MustRegister(requests, durations, flagVerifications, sharedFlags, solveStops, proofsOfWork, nameConflicts, tokenKeys, skippedKeyFiles, revocations, skippedRevocationFiles)
})

// statusRecorder remembers the status code written; it stays an
// http.Flusher for the event streams.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// measured counts requests by the route pattern that served them (never the
// raw path, whose template names would make the series unbounded).
func (s *Server) measured(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		if rec.code == 0 {
			rec.code = http.StatusOK
		}
		requests.WithLabelValues(route, strconv.Itoa(rec.code)).Inc()
		durations.WithLabelValues(route).Observe(time.Since(start).Seconds())
	})
}
