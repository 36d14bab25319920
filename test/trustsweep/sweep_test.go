package trustsweep

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
	"github.com/challenge-operator/challenge-operator/test/trusttable"
)

// The sweep of the platform and organiser tiers: for every field the table
// gives either tier, the probes below write it as that tier would at its
// most hostile (the platform through its shipped Role, the organiser
// through templates), and every admin bound is checked to hold, both for
// each probe's instance and, all along the sweep, for the whole cluster.
// The team tier's routes are swept by internal/instancer's
// TestTheTeamTierStaysWithinItsBounds, from the same table.

// outcome is what a probe's hostile write must come to.
type outcome int

const (
	// refused: the API server refuses the write at admission.
	refused outcome = iota
	// failed: the Challenge is accepted, then Error, with nothing installed.
	failed
	// held: the instance runs, within every bound.
	held
)

// probe is one hostile write of a field.
type probe struct {
	name string
	// template, when set, is the organiser's: a fresh template with these
	// settings, which the probe's Challenge instantiates. A template the
	// API server refuses is the outcome refused.
	template func(*ctfv1alpha1.ChallengeTemplateSpec)
	// challenge edits the Challenge the platform creates.
	challenge func(*ctfv1alpha1.Challenge)
	// then is the platform's write once the instance runs (an update, a
	// patch): its error is the outcome refused.
	then func(ctx context.Context, platform client.Client, ch *ctfv1alpha1.Challenge) error
	want outcome
	// says is what the refusal, or the Error's reason and message, names.
	says string
	// check is what else must hold of a held instance.
	check func(g Gomega, ch *ctfv1alpha1.Challenge)
	// rawValues and rawTemplateValues are written as the Challenge's or
	// the template's spec.values as they are, untyped: what a client
	// that knows no schema sends.
	rawValues, rawTemplateValues map[string]any
}

// hostileValues ask, in every way values could, for a pod with the node's
// rights: the schema has no such value, so they are dropped, never rendered.
var hostileValues = map[string]any{
	"securityContext": map[string]any{"privileged": true, "runAsUser": int64(0)},
	"hostNetwork":     true, "hostPID": true,
	"volumes":            []any{map[string]any{"name": "root", "hostPath": map[string]any{"path": "/"}}},
	"serviceAccountName": "challenge-operator-controller-manager",
	"networkPolicy":      map[string]any{"egress": []any{map[string]any{"name": "all", "cidr": "0.0.0.0/0"}}},
}

func quantity(s string) *ctfv1alpha1.Quantity {
	v := ctfv1alpha1.Quantity(s)
	return &v
}

// platformProbes are the platform's writes, by the table's field.
func platformProbes() map[string][]probe {
	return map[string][]probe{
		"Challenge metadata.finalizers": {{name: "the finalizer taken off a running instance", want: held,
			then: func(ctx context.Context, platform client.Client, ch *ctfv1alpha1.Challenge) error {
				patch := client.MergeFrom(ch.DeepCopy())
				ch.Finalizers = nil
				if err := platform.Patch(ctx, ch, patch); err != nil {
					return err
				}
				return platform.Delete(ctx, ch)
			},
			check: func(g Gomega, ch *ctfv1alpha1.Challenge) {
				g.Expect(instanceObjects(g, ch.Spec.Participant)).To(BeEmpty(), "nothing of the instance outlives it")
			}}},
		"Challenge metadata.labels": {{name: "a team's Challenge labelled as pooled, past the webhook, beyond --max-cpu",
			challenge: func(c *ctfv1alpha1.Challenge) {
				c.Labels = map[string]string{ctfv1alpha1.PoolLabel: "web"}
				c.Spec.Resources = &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{CPU: quantity("4")}}
			},
			want: failed, says: "cpu"}},
		"Challenge spec.participant": {{name: "the instance handed to another team", want: refused, says: "spec.participant",
			then: func(ctx context.Context, platform client.Client, ch *ctfv1alpha1.Challenge) error {
				patch := client.MergeFrom(ch.DeepCopy())
				ch.Spec.Participant = "victim"
				return platform.Patch(ctx, ch, patch)
			}}},
		"Challenge spec.template": {
			{name: "a template nobody made", challenge: func(c *ctfv1alpha1.Challenge) { c.Spec.Template, c.Spec.Image, c.Spec.Ports = "missing", "", nil },
				want: failed, says: lifecycleReason("TemplateNotFound")},
			{name: "a running instance moved to another template", want: refused, says: "spec.template",
				then: func(ctx context.Context, platform client.Client, ch *ctfv1alpha1.Challenge) error {
					patch := client.MergeFrom(ch.DeepCopy())
					ch.Spec.Template = "other"
					return platform.Patch(ctx, ch, patch)
				}},
		},
		"Challenge spec.image": {{name: "an image of a registry the admin did not list",
			challenge: func(c *ctfv1alpha1.Challenge) { c.Spec.Image = "evil.example/miner:1" }, want: failed, says: "image"}},
		"Challenge spec.ports": {{name: "seventeen ports", want: refused, says: "spec.ports",
			challenge: func(c *ctfv1alpha1.Challenge) {
				c.Spec.Ports = nil
				for i := range 17 {
					c.Spec.Ports = append(c.Spec.Ports, ctfv1alpha1.ChallengePort{Name: fmt.Sprintf("p%d", i), Port: int32(1000 + i)})
				}
			}}},
		"Challenge spec.env": {{name: "the instance's address forged", want: refused, says: "spec.env",
			challenge: func(c *ctfv1alpha1.Challenge) {
				c.Spec.Env = []ctfv1alpha1.EnvVar{{Name: "CHALLENGE_URL", Value: "http://victim.ctf.example/"}}
			}}},
		"Challenge spec.resources": {
			{name: "limits beyond --max-cpu", want: failed, says: "cpu",
				challenge: func(c *ctfv1alpha1.Challenge) {
					c.Spec.Resources = &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{CPU: quantity("4")}}
				}},
			{name: "requests beyond the team budget", want: failed, says: lifecycleReason("BudgetExceeded"),
				challenge: func(c *ctfv1alpha1.Challenge) {
					// Within --max-cpu per container, beyond the budget with its replicas.
					c.Spec.Resources = &ctfv1alpha1.Resources{Requests: &ctfv1alpha1.ResourceAmounts{CPU: quantity("400m")},
						Limits: &ctfv1alpha1.ResourceAmounts{CPU: quantity("400m")}}
					c.Spec.Values = harness.Values(`{"replicas": 3}`)
				}},
		},
		"Challenge spec.expose": {{name: "a LoadBalancer the admin did not allow", want: failed, says: "LoadBalancer",
			challenge: func(c *ctfv1alpha1.Challenge) {
				c.Spec.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeLoadBalancer}
			}}},
		"Challenge spec.lifetime": {
			{name: "a month and more", want: refused, says: "spec.lifetime",
				challenge: func(c *ctfv1alpha1.Challenge) { c.Spec.Lifetime = &metav1.Duration{Duration: 721 * time.Hour} }},
			{name: "a lifetime raised after creation", want: refused, says: "lifetime",
				challenge: func(c *ctfv1alpha1.Challenge) { c.Spec.Lifetime = &metav1.Duration{Duration: time.Hour} },
				then: func(ctx context.Context, platform client.Client, ch *ctfv1alpha1.Challenge) error {
					patch := client.MergeFrom(ch.DeepCopy())
					ch.Spec.Lifetime = &metav1.Duration{Duration: 2 * time.Hour}
					return platform.Patch(ctx, ch, patch)
				}},
		},
		"Challenge spec.renewedAt": {{name: "a renewal dated back", want: refused, says: "renewedAt",
			challenge: func(c *ctfv1alpha1.Challenge) {
				c.Spec.Lifetime = &metav1.Duration{Duration: time.Hour}
				c.Spec.RenewedAt = &metav1.Time{Time: time.Now().Truncate(time.Second)}
			},
			then: func(ctx context.Context, platform client.Client, ch *ctfv1alpha1.Challenge) error {
				patch := client.MergeFrom(ch.DeepCopy())
				ch.Spec.RenewedAt = &metav1.Time{Time: ch.Spec.RenewedAt.Add(-time.Hour)}
				return platform.Patch(ctx, ch, patch)
			}}},
		"Challenge spec.values": {
			{name: "a privileged pod on the node's network asked through values", want: held, rawValues: hostileValues},
			{name: "values a template does not let a Challenge override",
				template:  func(s *ctfv1alpha1.ChallengeTemplateSpec) {},
				challenge: func(c *ctfv1alpha1.Challenge) { c.Spec.Values = harness.Values(`{"replicas": 2}`) },
				want:      failed, says: lifecycleReason("ValueNotAllowed")},
		},
	}
}

// operatorProbes are writes of the fields the operator alone writes, by
// the tier below it that is bound in the cluster: the platform.
func operatorProbes() map[string][]probe {
	return map[string][]probe{
		"Challenge status": {{name: "a status written by the platform", want: refused, says: "forbidden",
			then: func(ctx context.Context, platform client.Client, ch *ctfv1alpha1.Challenge) error {
				return platform.Status().Patch(ctx, ch, client.RawPatch(types.MergePatchType, []byte(`{"status":{"phase":"Running","renewals":0}}`)))
			}}},
		"ChallengeTemplate status": {{name: "a template's status written by the platform", want: refused, says: "forbidden",
			then: func(ctx context.Context, platform client.Client, ch *ctfv1alpha1.Challenge) error {
				tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: ch.Spec.Template}}
				return platform.Status().Patch(ctx, tmpl, client.RawPatch(types.MergePatchType, []byte(`{"status":{"conditions":[]}}`)))
			}, template: func(*ctfv1alpha1.ChallengeTemplateSpec) {}}},
	}
}

// organiserProbes are the organiser's templates, by the table's field.
func organiserProbes() map[string][]probe {
	tmpl := func(name string, mutate func(*ctfv1alpha1.ChallengeTemplateSpec), want outcome, says string) []probe {
		return []probe{{name: name, template: mutate, want: want, says: says}}
	}
	return map[string][]probe{
		"ChallengeTemplate spec.image": tmpl("an image of a registry the admin did not list",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Image = "evil.example/miner:1" }, failed, "image"),
		"ChallengeTemplate spec.command": tmpl("a shell as the command",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Command = []ctfv1alpha1.Argument{"sh", "-c", "nsenter -t 1 -a sh"}
			}, held, ""),
		"ChallengeTemplate spec.args": tmpl("arguments that ask for the host",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Args = []ctfv1alpha1.Argument{"--privileged", "--net=host"}
			}, held, ""),
		"ChallengeTemplate spec.workingDir": tmpl("the host's root as the working directory",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.WorkingDir = "/host" }, held, ""),
		"ChallengeTemplate spec.env": tmpl("the instance's address forged",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Env = []ctfv1alpha1.EnvVar{{Name: "CHALLENGE_HOST", Value: "victim"}}
			}, refused, "spec.env"),
		"ChallengeTemplate spec.ports": tmpl("a port repeated",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Ports = []ctfv1alpha1.ChallengePort{{Name: "a", Port: 1337}, {Name: "b", Port: 1337}}
			}, refused, "spec.ports"),
		"ChallengeTemplate spec.probes": tmpl("an exec probe",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Probes = &ctfv1alpha1.Probes{Readiness: &ctfv1alpha1.Probe{Exec: &ctfv1alpha1.ExecProbe{Command: []ctfv1alpha1.Argument{"cat", "/etc/shadow"}}}}
			}, held, ""),
		"ChallengeTemplate spec.files": tmpl("a file over the service account's token",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Files = []ctfv1alpha1.File{{Path: "/var/run/secrets/kubernetes.io/serviceaccount/token", Content: "forged"}}
			}, held, ""),
		"ChallengeTemplate spec.memoryTmp": tmpl("memory for /tmp",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.MemoryTmp = true }, held, ""),
		"ChallengeTemplate spec.scratch": tmpl("scratch beyond --max-ephemeral-storage",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Scratch = []ctfv1alpha1.ScratchMount{{Path: "/data", SizeLimit: quantity("100Gi")}}
			}, failed, "ephemeral-storage"),
		"ChallengeTemplate spec.keepImageTmp": tmpl("the image's /tmp kept",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.KeepImageTmp = true }, held, ""),
		"ChallengeTemplate spec.bareNames": tmpl("the cluster's own service name taken",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.BareNames = &ctfv1alpha1.BareNames{Primary: "kubernetes"}
			}, held, ""),
		"ChallengeTemplate spec.resources": tmpl("limits beyond --max-memory",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Resources = &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{Memory: quantity("8Gi")}}
			}, failed, "memory"),
		"ChallengeTemplate spec.policy": {
			{name: "a ceiling beyond --template-max-cpu", want: failed, says: "cpu",
				template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
					s.Policy = &ctfv1alpha1.InstancePolicy{MaxCPU: quantity("4")}
					s.Resources = &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{CPU: quantity("4")}}
				}},
			{name: "ephemeral storage raised", want: failed, says: "ephemeral",
				template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
					s.Policy = &ctfv1alpha1.InstancePolicy{MaxEphemeralStorage: quantity("100Gi")}
					s.Resources = &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{EphemeralStorage: quantity("100Gi")}}
				}},
			{name: "registries widened", want: failed, says: "image",
				template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
					s.Policy = &ctfv1alpha1.InstancePolicy{AllowedRegistries: []ctfv1alpha1.RegistryPrefix{"evil.example"}}
					s.Image = "evil.example/miner:1"
				}},
		},
		"ChallengeTemplate spec.security": {
			{name: "privileged", want: failed, says: "privileged",
				template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
					s.Security = &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfilePrivileged, Privileged: ptr.To(true)}
				}},
			{name: "a capability the admin did not allow", want: failed, says: "SYS_ADMIN",
				template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
					s.Security = &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileBaseline,
						Capabilities: &ctfv1alpha1.Capabilities{Add: []ctfv1alpha1.Capability{"SYS_ADMIN"}}}
				}},
			{name: "a node the admin did not allow", want: failed, says: "node",
				template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
					s.Security = &ctfv1alpha1.Security{NodeSelector: map[string]ctfv1alpha1.LabelValue{"node-role.kubernetes.io/control-plane": ""}}
				}},
		},
		"ChallengeTemplate spec.egress": tmpl("egress to the cluster's own range",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Egress = []ctfv1alpha1.EgressRule{{Name: "inside", CIDR: "10.0.0.0/8"}}
			}, failed, "10.0.0.0/8"),
		"ChallengeTemplate spec.sharedServices": tmpl("the API server as a shared service",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.SharedServices = []ctfv1alpha1.ServiceRef{{Namespace: "default", Name: "kubernetes"}}
			}, failed, "default"),
		"ChallengeTemplate spec.secretEnv": tmpl("a Secret of the platform's namespace",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.SecretEnv = []ctfv1alpha1.SecretEnvVar{{Name: "TOKEN", Secret: ctfv1alpha1.SecretKeyRef{Namespace: platformNamespace, Name: "platform-key", Key: "key"}}}
			}, failed, `namespace "platform"`),
		"ChallengeTemplate spec.secretFiles": tmpl("a Secret of kube-system",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.SecretFiles = []ctfv1alpha1.SecretFile{{Path: "/etc/key", Secret: ctfv1alpha1.SecretKeyRef{Namespace: "kube-system", Name: "bootstrap", Key: "key"}}}
			}, failed, "kube-system"),
		"ChallengeTemplate spec.flag": tmpl("a flag from the platform's namespace",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Flag = &ctfv1alpha1.FlagSpec{Static: &ctfv1alpha1.SecretKeyRef{Namespace: platformNamespace, Name: "platform-key", Key: "key"}}
			}, failed, `namespace "platform"`),
		"ChallengeTemplate spec.flags": tmpl("a named flag from kube-system",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Flags = []ctfv1alpha1.NamedFlag{{Name: "one", Static: &ctfv1alpha1.SecretKeyRef{Namespace: "kube-system", Name: "bootstrap", Key: "key"}}}
			}, failed, "kube-system"),
		"ChallengeTemplate spec.components": tmpl("a privileged component",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Components = []ctfv1alpha1.Component{{Name: "bot", Image: allowedRegistry + "/ctf/bot:1",
					Security: &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfilePrivileged, Privileged: ptr.To(true)}}}
			}, failed, "privileged"),
		"ChallengeTemplate spec.sidecars": tmpl("a sidecar beyond --max-cpu",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Sidecars = []ctfv1alpha1.Sidecar{{Name: "miner", Image: allowedRegistry + "/ctf/miner:1",
					Resources: &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{CPU: quantity("8")}}}}
			}, failed, "cpu"),
		"ChallengeTemplate spec.expose": tmpl("a LoadBalancer the admin did not allow",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeLoadBalancer}
			}, failed, "LoadBalancer"),
		"ChallengeTemplate spec.exposePorts": tmpl("a port on a LoadBalancer",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.ExposePorts = []ctfv1alpha1.PortExposure{{Port: "nc", Type: ctfv1alpha1.ExposeLoadBalancer}}
			}, refused, "spec.exposePorts"),
		"ChallengeTemplate spec.lifetime": tmpl("a lifetime of a month and more",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Lifetime = &ctfv1alpha1.LifetimePolicy{Max: &metav1.Duration{Duration: 721 * time.Hour}}
			}, refused, "lifetime"),
		"ChallengeTemplate spec.maxInstances": tmpl("more instances than the cluster's",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.MaxInstances = ptr.To[int32](100000) }, held, ""),
		"ChallengeTemplate spec.maxInstancesPerParticipant": {{name: "a team's instances beyond its budget", want: failed, says: lifecycleReason("BudgetExceeded"),
			template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.MaxInstancesPerParticipant = ptr.To[int32](100)
				s.Resources = &ctfv1alpha1.Resources{Requests: &ctfv1alpha1.ResourceAmounts{CPU: quantity("400m")}, Limits: &ctfv1alpha1.ResourceAmounts{CPU: quantity("400m")}}
				s.OverridableValues = []ctfv1alpha1.ValuePath{"replicas"}
			},
			challenge: func(c *ctfv1alpha1.Challenge) { c.Spec.Values = harness.Values(`{"replicas": 3}`) }}},
		"ChallengeTemplate spec.pool": tmpl("a pool without the admin's pool namespace",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Pool = &ctfv1alpha1.PoolSpec{Min: 50, Max: 100} }, held, ""),
		"ChallengeTemplate spec.overridableValues": {{name: "enforced values made overridable", want: held,
			template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.OverridableValues = []ctfv1alpha1.ValuePath{"networkPolicy", "securityContext", "hostNetwork"}
			},
			rawValues: hostileValues}},
		"ChallengeTemplate spec.values": {{name: "a privileged pod on the node's network asked through values", want: held,
			template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {}, rawTemplateValues: hostileValues}},
		"ChallengeTemplate spec.sharing": {{name: "a team's template made shared", want: refused, says: "sharing",
			template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {},
			then: func(ctx context.Context, _ client.Client, ch *ctfv1alpha1.Challenge) error {
				tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: ch.Spec.Template}}
				return harness.EditTemplate(ctx, h.Client, tmpl, func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Sharing = ctfv1alpha1.SharingShared })
			}}},
		"ChallengeTemplate spec.instancer": tmpl("startable without an end",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Instancer = &ctfv1alpha1.InstancerAccess{Startable: true}
			}, refused, "lifetime"),
		"ChallengeTemplate spec.submissions": tmpl("a shared instance destroyed by one team's solve",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Sharing = ctfv1alpha1.SharingShared
				s.Submissions = &ctfv1alpha1.Submissions{DestroyOnSolve: true}
			}, refused, "destroyOnSolve"),
		"ChallengeTemplate spec.solverCheck": tmpl("a solver of a registry the admin did not list",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.SolverCheck = &ctfv1alpha1.SolverCheck{Image: "evil.example/solver:1"}
			}, held, ""),
		"ChallengeTemplate spec.failures": tmpl("a failure threshold",
			func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Failures = &ctfv1alpha1.FailurePolicy{Threshold: ptr.To[int32](1)}
			}, held, ""),
	}
}

// lifecycleReason is what a probe's says holds for an Error of reason.
func lifecycleReason(reason string) string { return "reason:" + reason }

// TestEveryTierStaysWithinTheAdminsBounds: the platform's and the
// organiser's rows of the table each have their probes, and every probe
// comes to its outcome with every admin bound holding, for its instance
// and, sampled all along, for the cluster.
func TestEveryTierStaysWithinTheAdminsBounds(t *testing.T) {
	g := NewWithT(t)
	rows, err := trusttable.Read(root)
	g.Expect(err).NotTo(HaveOccurred())
	probes := map[string]map[string][]probe{"platform": platformProbes(), "organiser": organiserProbes(), "operator": operatorProbes()}
	for tier, byField := range probes {
		// The routes are swept where the instancer serves them.
		placed := slices.DeleteFunc(trusttable.Of(rows, tier), func(r trusttable.Row) bool { return strings.Contains(r.What, " /") })
		for _, r := range placed {
			g.Expect(byField).To(HaveKey(r.What), "%s (%s) has no probe in the trust sweep: say how the %s is bounded there", r.What, tier, tier)
		}
		for what := range byField {
			g.Expect(slices.ContainsFunc(placed, func(r trusttable.Row) bool { return r.What == what })).To(BeTrue(),
				"a probe of %s, which the table does not give the %s", what, tier)
		}
	}

	platform := asPlatform(t)
	g.Expect(h.Client.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "platform-key", Namespace: platformNamespace},
		StringData: map[string]string{"key": "the platform's own"}})).To(Succeed())
	stop := watchClusterBounds(t)
	var n atomic.Int32
	t.Run("sweep", func(t *testing.T) {
		for _, tier := range []string{"platform", "organiser", "operator"} {
			for what, ps := range probes[tier] {
				for _, p := range ps {
					t.Run(tier+"/"+what+"/"+p.name, func(t *testing.T) {
						t.Parallel()
						run(t, platform, fmt.Sprintf("sweep-%d", n.Add(1)), p)
					})
				}
			}
		}
	})
	stop()
}

// run writes p's hostile input and checks its outcome.
func run(t *testing.T, platform client.Client, name string, p probe) {
	g := NewWithT(t)
	ctx := context.Background()
	ch := builders.Challenge(platformNamespace, name, "team-"+name)
	ch.Spec.Image = allowedRegistry + "/ctf/web:1"
	if p.template != nil {
		spec := ctfv1alpha1.ChallengeTemplateSpec{Image: allowedRegistry + "/ctf/" + name + ":1",
			Ports: []ctfv1alpha1.ChallengePort{{Name: "nc", Port: 1337}}}
		p.template(&spec)
		tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
		err := create(ctx, h.Client, tmpl, p.rawTemplateValues)
		if p.want == refused && err != nil {
			g.Expect(err.Error()).To(ContainSubstring(p.says), "the organiser's template is refused, naming what")
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { _ = h.Client.Delete(context.Background(), tmpl) })
		ch = builders.FromTemplate(platformNamespace, name, "team-"+name, name)
	}
	if p.challenge != nil {
		p.challenge(ch)
	}
	err := create(ctx, platform, ch, p.rawValues)
	if p.want == refused && p.then == nil {
		g.Expect(err).To(HaveOccurred(), "the platform's write is refused")
		g.Expect(err.Error()).To(ContainSubstring(p.says), "the refusal names what")
		return
	}
	if p.want == failed && err != nil {
		// The webhook refuses at admission what the operator would put in Error.
		g.Expect(err.Error()).To(ContainSubstring(strings.TrimPrefix(p.says, "reason:")), "the webhook's refusal names what")
		return
	}
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = h.Client.Delete(context.Background(), ch) })
	// Settled: Running, or a verdict.
	g.Eventually(func(g Gomega) {
		g.Expect(h.Client.Get(ctx, client.ObjectKeyFromObject(ch), ch)).To(Succeed())
		g.Expect(ch.Status.Phase).To(BeElementOf(ctfv1alpha1.PhaseRunning, ctfv1alpha1.PhaseError))
	}, 2*harness.Timeout, harness.Interval).Should(Succeed(), "%s settles", name)
	instanceBoundsHold(g, ch)
	switch {
	case p.want == failed:
		g.Expect(ch.Status.Phase).To(Equal(ctfv1alpha1.PhaseError), "%s: %s", ch.Status.Reason, ch.Status.Message)
		if reason, ok := strings.CutPrefix(p.says, "reason:"); ok {
			g.Expect(ch.Status.Reason).To(Equal(reason))
		} else {
			g.Expect(ch.Status.Message).To(ContainSubstring(p.says))
		}
		g.Expect(deployments(g, ch.Spec.Participant)).To(BeEmpty(), "nothing installed")
	case p.then != nil:
		g.Expect(ch.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning), "%s: %s", ch.Status.Reason, ch.Status.Message)
		err := p.then(ctx, platform, ch)
		if p.want == refused {
			g.Expect(err).To(HaveOccurred(), "the write is refused")
			g.Expect(strings.ToLower(err.Error())).To(ContainSubstring(strings.ToLower(p.says)), "the refusal names what")
		} else {
			g.Expect(err).NotTo(HaveOccurred())
		}
		if p.check != nil {
			g.Eventually(func(g Gomega) { p.check(g, ch) }, 2*harness.Timeout, harness.Interval).Should(Succeed())
		}
	case p.check != nil:
		p.check(g, ch)
	default:
		g.Expect(ch.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning), "%s: %s", ch.Status.Reason, ch.Status.Message)
	}
	// Every instance leaves nothing behind, its places freed for the rest.
	g.Expect(client.IgnoreNotFound(h.Client.Delete(ctx, ch))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(instanceObjects(g, ch.Spec.Participant)).To(BeEmpty())
	}, 2*harness.Timeout, harness.Interval).Should(Succeed(), "%s leaves nothing", name)
}

// create creates obj with c, with raw as its spec.values when set.
func create(ctx context.Context, c client.Client, obj client.Object, raw map[string]any) error {
	if raw == nil {
		return c.Create(ctx, obj)
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(ctfv1alpha1.GroupVersion.WithKind(strings.TrimPrefix(fmt.Sprintf("%T", obj), "*v1alpha1.")))
	if err := unstructured.SetNestedField(u.Object, runtime.DeepCopyJSONValue(raw), "spec", "values"); err != nil {
		return err
	}
	if err := c.Create(ctx, u); err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj)
}

// deployments are the Deployments of participant's instances, anywhere.
func deployments(g Gomega, participant string) []appsv1.Deployment {
	var deps appsv1.DeploymentList
	g.Expect(h.Client.List(context.Background(), &deps, client.MatchingLabels{ctfv1alpha1.ParticipantLabel: participant})).To(Succeed())
	return deps.Items
}

// instanceObjects names what of participant's instances exists, anywhere.
func instanceObjects(g Gomega, participant string) []string {
	ctx := context.Background()
	var out []string
	sel := client.MatchingLabels{ctfv1alpha1.ParticipantLabel: participant}
	lists := map[string]client.ObjectList{"Deployment": &appsv1.DeploymentList{}, "Service": &corev1.ServiceList{},
		"Secret": &corev1.SecretList{}, "ConfigMap": &corev1.ConfigMapList{}, "Pod": &corev1.PodList{}}
	for kind, list := range lists {
		g.Expect(h.Client.List(ctx, list, sel)).To(Succeed())
		items, err := metaItems(list)
		g.Expect(err).NotTo(HaveOccurred())
		for _, o := range items {
			out = append(out, kind+" "+o.GetNamespace()+"/"+o.GetName())
		}
	}
	var records corev1.SecretList
	g.Expect(h.Client.List(ctx, &records, client.InNamespace(platformNamespace), client.MatchingLabels{"owner": "helm"})).To(Succeed())
	for _, s := range records.Items {
		if strings.HasPrefix(s.Labels["name"], "sweep-") && strings.HasSuffix(participant, s.Labels["name"]) {
			out = append(out, "release record "+s.Name)
		}
	}
	return out
}

// instanceBoundsHold checks each admin bound on what ch's instance runs:
// pod security within --max-pod-security (baseline here), every
// container's limits set and within --template-max-cpu/-memory and
// --max-ephemeral-storage, images of the allowed registry, everything in
// the Challenge's own namespace, Secrets its own alone, the finalizer while
// it lives, and its team within the budget.
func instanceBoundsHold(g Gomega, ch *ctfv1alpha1.Challenge) {
	if ch.DeletionTimestamp.IsZero() && ch.Status.Phase != ctfv1alpha1.PhaseError {
		g.Expect(ch.Finalizers).To(ContainElement(ctfv1alpha1.UninstallFinalizer), "the finalizer holds while %s lives", ch.Name)
	}
	var cpu resource.Quantity
	for _, dep := range deployments(g, ch.Spec.Participant) {
		g.Expect(dep.Namespace).To(Equal(ch.Namespace), "%s's workloads in its own namespace", ch.Name)
		pod := dep.Spec.Template
		g.Expect(baselineViolations(&pod)).To(BeEmpty(), "%s within --max-pod-security", dep.Name)
		g.Expect(pod.Spec.HostNetwork || pod.Spec.HostPID || pod.Spec.HostIPC).To(BeFalse())
		g.Expect(pod.Spec.AutomountServiceAccountToken).To(Equal(ptr.To(false)), "%s holds no API token", dep.Name)
		for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
			g.Expect(c.Image).To(HavePrefix(allowedRegistry+"/"), "%s/%s's image", dep.Name, c.Name)
			limits := c.Resources.Limits
			g.Expect(limits.Cpu().IsZero() || limits.Memory().IsZero()).To(BeFalse(), "%s/%s sets its limits", dep.Name, c.Name)
			g.Expect(limits.Cpu().Cmp(templateMaxCPU)).To(BeNumerically("<=", 0), "%s/%s within --template-max-cpu", dep.Name, c.Name)
			g.Expect(limits.Memory().Cmp(templateMaxMem)).To(BeNumerically("<=", 0), "%s/%s within --template-max-memory", dep.Name, c.Name)
			g.Expect(limits.StorageEphemeral().Cmp(maxEphemeral)).To(BeNumerically("<=", 0), "%s/%s within --max-ephemeral-storage", dep.Name, c.Name)
			request := c.Resources.Requests[corev1.ResourceCPU]
			request.Mul(int64(ptr.Deref(dep.Spec.Replicas, 1)))
			cpu.Add(request)
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					ownSecret(g, ch, e.ValueFrom.SecretKeyRef.Name)
				}
			}
			for _, e := range c.EnvFrom {
				if e.SecretRef != nil {
					ownSecret(g, ch, e.SecretRef.Name)
				}
			}
		}
		for _, v := range pod.Spec.Volumes {
			g.Expect(v.HostPath).To(BeNil(), "%s mounts nothing of the node", dep.Name)
			if v.Secret != nil {
				ownSecret(g, ch, v.Secret.SecretName)
			}
			if v.EmptyDir != nil {
				g.Expect(v.EmptyDir.SizeLimit).NotTo(BeNil(), "%s's emptyDir %s is bounded", dep.Name, v.Name)
				g.Expect(v.EmptyDir.SizeLimit.Cmp(maxEphemeral)).To(BeNumerically("<=", 0), "%s's emptyDir %s within --max-ephemeral-storage", dep.Name, v.Name)
			}
		}
	}
	g.Expect(cpu.Cmp(teamBudgetCPU)).To(BeNumerically("<=", 0), "%s's team within its budget", ch.Name)
	if len(deployments(g, ch.Spec.Participant)) > 0 {
		isolated(g, ch)
	}
}

// isolated: ch's instance has its NetworkPolicies, in its own namespace,
// and none opens egress to every address, the cluster's own among them.
func isolated(g Gomega, ch *ctfv1alpha1.Challenge) {
	var policies networkingv1.NetworkPolicyList
	g.Expect(h.Client.List(context.Background(), &policies, client.MatchingLabels{ctfv1alpha1.ParticipantLabel: ch.Spec.Participant})).To(Succeed())
	g.Expect(policies.Items).NotTo(BeEmpty(), "%s is isolated by its NetworkPolicies", ch.Name)
	for _, np := range policies.Items {
		g.Expect(np.Namespace).To(Equal(ch.Namespace))
		for _, rule := range np.Spec.Egress {
			for _, peer := range rule.To {
				if peer.IPBlock != nil && (peer.IPBlock.CIDR == "0.0.0.0/0" || peer.IPBlock.CIDR == "::/0") {
					g.Expect(peer.IPBlock.Except).NotTo(BeEmpty(), "%s: egress to everything but the cluster's own ranges at most", np.Name)
				}
			}
		}
	}
}

// ownSecret: the Secret a workload of ch reads is its instance's own.
func ownSecret(g Gomega, ch *ctfv1alpha1.Challenge, name string) {
	secret := &corev1.Secret{}
	g.Expect(h.Client.Get(context.Background(), client.ObjectKey{Namespace: ch.Namespace, Name: name}, secret)).To(Succeed())
	g.Expect(secret.Labels).To(HaveKeyWithValue(ctfv1alpha1.ParticipantLabel, ch.Spec.Participant), "%s reads Secret %s, its own alone", ch.Name, name)
}

// watchClusterBounds samples, until stopped, the bounds that hold of the
// cluster as a whole: --max-instances (the instances admitted, neither
// Queued nor refused), and no instance of the sweep outside the platform's
// namespace. A breach fails the test when stopped.
func watchClusterBounds(t *testing.T) (stop func()) {
	var (
		mu       sync.Mutex
		breaches []string
		done     = make(chan struct{})
		finished = make(chan struct{})
	)
	go func() {
		defer close(finished)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			var chs ctfv1alpha1.ChallengeList
			if err := h.Client.List(context.Background(), &chs); err != nil {
				continue
			}
			admitted := 0
			for _, ch := range chs.Items {
				if ch.Namespace != platformNamespace {
					mu.Lock()
					breaches = append(breaches, "a Challenge outside the platform's namespace: "+ch.Namespace+"/"+ch.Name)
					mu.Unlock()
				}
				if ch.DeletionTimestamp.IsZero() && (ch.Status.Phase == ctfv1alpha1.PhasePending || ch.Status.Phase == ctfv1alpha1.PhaseRunning) {
					admitted++
				}
			}
			if admitted > maxInstances {
				mu.Lock()
				breaches = append(breaches, fmt.Sprintf("%d instances admitted, beyond --max-instances=%d", admitted, maxInstances))
				mu.Unlock()
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		NewWithT(t).Expect(breaches).To(BeEmpty())
	}
}

// baselineViolations are what of pod the baseline Pod Security Standard
// forbids: --max-pod-security's default.
func baselineViolations(pod *corev1.PodTemplateSpec) []string {
	ev, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
	if err != nil {
		return []string{err.Error()}
	}
	lv := psaapi.LevelVersion{Level: psaapi.LevelBaseline, Version: psaapi.LatestVersion()}
	var out []string
	for _, r := range ev.EvaluatePod(lv, &pod.ObjectMeta, &pod.Spec) {
		if !r.Allowed {
			out = append(out, r.ForbiddenReason+": "+r.ForbiddenDetail)
		}
	}
	return out
}

// metaItems are the objects of list.
func metaItems(list client.ObjectList) ([]metav1.Object, error) {
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, 0, len(objs))
	for _, o := range objs {
		m, err := meta.Accessor(o)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
