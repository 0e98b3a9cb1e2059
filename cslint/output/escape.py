"""Text from the analysed repository (paths, source lines, names in messages) made safe for a terminal.

A file name can hold a newline (which would forge report lines) and source can hold raw escape
sequences (which would move the cursor, retitle the window or hide text). Control characters, DEL, the
C1 range and the bidirectional overrides of "trojan source" are shown as escapes (`\\n`, `\\x1b`,
`\\u202e`), as git and ruff quote such paths; tabs are kept.
"""

from __future__ import annotations

_NAMED = {"\n": "\\n", "\r": "\\r"}
_BIDI = [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C]
_TABLE = {code: _NAMED.get(chr(code), f"\\x{code:02x}")
          for code in [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)] if code != 0x09}
_TABLE.update({code: f"\\u{code:04x}" for code in _BIDI})


def escape_text(text: str) -> str:
    """`text` with every character a terminal would act on shown as an escape."""
    return text.translate(_TABLE) if not text.isprintable() else text
