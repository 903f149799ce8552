"""Normalise the server address a user typed (pure logic)."""

from yarl import URL


def normalize_url(raw: str, default_port: int) -> str:
    """Return ``scheme://host:port[/path]`` for what the user typed.

    The scheme defaults to http. The port defaults to ``default_port``, except behind what
    looks like a reverse proxy (an https URL, or a URL with a path), where it is the
    scheme's own (443 or 80). A trailing slash, query and fragment are dropped.
    Credentials stay, so that a reverse proxy with basic auth keeps working.
    Raise ``ValueError`` when there is no usable http(s) host.
    """
    text = raw.strip()
    if "://" not in text:
        text = f"http://{text}"
    try:
        url = URL(text)
    except ValueError as err:
        raise ValueError(f"not an http(s) URL: {raw!r}") from err
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError(f"not an http(s) URL: {raw!r}")
    path = url.path.rstrip("/")
    behind_proxy = url.scheme == "https" or bool(path)
    port = url.explicit_port or (url.port if behind_proxy else default_port)
    return str(
        URL.build(
            scheme=url.scheme,
            user=url.user,
            password=url.password,
            host=url.host.lower(),
            port=port,
            path=path,
        )
    )


def unique_id_for(url: str) -> str:
    """Return the config entry's unique id: the normalised URL without credentials."""
    return str(URL(url).with_user(None))


def redact_url(url: str) -> str:
    """Return the URL with any credentials replaced (for logs and diagnostics)."""
    parsed = URL(url)
    if parsed.user is None and parsed.password is None:
        return url
    return str(parsed.with_user("**REDACTED**").with_password(None))


def host_of(url: str) -> str:
    """Return the machine a server URL names (its host name, lower case), the default host."""
    return (URL(url).host or "").lower()
