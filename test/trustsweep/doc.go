// Package trustsweep holds the tests that keep the trust tiers whole, driven
// by docs/security.md's table of who writes each field and route: every
// field of the CRDs and every route of the instancer has its row, with the
// tier that writes it and the bound that holds it, so a new field says its
// tier before it lands; and every field of the platform's, the organiser's
// and the operator's rows is written, at its most hostile, by the platform
// through its shipped role or by the organiser through a template, on a
// real control plane with the operator running, each admin bound checked to
// hold. It has no code of its own.
package trustsweep
