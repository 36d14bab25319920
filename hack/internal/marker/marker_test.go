package marker

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestReplace(t *testing.T) {
	for _, tt := range []struct {
		name, doc, content, want, err string
	}{
		{name: "replaces only between the markers",
			doc:     "before\n<!-- BEGIN x -->\nold\nlines\n<!-- END x -->\nafter\n",
			content: "new\n",
			want:    "before\n<!-- BEGIN x -->\nnew\n<!-- END x -->\nafter\n"},
		{name: "ends the content with a newline",
			doc:     "<!-- BEGIN x -->\n<!-- END x -->",
			content: "new",
			want:    "<!-- BEGIN x -->\nnew\n<!-- END x -->"},
		{name: "leaves another part alone",
			doc:     "<!-- BEGIN y -->\nkept\n<!-- END y -->\n<!-- BEGIN x -->\nold\n<!-- END x -->\n",
			content: "new\n",
			want:    "<!-- BEGIN y -->\nkept\n<!-- END y -->\n<!-- BEGIN x -->\nnew\n<!-- END x -->\n"},
		{name: "missing end", doc: "<!-- BEGIN x -->\nold\n", err: "want exactly one"},
		{name: "repeated begin", doc: "<!-- BEGIN x -->\n<!-- BEGIN x -->\n<!-- END x -->\n", err: "want exactly one"},
		{name: "out of order", doc: "<!-- END x -->\n<!-- BEGIN x -->\n", err: "comes before"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Replace(tt.doc, "x", tt.content)
			if tt.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestSectionIsReplaceable(t *testing.T) {
	g := NewWithT(t)
	s := Section("x", "one")
	g.Expect(s).To(Equal("<!-- BEGIN x -->\none\n<!-- END x -->"))
	got, err := Replace("head\n"+s+"\n", "x", "two")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal("head\n<!-- BEGIN x -->\ntwo\n<!-- END x -->\n"))
}
