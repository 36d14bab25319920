package policy

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
)

// The image reference names a host the node contacts to pull it, with the node's network and
// credentials: an image "169.254.169.254/x" or "10.96.0.1:443/x" makes the node connect to the
// metadata endpoint or the API server for the instance.

// internalRegistrySuffixes are DNS names that resolve inside a site rather than on the internet.
var internalRegistrySuffixes = []string{"localhost", "local", "internal", "svc", "cluster.local", "home.arpa", "lan", "intranet"}

// images requires every container's image to come from a registry the organiser allows.
func (c *checker) images(o *object, p *corev1.PodSpec) error {
	for _, ctr := range slices.Concat(p.InitContainers, p.Containers) {
		if err := imageAllowed(ctr.Image, c.in.Limits.AllowedRegistries); err != nil {
			return o.violation(ruleImageRegistry, "container %q: %v", ctr.Name, err)
		}
	}
	return nil
}

// ImageAllowed reports why image may not be pulled under l (its
// registries, as a template's policy narrowed them): for images the
// operator runs beside an instance's, which no gate of a release sees (a
// solver check's).
func (l Limits) ImageAllowed(image string) error {
	if err := imageAllowed(image, l.AllowedRegistries); err != nil {
		return &Violation{Rule: ruleImageRegistry, Object: "image " + image, Detail: err.Error() + " (--allowed-registries, narrowed by the template's policy)"}
	}
	return nil
}

// imageAllowed reports why image may not be pulled: its registry and repository must match an
// allowed entry, or, with no entries, its registry must be a public DNS name.
func imageAllowed(image string, allowed []string) error {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return fmt.Errorf("image %q: %w", image, err)
	}
	domain := strings.ToLower(reference.Domain(named))
	if len(allowed) == 0 {
		if err := publicRegistry(domain); err != nil {
			return fmt.Errorf("image %q: %w", image, err)
		}
		return nil
	}
	repo := domain + "/" + reference.Path(named)
	for _, a := range allowed {
		if underRegistryEntry(repo, a) {
			return nil
		}
	}
	return fmt.Errorf("image %q: registry %q is not among the allowed %v", image, domain, allowed)
}

// underRegistryEntry reports whether repo ("domain/path") is entry or lies under it on a "/".
func underRegistryEntry(repo, entry string) bool {
	entry = strings.ToLower(strings.TrimSuffix(entry, "/"))
	return repo == entry || strings.HasPrefix(repo, entry+"/")
}

// publicRegistry refuses a registry host that is an IP address, a single label or a name of the
// site's own (localhost, *.local, *.internal, *.svc ...): without an allowlist, only names on the
// internet are pulled from.
func publicRegistry(domain string) error {
	host := domain
	if h, _, ok := strings.Cut(domain, ":"); ok && !strings.HasPrefix(domain, "[") {
		host = h
	}
	if strings.HasPrefix(host, "[") {
		return fmt.Errorf("registry %q is an IP address", domain)
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return fmt.Errorf("registry %q is an IP address", domain)
	}
	if !strings.Contains(host, ".") {
		return fmt.Errorf("registry %q is not a fully qualified name", domain)
	}
	if underAny(strings.TrimSuffix(host, "."), internalRegistrySuffixes) || strings.HasSuffix(host, ".") {
		return fmt.Errorf("registry %q is a name of the site's own", domain)
	}
	return nil
}

// NarrowRegistries returns the registry allowlist of the template named tmpl once it is checked
// against the operator's: every entry must lie under one of base's entries, or, when base is empty,
// name a public registry; a *Violation otherwise. An empty template list keeps base.
func NarrowRegistries(tmpl string, base, template []string) ([]string, error) {
	if len(template) == 0 {
		return base, nil
	}
	for _, entry := range template {
		if err := registryEntryAllowed(entry, base); err != nil {
			return nil, &Violation{Rule: ruleImageRegistry, Object: "ChallengeTemplate " + tmpl, Detail: err.Error()}
		}
	}
	return template, nil
}

// registryEntryAllowed reports why a template's registry entry exceeds the operator's list.
func registryEntryAllowed(entry string, base []string) error {
	domain, _, _ := strings.Cut(strings.ToLower(entry), "/")
	if len(base) == 0 {
		if err := publicRegistry(domain); err != nil {
			return fmt.Errorf("allowed registry %q: %w", entry, err)
		}
		return nil
	}
	for _, b := range base {
		if underRegistryEntry(strings.ToLower(strings.TrimSuffix(entry, "/")), b) {
			return nil
		}
	}
	return fmt.Errorf("allowed registry %q is not under the operator's %v", entry, base)
}
