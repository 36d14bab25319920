package policy

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Keys decides which label and annotation keys may be set beyond the identity labels.
// Reserved keys steer controllers, the scheduler, Helm or this operator, so a release
// that could set them could change how other objects are treated.
type Keys struct {
	// Allowed lists exact keys, or prefixes ending in "/", that organisers allow on purpose
	// (e.g. "service.beta.kubernetes.io/" for a cloud load balancer's settings).
	Allowed []string
}

// neverAllowed are the prefixes no organiser setting can open: Helm reads them to decide
// what to keep or hook, and the operator reads its own to tell instances apart.
var neverAllowed = []string{"helm.sh", "meta.helm.sh", "ctf.challenge-operator.io"}

// reservedDomains are the prefix domains whose keys, and their subdomains' keys, are reserved.
var reservedDomains = []string{"ctf.challenge-operator.io", "helm.sh", "kubernetes.io", "k8s.io"}

// Refused reports whether key is reserved and not allowed. Reserved: keys whose prefix (the part
// before "/") is ctf.challenge-operator.io, app.kubernetes.io, helm.sh, meta.helm.sh, kubernetes.io or
// any *.kubernetes.io, *.k8s.io, k8s.io; the bare key k8s-app; AppArmor and seccomp keys (covered by
// *.kubernetes.io). Keys under helm.sh/, meta.helm.sh/ and ctf.challenge-operator.io/ can never be
// allowed, whatever Allowed says, so a release can never speak for Helm or for the operator.
func (k Keys) Refused(key string) bool {
	prefix, _, hasPrefix := strings.Cut(strings.ToLower(key), "/")
	if !hasPrefix {
		return key == "k8s-app"
	}
	if !reserved(prefix) {
		return false
	}
	if underAny(prefix, neverAllowed) {
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

// reserved reports whether a key prefix belongs to a reserved domain.
func reserved(prefix string) bool {
	return underAny(prefix, reservedDomains)
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
		want[ParticipantLabel] = c.in.PodParticipant
	}
	if err := c.identity(o, m.GetLabels(), want, where); err != nil {
		return err
	}
	if err := c.labelKeys(o, m.GetLabels(), where, isNamespace); err != nil {
		return err
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

// ParticipantLabel is the identity label naming whose an instance is.
const ParticipantLabel = "ctf.challenge-operator.io/participant"

// podTemplate is how a pod template's metadata is named in violations.
const podTemplate = "pod template "

// labelKeys refuses reserved label keys beyond the identity labels.
func (c *checker) labelKeys(o *object, labels map[string]string, where string, isNamespace bool) error {
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		_, identity := c.part.labels[k]
		if !identity && !(isNamespace && namespaceLabel(k)) && c.in.Keys.Refused(k) {
			return o.violation(ruleMetadataKey, "%slabel key %s is reserved", where, k)
		}
	}
	return nil
}

// annotationKeys refuses annotations Helm reads, then reserved ones.
func (c *checker) annotationKeys(o *object, annotations map[string]string, where string) error {
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		if helmKey(k) {
			return o.violation(ruleHelmAnnotation, "%sannotation %s speaks for Helm", where, k)
		}
		if c.in.Keys.Refused(k) {
			return o.violation(ruleMetadataKey, "%sannotation key %s is reserved", where, k)
		}
	}
	return nil
}

// namespaceLabel reports the labels a Namespace of the instance's own may carry: its Pod Security
// Standard and the name the API server sets anyway.
func namespaceLabel(key string) bool {
	return strings.HasPrefix(key, "pod-security.kubernetes.io/") || key == "kubernetes.io/metadata.name"
}
