"""The command line: argument parsing, `cslint check` and the other subcommands."""
