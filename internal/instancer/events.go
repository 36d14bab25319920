package instancer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// PhaseAbsent is what the event stream says while the team has no instance.
const PhaseAbsent = "Absent"

// heartbeat keeps proxies from closing a quiet stream.
const heartbeat = 15 * time.Second

// recheck is how often an open stream checks that its token is still valid
// (not expired, revoked, nor signed with a key since removed) and its
// template still startable: a stream once outlived both.
const recheck = 2 * time.Second

// streamInstance sends the team's instance of a template as server-sent
// events, one "instance" event per change, from the process's one Challenge
// informer through the hub (no watch nor informer handler of its own).
func (s *Server) streamInstance(w http.ResponseWriter, r *http.Request, team string) {
	ctx := r.Context()
	template := r.PathValue("template")
	t, apiErr := s.startable(ctx, template)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	if t.Spec.IsShared() {
		writeError(w, errShared) // its page asks for it instead
		return
	}
	release, refusal := s.limits.openStream(team, s.now())
	if refusal != nil {
		writeError(w, refusal)
		return
	}
	defer release()
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, errInternal)
		return
	}
	absent := Instance{Template: template, Name: InstanceName(s.nameKey(), template, team), Phase: PhaseAbsent}
	current := func() Instance {
		ch, apiErr := s.own(ctx, s.Client, template, team)
		if apiErr != nil {
			return absent
		}
		return instanceView(ch, t)
	}
	// Changes arrive in order; the buffer absorbs a burst, and a full
	// buffer only means "look again".
	changed := make(chan struct{}, 1)
	views := make(chan Instance, 64)
	send := func(ch *ctfv1alpha1.Challenge, deleted bool) {
		view := instanceView(ch, t)
		if deleted || ch.DeletionTimestamp != nil {
			// The team may hold another instance of the template (one
			// started after this one was stopped): show the one own picks.
			view = current()
		}
		select {
		case views <- view:
		default:
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}
	unsubscribe, err := s.hub.subscribe(ctx, s.Informers, s.Namespace, pairKey(template, team), send)
	if err != nil {
		writeError(w, s.internal(ctx, err))
		return
	}
	defer unsubscribe()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	var last []byte
	write := func(view Instance) bool {
		data, _ := json.Marshal(view)
		if bytes.Equal(data, last) {
			return true
		}
		last = data
		if _, err := fmt.Fprintf(w, "event: instance\ndata: %s\n\n", data); err != nil {
			return false
		}
		flusher.Flush()
		return true
	}
	if !write(current()) {
		return
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	check := time.NewTicker(recheck)
	defer check.Stop()
	raw, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	for {
		select {
		case <-ctx.Done():
			return
		case <-check.C:
			if still, err := s.teamOf(raw); err != nil || still != team {
				return
			}
			if _, apiErr := s.startable(ctx, template); apiErr != nil {
				return
			}
		case view := <-views:
			if !write(view) {
				return
			}
		case <-changed:
			// The views still buffered are older than the cache now.
			for len(views) > 0 {
				<-views
			}
			if !write(current()) {
				return
			}
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// hub fans the changes of the Challenge informer out to the open event
// streams: it registers one handler per process, on the first stream, and
// a stream only adds and removes an entry in its map.
type hub struct {
	mu         sync.Mutex
	registered bool
	namespace  string
	streams    map[string]map[*subscriber]struct{} // pairKey -> streams
}

// subscriber is one open stream's callback.
type subscriber struct {
	send func(ch *ctfv1alpha1.Challenge, deleted bool)
}

// pairKey keys the streams of team's instance of template: an instance is
// followed by whose it is, not by its name, which may be an older
// instancer's or a next one (its first held by another's).
func pairKey(template, team string) string { return team + "/" + template }

// subscribe calls send with every change of an instance in namespace whose
// pairKey is key until unsubscribe.
func (h *hub) subscribe(ctx context.Context, informers cache.Informers, namespace, key string,
	send func(*ctfv1alpha1.Challenge, bool)) (unsubscribe func(), err error) {
	if err := h.register(ctx, informers, namespace); err != nil {
		return nil, err
	}
	sub := &subscriber{send: send}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.streams[key] == nil {
		h.streams[key] = map[*subscriber]struct{}{}
	}
	h.streams[key][sub] = struct{}{}
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.streams[key], sub)
		if len(h.streams[key]) == 0 {
			delete(h.streams, key)
		}
	}, nil
}

// register adds the hub's one handler to the Challenge informer, once.
func (h *hub) register(ctx context.Context, informers cache.Informers, namespace string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.registered {
		return nil
	}
	informer, err := informers.GetInformer(ctx, &ctfv1alpha1.Challenge{})
	if err != nil {
		return fmt.Errorf("getting the Challenge informer: %w", err)
	}
	h.namespace = namespace
	h.streams = map[string]map[*subscriber]struct{}{}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { h.dispatch(obj, false) },
		UpdateFunc: func(_, obj any) { h.dispatch(obj, false) },
		DeleteFunc: func(obj any) { h.dispatch(obj, true) },
	}); err != nil {
		return fmt.Errorf("watching Challenges for the event streams: %w", err)
	}
	h.registered = true
	return nil
}

// dispatch hands a change of an instancer's instance to the streams of its
// team and template; their send never blocks.
func (h *hub) dispatch(obj any, deleted bool) {
	ch, ok := obj.(*ctfv1alpha1.Challenge)
	if !ok {
		if tomb, isTomb := obj.(toolscache.DeletedFinalStateUnknown); isTomb {
			ch, ok = tomb.Obj.(*ctfv1alpha1.Challenge)
		}
	}
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch.Namespace != h.namespace || !belongs(ch, ch.Spec.Template, ch.Spec.Participant) {
		return
	}
	for sub := range h.streams[pairKey(ch.Spec.Template, ch.Spec.Participant)] {
		sub.send(ch, deleted)
	}
}

// subscribers counts the open streams the hub serves (for tests).
func (h *hub) subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, subs := range h.streams {
		n += len(subs)
	}
	return n
}
