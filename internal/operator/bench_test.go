package operator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// BenchmarkCreateToRunning measures one Challenge from create to Running
// (install, rollout on KWOK, status), one at a time.
func BenchmarkCreateToRunning(b *testing.B) {
	ctx := context.Background()
	ns := benchNamespace(b)
	b.ResetTimer()
	for i := range b.N {
		ch := builders.Challenge(ns, fmt.Sprintf("bench-%d", i), fmt.Sprintf("team-%d", i))
		if err := k8s.Create(ctx, ch); err != nil {
			b.Fatal(err)
		}
		waitPhase(b, ch, ctfv1alpha1.PhaseRunning)
	}
}

// BenchmarkBurstOf20ToRunning measures 20 Challenges created at once until all run.
func BenchmarkBurstOf20ToRunning(b *testing.B) {
	ctx := context.Background()
	for i := range b.N {
		ns := benchNamespace(b)
		var chs []*ctfv1alpha1.Challenge
		for j := range 20 {
			ch := builders.Challenge(ns, fmt.Sprintf("burst-%d", j), fmt.Sprintf("team-%d-%d", i, j))
			if err := k8s.Create(ctx, ch); err != nil {
				b.Fatal(err)
			}
			chs = append(chs, ch)
		}
		for _, ch := range chs {
			waitPhase(b, ch, ctfv1alpha1.PhaseRunning)
		}
	}
}

func benchNamespace(b *testing.B) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	return ns.Name
}

// waitPhase polls until ch reports phase (benchmarks cannot use Gomega's T).
func waitPhase(b *testing.B, ch *ctfv1alpha1.Challenge, phase ctfv1alpha1.Phase) {
	got := &ctfv1alpha1.Challenge{}
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)
		return err == nil && got.Status.Phase == phase, nil
	})
	if err != nil {
		b.Fatalf("%s never reached %s: %s %s", ch.Name, phase, got.Status.Reason, got.Status.Message)
	}
}
