package policy

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

// TestNarrowRegistries: a template chooses its registries within the operator's, and without an
// operator list only among public names; what it cannot choose is a PolicyViolation naming it.
func TestNarrowRegistries(t *testing.T) {
	tests := []struct {
		name           string
		base, template []string
		want           []string // nil: refused
	}{
		{"no lists: any public registry", nil, nil, nil},
		{"the operator's list when the template has none", []string{"ghcr.io"}, nil, []string{"ghcr.io"}},
		{"a repository under the operator's registry", []string{"ghcr.io"}, []string{"ghcr.io/org"}, []string{"ghcr.io/org"}},
		{"the operator's registry itself", []string{"ghcr.io/org"}, []string{"ghcr.io/org"}, []string{"ghcr.io/org"}},
		{"a public registry without an operator list", nil, []string{"registry.example:5000/ctf"}, []string{"registry.example:5000/ctf"}},
		{"another registry than the operator's", []string{"ghcr.io/org"}, []string{"ghcr.io/organiser"}, nil},
		{"a wider prefix than the operator's", []string{"ghcr.io/org"}, []string{"ghcr.io"}, nil},
		{"an IP registry without an operator list", nil, []string{"169.254.169.254"}, nil},
		{"the API server's address without an operator list", nil, []string{"10.96.0.1:443/x"}, nil},
		{"localhost without an operator list", nil, []string{"localhost:5000"}, nil},
		{"a cluster-local name without an operator list", nil, []string{"registry.ctf.svc.cluster.local"}, nil},
		{"an IP registry the operator lists", []string{"10.0.0.5:5000"}, []string{"10.0.0.5:5000/ctf"}, []string{"10.0.0.5:5000/ctf"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := NarrowRegistries("web", tt.base, tt.template)
			refused := tt.want == nil && len(tt.template) > 0
			if !refused {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).To(Equal(tt.want))
				return
			}
			var v *Violation
			g.Expect(errors.As(err, &v)).To(BeTrue(), "got %v", err)
			g.Expect(v.Rule).To(Equal("image-registry"))
			g.Expect(v.Object).To(Equal("ChallengeTemplate web"))
		})
	}
}

// TestImageAllowed: without an allowlist only registries named on the internet; with one, only
// what it lists, on a path boundary.
func TestImageAllowed(t *testing.T) {
	tests := []struct {
		image   string
		allowed []string
		ok      bool
	}{
		{"nginx", nil, true},
		{"docker.io/library/nginx:1", nil, true},
		{"registry.example:5000/ctf/web:1", nil, true},
		{"169.254.169.254/x", nil, false},
		{"169.254.169.254:80/x", nil, false},
		{"[::1]:5000/x", nil, false},
		{"localhost/x", nil, false},
		{"printer.local/x", nil, false},
		{"registry.home.arpa/x", nil, false},
		{"nginx", []string{"docker.io"}, true},
		{"ghcr.io/org/web", []string{"ghcr.io/org"}, true},
		{"ghcr.io/org/web", []string{"ghcr.io/org/"}, true},
		{"ghcr.io/orgx/web", []string{"ghcr.io/org"}, false},
		{"GHCR.io/org/web", []string{"ghcr.io/org"}, true},
		{"10.0.0.5:5000/web", []string{"10.0.0.5:5000"}, true},
		{"10.0.0.5:5001/web", []string{"10.0.0.5:5000"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			err := imageAllowed(tt.image, tt.allowed)
			if tt.ok {
				NewWithT(t).Expect(err).NotTo(HaveOccurred())
			} else {
				NewWithT(t).Expect(err).To(HaveOccurred())
			}
		})
	}
}
