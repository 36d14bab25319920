package importer

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestReplaceHost: a service's name is replaced where it stands as a host,
// never inside another name, a domain or a URL's scheme.
func TestReplaceHost(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		replaced bool
	}{
		{"redis", "$(REDIS_HOST)", true},
		{"redis://redis:6379/0", "redis://$(REDIS_HOST):6379/0", true},
		{"http://user:pw@redis/", "http://user:pw@$(REDIS_HOST)/", true},
		{"redis-cache:6379", "redis-cache:6379", false},
		{"myredis:6379", "myredis:6379", false},
		{"redis.example.org", "redis.example.org", false},
		{"a,redis,b", "a,$(REDIS_HOST),b", true},
	} {
		got, replaced := replaceHost(tt.in, "redis", "$(REDIS_HOST)")
		NewWithT(t).Expect([]any{got, replaced}).To(Equal([]any{tt.want, tt.replaced}), tt.in)
	}
}

// TestDNSLabel: names become DNS labels that start with a letter, cut to fit.
func TestDNSLabel(t *testing.T) {
	g := NewWithT(t)
	g.Expect(dnsLabel("admin-bot", 8)).To(Equal("admin-bo"))
	g.Expect(dnsLabel("Web_App", 8)).To(Equal("web-app"))
	g.Expect(dnsLabel("1st-db", 8)).To(Equal("st-db"))
	g.Expect(dnsLabel("___", 8)).To(BeEmpty())
}
