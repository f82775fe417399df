package queuespec

import (
	"math"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// Format writes queues as a queue file, for `caravan queue inspect`, in
// the order given. Parse reads a file Format wrote from valid queues back
// to equal queues, canonicalized and with zero CreateIndex and
// ModifyIndex: Format leaves out the indexes the server sets, and what
// equals what Parse fills in (the default weight, an empty cohort, no
// quota). Nil queues are skipped. A weight that HCL cannot write (NaN, an
// infinity) is written as 0, which Parse refuses, as Validate does the
// queue.
func Format(queues []*structs.Queue) []byte {
	f := hclwrite.NewEmptyFile()
	root := f.Body()
	for _, q := range queues {
		if q == nil {
			continue
		}
		if len(root.Blocks()) > 0 {
			root.AppendNewline()
		}
		writeQueue(root.AppendNewBlock("queue", []string{q.Name}).Body(), q)
	}
	return hclwrite.Format(f.Bytes())
}

func writeQueue(b *hclwrite.Body, q *structs.Queue) {
	if len(q.Namespaces) > 0 {
		ns := make([]cty.Value, len(q.Namespaces))
		for i, n := range q.Namespaces {
			ns[i] = cty.StringVal(n)
		}
		b.SetAttributeValue("namespaces", cty.ListVal(ns))
	}
	switch w := q.Weight; {
	case math.IsNaN(w) || math.IsInf(w, 0):
		b.SetAttributeValue("weight", cty.Zero)
	case w != 0 && w != structs.DefaultWeight:
		b.SetAttributeValue("weight", cty.NumberFloatVal(w))
	}
	if q.Cohort != "" {
		b.SetAttributeValue("cohort", cty.StringVal(q.Cohort))
	}
	quota := q.Quota
	if len(quota.GPU) == 0 && quota.CPU == 0 && quota.MemoryMB == 0 {
		return
	}
	b.AppendNewline()
	qb := b.AppendNewBlock("quota", nil).Body()
	for _, g := range quota.GPU {
		if g == nil {
			continue
		}
		gb := qb.AppendNewBlock("gpu", []string{g.Type}).Body()
		gb.SetAttributeValue("nominal", cty.NumberIntVal(int64(g.Nominal)))
		if g.BorrowingLimit != nil {
			gb.SetAttributeValue("borrowing_limit", cty.NumberIntVal(int64(*g.BorrowingLimit)))
		}
		if g.LendingLimit != nil {
			gb.SetAttributeValue("lending_limit", cty.NumberIntVal(int64(*g.LendingLimit)))
		}
	}
	if quota.CPU != 0 {
		qb.SetAttributeValue("cpu", cty.NumberIntVal(int64(quota.CPU)))
	}
	if quota.MemoryMB != 0 {
		qb.SetAttributeValue("memory", cty.NumberIntVal(int64(quota.MemoryMB)))
	}
}
