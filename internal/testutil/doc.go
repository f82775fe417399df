// Package testutil holds helpers that tests of several packages share: the
// property every fuzz target asserts of its answer, and the hostile inputs
// their seed corpora have in common. It is imported by tests only.
package testutil
