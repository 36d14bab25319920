package values

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/policy"
)

func quantityOf(s string) *ctfv1alpha1.Quantity { q := ctfv1alpha1.Quantity(s); return &q }

// TestInstanceQuota: the quota of a namespace of the instance's own is, for
// each workload, NamespaceQuota or what its pods ask (its containers',
// sidecars included, times quotaPods: its replicas and a rolling update's
// one more, twice, for an interrupted rollout's pods still terminating),
// whichever is more: an instance within NamespaceQuota keeps the quota it
// always had.
func TestInstanceQuota(t *testing.T) {
	big := &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{CPU: quantityOf("3"), Memory: quantityOf("3Gi")},
		Requests: &ctfv1alpha1.ResourceAmounts{CPU: quantityOf("2"), Memory: quantityOf("1Gi")}}
	for _, tt := range []struct {
		name string
		spec ctfv1alpha1.ChallengeTemplateSpec
		want map[string]string
	}{
		{"the default resources", ctfv1alpha1.ChallengeTemplateSpec{}, NamespaceQuota},
		{"two default workloads", ctfv1alpha1.ChallengeTemplateSpec{Components: []ctfv1alpha1.Component{{Name: "db", Image: "db:1"}}},
			namespaceQuota(2)},
		{"3 CPU and 3Gi", ctfv1alpha1.ChallengeTemplateSpec{Resources: big},
			map[string]string{"pods": "4", "services": "2", "requests.cpu": "8", "requests.memory": "4Gi", "limits.cpu": "12", "limits.memory": "12Gi"}},
		{"a large component beside a default primary", ctfv1alpha1.ChallengeTemplateSpec{Components: []ctfv1alpha1.Component{{Name: "db", Image: "db:1", Resources: big}}},
			map[string]string{"pods": "8", "services": "4", "requests.cpu": "9", "requests.memory": "5Gi", "limits.cpu": "14", "limits.memory": "14Gi"}},
		{"a sidecar's resources", ctfv1alpha1.ChallengeTemplateSpec{Resources: big, Sidecars: []ctfv1alpha1.Sidecar{{Name: "proxy", Image: "proxy:1",
			Resources: &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{CPU: quantityOf("1")}}}}},
			map[string]string{"pods": "4", "services": "2", "requests.cpu": "8200m", "requests.memory": "4352Mi", "limits.cpu": "16", "limits.memory": "13Gi"}},
		{"a component's sidecar", ctfv1alpha1.ChallengeTemplateSpec{Components: []ctfv1alpha1.Component{{Name: "db", Image: "db:1",
			Sidecars: []ctfv1alpha1.Sidecar{{Name: "backup", Image: "b:1", Resources: big}}}}},
			map[string]string{"pods": "8", "services": "4", "requests.cpu": "9200m", "requests.memory": "5376Mi", "limits.cpu": "16", "limits.memory": "15Gi"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := tt.spec
			spec.Image, spec.Ports = "web:1", []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080}}
			tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: spec}
			c := challenge(func(s *ctfv1alpha1.ChallengeSpec) {
				*s = ctfv1alpha1.ChallengeSpec{Participant: "team-1", Template: "web"}
			})
			vals, err := Compose(c, tmpl, Settings{NamespacePerInstance: true})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(instanceQuota(vals)).To(Equal(tt.want))
			g.Expect(vals["namespacePerInstance"]).To(HaveKeyWithValue("quota", toAnyMap(tt.want)), "what the chart renders")
			in, err := Expectation(c, tmpl, Settings{NamespacePerInstance: true}, policy.Limits{}, "", nil)
			g.Expect(err).NotTo(HaveOccurred())
			want, err := resourceList(tt.want)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(in.Quota).To(Equal(want), "the gate expects the values' quota")
		})
	}
}

// TestWorkloadQuotaReplicas: replicas and a rolling update's surge (a
// quarter of them, rounded up) count as pods, twice: the next rollout's
// beside an interrupted one's, terminating.
func TestWorkloadQuotaReplicas(t *testing.T) {
	res := resourceFloor(map[string]any{"limits": map[string]any{"cpu": "1"}})
	for replicas, pods := range map[float64]string{1: "4", 3: "8", 4: "10", 10: "26"} {
		got := workloadQuota(map[string]any{"resources": res, "replicas": replicas})
		q := got["pods"]
		NewWithT(t).Expect(q.String()).To(Equal(pods), "%v replicas", replicas)
	}
	got := workloadQuota(map[string]any{"resources": res, "replicas": float64(10)})
	q := got["limits.cpu"]
	NewWithT(t).Expect(q.String()).To(Equal("26"))
}

// TestInstanceRequests: an instance's cost to its team's budget is the
// requests of every container as rendered (the operator's default requests
// where the template names none, a request no larger than its limit),
// sidecars and components included, times each workload's replicas.
func TestInstanceRequests(t *testing.T) {
	big := &ctfv1alpha1.Resources{Requests: &ctfv1alpha1.ResourceAmounts{CPU: quantityOf("2"), Memory: quantityOf("1Gi")},
		Limits: &ctfv1alpha1.ResourceAmounts{CPU: quantityOf("3"), Memory: quantityOf("3Gi")}}
	for _, tt := range []struct {
		name        string
		spec        ctfv1alpha1.ChallengeTemplateSpec
		cpu, memory string
	}{
		{"the default requests", ctfv1alpha1.ChallengeTemplateSpec{}, DefaultCPURequest, DefaultMemoryRequest},
		{"the template's requests", ctfv1alpha1.ChallengeTemplateSpec{Resources: big}, "2", "1Gi"},
		{"a request above its limit renders as the limit", ctfv1alpha1.ChallengeTemplateSpec{Resources: &ctfv1alpha1.Resources{
			Requests: &ctfv1alpha1.ResourceAmounts{CPU: quantityOf("2")}, Limits: &ctfv1alpha1.ResourceAmounts{CPU: quantityOf("1")}}}, "1", "64Mi"},
		{"a sidecar with limits alone gets the default requests", ctfv1alpha1.ChallengeTemplateSpec{Resources: big, Sidecars: []ctfv1alpha1.Sidecar{{Name: "proxy", Image: "proxy:1",
			Resources: &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{CPU: quantityOf("1")}}}}}, "2050m", "1088Mi"},
		{"a component's replicas and its sidecar", ctfv1alpha1.ChallengeTemplateSpec{Policy: &ctfv1alpha1.InstancePolicy{MaxReplicas: ptr.To[int32](3)},
			Components: []ctfv1alpha1.Component{{Name: "db", Image: "db:1", Replicas: ptr.To[int32](3), Resources: big,
				Sidecars: []ctfv1alpha1.Sidecar{{Name: "backup", Image: "b:1"}}}}}, "6200m", "3328Mi"},
		{"the primary's replicas", ctfv1alpha1.ChallengeTemplateSpec{Resources: big, Values: &ctfv1alpha1.Values{Replicas: ptr.To[int32](2)}}, "4", "2Gi"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := tt.spec
			spec.Image, spec.Ports = "web:1", []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080}}
			tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: spec}
			c := challenge(func(s *ctfv1alpha1.ChallengeSpec) {
				*s = ctfv1alpha1.ChallengeSpec{Participant: "team-1", Template: "web"}
			})
			got, err := Settings{}.RequestsOf(c, tmpl)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(HaveLen(2), "cpu and memory only")
			g.Expect(got.Cpu().Cmp(resource.MustParse(tt.cpu))).To(BeZero(), "cpu %s, want %s", got.Cpu(), tt.cpu)
			g.Expect(got.Memory().Cmp(resource.MustParse(tt.memory))).To(BeZero(), "memory %s, want %s", got.Memory(), tt.memory)
		})
	}
	refused := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: ctfv1alpha1.ChallengeTemplateSpec{Image: "web:1"}}
	c := challenge(func(s *ctfv1alpha1.ChallengeSpec) {
		*s = ctfv1alpha1.ChallengeSpec{Participant: "team-1", Template: "web", Values: &ctfv1alpha1.Values{Replicas: ptr.To[int32](5)}}
	})
	_, err := Settings{}.RequestsOf(c, refused)
	NewWithT(t).Expect(err).To(HaveOccurred(), "values the template does not allow: no instance, no cost")
}
