package instancer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	toolscache "k8s.io/client-go/tools/cache"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// PhaseAbsent is what the event stream says while the team has no instance.
const PhaseAbsent = "Absent"

// heartbeat keeps proxies from closing a quiet stream.
const heartbeat = 15 * time.Second

// streamInstance sends the team's instance of a template as server-sent
// events, one "instance" event per change, from the cache's informer (no
// watch of its own per participant).
func (s *Server) streamInstance(w http.ResponseWriter, r *http.Request, team string) {
	ctx := r.Context()
	template := r.PathValue("template")
	t, apiErr := s.startable(ctx, template)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	release, ok := s.limits.openStream(team)
	if !ok {
		writeError(w, &apiError{Status: http.StatusTooManyRequests, Code: "too_many_streams",
			Message: "Your team has this page open in too many tabs; close some and reload."})
		return
	}
	defer release()
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, errInternal)
		return
	}
	informer, err := s.Informers.GetInformer(ctx, &ctfv1alpha1.Challenge{})
	if err != nil {
		writeError(w, s.internal(ctx, err))
		return
	}
	name := instanceName(template, team)
	// Changes arrive in order; the buffer absorbs a burst, and a full
	// buffer only means "look again".
	changed := make(chan struct{}, 1)
	views := make(chan Instance, 64)
	send := func(obj any, deleted bool) {
		ch, ok := obj.(*ctfv1alpha1.Challenge)
		if !ok {
			if tomb, isTomb := obj.(toolscache.DeletedFinalStateUnknown); isTomb {
				ch, ok = tomb.Obj.(*ctfv1alpha1.Challenge)
			}
		}
		if !ok || ch.Namespace != s.Namespace || ch.Name != name {
			return
		}
		view := Instance{Template: template, Name: name, Phase: PhaseAbsent}
		if !deleted && ch.Spec.Participant == team && ch.Spec.Template == template {
			view = instanceView(ch, t)
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
	reg, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { send(obj, false) },
		UpdateFunc: func(_, obj any) { send(obj, false) },
		DeleteFunc: func(obj any) { send(obj, true) },
	})
	if err != nil {
		writeError(w, s.internal(ctx, err))
		return
	}
	defer func() { _ = informer.RemoveEventHandler(reg) }()

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
	current := func() Instance {
		ch, apiErr := s.own(ctx, s.Client, template, team)
		if apiErr != nil {
			return Instance{Template: template, Name: name, Phase: PhaseAbsent}
		}
		return instanceView(ch, t)
	}
	if !write(current()) {
		return
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case view := <-views:
			if !write(view) {
				return
			}
		case <-changed:
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
