package instancer

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestTeamLimitsAdmit(t *testing.T) {
	now := time.Date(2026, 11, 24, 18, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	tests := []struct {
		name     string
		state    teamLimits
		template string
		// wantCode is the refusal's code, empty when admitted.
		wantCode string
		wantWait int // seconds
		// wantStarts is how many starts the record holds afterwards.
		wantStarts int
	}{
		{name: "first start", template: "web", wantStarts: 1},
		{name: "third start in the minute", state: teamLimits{Starts: []time.Time{ago(50 * time.Second), ago(10 * time.Second)}},
			template: "web", wantStarts: 3},
		{name: "fourth start in the minute waits for the oldest to leave it",
			state:    teamLimits{Starts: []time.Time{ago(50 * time.Second), ago(20 * time.Second), ago(10 * time.Second)}},
			template: "web", wantCode: "rate_limited", wantWait: 10, wantStarts: 3},
		{name: "starts older than a minute no longer count",
			state:    teamLimits{Starts: []time.Time{ago(2 * time.Minute), ago(time.Minute), ago(10 * time.Second)}},
			template: "web", wantStarts: 2},
		{name: "a template stopped within the cooldown waits",
			state:    teamLimits{Stopped: map[string]time.Time{"web": ago(20 * time.Second)}},
			template: "web", wantCode: "cooldown", wantWait: 40},
		{name: "another template is not cooling down",
			state:    teamLimits{Stopped: map[string]time.Time{"web": ago(20 * time.Second)}},
			template: "pwn", wantStarts: 1},
		{name: "a cooldown that ran out is forgotten",
			state:    teamLimits{Stopped: map[string]time.Time{"web": ago(time.Minute)}},
			template: "web", wantStarts: 1},
		{name: "the cooldown is judged before the rate",
			state: teamLimits{Starts: []time.Time{ago(3 * time.Second), ago(2 * time.Second), ago(time.Second)},
				Stopped: map[string]time.Time{"web": ago(time.Second)}},
			template: "web", wantCode: "cooldown", wantWait: 59, wantStarts: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			state := tt.state
			refusal := state.admit(tt.template, now, 3, time.Minute)
			if tt.wantCode == "" {
				g.Expect(refusal).NotTo(HaveOccurred())
				g.Expect(state.Starts[len(state.Starts)-1]).To(Equal(now), "the start is recorded")
			} else {
				g.Expect(refusal).To(HaveOccurred())
				g.Expect(refusal.Status).To(Equal(http.StatusTooManyRequests))
				g.Expect(refusal.Code).To(Equal(tt.wantCode))
				g.Expect(refusal.RetryAfter).To(Equal(tt.wantWait))
			}
			g.Expect(state.Starts).To(HaveLen(tt.wantStarts))
		})
	}
}

func TestTeamLimitsStopKeepsOnlyRunningCooldowns(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 24, 18, 0, 0, 0, time.UTC)
	state := teamLimits{Stopped: map[string]time.Time{"old": now.Add(-2 * time.Minute), "recent": now.Add(-time.Second)}}
	state.stop("web", now, time.Minute)
	g.Expect(state.Stopped).To(Equal(map[string]time.Time{"recent": now.Add(-time.Second), "web": now}))
}

// TestAdmitStartAnswersABurstThatNeverWinsTheLease: when every write of the
// team's Lease loses to another request's, the start is asked to wait, not
// failed as an internal error.
func TestAdmitStartAnswersABurstThatNeverWinsTheLease(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(coordinationv1.AddToScheme(scheme)).To(Succeed())
	existing := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ctf", Name: limitsLeasePrefix + "team-a"}}
	writes := 0
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(existing).WithInterceptorFuncs(interceptor.Funcs{
		Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
			writes++
			return apierrors.NewConflict(coordinationv1.Resource("leases"), existing.Name, errors.New("the object has been modified"))
		},
	}).Build()
	l := newLimits(Options{Namespace: "ctf", StartsPerMinute: 3, Cooldown: time.Minute}, cl, cl)
	refusal, err := l.admitStart(context.Background(), "team-a", "web", time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refusal).To(HaveField("Code", "rate_limited"))
	g.Expect(refusal.RetryAfter).To(Equal(1))
	g.Expect(writes).To(Equal(conflictBackoff.Steps), "every retry was tried")
}

// TestTeamLimitsRenew: one renewal of an instance per interval (12 renewals
// in 3 s were accepted, each a new generation and a Helm upgrade); another
// template's instance has its own interval.
func TestTeamLimitsRenew(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 24, 18, 0, 0, 0, time.UTC)
	var s teamLimits
	g.Expect(s.renew("web", now, time.Minute)).To(Succeed(), "the first renewal")
	refusal := s.renew("web", now.Add(3*time.Second), time.Minute)
	g.Expect(refusal).To(HaveOccurred(), "a second one within the minute")
	g.Expect(refusal.Code).To(Equal("rate_limited"))
	g.Expect(refusal.RetryAfter).To(Equal(57))
	g.Expect(s.renew("pwn", now.Add(3*time.Second), time.Minute)).To(Succeed(), "another instance")
	g.Expect(s.renew("web", now.Add(time.Minute), time.Minute)).To(Succeed(), "once the minute is over")
}
