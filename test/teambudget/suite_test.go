package teambudget_test

import (
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/challenge-operator/challenge-operator/internal/operator"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

var h *harness.Harness

// The budget: three instances at the operator's default requests (50m and
// 64Mi each), all templates together.
var (
	budgetCPU    = resource.MustParse("150m")
	budgetMemory = resource.MustParse("1Gi")
)

// TestMain runs the operator, as its service account, with a team budget.
func TestMain(m *testing.M) {
	os.Exit(harness.Run(m, harness.Options{AsServiceAccount: true, Operator: operator.Options{
		MaxConcurrentReconciles: 4,
		TeamBudgetCPU:           budgetCPU,
		TeamBudgetMemory:        budgetMemory,
	}}, &h, nil))
}
