package structs

import (
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

func TestQueueFor(t *testing.T) {
	queues := []*Queue{
		{Name: "nlp", Namespaces: []string{"nlp-*"}},
		{Name: "nlp-prod", Namespaces: []string{"nlp-prod"}},
		{Name: "b", Namespaces: []string{"n*"}},
		{Name: "a", Namespaces: []string{"n*"}},
	}
	for ns, want := range map[string]string{
		"nlp-dev":  "nlp",      // nlp-* has more literal characters than n*
		"nlp-prod": "nlp-prod", // a literal name first
		"nomad":    "a",        // a tie: the first queue by name
		"vision":   DefaultQueue,
	} {
		must.Eq(t, want, QueueFor(queues, ns), must.Sprint(ns))
	}
	must.ErrorContains(t, QueueConflict(queues, &Queue{Name: "c", Namespaces: []string{"nlp-prod"}}), `"nlp-prod" is queue "nlp-prod"'s already`)
	must.NoError(t, QueueConflict(queues, &Queue{Name: "nlp", Namespaces: []string{"nlp-*", "x"}}))
}

func TestQueue_Validate(t *testing.T) {
	ok := &Queue{Name: "nlp", Namespaces: []string{"nlp-*"}, Cohort: "research", Quota: QueueQuota{
		GPU: []*GPUQuota{{Type: "A100", Nominal: 16, BorrowingLimit: new(16), LendingLimit: new(8)}}, CPU: 256000, MemoryMB: 1 << 20,
	}}
	ok.Canonicalize()
	must.NoError(t, ok.Validate())
	must.Eq(t, 1.0, ok.Weight)

	bad := &Queue{Name: "-x", Namespaces: []string{"a", "a", "[b"}, Weight: -1, Cohort: "c d", Quota: QueueQuota{
		GPU: []*GPUQuota{{Type: "a100", Nominal: -1, LendingLimit: new(2)}, {Type: "A100", Nominal: 1, BorrowingLimit: new(-1)}}, CPU: -1,
	}}
	var paths []string
	for _, fe := range FieldErrors(bad.Validate()) {
		paths = append(paths, fe.Path)
	}
	must.Eq(t, []string{"name", "namespaces[1]", "namespaces[2]", "weight", "cohort", "quota.cpu",
		"quota.gpu[0].nominal", "quota.gpu[0].lending_limit", "quota.gpu[1].type", "quota.gpu[1].borrowing_limit"}, paths)
	must.ErrorContains(t, (&Queue{Name: "x"}).Validate(), "namespaces: is required")

	// Bounds that keep planner/queue's arithmetic exact, and quotas an
	// earlier one shadows.
	huge := &Queue{Name: "h", Namespaces: []string{"h"}, Weight: 1e300, Cohort: strings.Repeat("c", MaxIDLength+1), Quota: QueueQuota{
		GPU: []*GPUQuota{{Type: "*", Nominal: 1 << 62}, {Type: "A100", Nominal: 1}, {Type: strings.Repeat("t", 200), Nominal: 1, LendingLimit: new(1 << 40)}},
		CPU: 1 << 50, MemoryMB: 1 << 50,
	}}
	paths = nil
	for _, fe := range FieldErrors(huge.Validate()) {
		paths = append(paths, fe.Path)
	}
	must.Eq(t, []string{"weight", "cohort", "quota.cpu", "quota.memory", "quota.gpu[0].nominal", "quota.gpu[1].type",
		"quota.gpu[2].type", "quota.gpu[2].lending_limit", "quota.gpu[2].lending_limit"}, paths)
	must.ErrorContains(t, (&Queue{Name: "s", Namespaces: []string{"s"}, Weight: 1, Quota: QueueQuota{GPU: []*GPUQuota{{Type: "A100", Nominal: 1}, {Type: "A100-80GB", Nominal: 1}}}}).Validate(),
		`quota.gpu[1].type: "A100-80GB" is never counted: gpu[0] ("A100") matches every GPU type it matches`)
	must.NoError(t, (&Queue{Name: DefaultQueue, Weight: 1}).Validate())
}

func TestQueue_CopyAndMatch(t *testing.T) {
	q := &Queue{Name: "nlp", Namespaces: []string{"nlp"}, Quota: QueueQuota{GPU: []*GPUQuota{{Type: "A100", Nominal: 2, BorrowingLimit: new(1)}, {Type: "*", Nominal: 1}}}}
	c := q.Copy()
	*c.Quota.GPU[0].BorrowingLimit = 5
	c.Namespaces[0] = "x"
	must.Eq(t, 1, *q.Quota.GPU[0].BorrowingLimit)
	must.Eq(t, "nlp", q.Namespaces[0])
	must.Eq(t, "A100", q.Quota.GPUQuotaFor("NVIDIA A100-SXM4-40GB").Type)
	must.Eq(t, "*", q.Quota.GPUQuotaFor("Tesla T4").Type)
	must.Nil(t, q.Quota.GPUQuotaFor(""))
}
