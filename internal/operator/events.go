package operator

import (
	"context"
	"fmt"

	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
)

// EventLimit bounds the Events the operator writes, as the kubelet's
// --event-qps and --event-burst bound its own: Burst at once, then QPS a
// second. Events are written behind what they report, never in its way: in
// a burst of claims each claim's Event, one request beside its two writes,
// waits for the burst to pass instead of taking the API server's capacity
// from it. None is dropped (client-go's broadcaster keeps each until it is
// written). A zero QPS leaves Events unbounded beyond the operator's own
// client limits.
type EventLimit struct {
	QPS   float64
	Burst int
}

// eventRecorder returns mgr's Event recorder named name, with its own API
// client bounded by limit when limit.QPS is set.
func eventRecorder(mgr ctrl.Manager, name string, limit EventLimit) (events.EventRecorder, error) {
	if limit.QPS <= 0 {
		return mgr.GetEventRecorder(name), nil
	}
	b, err := limitedBroadcaster(mgr.GetConfig(), limit)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(eventSink{b}); err != nil {
		return nil, err
	}
	return b.NewRecorder(mgr.GetScheme(), name), nil
}

// limitedBroadcaster is a broadcaster writing Events through a client of its
// own, bounded by limit.
func limitedBroadcaster(cfg *rest.Config, limit EventLimit) (events.EventBroadcaster, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = float32(limit.QPS), max(limit.Burst, 1), nil
	cl, err := eventsv1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the Events client: %w", err)
	}
	return events.NewBroadcaster(&events.EventSinkImpl{Interface: cl}), nil
}

// eventSink runs a broadcaster's writes for as long as the manager runs, on
// every replica: a standby writes no Event, having nothing to report.
type eventSink struct{ events.EventBroadcaster }

func (s eventSink) Start(ctx context.Context) error {
	if err := s.StartRecordingToSinkWithContext(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	s.Shutdown()
	return nil
}

func (eventSink) NeedLeaderElection() bool { return false }
