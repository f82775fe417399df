package main

import (
	"fmt"
	"os"

	"github.com/caravan-sched/caravan/version"
	"github.com/hashicorp/cli"
)

func main() {
	os.Exit(run(os.Args[1:], &cli.BasicUi{Reader: os.Stdin, Writer: os.Stdout, ErrorWriter: os.Stderr}))
}

// run executes one command line and returns its exit code.
func run(args []string, ui cli.Ui) int {
	c := &cli.CLI{
		Name:         "caravan",
		Version:      version.String(),
		Args:         args,
		Commands:     commands(newMeta(ui)),
		Autocomplete: true,
		HelpFunc:     cli.BasicHelpFunc("caravan"),
		HelpWriter:   os.Stdout,
	}
	code, err := c.Run()
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error executing CLI: %v\n", err)
		return 1
	}
	return code
}
