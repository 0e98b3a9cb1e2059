"""pygls' protocol, less the future it keeps of every notification.

pygls (2.1) files the future of a notification's handler when the handler is a generator (its own
handlers of `didOpen`, `didChange`, `didClose` and more are) under an id made up for it, in the table of
requests awaiting an answer; only an answer takes one out, and a notification gets none. A server
living through thousands of edits would keep one per keystroke. Here it is taken out once the handler
is done.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from pygls.protocol import LanguageServerProtocol


class CslintProtocol(LanguageServerProtocol):
    def _execute_handler(self, msg_id: Any, handler: Any, callback: Any, args: tuple[Any, ...] | None = None,
                         kwargs: dict[str, Any] | None = None) -> None:
        if callback == self._check_handler_result:  # how pygls tells a notification's handler from a request's
            checked = callback

            def done(future: Future[Any]) -> None:
                self._request_futures.pop(msg_id, None)
                checked(future)

            callback = done
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
