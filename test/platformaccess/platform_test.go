package platformaccess

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/installchart"
	"github.com/challenge-operator/challenge-operator/internal/manifests"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

const (
	// platformNamespace is where the platform creates its Challenges.
	platformNamespace = "platform"
	// otherNamespace is any namespace the platform was not bound in.
	otherNamespace = "other"
	// account is the platform's ServiceAccount.
	account = "ctfd"
	// roleName is the shipped ClusterRole, with the installs' name prefix.
	roleName = "challenge-operator-platform"
)

// contract is every right the platform holds in its namespace, as the
// user's guide (docs/guide.md) states it: a right added to the shipped role
// fails the test until it is added here, and to the guide.
var contract = []string{
	"challenges.ctf.challenge-operator.io create",
	"challenges.ctf.challenge-operator.io delete",
	"challenges.ctf.challenge-operator.io get",
	"challenges.ctf.challenge-operator.io list",
	"challenges.ctf.challenge-operator.io patch",
	"challenges.ctf.challenge-operator.io watch",
}

// TestPlatformRole binds the shipped role to the ServiceAccount ctfd in the
// namespace platform, as the user's guide tells an admin to, and acts as ctfd with
// a token of it: it creates, reads, lists, watches, renews (a patch of
// spec.renewedAt) and deletes a Challenge there, is refused everything else
// tried, and holds there exactly the rights of contract beyond what every
// ServiceAccount holds, and none elsewhere.
func TestPlatformRole(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	role := shippedRole(t)
	cfg, admin := controlplane.StartAPIServer(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	for _, ns := range []string{platformNamespace, otherNamespace} {
		g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	g.Expect(admin.Create(ctx, role)).To(Succeed())
	g.Expect(admin.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: account + "-platform", Namespace: platformNamespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: platformNamespace}},
	})).To(Succeed())
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-team-blue-flag", Namespace: platformNamespace},
		StringData: map[string]string{"flag": "CTF{not-for-the-platform}"}}
	g.Expect(admin.Create(ctx, secret)).To(Succeed())
	tmpl := template("web")
	g.Expect(admin.Create(ctx, tmpl)).To(Succeed())

	platform := asServiceAccount(t, cfg, cs, admin.Scheme(), account)
	stranger := asServiceAccount(t, cfg, cs, admin.Scheme(), "stranger") // bound to nothing
	harness.EventuallyMayCreateChallenges(t, platform, platformNamespace)

	// What a platform does with an instance, start to end.
	ch := challenge(platformNamespace)
	g.Expect(platform.Create(ctx, ch)).To(Succeed())
	g.Expect(platform.Get(ctx, client.ObjectKeyFromObject(ch), ch)).To(Succeed())
	list := &ctfv1alpha1.ChallengeList{}
	g.Expect(platform.List(ctx, list, client.InNamespace(platformNamespace))).To(Succeed())
	g.Expect(list.Items).To(ConsistOf(HaveField("Name", ch.Name)))
	w, err := platform.Watch(ctx, &ctfv1alpha1.ChallengeList{}, client.InNamespace(platformNamespace))
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(w.ResultChan(), 10*time.Second).Should(Receive(HaveField("Type", watch.Added)))
	w.Stop()
	renew := client.MergeFrom(ch.DeepCopy())
	now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	ch.Spec.RenewedAt = &now
	g.Expect(platform.Patch(ctx, ch, renew)).To(Succeed(), "renewing is a patch of spec.renewedAt")
	g.Expect(ch.Spec.RenewedAt).NotTo(BeNil())
	g.Expect(ch.Spec.RenewedAt.Time).To(BeTemporally("==", now.Time))

	for what, do := range map[string]func() error{
		"create a Challenge in another namespace": func() error { return platform.Create(ctx, challenge(otherNamespace)) },
		"list the Challenges of another namespace": func() error {
			return platform.List(ctx, &ctfv1alpha1.ChallengeList{}, client.InNamespace(otherNamespace))
		},
		"watch the Challenges of another namespace": func() error {
			_, err := platform.Watch(ctx, &ctfv1alpha1.ChallengeList{}, client.InNamespace(otherNamespace))
			return err
		},
		"update a Challenge (renewing is a patch)": func() error { return platform.Update(ctx, ch.DeepCopy()) },
		"update a Challenge's status": func() error {
			c := ch.DeepCopy()
			c.Status.Phase = ctfv1alpha1.PhaseRunning
			return platform.Status().Update(ctx, c)
		},
		"patch a Challenge's status": func() error {
			return platform.Status().Patch(ctx, ch.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"status":{"renewals":0}}`)))
		},
		"delete every Challenge at once": func() error {
			return platform.DeleteAllOf(ctx, &ctfv1alpha1.Challenge{}, client.InNamespace(platformNamespace))
		},
		"read a Secret in its namespace":    func() error { return platform.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{}) },
		"list the Secrets of its namespace": func() error { return platform.List(ctx, &corev1.SecretList{}, client.InNamespace(platformNamespace)) },
		"create a ChallengeTemplate":        func() error { return platform.Create(ctx, template("mine")) },
		"update a ChallengeTemplate":        func() error { return platform.Update(ctx, tmpl.DeepCopy()) },
		"read a ChallengeTemplate":          func() error { return platform.Get(ctx, client.ObjectKeyFromObject(tmpl), template("")) },
		"create a pod in its namespace": func() error {
			return platform.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "shell", Namespace: platformNamespace},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "shell", Image: "busybox"}}}})
		},
	} {
		err := do()
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the platform may not %s: got %v", what, err)
	}

	// Exactly the contract in its namespace, nothing elsewhere, beyond what
	// every ServiceAccount holds (discovery, reviews of itself).
	g.Expect(granted(ctx, g, platform, stranger, platformNamespace)).To(ConsistOf(contract))
	g.Expect(granted(ctx, g, platform, stranger, otherNamespace)).To(BeEmpty())

	g.Expect(platform.Delete(ctx, ch)).To(Succeed())
	err = platform.Get(ctx, client.ObjectKeyFromObject(ch), &ctfv1alpha1.Challenge{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "deleted (no operator, so no finalizer): got %v", err)
}

// shippedRole returns the platform's ClusterRole as the installs ship it:
// the same in every kustomize install mode (whose RBAC the install chart
// copies, checked by internal/installchart) and in the OLM bundle, and bound
// by none of them.
func shippedRole(t *testing.T) *rbacv1.ClusterRole {
	g := NewWithT(t)
	root := controlplane.RepoRoot()
	var role *rbacv1.ClusterRole
	for _, m := range installchart.Modes {
		objs, err := manifests.Kustomize(filepath.Join(root, "config", m.Kustomization))
		g.Expect(err).NotTo(HaveOccurred())
		var found *rbacv1.ClusterRole
		for _, o := range objs {
			switch o.GetKind() {
			case "ClusterRole":
				if o.GetName() == roleName {
					found = &rbacv1.ClusterRole{}
					g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, found)).To(Succeed())
				}
			case "RoleBinding", "ClusterRoleBinding":
				g.Expect(o.Object["roleRef"]).NotTo(HaveKeyWithValue("name", roleName), "config/%s binds %s to nobody", m.Kustomization, roleName)
			}
		}
		g.Expect(found).NotTo(BeNil(), "config/%s ships %s", m.Kustomization, roleName)
		if role != nil {
			g.Expect(found).To(Equal(role), "config/%s ships the same %s", m.Kustomization, roleName)
		}
		role = found
	}
	data, err := os.ReadFile(filepath.Join(root, "bundle", "manifests", roleName+"_rbac.authorization.k8s.io_v1_clusterrole.yaml"))
	g.Expect(err).NotTo(HaveOccurred(), "the OLM bundle ships %s", roleName)
	bundled := &rbacv1.ClusterRole{}
	g.Expect(yaml.Unmarshal(data, bundled)).To(Succeed())
	g.Expect(bundled.Rules).To(Equal(role.Rules), "the OLM bundle ships the same %s", roleName)
	return role
}

// asServiceAccount creates the ServiceAccount name in the platform's
// namespace and returns a client authenticated by a token of it, as
// `kubectl create token` gives one to the platform.
func asServiceAccount(t *testing.T, cfg *rest.Config, cs kubernetes.Interface, scheme *runtime.Scheme, name string) client.WithWatch {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	_, err := cs.CoreV1().ServiceAccounts(platformNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	token, err := cs.CoreV1().ServiceAccounts(platformNamespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	as := rest.AnonymousClientConfig(cfg)
	as.BearerToken = token.Status.Token
	c, err := client.NewWithWatch(as, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	return c
}

// granted returns the rights in namespace ns that subject holds and
// baseline (a ServiceAccount bound to nothing) does not, one "resource.group
// verb" each, with the names a right is limited to; a wildcard stays "*", so
// a role widened to it shows too.
func granted(ctx context.Context, g Gomega, subject, baseline client.Client, ns string) []string {
	held := rightsIn(ctx, g, subject, ns)
	common := rightsIn(ctx, g, baseline, ns)
	var out []string
	for _, r := range held {
		if !slices.Contains(common, r) {
			out = append(out, r)
		}
	}
	return out
}

// rightsIn returns every right c holds in namespace ns, as the API server's
// authorizer lists them (SelfSubjectRulesReview).
func rightsIn(ctx context.Context, g Gomega, c client.Client, ns string) []string {
	review := &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}
	g.Expect(c.Create(ctx, review)).To(Succeed())
	g.Expect(review.Status.Incomplete).To(BeFalse(), review.Status.EvaluationError)
	var out []string
	for _, rule := range review.Status.ResourceRules {
		names := ""
		if len(rule.ResourceNames) > 0 {
			names = " names:" + strings.Join(rule.ResourceNames, ",")
		}
		for _, group := range rule.APIGroups {
			for _, resource := range rule.Resources {
				for _, verb := range rule.Verbs {
					out = append(out, schema.GroupResource{Group: group, Resource: resource}.String()+" "+verb+names)
				}
			}
		}
	}
	for _, rule := range review.Status.NonResourceRules {
		for _, path := range rule.NonResourceURLs {
			for _, verb := range rule.Verbs {
				out = append(out, path+" "+verb)
			}
		}
	}
	return out
}

// challenge is a team's instance of the template web in namespace ns.
func challenge(ns string) *ctfv1alpha1.Challenge {
	return builders.FromTemplate(ns, "web-team-blue", "team-blue", "web")
}

// template is a smallest valid ChallengeTemplate called name.
func template(name string) *ctfv1alpha1.ChallengeTemplate {
	return builders.Template(name, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Image, s.Ports = "registry.example/web:1", []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080}}
	})
}
