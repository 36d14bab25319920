package instancer

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/challenge-operator/challenge-operator/internal/token"
)

func TestInstanceNameIsAChallengeNameThatFits(t *testing.T) {
	key := NameKey(token.Keys{"k": []byte(strings.Repeat("k", 32))})
	long := strings.Repeat("x", 63)
	for _, tc := range []struct{ template, team, prefix string }{
		{"a", "b-c", "a-b-c-"},
		{"web", "team-blue", "web-team-blue-"},
		{"web", "xn--bcher-kva", "web-xn-bcher-kva-"},
		{"web--x", "a---b", "web-x-a-b-"},
		{long, long, long[:36]},
		{"web", long, "web-"},
		{long[:35] + "--", "team", long[:35] + "-"},
	} {
		t.Run(tc.template+"/"+tc.team, func(t *testing.T) {
			g := NewWithT(t)
			for attempt := range maxNameAttempts {
				name := instanceName(key, tc.template, tc.team, attempt)
				g.Expect(len(name)).To(BeNumerically("<=", maxNameLength), name)
				g.Expect(name).To(MatchRegexp(`^[a-z]([-a-z0-9]*[a-z0-9])?$`), "a DNS label that starts with a letter")
				g.Expect(name).NotTo(ContainSubstring("--"), "the Challenge CRD refuses \"--\"")
				g.Expect(name).To(HavePrefix(tc.prefix), "readable")
				g.Expect(name).To(MatchRegexp(`-[0-9a-f]{16}$`), "64 bits of MAC")
			}
		})
	}
}

// TestInstanceNamesAreKeyedAndDistinct: names of pairs that read alike
// differ, each attempt gives another name, and without the key the name is
// another (nobody computes a collision offline).
func TestInstanceNamesAreKeyedAndDistinct(t *testing.T) {
	g := NewWithT(t)
	keys := token.Keys{"b": []byte(strings.Repeat("b", 32)), "a": []byte(strings.Repeat("a", 32))}
	key := NameKey(keys)
	names := map[string]bool{}
	for _, pair := range [][2]string{{"a", "b-c"}, {"a-b", "c"}, {"a", "b--c"}, {"a--b", "c"}} {
		for attempt := range maxNameAttempts {
			names[instanceName(key, pair[0], pair[1], attempt)] = true
		}
	}
	g.Expect(names).To(HaveLen(4*maxNameAttempts), "every pair and attempt its own name")

	g.Expect(InstanceName(key, "web", "team")).NotTo(Equal(InstanceName(NameKey(token.Keys{"c": keys["b"]}), "web", "team")), "another key, another name")
	g.Expect(NameKey(token.Keys{"a": keys["a"], "z": []byte(strings.Repeat("z", 32))})).To(Equal(key), "the lowest key id's key: adding a later key changes no name")
	g.Expect(key).NotTo(Equal(keys["a"]), "never the token key itself")
	g.Expect(NameKey(nil)).To(BeNil())
}
