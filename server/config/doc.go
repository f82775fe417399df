// Package config is the configuration of `caravan agent`: HCL v2 files in the
// style of Nomad's agent configuration, decoded into a Config.
//
// A configuration is built in layers, the way Nomad's agent builds its own:
//
//	loaded, diags := config.Load(paths...) // -config files and directories
//	cfg := config.Default().Merge(loaded).Merge(flags)
//	err := cfg.Validate()
//
// DevDefault replaces Default for `caravan agent -dev`. Load applies no
// defaults; Merge lets each set field of a later layer override the earlier
// one; Validate checks the merged result, including what no single file can
// show (data_dir required outside dev mode, distinct ports).
//
// Every mistake in a file is an hcl.Diagnostic with a source range: unknown
// arguments and blocks, wrong types, and values out of their allowed range
// (an unparseable duration, an unknown log level or driver, a port outside
// 1–65535, ...). All the mistakes of all the files are reported together, and
// Load returns a Config only when there are none.
//
// README.md in this directory is the reference of every key.
package config
