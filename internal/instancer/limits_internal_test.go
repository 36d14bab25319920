package instancer

import (
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
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
				g.Expect(refusal).To(BeNil())
				g.Expect(state.Starts[len(state.Starts)-1]).To(Equal(now), "the start is recorded")
			} else {
				g.Expect(refusal).NotTo(BeNil())
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
