// Package platformaccess holds the test that a CTF platform's ServiceAccount,
// bound in its namespace to the ClusterRole every install ships for it
// (challenge-operator-platform), may do on a real API server exactly what the
// user's guide (docs/guide.md) promises a platform, and nothing more. It has
// no code of its own.
package platformaccess
