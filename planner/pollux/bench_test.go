package pollux

import "testing"

// BenchmarkPollux160Jobs64GPUs is one round at the scale of the Pollux
// workloads: 160 jobs on 16 nodes of 4 GPUs.
func BenchmarkPollux160Jobs64GPUs(b *testing.B) { BenchmarkRound(b, New(), 16, 160) }

// BenchmarkPollux2000Jobs1024GPUs is one round of 2,000 jobs on 256 nodes
// of 4 GPUs.
func BenchmarkPollux2000Jobs1024GPUs(b *testing.B) { BenchmarkRound(b, New(), 256, 2000) }

// BenchmarkPollux10000Jobs2048GPUs is one round at issue 33's target
// scale: 10,000 jobs on 512 nodes of 4 GPUs.
func BenchmarkPollux10000Jobs2048GPUs(b *testing.B) { BenchmarkRound(b, New(), 512, 10000) }
