"""`cslint check --server`: a long-lived process that has libcst and the rules imported already.

Importing them takes longer than the rest of a typical pre-commit run. The first
`--server` run starts the server in the background and checks as usual; later runs connect to it over a
Unix socket and hand it their argv, working directory, environment and standard streams. The server
forks a child per request, so every run starts from the same freshly imported state and nothing carries
over between runs or projects; the child writes the report straight into the client's streams.

- address.py: where the socket is; its name changes with cslint's code, Python and libcst, so an
  upgraded install never talks to an old server.
- client.py: the light side, run by the `cslint` command before anything heavy is imported.
- daemon.py: the server loop (start, serve, stop, idle exit); child.py: one request in a forked child.
"""
