// Command caravan is Caravan's single binary: the CLI and, in later
// releases, the agent. Commands are registered in commands.go, one file each.
package main
