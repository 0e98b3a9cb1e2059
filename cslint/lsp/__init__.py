"""`cslint lsp`: a language server (pygls + lsprotocol, the `lsp` extra).

`workspace.py` analyses the open documents of a project as unsaved buffers over the files on disk
(overlay.py), `convert.py` turns cslint's findings, fixes and rule docs into LSP values, `server.py`
wires them to the protocol: diagnostics (debounced per document), code actions, hover.
"""
