// Package identity names an instance and what it owns, from its Challenge
// alone: its labels and selectors, the names of its Secret, ConfigMap and
// components' objects, its namespace of its own and its hosts. The chart,
// the gate, the status and the watches all agree on an instance because they
// all ask here. Pure: no client, no cluster.
package identity

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// ChallengeLabel is the value of the instances' challenge label: the
// template's name, or the Challenge's own without a template.
func Challenge(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) string {
	if tmpl != nil {
		return tmpl.Name
	}
	return c.Name
}

// FlagSecret is the Secret holding an instance's flag, in the Challenge's namespace.
func FlagSecret(challenge string) string { return challenge + "-flag" }

// ClaimFlagSecret names the Secret of a claimed pooled instance's perTeam
// flags, which the operator writes at claim for its writers to read: no
// Helm release's object, and never an instance's flag Secret's name.
func ClaimFlagSecret(pooled string) string { return pooled + "-claim-flags" }

// Namespace is the namespace an instance runs in when each has its
// own: readable, and unique thanks to a hash of the namespace and name (a
// plain "<namespace>-<name>" would give "a-b"/"c" and "a"/"b-c" the same one).
func Namespace(c *ctfv1alpha1.Challenge) string {
	return identityLabel(c, c.Namespace+"-"+c.Name)
}

// Host is the Ingress host of an instance under domain ("" without
// one): "<name>-<hash>.<domain>", one DNS label under the domain so that a
// wildcard certificate covers every instance. Derived from the instance
// (hostLabel), never chosen, it is unique by construction, which no check of
// the hosts already taken can be while two instances start at once.
func Host(c *ctfv1alpha1.Challenge, domain string) string {
	return hostUnder(c, c.Name, domain)
}

// hostUnder is the host named hostLabel(prefix) under domain, as DNS reads
// it (lower case, no trailing dot); "" without a domain.
func hostUnder(c *ctfv1alpha1.Challenge, prefix, domain string) string {
	domain = dnsDomain(domain)
	if domain == "" {
		return ""
	}
	return hostLabel(c, prefix, domain) + "." + domain
}

// dnsDomain is domain as DNS reads it: lower case, no trailing dot.
func dnsDomain(domain string) string {
	return strings.ToLower(strings.TrimSuffix(domain, "."))
}

// suffixed is name, cut to leave room, then "-" and suffix whole: the
// readable part of a host label, which hashedLabel keeps to 52 characters.
func suffixed(name, suffix string) string {
	if room := 52 - len(suffix) - 1; len(name) > room {
		name = strings.TrimRight(name[:room], "-")
	}
	return name + "-" + suffix
}

// hostLabel is the first label of an instance's host (or a component's):
// readable (prefix, cut to fit), then a hash of its namespace, its name and
// its UID. The API server draws the UID at random and only whoever may read
// the Challenge knows it, so no team can compute another team's host (and
// flood it) from the public template, team and namespace names, and an
// instance started again under the same name gets a new host. An instance
// whose status already shows a host of the former kind, hashed from the
// namespace and name alone (one started by an earlier version), keeps it
// while it lives, so an operator upgrade never moves a team's address.
func hostLabel(c *ctfv1alpha1.Challenge, prefix, domain string) string {
	unkeyed := identityLabel(c, prefix)
	if c.UID == "" || showsHost(&c.Status, unkeyed+"."+domain) {
		return unkeyed
	}
	return hashedLabel(prefix, c.Namespace+"/"+c.Name+"/"+string(c.UID))
}

// showsHost reports whether any endpoint of st is on host.
func showsHost(st *ctfv1alpha1.ChallengeStatus, host string) bool {
	if st.Endpoint != nil && st.Endpoint.Host == host {
		return true
	}
	return slices.ContainsFunc(st.Endpoints, func(e ctfv1alpha1.Endpoint) bool { return e.Host == host })
}

// identityLabel is a DNS label of at most 63 characters naming c: readable
// (prefix, cut to fit) and unique thanks to a hash of its namespace and name.
func identityLabel(c *ctfv1alpha1.Challenge, prefix string) string {
	return hashedLabel(prefix, c.Namespace+"/"+c.Name)
}

// hashedLabel is prefix, cut to leave room, then "-" and the first 10 hex
// digits of the SHA-256 of key: a DNS label of at most 63 characters.
func hashedLabel(prefix, key string) string {
	if len(prefix) > 52 {
		prefix = strings.TrimRight(prefix[:52], "-")
	}
	sum := sha256.Sum256([]byte(key))
	return prefix + "-" + hex.EncodeToString(sum[:])[:10]
}

// namespaceSuffix is the hash Namespace ends with.
var namespaceSuffix = regexp.MustCompile(`-[0-9a-f]{10}$`)

// MayBeNamespace reports whether name has the shape Namespace
// gives for a Challenge in one of challengeNamespaces (in any, when empty).
func MayBeNamespace(name string, challengeNamespaces []string) bool {
	if !namespaceSuffix.MatchString(name) {
		return false
	}
	if len(challengeNamespaces) == 0 {
		return true
	}
	for _, ns := range challengeNamespaces {
		if strings.HasPrefix(name, ns+"-") || (len(ns) >= 52 && strings.HasPrefix(name, strings.TrimRight(ns[:52], "-"))) {
			return true
		}
	}
	return false
}

// ComponentHost is the host of an instance's exposed component under domain
// ("" without one): "<name>-<component>-<hash>.<domain>", one DNS label, the
// component's name kept whole however long the instance's is.
func ComponentHost(c *ctfv1alpha1.Challenge, component, domain string) string {
	return hostUnder(c, suffixed(c.Name, component), domain)
}

// PortHost is the host of one more exposed port of a workload (its
// component's name, "" for the primary one) under domain ("" without one):
// "<name>[-<component>]-<port>-<hash>.<domain>", one DNS label. Its hash
// covers the workload and the port besides the instance's identity, so it
// never equals the instance's host or a component's, whatever the names.
func PortHost(c *ctfv1alpha1.Challenge, component, port, domain string) string {
	domain = dnsDomain(domain)
	if domain == "" {
		return ""
	}
	readable := c.Name
	if component != "" {
		readable += "-" + component
	}
	return hashedLabel(suffixed(readable, port), c.Namespace+"/"+c.Name+"/"+string(c.UID)+"/"+component+"/"+port) + "." + domain
}

// PortObject names the Ingress or route of one more exposed port of a
// workload whose objects are named object: "<object>.<port>", which no
// instance's or component's object name can be (they hold no dot).
func PortObject(object, port string) string { return object + "." + port }

// PrimaryWorkload names an instance's primary workload where a
// component's name stands for a component's: its pods'
// app.kubernetes.io/name, its main container's name, the first part of the
// keys of its sidecars' files. No component can take it (a component's name
// has at most 8 characters).
const PrimaryWorkload = "challenge"

// Selector select an instance's pods, as charts/challenge writes them.
func Selector(c *ctfv1alpha1.Challenge) map[string]string {
	return map[string]string{ctfv1alpha1.NameLabel: PrimaryWorkload, ctfv1alpha1.AppInstanceLabel: c.Name}
}

// Labels are the labels charts/challenge puts on every object of an
// instance: whose it is and what it is. The post-render gate holds every
// rendered object to exactly these.
func Labels(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) map[string]string {
	l := Selector(c)
	l[ctfv1alpha1.ManagedByLabel] = "Helm" // what Helm needs to adopt live objects
	l[ctfv1alpha1.InstanceLabel] = c.Name
	l[ctfv1alpha1.InstanceNamespaceLabel] = c.Namespace
	l[ctfv1alpha1.ParticipantLabel] = c.Spec.Participant
	l[ctfv1alpha1.ChallengeLabel] = Challenge(c, tmpl)
	return l
}

// ComponentSelector select the pods of an instance's component, as
// charts/challenge writes them: never the primary component's, whose
// app.kubernetes.io/name is "challenge", a name no component may take.
func ComponentSelector(c *ctfv1alpha1.Challenge, component string) map[string]string {
	return map[string]string{ctfv1alpha1.NameLabel: component, ctfv1alpha1.AppInstanceLabel: c.Name}
}

// ComponentLabels are the identity labels of a component's objects: the
// instance's, with the component's name.
func ComponentLabels(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, component string) map[string]string {
	l := Labels(c, tmpl)
	l[ctfv1alpha1.NameLabel] = component
	l[ctfv1alpha1.ComponentLabel] = component
	return l
}

// InstancePods select every pod of an instance, whatever its component,
// and no other instance's in its namespace: the peer its NetworkPolicies let
// its components reach each other through.
func InstancePods(c *ctfv1alpha1.Challenge) map[string]string {
	return map[string]string{ctfv1alpha1.InstanceLabel: c.Name}
}

// ComponentObject names the objects of an instance's component: "<release>--<component>". No
// Challenge name contains "--", so no other instance's object can have such a name.
func ComponentObject(release, component string) string {
	return release + "--" + component
}

// FilesConfigMap is the one ConfigMap a release may create and its pod mount: the files its
// template carries.
func FilesConfigMap(release string) string { return release + "-files" }

// BareNamesService names the headless Service through which an instance's
// workloads answer to their bare names (its pods' subdomain):
// "<release>---names". It is no component's object, whose name's part after
// "<release>--" starts with a letter, and no other instance's, whose names
// contain no "--" before their components'. At most 61 characters: a
// release is at most 53.
func BareNamesService(release string) string { return release + "---names" }

// BareNamesSearch is the search domain that makes a bare name resolve, in
// the pods of an instance whose Service BareNamesService is in namespace:
// "<service>.<namespace>.svc.<clusterDomain>".
func BareNamesSearch(release, namespace, clusterDomain string) string {
	return BareNamesService(release) + "." + namespace + ".svc." + clusterDomain
}

// OperatorChallenge is a new Challenge the operator makes of tmpl in
// namespace for a role of its own ("pool", "canary", "solver"): named by
// OperatorInstance, labelled with the template under label, with the
// template's generation; its participant is its own name, so that no
// team's quota counts it, and the template controls it.
func OperatorChallenge(tmpl *ctfv1alpha1.ChallengeTemplate, namespace, role, label string) *ctfv1alpha1.Challenge {
	name := OperatorInstance(tmpl.Name, role)
	controller := true
	return &ctfv1alpha1.Challenge{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   namespace,
			Labels:      map[string]string{label: tmpl.Name},
			Annotations: map[string]string{ctfv1alpha1.TemplateGenerationAnnotation: strconv.FormatInt(tmpl.Generation, 10)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: ctfv1alpha1.GroupVersion.String(), Kind: "ChallengeTemplate",
				Name: tmpl.Name, UID: tmpl.UID, Controller: &controller,
			}},
		},
		Spec: ctfv1alpha1.ChallengeSpec{Template: tmpl.Name, Participant: name},
	}
}

// OperatorInstance names a new instance the operator creates of a template
// for a role of its own ("pool", "canary"): the template's name (cut to
// fit a release name), the role, and five random characters, so that no
// two collide and none is guessed before it exists.
func OperatorInstance(template, role string) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	prefix := strings.TrimRight(template[:min(len(template), 40)], "-")
	suffix := make([]byte, 5)
	_, _ = rand.Read(suffix)
	for i, b := range suffix {
		suffix[i] = alphabet[int(b)%len(alphabet)]
	}
	return prefix + "-" + role + "-" + string(suffix)
}
