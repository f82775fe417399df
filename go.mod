module github.com/caravan-sched/caravan

go 1.26

require (
	github.com/hashicorp/go-msgpack/v2 v2.1.5
	github.com/shoenig/test v1.13.2
)

require github.com/google/go-cmp v0.7.0 // indirect
