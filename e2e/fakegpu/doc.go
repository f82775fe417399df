// Command fakegpu is a Nomad device plugin that reports GPUs which do not
// exist, so that Caravan's e2e tests run Nomad's real device fingerprinting,
// scheduling and reservation on machines without GPUs.
//
// Each Nomad client that loads it reports one device group, vendor "nvidia",
// type "gpu", named after the configured model, with `count` healthy
// instances "<id_prefix>-0" … "<id_prefix>-<count-1>" and the attributes
// memory (MiB), model and cuda_cores. Reserving instances sets
// NVIDIA_VISIBLE_DEVICES to their IDs, as NVIDIA's plugin does, so a task can
// print which GPUs it was given; nothing is mounted. It also sets
// FAKEGPU_MODEL, FAKEGPU_MEMORY_MIB and FAKEGPU_SPEED (the config's `speed`,
// default 1): the e2e trainer reads them where a real one would ask its GPU,
// to report the GPU type it runs on, compute at that type's speed and fail
// as out of memory on a batch the GPU's memory would not hold.
//
// Nomad loads it from a client's plugin_dir and configures it with
//
//	plugin "fakegpu" {
//	  config {
//	    count     = 2
//	    id_prefix = "c0-gpu"
//	  }
//	}
//
// Nomad only needs instance IDs to be unique within a node, but tests tell
// clients apart by them, so give each client its own id_prefix; the e2e
// harness (e2e/agent) does.
//
// It is its own Go module so that the main module never depends on Nomad.
// Test it with `cd e2e/fakegpu && go test ./...`; tools/build.sh fakegpu
// builds it into .tools/bin.
package main
