package instancer

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// TestTeamLimitsSpend: a call is taken once while recorded, forgotten a
// minute after its token expires, and a record full of unexpired calls
// takes no more.
func TestTeamLimitsSpend(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 24, 18, 0, 0, 0, time.UTC)
	exp := now.Add(2 * time.Minute)
	var s teamLimits
	g.Expect(s.spend(callKey("call-one-0000000001"), exp, now)).To(Succeed(), "the first time")
	g.Expect(s.spend(callKey("call-one-0000000001"), exp, now.Add(time.Second))).To(Equal(errPlatformToken), "again")
	g.Expect(s.spend(callKey("call-two-0000000002"), exp, now.Add(time.Second))).To(Succeed(), "another call")
	g.Expect(s.spend(callKey("call-one-0000000001"), exp, exp.Add(59*time.Second))).To(Equal(errPlatformToken),
		"still recorded a while after it expires: another replica's clock may be behind")
	g.Expect(s.spend(callKey("call-three-00000003"), exp.Add(3*time.Minute), exp.Add(callRecordSlack))).To(Succeed())
	g.Expect(s.Calls).To(HaveLen(1), "the expired calls are forgotten")

	full := teamLimits{Calls: map[string]time.Time{}}
	for i := range maxCallsPerTeam {
		full.Calls[callKey(time.Duration(i).String())] = exp
	}
	g.Expect(full.spend(callKey("one-more-call-00001"), exp, now)).To(Equal(errPlatformBusy))
	g.Expect(full.Calls).To(HaveLen(maxCallsPerTeam))
}

// TestTeamLimitsSolve: a solve is complete once every flag of the template
// is verified, in any order, or on a solved notice; each instance is
// stopped, and cooled down for, once.
func TestTeamLimitsSolve(t *testing.T) {
	now := time.Date(2026, 11, 24, 18, 0, 0, 0, time.UTC)
	flags := []string{"user", "root"}
	type step struct {
		flag     string
		instance types.UID
		complete bool
		first    bool
	}
	tests := []struct {
		name  string
		flags []string
		steps []step
	}{
		{name: "one flag", flags: []string{"main"}, steps: []step{
			{flag: "main", instance: "a", complete: true, first: true},
			{flag: "main", instance: "a", complete: true},
			{flag: "main", instance: "b", complete: true, first: true}}},
		{name: "every flag, in any order", flags: flags, steps: []step{
			{flag: "root", instance: "a"},
			{flag: "root", instance: "a"},
			{flag: "user", instance: "a", complete: true, first: true},
			{flag: "user", instance: "a", complete: true}}},
		{name: "no instance running", flags: flags, steps: []step{
			{flag: "user"},
			{flag: "root", complete: true},
			{flag: "root", instance: "b", complete: true, first: true}}},
		{name: "a solved notice", flags: flags, steps: []step{
			{flag: "user", instance: "a"},
			{instance: "a", complete: true, first: true},
			{instance: "a", complete: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var s teamLimits
			for i, st := range tt.steps {
				complete, first := s.solve("web", tt.flags, st.flag, st.instance, now, time.Minute)
				g.Expect([]bool{complete, first}).To(Equal([]bool{st.complete, st.first}), "step %d: %+v", i, st)
				// Each step reads the record as another replica would.
				data, err := json.Marshal(s)
				g.Expect(err).NotTo(HaveOccurred())
				s = teamLimits{}
				g.Expect(json.Unmarshal(data, &s)).To(Succeed())
			}
			g.Expect(s.Stopped).To(HaveKey("web"), "the stop's cooldown")
		})
	}
}

// TestTeamLimitsCloneSharesNothing: a replica's remembered record is
// changed by no later write of the same team's.
func TestTeamLimitsCloneSharesNothing(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 24, 18, 0, 0, 0, time.UTC)
	s := teamLimits{Calls: map[string]time.Time{"call": now}, SolveStops: map[string]types.UID{"web": "a"},
		Flags: map[string][]string{"web": append(make([]string, 0, 4), "root")}}
	c := s.clone()
	s.solve("web", []string{"flag", "root"}, "flag", "b", now, time.Minute)
	g.Expect(s.spend(callKey("call-one-0000000001"), now.Add(time.Minute), now)).To(Succeed())
	g.Expect(s.SolveStops).To(HaveKeyWithValue("web", types.UID("b")))
	g.Expect(c).To(Equal(teamLimits{Calls: map[string]time.Time{"call": now}, SolveStops: map[string]types.UID{"web": "a"},
		Flags: map[string][]string{"web": {"root"}}}))
}
