// Package trustsweep holds the tests that keep the trust tiers whole: every
// field of the CRDs and every route of the instancer is placed, in
// docs/security.md's table of who writes each field and route, with the tier
// that writes it and the bound that holds it, so a new field says its tier
// before it lands. It has no code of its own.
package trustsweep
