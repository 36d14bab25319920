// Package instancer serves the participants' instancer: a small JSON API and
// a page with which a team starts, watches, renews and stops its own
// instance of a startable ChallengeTemplate. It only creates, patches and
// deletes Challenges and reads their status: the Challenge stays the one
// truth, and the operator's quota and policy still decide.
package instancer

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/challenge-operator/challenge-operator/internal/flagtag"
	"github.com/challenge-operator/challenge-operator/internal/platformauth"
	"github.com/challenge-operator/challenge-operator/internal/proofofwork"
	"github.com/challenge-operator/challenge-operator/internal/token"
)

// The instancer's rights: Challenges in its own namespace only (a Role
// there; "system" is the install's namespace, set by kustomize), templates
// read cluster-wide (they are cluster-scoped), and its limits' Leases
// (limits.go), and Events on Challenges there (the platform API's). No
// Secret: the token, platform and flag keys are mounted volumes.
// +kubebuilder:rbac:groups=ctf.challenge-operator.io,resources=challenges,verbs=create;get;list;watch;delete;patch,namespace=system
// +kubebuilder:rbac:groups=ctf.challenge-operator.io,resources=challengetemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch,namespace=system

//go:embed web openapi.json
var assets embed.FS

// maxBody is the largest request body read: a template name fits many times.
const maxBody = 4 << 10

// Options configure the instancer.
type Options struct {
	// BindAddress is where it listens; empty disables it.
	BindAddress string
	// Namespace is where teams' Challenges are created.
	Namespace string
	// KeyDir holds the token keys: a Secret mounted as a volume, one file
	// per key id.
	KeyDir string
	// AllowedOrigins may call the API from a browser on another origin
	// (CORS); none by default.
	AllowedOrigins []string
	// StartsPerMinute a team may make (a token bucket of that size).
	StartsPerMinute int
	// Cooldown is how long a team waits to start a template it stopped.
	Cooldown time.Duration
	// RenewInterval is the least time between two renewals of one instance.
	RenewInterval time.Duration
	// Audience the team tokens must name: this instancer's own, so that a
	// token for another instancer sharing a key is refused; token.Audience
	// when empty.
	Audience string
	// MaxTokenLifetime is the longest a token may be valid (expiry minus
	// issue time); token.DefaultMaxLifetime when zero.
	MaxTokenLifetime time.Duration
	// RevocationsDir holds per-team revocations: a ConfigMap mounted as a
	// volume, one file per team holding a time before which its tokens are
	// refused. Empty: none.
	RevocationsDir string
	// KeyReload is how often KeyDir, RevocationsDir and PlatformKeyDir are
	// read again, so that a rotation or a revocation needs no restart; 10 s
	// when zero.
	KeyReload time.Duration
	// PlatformKeyDir holds the keys the platform signs its calls with (a
	// Secret of its own, mounted as a volume, one file per key id); empty
	// turns the platform API off.
	PlatformKeyDir string
	// FlagCodec opens the teams' perTeam flags (the operator's flag key);
	// nil: they cannot be verified.
	FlagCodec *flagtag.Codec
}

// Server is the instancer. It runs in a manager of its own (Start; see
// internal/instancercmd) or under any http.Server (Handler).
type Server struct {
	Options
	// Client reads (from the cache) and writes Challenges and templates,
	// and writes the limits' Leases.
	Client client.Client
	// APIReader reads from the API server a Challenge the cache has not seen
	// yet (the cache lags a create, and a Stop right after a Start must find
	// the instance the Start made), and the limits' Leases. Nil reads
	// through Client.
	APIReader client.Reader
	// Informers stream Challenge changes to the event streams.
	Informers cache.Informers
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Recorder writes the platform API's Events (a shared flag, a stop on
	// solve) on teams' Challenges; none when nil.
	Recorder events.EventRecorder

	once   sync.Once
	limits *limits
	creds  credentials
	// platform verifies the platform's calls.
	platform platformCalls
	// proofs takes each proof of work once (on this replica).
	proofs proofofwork.Verifier
	hub    hub
	// live gives each team the reader of what a request acts on: the
	// cache, then (within a budget) the API server.
	live liveReads
	// serving is set once Start listens: the readiness check.
	serving atomic.Bool
	// requestTimeout ends a request of the API but the event stream's; 15 s
	// when zero (a test's shorter one).
	requestTimeout time.Duration
}

func (s *Server) init() {
	s.once.Do(func() {
		registerMetrics()
		live := s.APIReader
		if live == nil {
			live = s.Client
		}
		s.limits = newLimits(s.Options, live, s.Client)
		s.creds = credentials{keyDir: s.KeyDir, revocationsDir: s.RevocationsDir, every: cmp.Or(s.KeyReload, 10*time.Second)}
		s.live = liveReads{live: s.APIReader}
		s.platform = platformCalls{dir: s.PlatformKeyDir, every: cmp.Or(s.KeyReload, 10*time.Second), replays: platformauth.NewReplayCache(0)}
		if s.Now == nil {
			s.Now = time.Now
		}
	})
}

// NeedLeaderElection is false: every replica serves the instancer.
func (s *Server) NeedLeaderElection() bool { return false }

// Ready is the readiness check: the replica serves once its cache has
// synced (the manager starts it after) and it listens.
func (s *Server) Ready(*http.Request) error {
	if !s.serving.Load() {
		return errors.New("the instancer is not serving yet")
	}
	return nil
}

// Start serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("instancer")
	s.creds.get(s.now()) // reports the keys in force, or their absence; never fatal
	ln, err := net.Listen("tcp", s.BindAddress)
	if err != nil {
		return fmt.Errorf("instancer: %w", err)
	}
	s.serving.Store(true)
	defer s.serving.Store(false)
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Info("serving the instancer", "address", ln.Addr().String())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s *Server) now() time.Time {
	s.init()
	return s.Now()
}

// Handler routes the page, the API and its description.
func (s *Server) Handler() http.Handler {
	s.init()
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", static("web/index.html", "text/html; charset=utf-8"))
	mux.Handle("GET /app.js", static("web/app.js", "text/javascript; charset=utf-8"))
	mux.Handle("GET /style.css", static("web/style.css", "text/css; charset=utf-8"))
	mux.Handle("GET /api/v1/openapi.json", static("openapi.json", "application/json"))
	api := func(pattern string, h func(w http.ResponseWriter, r *http.Request, team string)) {
		mux.Handle(pattern, s.timed(s.authenticated(h)))
	}
	api("GET /api/v1/templates", s.listTemplates)
	api("GET /api/v1/instances", s.listInstances)
	api("POST /api/v1/instances", s.startInstance)
	api("GET /api/v1/instances/{template}", s.getInstance)
	api("DELETE /api/v1/instances/{template}", s.stopInstance)
	api("POST /api/v1/instances/{template}/renew", s.renewInstance)
	api("GET /api/v1/instances/{template}/challenge", s.issueChallenge)
	if s.PlatformKeyDir != "" {
		platform := func(pattern string, h func(http.ResponseWriter, *http.Request, []byte, platformauth.Call)) {
			mux.Handle(pattern, s.timed(s.platformCall(h)))
		}
		platform("POST /api/v1/platform/verify", s.verifyFlag)
		platform("POST /api/v1/platform/solved", s.solved)
	}
	// Event streams are long-lived: no timeout, and they flush.
	mux.Handle("GET /api/v1/instances/{template}/events", s.authenticated(s.streamInstance))
	return s.measured(s.cors(secured(mux)))
}

// timed answers a request that h has not answered within the request
// timeout (15 s unless set) with a 503 timeout error, JSON as every error:
// http.TimeoutHandler writes its body under the headers set before it, and
// an answer of h's sets its own.
func (s *Server) timed(h http.Handler) http.Handler {
	timeout := http.TimeoutHandler(h, cmp.Or(s.requestTimeout, 15*time.Second),
		`{"code":"timeout","message":"The request took too long; try again."}`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		timeout.ServeHTTP(w, r)
	})
}

func static(name, contentType string) http.Handler {
	body, err := assets.ReadFile(name)
	if err != nil {
		panic(err) // embedded at build time
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(body)
	})
}

// secured sets the headers that keep the page to itself: nothing loaded
// from elsewhere, no framing, no referrer carrying a token.
func secured(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

// cors answers browsers on the allowed origins only; without any, the API
// serves its own page alone.
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && slices.Contains(s.AllowedOrigins, origin) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			if r.Method == http.MethodOptions {
				h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
				h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// authenticated passes the team of the request's bearer token to h. The
// token travels only in the Authorization header, never in a cookie.
func (s *Server) authenticated(h func(http.ResponseWriter, *http.Request, string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			writeError(w, errUnauthorized("Sign in with your team's link: this request carries no token."))
			return
		}
		team, err := s.teamOf(raw)
		if err != nil {
			writeError(w, errUnauthorized("Your team's token is not valid (expired, revoked, or not issued for this instancer). Ask the organisers for a new link."))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		h(w, r, team)
	})
}

// teamOf verifies a bearer token now, with the keys and revocations in
// force, and returns its team.
func (s *Server) teamOf(raw string) (string, error) {
	now := s.now()
	keys, revoked := s.creds.get(now)
	verifier := token.Verifier{Keys: keys, Audience: s.Audience, MaxLifetime: s.MaxTokenLifetime, Revoked: revoked}
	return verifier.Verify(strings.TrimSpace(raw), now)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
