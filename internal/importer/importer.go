// Package importer turns challenge definitions organisers already have (a
// docker-compose file, a kCTF challenge.yaml) into a ChallengeTemplate. What
// has no counterpart in a template is never dropped in silence: the Report
// says, one line each, what was not carried and what was carried differently.
package importer

import (
	"fmt"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/security"
)

// Options are what an import needs to know of the cluster it is for.
type Options struct {
	// SecretNamespace is where the organiser keeps the Secrets a compose
	// file's secrets become (one of the operator's --flag-secret-namespaces);
	// "" reports them not carried.
	SecretNamespace string
}

// Result is an imported template and what the import could not carry as it was.
type Result struct {
	Template *ctfv1alpha1.ChallengeTemplate
	Report   Report
}

// Report lists, line by line, what an import left out and what it changed.
type Report struct {
	// Refused are the files the import did not read because they lie
	// outside the compose file's directory, links resolved.
	Refused []string
	// NotCarried are what the template cannot say: host paths, host
	// networking, build contexts.
	NotCarried []string
	// Changed are what the template says differently, or what the organiser
	// must decide (an exposure, a sandbox runtime class).
	Changed []string
}

func (r *Report) refused(format string, args ...any) {
	r.Refused = append(r.Refused, fmt.Sprintf(format, args...))
}

func (r *Report) notCarried(format string, args ...any) {
	r.NotCarried = append(r.NotCarried, fmt.Sprintf(format, args...))
}

func (r *Report) changed(format string, args ...any) {
	r.Changed = append(r.Changed, fmt.Sprintf(format, args...))
}

// Lines are the report as a person reads it, "refused" first.
func (r Report) Lines() []string {
	out := make([]string, 0, len(r.Refused)+len(r.NotCarried)+len(r.Changed))
	for _, l := range r.Refused {
		out = append(out, "refused: "+l)
	}
	for _, l := range r.NotCarried {
		out = append(out, "not carried: "+l)
	}
	for _, l := range r.Changed {
		out = append(out, "changed: "+l)
	}
	return out
}

// YAML writes the template as kubectl apply reads it.
func (r Result) YAML() ([]byte, error) {
	t := r.Template.DeepCopy()
	t.APIVersion, t.Kind = ctfv1alpha1.GroupVersion.String(), "ChallengeTemplate"
	b, err := yaml.Marshal(t)
	if err != nil {
		return nil, err
	}
	// Neither a status nor a creation time belongs in what is applied.
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	return yaml.Marshal(m)
}

func newTemplate(name string) *ctfv1alpha1.ChallengeTemplate {
	return &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// dnsLabel makes s a DNS label starting with a letter of at most max
// characters, or "" when nothing of it is left.
func dnsLabel(s string, max int) string {
	s = strings.ToLower(s)
	s = nonLabel.ReplaceAllString(s, "-")
	s = strings.TrimLeft(s, "-0123456789")
	if len(s) > max {
		s = s[:max]
	}
	return strings.Trim(s, "-")
}

var nonLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// securityFor maps a container's user, capabilities and privilege onto the
// profiles: restricted unless it runs as root or adds capabilities beyond
// NET_BIND_SERVICE, baseline for the standard set, privileged beyond it.
func securityFor(who string, root bool, user, group *int64, capAdd []string, privileged bool, r *Report) *ctfv1alpha1.Security {
	sec := &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileRestricted, RunAsUser: user, RunAsGroup: group}
	var caps []ctfv1alpha1.Capability
	for _, c := range capAdd {
		c = strings.TrimPrefix(strings.ToUpper(c), "CAP_")
		if c == "ALL" {
			privileged = true
			continue
		}
		caps = append(caps, ctfv1alpha1.Capability(c))
		switch {
		case c == "NET_BIND_SERVICE":
		case security.BaselineCapability(c):
			sec.Profile = security.Widest(sec.Profile, ctfv1alpha1.ProfileBaseline)
		default:
			sec.Profile = ctfv1alpha1.ProfilePrivileged
		}
	}
	if len(caps) > 0 {
		sec.Capabilities = &ctfv1alpha1.Capabilities{Add: caps}
	}
	if root {
		sec.Profile = security.Widest(sec.Profile, ctfv1alpha1.ProfileBaseline)
		sec.RunAsUser, sec.RunAsGroup = ptr.To[int64](0), ptr.To[int64](0)
	}
	if privileged {
		sec.Profile, sec.Privileged = ctfv1alpha1.ProfilePrivileged, ptr.To(true)
	}
	if sec.Profile == ctfv1alpha1.ProfilePrivileged {
		r.changed("%s: runs privileged: set security.runtimeClassName to one of the operator's --sandbox-runtime-classes (--max-pod-security=privileged)", who)
	}
	if sec.Profile == ctfv1alpha1.ProfileRestricted && sec.RunAsUser == nil && sec.RunAsGroup == nil && sec.Capabilities == nil {
		return nil
	}
	return sec
}
