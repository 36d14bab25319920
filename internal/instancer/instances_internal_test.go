package instancer

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// TestADeletedInstanceIsNotReady: between a Stop and the operator's Deleted
// status, the status still says Running; the team was shown phase Deleted
// with reason Ready, "the instance is ready at ..." and where to connect.
func TestADeletedInstanceIsNotReady(t *testing.T) {
	g := NewWithT(t)
	now := metav1.Now()
	ch := &ctfv1alpha1.Challenge{
		ObjectMeta: metav1.ObjectMeta{Name: "web-team-a", DeletionTimestamp: &now},
		Spec:       ctfv1alpha1.ChallengeSpec{Template: "web", Participant: "team-a"},
		Status: ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhaseRunning, Reason: "Ready", Message: "the instance is ready at 10.0.0.1:80",
			Endpoint: &ctfv1alpha1.Endpoint{Host: "10.0.0.1", Port: 80, URL: "http://10.0.0.1/"}},
	}
	v := instanceView(ch, nil)
	g.Expect(v.Phase).To(Equal("Deleted"))
	g.Expect(v.Reason).To(Equal("Uninstalling"))
	g.Expect(v.Message).To(Equal("Your instance is being removed."))
	g.Expect(v.Connect).To(BeEmpty(), "nobody is told to connect to an instance being removed")

	ch.DeletionTimestamp = nil
	v = instanceView(ch, nil)
	g.Expect(v.Phase).To(Equal("Running"))
	g.Expect(v.Connect).To(Equal("http://10.0.0.1/"))
}

// TestTeamsReadNoOrganiserDetail: the status message names pods, quotas,
// nodes and the scheduler's reasoning (and once carried a flag); a team reads
// a fixed sentence per phase and reason instead.
func TestTeamsReadNoOrganiserDetail(t *testing.T) {
	tests := []struct {
		phase           ctfv1alpha1.Phase
		reason, message string
		want            string
	}{
		{ctfv1alpha1.PhaseError, "Unschedulable", "pod web-team-a-5d8f: 0/3 nodes are available: 3 Insufficient memory", "Your instance could not start; the organisers have been told."},
		{ctfv1alpha1.PhaseError, "FailedCreate", `pods "web-team-a-5d8f" is forbidden: exceeded quota: ctf-quota`, "Your instance could not start; the organisers have been told."},
		{ctfv1alpha1.PhaseError, "InstallError", "flag.value: CTF{leaked} does not match", "Your instance could not start; the organisers have been told."},
		{ctfv1alpha1.PhaseError, "QuotaExceeded", "participant team-a has 3 active instances: web-team-a, pwn-team-a, rev-team-a", "Your team has too many instances running; stop one first."},
		{ctfv1alpha1.PhaseError, "BudgetExceeded", "participant team-a's budget is cpu 150m, memory 1Gi; its instances request cpu 100m", "Your team's running instances use all its share of the cluster; stop one first."},
		{ctfv1alpha1.PhaseError, "CrashLoopBackOff", "pod web-team-a-5d8f: back-off restarting", "The challenge keeps crashing; the organisers have been told."},
		{ctfv1alpha1.PhasePending, "WorkloadsNotReady", "Deployment web-team-a: 0/1 replicas available", "Your instance is starting."},
		{ctfv1alpha1.PhaseNone, "", "", "Your instance is being accepted; it starts in a moment."},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			ch := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "web-team-a"},
				Status: ctfv1alpha1.ChallengeStatus{Phase: tt.phase, Reason: tt.reason, Message: tt.message}}
			v := instanceView(ch, nil)
			g.Expect(v.Message).To(Equal(tt.want))
			g.Expect(v.Reason).To(Equal(tt.reason))
		})
	}
}

// TestNoneIsNotQueued: an instance the operator has not looked at yet
// (None) was "queued" in the team's words, now that Queued is a phase of
// its own; Queued says so, with the place when the status has it.
func TestNoneIsNotQueued(t *testing.T) {
	for _, tt := range []struct {
		name     string
		status   ctfv1alpha1.ChallengeStatus
		want     string
		position *int32
	}{
		{"no status yet", ctfv1alpha1.ChallengeStatus{}, "Your instance is being accepted; it starts in a moment.", nil},
		{"None", ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhaseNone}, "Your instance is being accepted; it starts in a moment.", nil},
		{"Queued third", ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhaseQueued, QueuePosition: ptr.To[int32](3)},
			"Your instance is queued, 3rd in line: it starts when others end. Its time runs from when it starts, not while it waits.", ptr.To[int32](3)},
		{"Queued next", ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhaseQueued, QueuePosition: ptr.To[int32](1)},
			"Your instance is queued, next in line: it starts when another ends. Its time runs from when it starts, not while it waits.", ptr.To[int32](1)},
		{"Queued 12th", ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhaseQueued, QueuePosition: ptr.To[int32](12)},
			"Your instance is queued, 12th in line: it starts when others end. Its time runs from when it starts, not while it waits.", ptr.To[int32](12)},
		{"Queued 22nd", ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhaseQueued, QueuePosition: ptr.To[int32](22)},
			"Your instance is queued, 22nd in line: it starts when others end. Its time runs from when it starts, not while it waits.", ptr.To[int32](22)},
		{"Queued, place unknown", ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhaseQueued}, "Your instance is queued: it starts when others end. Its time runs from when it starts, not while it waits.", nil},
		{"a phase this instancer does not know", ctfv1alpha1.ChallengeStatus{Phase: "Hibernating"}, "Your instance is being prepared.", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			v := instanceView(&ctfv1alpha1.Challenge{Status: tt.status}, nil)
			g.Expect(v.Message).To(Equal(tt.want))
			g.Expect(v.QueuePosition).To(Equal(tt.position))
		})
	}
}

// TestStartBodiesAreReadOneWayOnly: duplicate keys, keys in another case and
// anything but one object are refused, where encoding/json took the last
// duplicate and matched keys in any case.
func TestStartBodiesAreReadOneWayOnly(t *testing.T) {
	tests := []struct{ body, problem string }{
		{`{"template":"web"}`, ""},
		{` { "template" : "web" } `, ""},
		{`{"template":"web","template":"pwn"}`, `key "template" given twice`},
		{`{"Template":"web"}`, `unknown key "Template"`},
		{`{"TEMPLATE":"web"}`, `unknown key "TEMPLATE"`},
		{`{"template":"web","x":1}`, `unknown key "x"`},
		{`{"template":"web"}{"template":"pwn"}`, "more than one JSON value"},
		{`["web"]`, "not a JSON object"},
		{`{"template":1}`, "wrong type"},
		{`{"template":"web"`, "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			g := NewWithT(t)
			var req startRequest
			err := decodeStrict(strings.NewReader(tt.body), &req, "template")
			if tt.problem == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(req.Template).To(Equal("web"))
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.problem)))
		})
	}
}

// TestConnectString: what a team pastes, for each kind of endpoint.
func TestConnectString(t *testing.T) {
	g := NewWithT(t)
	g.Expect(connectString(&ctfv1alpha1.Endpoint{Host: "h.ctf.example", Port: 443, URL: "https://h.ctf.example/"})).To(Equal("https://h.ctf.example/"))
	g.Expect(connectString(&ctfv1alpha1.Endpoint{Host: "h.ctf.example", Port: 443, Protocol: "TCP", Connect: "ncat --ssl h.ctf.example 443"})).
		To(Equal("ncat --ssl h.ctf.example 443"), "TCP inside TLS")
	g.Expect(connectString(&ctfv1alpha1.Endpoint{Host: "203.0.113.7", Port: 31337, Protocol: "TCP"})).To(Equal("nc 203.0.113.7 31337"))
	g.Expect(connectString(&ctfv1alpha1.Endpoint{Host: "203.0.113.7", Port: 30053, Protocol: "UDP"})).To(Equal("nc -u 203.0.113.7 30053"))
}
