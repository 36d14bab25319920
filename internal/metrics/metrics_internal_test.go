package metrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// TestPhasesCountEachInstanceOnce: a claimed pooled instance and its
// claimant are one instance, Running once; an unclaimed pooled one is the
// pool's metrics' affair, not a team's phase. Counts are by template too.
func TestPhasesCountEachInstanceOnce(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := ctfv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	running := func(ns, name string) *ctfv1alpha1.Challenge {
		return &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Status: ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhaseRunning}}
	}
	pending := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: "teams", Name: "pwn-team-1"},
		Spec: ctfv1alpha1.ChallengeSpec{Template: "pwn"}, Status: ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhasePending}}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		running("teams", "web"), running("pool", "web-pool-a"), running("pool", "web-pool-b"), pending).Build()
	c := &phaseCollector{reader: reader, operatorsOwn: func(ch *ctfv1alpha1.Challenge) bool { return ch.Namespace == "pool" }}
	got := gather(t, c)
	phases := 0
	for name := range got {
		if strings.HasPrefix(name, "challenge_phase_count{") {
			phases++
		}
	}
	if got[`challenge_phase_count{phase="Running",template=""}`] != 1 || got[`challenge_phase_count{phase="None",template=""}`] != 0 ||
		got[`challenge_phase_count{phase="Pending",template="pwn"}`] != 1 || phases != 12 {
		t.Fatalf("counts %v: want one Running instance without a template, one Pending of pwn, and every phase of both present", got)
	}
}

// TestWaitsAndOverdueExpiries: the oldest wait of an instance never Running
// is reported by phase, an instance that was Running once is not waiting,
// and the most overdue expiry is reported; with none, both are 0.
func TestWaitsAndOverdueExpiries(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := ctfv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	instance := func(name string, created time.Duration, status ctfv1alpha1.ChallengeStatus) *ctfv1alpha1.Challenge {
		return &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: "teams", Name: name, CreationTimestamp: ago(created)}, Status: status}
	}
	readyAt, expired := ago(time.Hour), ago(90*time.Second)
	collect := func(objs ...client.Object) map[string]float64 {
		t.Helper()
		reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
		c := &phaseCollector{reader: reader, operatorsOwn: func(*ctfv1alpha1.Challenge) bool { return false }, now: func() time.Time { return now }}
		return gather(t, c)
	}

	got := collect(
		instance("fresh", 10*time.Second, ctfv1alpha1.ChallengeStatus{}),
		instance("slow", 12*time.Minute, ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhasePending}),
		instance("quick", 5*time.Second, ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhasePending}),
		instance("restarting", 2*time.Hour, ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhasePending, ReadyAt: &readyAt}),
		instance("expired", 3*time.Hour, ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhaseRunning, ReadyAt: &readyAt, ExpiresAt: &expired}),
	)
	want := map[string]float64{
		`challenge_starting_oldest_seconds{phase="None"}`:    10,
		`challenge_starting_oldest_seconds{phase="Pending"}`: 720, // not the restarting one, Running before
		`challenge_starting_oldest_seconds{phase="Queued"}`:  0,
		`challenge_expiry_overdue_seconds`:                   90,
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %v, want %v", name, got[name], v)
		}
	}

	got = collect()
	if got[`challenge_starting_oldest_seconds{phase="Pending"}`] != 0 || got[`challenge_expiry_overdue_seconds`] != 0 {
		t.Errorf("with no instance: %v, want 0s", got)
	}
}

// gather collects c into values by series, as name{label="value",...}.
func gather(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var pairs []string
			for _, l := range m.GetLabel() { // sorted by name
				pairs = append(pairs, fmt.Sprintf(`%s=%q`, l.GetName(), l.GetValue()))
			}
			name := f.GetName()
			if len(pairs) > 0 {
				name += "{" + strings.Join(pairs, ",") + "}"
			}
			out[name] = m.GetGauge().GetValue()
		}
	}
	return out
}

// TestRegisteredAgainCountsFromTheNewReader: a manager set up anew in the
// same process (the tests' restarts) registers again, and the phases are
// then counted from its reader, not from the first one's stopped cache.
func TestRegisteredAgainCountsFromTheNewReader(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := ctfv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	reader := func(phase ctfv1alpha1.Phase) client.Reader {
		return fake.NewClientBuilder().WithScheme(scheme).WithObjects(&ctfv1alpha1.Challenge{
			ObjectMeta: metav1.ObjectMeta{Namespace: "teams", Name: "web"},
			Spec:       ctfv1alpha1.ChallengeSpec{Template: "registered-again"},
			Status:     ctfv1alpha1.ChallengeStatus{Phase: phase}}).Build()
	}
	none := func(*ctfv1alpha1.Challenge) bool { return false }
	count := func(phase ctfv1alpha1.Phase) float64 {
		t.Helper()
		families, err := crmetrics.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if f.GetName() == "challenge_phase_count" && labels["template"] == "registered-again" && labels["phase"] == string(phase) {
					return m.GetGauge().GetValue()
				}
			}
		}
		return 0
	}
	Register(reader(ctfv1alpha1.PhasePending), none)
	if got := count(ctfv1alpha1.PhasePending); got != 1 {
		t.Fatalf("Pending: %v, want 1", got)
	}
	Register(reader(ctfv1alpha1.PhaseRunning), none)
	if pending, running := count(ctfv1alpha1.PhasePending), count(ctfv1alpha1.PhaseRunning); pending != 0 || running != 1 {
		t.Fatalf("after registering again: Pending %v, Running %v; want 0 and 1, from the new reader", pending, running)
	}
}
