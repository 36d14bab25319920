package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Requests counts the operator's API requests by what they do, as a
// benchmark's per-instance figures break down: "GET services", "APPLY
// challenges/status", "WATCH pods", "GET /version". Namespaced requests are
// also counted per namespace, so that a test can tell its own instance's
// requests from the rest of the suite's.
type Requests struct {
	mu     sync.Mutex
	all    map[string]int
	byNS   map[string]map[string]int
	failNS map[string]map[string]int
	// statusWrites are, by namespace, the status writes of Challenges as
	// sent and answered, for a test's message.
	statusWrites map[string][]string
}

// newRequests returns an empty count.
func newRequests() *Requests {
	return &Requests{all: map[string]int{}, byNS: map[string]map[string]int{}, failNS: map[string]map[string]int{}}
}

// All is a copy of every request counted so far.
func (r *Requests) All() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.all)
}

// In is a copy of the requests counted so far in namespace ns.
func (r *Requests) In(ns string) map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.byNS[ns])
}

// StatusWritesIn are the status writes of Challenges in namespace ns: the
// resourceVersion and phase sent, and the resourceVersion answered.
func (r *Requests) StatusWritesIn(ns string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.statusWrites[ns])
}

// FailedIn is a copy of the requests in namespace ns counted so far that
// the API server refused, by what they did and the status code: a test's
// message tells a conflict and its retry from a second write.
func (r *Requests) FailedIn(ns string) map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.failNS[ns])
}

func (r *Requests) count(req *http.Request) {
	kind, ns := describe(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all[kind]++
	if ns != "" {
		addTo(r.byNS, ns, kind)
	}
}

func (r *Requests) countFailure(req *http.Request, code int) {
	kind, ns := describe(req)
	if ns == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	addTo(r.failNS, ns, fmt.Sprintf("%s %d", kind, code))
}

func (r *Requests) statusWrite(ns string, sent, answer []byte, err error) {
	var in, out struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Status struct {
			Phase, Reason string
		} `json:"status"`
	}
	_ = json.Unmarshal(sent, &in)
	_ = json.Unmarshal(answer, &out)
	line := fmt.Sprintf("at %s: %s/%s -> %s (%v)", in.Metadata.ResourceVersion, in.Status.Phase, in.Status.Reason, out.Metadata.ResourceVersion, err)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.statusWrites == nil {
		r.statusWrites = map[string][]string{}
	}
	r.statusWrites[ns] = append(r.statusWrites[ns], line)
}

func addTo(counts map[string]map[string]int, ns, kind string) {
	if counts[ns] == nil {
		counts[ns] = map[string]int{}
	}
	counts[ns][kind]++
}

// describe names what req does: its verb (APPLY for a server-side apply,
// WATCH for a watch, LIST for a GET of a collection) and resource, or its
// path when it names none; and the namespace it is in, if any.
func describe(req *http.Request) (kind, namespace string) {
	verb := req.Method
	switch {
	case req.URL.Query().Get("watch") == "true":
		verb = "WATCH"
	case verb == http.MethodPatch && strings.HasPrefix(req.Header.Get("Content-Type"), "application/apply-patch"):
		verb = "APPLY"
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:] // api/v1
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:] // apis/group/version
	default:
		return verb + " " + req.URL.Path, ""
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) != 2 {
		namespace, parts = parts[1], parts[2:]
	} else if len(parts) == 2 && parts[0] == "namespaces" {
		namespace = parts[1]
	}
	if len(parts) == 0 {
		return verb + " " + req.URL.Path, namespace
	}
	resource := parts[0]
	if len(parts) >= 3 {
		resource += "/" + parts[2]
	}
	if verb == http.MethodGet && len(parts) == 1 {
		verb = "LIST"
	}
	return verb + " " + resource, namespace
}

// countingTransport counts every request before sending it.
type countingTransport struct {
	next     http.RoundTripper
	requests *Requests
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.requests.count(req)
	kind, ns := describe(req)
	var sent []byte
	if kind == "APPLY challenges/status" && req.Body != nil {
		sent, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(sent))
	}
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.StatusCode >= http.StatusBadRequest {
		t.requests.countFailure(req, resp.StatusCode)
	}
	if sent != nil {
		var answer []byte
		if err == nil {
			answer, _ = io.ReadAll(resp.Body)
			resp.Body = io.NopCloser(bytes.NewReader(answer))
		}
		t.requests.statusWrite(ns, sent, answer, err)
	}
	return resp, err
}
