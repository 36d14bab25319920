// Package bundle builds the OLM bundle (registry+v1) from the kustomize
// output of config/manifests: the ClusterServiceVersion gets its version,
// install strategy, permissions, webhook and examples from the same objects
// `kubectl apply -k config/default` would create. The rights of the
// manager's ClusterRole are split by scope (rbac.go): those on namespaced
// kinds become permissions, which OLM grants in the namespaces of the install
// mode, and only the cluster-scoped ones become clusterPermissions. The same
// split writes the Role and ClusterRole of config/namespaced.
package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/challenge-operator/challenge-operator/internal/manifests"
)

// Package is the OLM package name.
const Package = "challenge-operator"

// Options say which bundle to build.
type Options struct {
	// Version is the operator's semantic version, e.g. 0.1.0.
	Version string
	// Image is the operator image the Deployment runs.
	Image string
	// CreatedAt is the CSV's createdAt annotation; pinned so that builds reproduce.
	CreatedAt string
	// Channels, the first of which is the default.
	Channels []string
}

// FromKustomization builds the kustomization in dir and generates the bundle from it.
func FromKustomization(dir string, opts Options) (map[string][]byte, error) {
	objs, err := manifests.Kustomize(dir)
	if err != nil {
		return nil, err
	}
	return generate(objs, opts)
}

// Generate returns the bundle's files by path: manifests/*, metadata/annotations.yaml, and bundle.Dockerfile.
func Generate(r io.Reader, opts Options) (map[string][]byte, error) {
	objs, err := manifests.Decode(r)
	if err != nil {
		return nil, err
	}
	return generate(objs, opts)
}

func generate(objs []*unstructured.Unstructured, opts Options) (map[string][]byte, error) {
	b := &builder{opts: opts, files: map[string][]byte{}, scopes: builtinScopes()}
	for _, o := range objs {
		if err := b.add(o); err != nil {
			return nil, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	if err := b.finish(); err != nil {
		return nil, err
	}
	return b.files, nil
}

type builder struct {
	opts     Options
	files    map[string][]byte
	csv      *operatorsv1alpha1.ClusterServiceVersion
	deploys  []appsv1.Deployment
	roles    []rbacv1.Role
	cluster  []rbacv1.ClusterRole
	bindings map[string]string // role name -> service account
	scopes   scopes            // built-in kinds and the CRDs of the build
	webhooks []webhooks
	examples []map[string]any
}

// webhooks are a webhook configuration of config/webhook, mutating or
// validating: a mutating webhook has a validating one's fields and a
// reinvocation policy, so both are read as mutating ones.
type webhooks struct {
	typ operatorsv1alpha1.WebhookAdmissionType
	cfg admissionregistrationv1.MutatingWebhookConfiguration
}

func (b *builder) add(o *unstructured.Unstructured) error {
	switch o.GetKind() {
	case "ClusterServiceVersion":
		b.csv = &operatorsv1alpha1.ClusterServiceVersion{}
		return convert(o, b.csv)
	case "CustomResourceDefinition":
		var crd apiextensionsv1.CustomResourceDefinition
		if err := convert(o, &crd); err != nil {
			return err
		}
		b.scopes.addCRD(&crd)
		return b.write(fmt.Sprintf("manifests/%s_%s.yaml", crd.Spec.Group, crd.Spec.Names.Plural), clean(o.Object))
	case "Deployment":
		var d appsv1.Deployment
		if err := convert(o, &d); err != nil {
			return err
		}
		b.deploys = append(b.deploys, d)
	case "Role":
		var r rbacv1.Role
		if err := convert(o, &r); err != nil {
			return err
		}
		b.roles = append(b.roles, r)
	case "ClusterRole":
		var r rbacv1.ClusterRole
		if err := convert(o, &r); err != nil {
			return err
		}
		b.cluster = append(b.cluster, r)
	case "RoleBinding", "ClusterRoleBinding":
		return b.bind(o)
	case "Service":
		// The metrics Service: OLM creates it in the install's namespace.
		// (No ServiceMonitor or PrometheusRule: OLM fails a whole install
		// whose bundle holds a kind the cluster lacks. The operator applies
		// them itself where they are served: --create-monitors.)
		return b.extra(o)
	case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
		w := webhooks{typ: operatorsv1alpha1.ValidatingAdmissionWebhook}
		if o.GetKind() == "MutatingWebhookConfiguration" {
			w.typ = operatorsv1alpha1.MutatingAdmissionWebhook
		}
		if err := convert(o, &w.cfg); err != nil {
			return err
		}
		b.webhooks = append(b.webhooks, w)
	case "Challenge", "ChallengeTemplate":
		ex := clean(o.Object)
		unstructured.RemoveNestedField(ex, "metadata", "namespace")
		b.examples = append(b.examples, ex)
	}
	// Namespaces, ServiceAccounts and sample Secrets are OLM's or the user's business.
	return nil
}

// extra adds o to the bundle as a manifest of its own, which OLM creates
// beside the CSV, named as operator-sdk names them.
func (b *builder) extra(o *unstructured.Unstructured) error {
	obj := clean(o.DeepCopy().Object)
	unstructured.RemoveNestedField(obj, "metadata", "namespace")
	gvk := o.GroupVersionKind()
	group := ""
	if gvk.Group != "" {
		group = gvk.Group + "_"
	}
	return b.write(fmt.Sprintf("manifests/%s_%s%s_%s.yaml", o.GetName(), group, gvk.Version, strings.ToLower(gvk.Kind)), obj)
}

func (b *builder) bind(o *unstructured.Unstructured) error {
	if b.bindings == nil {
		b.bindings = map[string]string{}
	}
	var rb rbacv1.RoleBinding // same shape as a ClusterRoleBinding
	if err := convert(o, &rb); err != nil {
		return err
	}
	for _, s := range rb.Subjects {
		if s.Kind == rbacv1.ServiceAccountKind {
			b.bindings[rb.RoleRef.Kind+"/"+rb.RoleRef.Name] = s.Name
		}
	}
	return nil
}

func (b *builder) finish() error {
	if b.csv == nil || len(b.deploys) != 1 {
		return fmt.Errorf("config/manifests must hold one ClusterServiceVersion base and one Deployment")
	}
	v, err := semver.Parse(b.opts.Version)
	if err != nil {
		return fmt.Errorf("version %q: %w", b.opts.Version, err)
	}
	csv := b.csv
	csv.Name = Package + ".v" + v.String()
	csv.Namespace = ""
	csv.Spec.Version.Version = v
	csv.Annotations["containerImage"] = b.opts.Image
	csv.Annotations["createdAt"] = b.opts.CreatedAt
	// Order by kind and name, so the bundle does not depend on kustomize's output order.
	sort.SliceStable(b.examples, func(i, j int) bool {
		ki, kj := b.examples[i]["kind"].(string), b.examples[j]["kind"].(string)
		if ki != kj {
			return ki < kj
		}
		return exampleName(b.examples[i]) < exampleName(b.examples[j])
	})
	sort.Slice(b.roles, func(i, j int) bool { return b.roles[i].Name < b.roles[j].Name })
	sort.Slice(b.cluster, func(i, j int) bool { return b.cluster[i].Name < b.cluster[j].Name })
	examples, err := json.Marshal(b.examples)
	if err != nil {
		return err
	}
	csv.Annotations["alm-examples"] = string(examples)
	if err := b.installStrategy(); err != nil {
		return err
	}
	b.webhookDefinitions()

	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(csv)
	if err != nil {
		return err
	}
	unstructured.RemoveNestedField(out, "status")
	if err := b.write("manifests/"+Package+".clusterserviceversion.yaml", clean(out)); err != nil {
		return err
	}
	return b.metadata()
}

func (b *builder) installStrategy() error {
	d := b.deploys[0]
	for i := range d.Spec.Template.Spec.Containers {
		if d.Spec.Template.Spec.Containers[i].Name == "manager" {
			d.Spec.Template.Spec.Containers[i].Image = b.opts.Image
		}
	}
	spec := operatorsv1alpha1.StrategyDetailsDeployment{
		DeploymentSpecs: []operatorsv1alpha1.StrategyDeploymentSpec{{Name: d.Name, Label: d.Labels, Spec: d.Spec}},
	}
	var err error
	if spec.Permissions, spec.ClusterPermissions, err = b.permissions(); err != nil {
		return err
	}
	b.csv.Spec.InstallStrategy = operatorsv1alpha1.NamedInstallStrategy{
		StrategyName: operatorsv1alpha1.InstallStrategyNameDeployment, StrategySpec: spec}
	return nil
}

// permissions turns the roles of the build into the CSV's permissions and
// clusterPermissions. A ClusterRole's rights on namespaced kinds are
// permissions too: OLM makes them Roles in each target namespace, or a
// ClusterRole for AllNamespaces. Only what no Role can grant stays cluster-wide.
func (b *builder) permissions() (namespaced, cluster []operatorsv1alpha1.StrategyDeploymentPermissions, err error) {
	add := func(to *[]operatorsv1alpha1.StrategyDeploymentPermissions, account string, rules []rbacv1.PolicyRule) {
		if len(rules) > 0 {
			*to = append(*to, operatorsv1alpha1.StrategyDeploymentPermissions{ServiceAccountName: account, Rules: rules})
		}
	}
	for _, r := range b.roles {
		if err := b.scopes.checkNamespaced(r.Rules); err != nil {
			return nil, nil, fmt.Errorf("the Role %s: %w", r.Name, err)
		}
		add(&namespaced, b.bindings["Role/"+r.Name], r.Rules)
	}
	for _, r := range b.cluster {
		if _, bound := b.bindings["ClusterRole/"+r.Name]; !bound {
			// For others to bind (metrics-reader): a manifest of its own.
			if err := b.extraClusterRole(r); err != nil {
				return nil, nil, err
			}
			continue
		}
		ns, cl, err := b.scopes.split(r.Rules)
		if err != nil {
			return nil, nil, fmt.Errorf("ClusterRole %s: %w", r.Name, err)
		}
		add(&namespaced, b.bindings["ClusterRole/"+r.Name], ns)
		add(&cluster, b.bindings["ClusterRole/"+r.Name], cl)
	}
	for _, p := range append(namespaced, cluster...) {
		if p.ServiceAccountName == "" {
			return nil, nil, fmt.Errorf("a Role or ClusterRole is bound to no ServiceAccount")
		}
	}
	return namespaced, cluster, nil
}

// extraClusterRole adds the ClusterRole r, bound to nothing, to the bundle.
func (b *builder) extraClusterRole(r rbacv1.ClusterRole) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&r)
	if err != nil {
		return err
	}
	return b.extra(&unstructured.Unstructured{Object: obj})
}

// webhookDefinitions hand the webhooks to OLM, which creates them with a
// serving certificate it mounts into the Deployment.
func (b *builder) webhookDefinitions() {
	b.csv.Spec.WebhookDefinitions = nil
	for _, ws := range b.webhooks {
		for _, w := range ws.cfg.Webhooks {
			def := operatorsv1alpha1.WebhookDescription{
				GenerateName:            w.Name,
				Type:                    ws.typ,
				DeploymentName:          b.deploys[0].Name,
				ContainerPort:           443,
				TargetPort:              ptrTo(intOrString(9443)),
				Rules:                   w.Rules,
				FailurePolicy:           w.FailurePolicy,
				ObjectSelector:          w.ObjectSelector,
				ReinvocationPolicy:      w.ReinvocationPolicy,
				SideEffects:             w.SideEffects,
				TimeoutSeconds:          w.TimeoutSeconds,
				AdmissionReviewVersions: w.AdmissionReviewVersions,
			}
			if w.ClientConfig.Service != nil {
				def.WebhookPath = w.ClientConfig.Service.Path
			}
			b.csv.Spec.WebhookDefinitions = append(b.csv.Spec.WebhookDefinitions, def)
		}
	}
}

func (b *builder) metadata() error {
	channels := strings.Join(b.opts.Channels, ",")
	labels := map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
		"operators.operatorframework.io.bundle.package.v1":         Package,
		"operators.operatorframework.io.bundle.channels.v1":        channels,
		"operators.operatorframework.io.bundle.channel.default.v1": b.opts.Channels[0],
	}
	if err := b.write("metadata/annotations.yaml", map[string]any{"annotations": labels}); err != nil {
		return err
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var df bytes.Buffer
	df.WriteString("# Generated by make bundle; do not edit.\nFROM scratch\n\n")
	for _, k := range keys {
		fmt.Fprintf(&df, "LABEL %s=%s\n", k, labels[k])
	}
	df.WriteString("\nCOPY bundle/manifests /manifests/\nCOPY bundle/metadata /metadata/\n")
	b.files["bundle.Dockerfile"] = df.Bytes()
	return nil
}

func (b *builder) write(path string, obj any) error {
	data, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	b.files[path] = data
	return nil
}

func exampleName(obj map[string]any) string {
	name, _, _ := unstructured.NestedString(obj, "metadata", "name")
	return name
}

func convert(o *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into)
}

// clean drops the empty fields typed round trips leave behind.
func clean(obj map[string]any) map[string]any {
	unstructured.RemoveNestedField(obj, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(obj, "status")
	return obj
}
