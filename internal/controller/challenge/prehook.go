package challenge

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"github.com/operator-framework/helm-operator-plugins/pkg/hook"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/challenge-operator/challenge-operator/internal/helmobject"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// MarkReleasingHook runs just before the Helm reconciler installs or upgrades:
// when the Challenge's generation is an upgrade not handled yet, it writes
// Pending (Upgrading), so that a platform reading Running knows the instance
// is about to change. A generation that renders as the last one (a renewal)
// is no upgrade: nothing is marked. Nor is an install: its own status,
// written as soon as Helm has created the objects, is the instance's first
// step out of None (or Queued, or a refusal), and a mark of it (Installing)
// only filled the moments Helm works with a status write more per start.
// The reconciler only logs hook errors; the status written after the
// release is complete on its own.
func MarkReleasingHook(w *StatusWriter) hook.PreHook {
	return hook.PreHookFunc(func(obj *unstructured.Unstructured, _ chartutil.Values, log logr.Logger) error {
		ch, err := helmobject.Challenge(obj)
		if err != nil {
			return err
		}
		op := w.operationFor(ch)
		if op != lifecycle.Upgrading || !obj.GetDeletionTimestamp().IsZero() {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		log.V(1).Info("marking release operation", "operation", op)
		return w.MarkReleasing(ctx, obj, op)
	})
}
