package trustsweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/challenge-operator/challenge-operator/internal/operator"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

var h *harness.Harness

// The admin's bounds in the sweep: the operator's flags, which no tier
// below may raise.
var (
	maxCPU          = resource.MustParse("500m")
	maxMemory       = resource.MustParse("256Mi")
	templateMaxCPU  = resource.MustParse("1")
	templateMaxMem  = resource.MustParse("512Mi")
	maxEphemeral    = resource.MustParse("1Gi")
	teamBudgetCPU   = resource.MustParse("1")
	allowedRegistry = "registry.example"
)

const (
	// maxInstances is --max-instances: fewer than the sweep's instances,
	// so that the sweep queues and the bound is tried all along.
	maxInstances = 8
	// platformNamespace is where the platform, bound to its shipped role,
	// creates its Challenges.
	platformNamespace = "platform"
	// platformAccount is the platform's ServiceAccount.
	platformAccount = "ctfd"
)

// TestMain runs the operator as its service account with the admin's
// bounds above and the shipped webhooks.
func TestMain(m *testing.M) {
	validating, mutating, err := harness.GeneratedWebhooks()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(harness.Run(m, harness.Options{
		AsServiceAccount: true,
		Operator: operator.Options{
			MaxInstances:  maxInstances,
			TeamBudgetCPU: teamBudgetCPU,
			Limits: policy.Limits{
				CPU: maxCPU, Memory: maxMemory, TemplateCPU: templateMaxCPU, TemplateMemory: templateMaxMem,
				EphemeralStorage: maxEphemeral, AllowedRegistries: []string{allowedRegistry},
			},
		},
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{validating},
		MutatingWebhooks:   []*admissionregistrationv1.MutatingWebhookConfiguration{mutating},
	}, &h, nil))
}

// asPlatform binds the platform's ClusterRole, as the OLM bundle ships
// it, to the platform's ServiceAccount in platformNamespace, as the user's
// guide tells an admin to, and returns a client holding a token of it.
func asPlatform(t *testing.T) client.Client {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join("..", "..", "bundle", "manifests", "challenge-operator-platform_rbac.authorization.k8s.io_v1_clusterrole.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.ClusterRole{}
	g.Expect(yaml.Unmarshal(data, role)).To(Succeed())
	role.ResourceVersion = ""
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: platformNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: platformAccount, Namespace: platformNamespace}},
		role,
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: platformAccount, Namespace: platformNamespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: platformAccount, Namespace: platformNamespace}},
		},
	}
	for _, o := range objs {
		g.Expect(h.Client.Create(ctx, o)).To(Succeed())
	}
	cs := kubernetes.NewForConfigOrDie(h.Cluster.Config)
	tok, err := cs.CoreV1().ServiceAccounts(platformNamespace).CreateToken(ctx, platformAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	cfg := rest.AnonymousClientConfig(h.Cluster.Config)
	cfg.BearerToken = tok.Status.Token
	platform, err := client.New(cfg, client.Options{Scheme: h.Client.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	harness.EventuallyMayCreateChallenges(t, platform, platformNamespace)
	return platform
}
