package policy

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// Keys decides which label and annotation keys may be set beyond the identity labels. A
// prefixed key belongs to whoever owns its domain, and controllers read their own keys to decide
// how they treat an object: an ingress controller's configuration snippets, a load balancer's
// address pool, cert-manager's issuer, a container runtime's devices and kernel parameters. So
// the keys are an allowlist: free are only plain words without a prefix, which Kubernetes'
// conventions leave to the user, and whatever the cluster admin allows; a key a controller starts
// reading tomorrow is refused until the admin allows it.
type Keys struct {
	// Allowed lists exact keys, or prefixes ending in "/", that the admin allows on purpose
	// (e.g. "service.beta.kubernetes.io/" for a cloud load balancer's settings).
	Allowed []string
}

// neverAllowed are the prefixes no admin setting can open: Helm reads them to decide
// what to keep or hook, and the operator reads its own to tell instances apart.
var neverAllowed = []string{"helm.sh", "meta.helm.sh", "ctf.challenge-operator.io"}

// Refused reports whether key may not be set: every key the admin did not allow but plain words
// (a name without a prefix or a dot, such as tier or category). A dotted name without a prefix
// is no user's either: container runtimes read theirs from pod annotations that way
// (io.kubernetes.cri-o.Devices, io.katacontainers.config.hypervisor.kernel_params,
// dev.gvisor.flag.*). k8s-app, the bare key cluster add-ons select their pods by (kube-dns among
// them), is refused too. Keys under helm.sh/, meta.helm.sh/ and ctf.challenge-operator.io/ can
// never be allowed, whatever Allowed says, so a release can never speak for Helm or for the
// operator.
func (k Keys) Refused(key string) bool {
	prefix, _, hasPrefix := strings.Cut(strings.ToLower(key), "/")
	switch {
	case !hasPrefix && !strings.Contains(key, "."):
		return key == "k8s-app"
	case hasPrefix && underAny(prefix, neverAllowed):
		return true
	}
	return !k.allows(key)
}

// allows reports whether an organiser listed key, exactly or by a prefix ending in "/".
func (k Keys) allows(key string) bool {
	for _, a := range k.Allowed {
		if a == key || (strings.HasSuffix(a, "/") && strings.HasPrefix(key, a)) {
			return true
		}
	}
	return false
}

// underAny reports whether domain is one of domains or a subdomain of one of them.
func underAny(domain string, domains []string) bool {
	for _, d := range domains {
		if subdomainOrSelf(domain, d) {
			return true
		}
	}
	return false
}

// subdomainOrSelf reports whether name is parent or lies under it on a dot boundary.
func subdomainOrSelf(name, parent string) bool {
	return name == parent || strings.HasSuffix(name, "."+parent)
}

// helmKey reports whether key is one Helm itself reads (hooks, resource policy, ownership).
func helmKey(key string) bool {
	prefix, _, ok := strings.Cut(strings.ToLower(key), "/")
	return ok && subdomainOrSelf(prefix, "helm.sh")
}

// metadata checks the object's own metadata; a Namespace may also carry its Pod Security labels.
func (c *checker) metadata(o *object) error {
	_, isNamespace := o.obj.(*corev1.Namespace)
	return c.keys(o, o.obj, "", isNamespace)
}

// keys checks one object's or pod template's metadata, where says which: no finalizers, the
// identity labels, then every other label and annotation key.
func (c *checker) keys(o *object, m metav1.Object, where string, isNamespace bool) error {
	if len(m.GetFinalizers()) > 0 {
		return o.violation(ruleFinalizers, "%sfinalizers %v would outlive the instance", where, m.GetFinalizers())
	}
	want := c.part.labels
	if where == podTemplate && c.in.PodParticipant != "" {
		want = maps.Clone(want)
		want[ctfv1alpha1.ParticipantLabel] = c.in.PodParticipant
	}
	if err := c.identity(o, m.GetLabels(), want, where); err != nil {
		return err
	}
	if err := c.labelKeys(o, m.GetLabels(), where, isNamespace); err != nil {
		return err
	}
	if isNamespace {
		return nil // namespaceObject admits the owner annotations alone
	}
	return c.annotationKeys(o, m.GetAnnotations(), where)
}

// identity requires every identity label with exactly its value, so other code can tell whose
// an object is and no instance can pass as another.
func (c *checker) identity(o *object, labels, want map[string]string, where string) error {
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if v, ok := labels[k]; !ok || v != want[k] {
			return o.violation(ruleLabels, "%slabel %s is %q, want %q", where, k, v, want[k])
		}
	}
	return nil
}

// podTemplate is how a pod template's metadata is named in violations.
const podTemplate = "pod template "

// labelKeys refuses label keys beyond the identity labels that are not allowed.
func (c *checker) labelKeys(o *object, labels map[string]string, where string, isNamespace bool) error {
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		_, identity := c.part.labels[k]
		if !identity && !(isNamespace && namespaceLabel(k)) && c.in.Keys.Refused(k) {
			return o.violation(ruleMetadataKey, "%slabel key %s is not allowed (--allow-metadata-keys)", where, k)
		}
	}
	return nil
}

// annotationKeys refuses annotations Helm reads, then those not allowed but the Helm reconciler's
// owner annotations naming the instance's own Challenge, on an object's own metadata.
func (c *checker) annotationKeys(o *object, annotations map[string]string, where string) error {
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		if helmKey(k) {
			return o.violation(ruleHelmAnnotation, "%sannotation %s speaks for Helm", where, k)
		}
		if want, owner := c.in.OwnerAnnotations[k]; owner && where == "" && annotations[k] == want {
			continue // how the Helm reconciler owns an object in another namespace: the instance's own Challenge
		}
		if c.in.Keys.Refused(k) {
			return o.violation(ruleMetadataKey, "%sannotation key %s is not allowed (--allow-metadata-keys)", where, k)
		}
	}
	return nil
}

// namespaceLabel reports the labels a Namespace of the instance's own may carry: its Pod Security
// Standard and the name the API server sets anyway.
func namespaceLabel(key string) bool {
	return strings.HasPrefix(key, "pod-security.kubernetes.io/") || key == "kubernetes.io/metadata.name"
}
