package main

// jobCommand is the parent of the job subcommands.
var jobCommand = parentCommand{
	synopsis: "Work with ML jobs",
	help: `
Usage: caravan job <subcommand> [options] [args]

  Works with Caravan ML jobs, described in HCL jobspecs, or in Nomad job
  files whose groups carry a caravan scaling policy.

  Check a jobspec for mistakes:

      $ caravan job validate train.hcl

  Turn a jobspec into a Nomad job file to run with "nomad job run":

      $ caravan job convert -out train.nomad.hcl train.hcl

  Print a jobspec as the job Caravan would store, in JSON:

      $ caravan job inspect -json train.hcl

  See what running a changed jobspec would change, then run it:

      $ caravan job plan train.hcl
      $ caravan job run train.hcl

  List a job's versions and go back to one:

      $ caravan job versions resnet50
      $ caravan job revert resnet50 2

  Please see the individual subcommand help for detailed usage information.`,
}
