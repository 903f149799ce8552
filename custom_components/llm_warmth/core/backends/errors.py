"""Errors raised by the LLM server clients.

Callers act on the class, never on the message: every failure of a request, however the
server or the network misbehaved, surfaces as one of these. No raw ``aiohttp``,
``KeyError`` or ``ValueError`` escapes a client.
"""


class LlmServerError(Exception):
    """Base class of every error a backend client raises."""


class LlmServerConnectionError(LlmServerError):
    """The server could not be reached, or the connection broke mid-request."""


class LlmServerUnreachableError(LlmServerConnectionError):
    """No connection to the server could be made (refused, no route, unknown host)."""


class LlmServerTlsError(LlmServerConnectionError):
    """The TLS handshake failed: a plain-http server at https://, or an untrusted certificate."""


class LlmServerTimeoutError(LlmServerConnectionError):
    """The server did not answer within the call's timeout."""


class LlmServerAuthenticationError(LlmServerError):
    """The server refused the credentials (HTTP 401 or 403)."""


class LlmServerNotSupportedError(LlmServerError):
    """Something answered, but it is not the kind of server the client speaks to."""


class LlmServerSetupNotSupportedError(LlmServerNotSupportedError):
    """A server of a known kind answers, set up in a way that cannot be read (one fixed model)."""


class LlmServerResponseError(LlmServerError):
    """The server answered with something the client cannot use (bad JSON, HTTP 5xx, ...)."""


class LlmModelNotFoundError(LlmServerError):
    """The server does not have the requested model."""


class LlmModelOnPeerError(LlmServerError):
    """The model runs on another server this one only forwards to (a llama-swap peer)."""


class LlmModelStartError(LlmServerResponseError):
    """The server could not start the model's process (it exited, or never became healthy)."""


class LlmServerBusyError(LlmServerError):
    """The server's request queue is full (HTTP 503); try again later."""


class LlmServerOutOfMemoryError(LlmServerError):
    """The server could not fit the model in memory."""


def refuse_keep(kind: str, model: str, keep_seconds: float | None, num_ctx: int | None) -> None:
    """Raise for a keep or a context given to a server that decides both by itself."""
    if keep_seconds is not None:
        raise LlmServerNotSupportedError(f"{kind} decides by itself how long to keep {model}")
    if num_ctx is not None:
        raise LlmServerNotSupportedError(f"{kind} loads {model} with its configured context")
