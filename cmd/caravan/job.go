package main

// jobCommand is the parent of the job subcommands.
var jobCommand = parentCommand{
	synopsis: "Work with ML jobs",
	help: `
Usage: caravan job <subcommand> [options] [args]

  Works with Caravan ML jobs, described in HCL jobspecs.

  Check a jobspec for mistakes:

      $ caravan job validate train.hcl

  Print a jobspec as the job Caravan would store, in JSON:

      $ caravan job inspect -json train.hcl

  Please see the individual subcommand help for detailed usage information.`,
}
