package instancer

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/challenge-operator/challenge-operator/internal/token"
)

// credentials are the token keys and revocations in force: read again from
// their mounted volumes at most every `every`, so that a rotation or a
// revocation needs no restart. The keys in force are always exactly the
// valid key files present: a bad file is skipped (and reported), never
// taken, and never stops the others; an empty or unreadable key volume
// leaves no key, so every token is refused.
type credentials struct {
	keyDir, revocationsDir string
	every                  time.Duration

	mu      sync.Mutex
	at      time.Time
	loaded  bool
	keys    token.Keys
	revoked map[string]time.Time
	// report is what the last reload found, logged only when it changes.
	report string
}

// get returns the keys and revocations in force at now.
func (c *credentials) get(now time.Time) (token.Keys, map[string]time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loaded && now.Sub(c.at) < c.every {
		return c.keys, c.revoked
	}
	c.loaded, c.at = true, now
	keys, skipped, keysErr := token.LoadDir(c.keyDir)
	c.keys = keys
	var revocationsErr error
	var badRevocations []token.Skipped
	if c.revocationsDir != "" {
		revoked, bad, err := token.LoadRevocations(c.revocationsDir)
		if err == nil {
			c.revoked = revoked // else the last revocations read stay in force
		}
		revocationsErr, badRevocations = err, bad
	}
	c.measure(skipped, keysErr, badRevocations, revocationsErr)
	c.log(skipped, keysErr, badRevocations, revocationsErr)
	return c.keys, c.revoked
}

// measure sets the gauges of what the reload found.
func (c *credentials) measure(skipped []token.Skipped, keysErr error, badRevocations []token.Skipped, revocationsErr error) {
	tokenKeys.Set(float64(len(c.keys)))
	skippedKeyFiles.Reset()
	for _, s := range skipped {
		skippedKeyFiles.WithLabelValues(s.Reason).Inc()
	}
	if keysErr != nil {
		skippedKeyFiles.WithLabelValues("directory").Inc()
	}
	revocations.Set(float64(len(c.revoked)))
	skippedRevocationFiles.Set(float64(len(badRevocations)))
	if revocationsErr != nil {
		skippedRevocationFiles.Inc()
	}
}

// log reports the keys in force and every bad file, when that changed
// since the last reload (a bad file is not logged every few seconds).
func (c *credentials) log(skipped []token.Skipped, keysErr error, badRevocations []token.Skipped, revocationsErr error) {
	ids := slices.Sorted(maps.Keys(c.keys))
	var b strings.Builder
	fmt.Fprint(&b, ids, keysErr, revocationsErr, len(c.revoked))
	for _, s := range append(skipped, badRevocations...) {
		b.WriteString(s.Error())
	}
	if b.String() == c.report {
		return
	}
	c.report = b.String()
	log := logf.Log.WithName("instancer")
	log.Info("token keys in force", "keyIDs", ids, "revokedTeams", len(c.revoked))
	if len(ids) == 0 {
		log.Error(keysErr, "no valid token key: every token is refused", "dir", c.keyDir)
	}
	for _, s := range skipped {
		log.Error(s, "token key file skipped", "dir", c.keyDir, "file", s.Name, "reason", s.Reason)
	}
	if revocationsErr != nil {
		log.Error(revocationsErr, "token revocations not read again: the last ones read stay in force", "dir", c.revocationsDir)
	}
	for _, s := range badRevocations {
		log.Error(s, "token revocation file", "dir", c.revocationsDir, "file", s.Name, "reason", s.Reason)
	}
}
