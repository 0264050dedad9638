// Command toolsearch serves semantic tool search for MCP platforms over HTTP,
// and measures it: `serve` runs the service, `eval` runs a recall eval
// in-process or against a live server, `query` prints one ranking.
//
// One file per subcommand (serve, eval, query, index, lint), flags.go
// for the flags and environment they share, and envcheck.go for the
// environment's typos. It only
// wires packages; everything testable lives in pkg/ or in run.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

// version is stamped at build time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	ctx := context.Background()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	var ec exitCode
	switch {
	case err == nil:
	case errors.As(err, &ec):
		os.Exit(int(ec))
	default:
		fmt.Fprintln(os.Stderr, "toolsearch:", err)
		os.Exit(1)
	}
}

// exitCode ends the process with a status and no further message: the
// command has already said what happened.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

const usage = `usage: toolsearch <command> [flags]

commands:
  serve     serve POST /mcp/tool-search, status, health and metrics
  eval      measure recall on labelled cases (in-process, or --url a live server)
  query     print the ranking for one query
  lint      check tool descriptions: near-duplicates, empty or short descriptions, ...
  index     embed the catalog once and write an index snapshot for serve -snapshot
  version   print the version

Run "toolsearch <command> -h" for the command's flags; every flag can also be
set by the environment variable shown in its help.
`

// commands are run's, as usage lists them.
var commands = []string{"serve", "eval", "query", "lint", "index", "version", "help"}

// run is the whole program, with the operating system passed in so that
// tests can drive it.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitCode(2)
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return runServe(ctx, rest, getenv, stdout, stderr)
	case "eval":
		return runEval(ctx, rest, getenv, stdout, stderr)
	case "query":
		return runQuery(ctx, rest, getenv, stdout, stderr)
	case "lint":
		return runLint(ctx, rest, getenv, stdout, stderr)
	case "index":
		return runIndex(ctx, rest, getenv, stdout, stderr)
	case "version", "-version", "--version":
		if len(rest) > 0 {
			fmt.Fprintf(stderr, "toolsearch version: unexpected argument %q\n", rest[0])
			return exitCode(2)
		}
		fmt.Fprintln(stdout, "toolsearch", versionString())
		return nil
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		hint := ""
		if near := closest(strings.ToLower(cmd), commands); near != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", near)
		}
		fmt.Fprintf(stderr, "toolsearch: unknown command %q%s\n\n%s", cmd, hint, usage)
		return exitCode(2)
	}
}

// versionString is the stamped version, or the VCS revision Go recorded.
func versionString() string {
	if version != "dev" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return version
}
