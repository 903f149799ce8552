"""Headless Chromium driven over the DevTools protocol, to see pages as people see them.

Debian's ``chromium`` package is started with ``--remote-debugging-port=0``; one page is
driven through the protocol's websocket with the aiohttp client Home Assistant already
ships, so the browser tests need no extra Python package.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncGenerator
import contextlib
import importlib.util
import itertools
import json
import os
from pathlib import Path
import re
import shutil
from typing import Any

import aiohttp

_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")

# Walks the page through every open shadow root (Home Assistant's frontend is made of web
# components) and returns what a person would notice: error cards, warnings and the text.
_PAGE_REPORT_JS = """
(() => {
  const seen = {errors: [], warnings: [], text: []};
  const textOf = (el) => (el.shadowRoot || el).textContent.trim();
  const walk = (root) => {
    for (const node of root.childNodes) {
      if (node.nodeType === Node.TEXT_NODE) {
        if (node.textContent.trim()) seen.text.push(node.textContent.trim());
      } else if (node.nodeType === Node.ELEMENT_NODE) {
        const tag = node.localName;
        if (tag === 'style' || tag === 'script') continue;
        if (tag === 'hui-error-card') seen.errors.push(textOf(node));
        if (tag.startsWith('hui-warning')) seen.warnings.push(textOf(node));
        if (node.shadowRoot) walk(node.shadowRoot);
        walk(node);
      }
    }
  };
  walk(document);
  return JSON.stringify(seen);
})()
"""


# The texts a card cuts short ("Next exp..."): an element inside a card, shadow roots
# included, that ends its text in an ellipsis because its text is wider than its box, or
# whose own text runs past the card's right edge (the card hides what is beyond it). Not
# the logbook card's rows: Home Assistant writes their names ("Server ▸ model") itself.
_CUT_LABELS_JS = """
(() => {
  const cut = [];
  const ownText = (node) => [...node.childNodes]
    .filter((c) => c.nodeType === Node.TEXT_NODE).map((c) => c.textContent).join('').trim();
  const walk = (root, card) => {
    for (const node of root.childNodes) {
      if (node.nodeType !== Node.ELEMENT_NODE) continue;
      const tag = node.localName;
      if (tag === 'style' || tag === 'script') continue;
      // The logbook card's rows are Home Assistant's own words and names, not ours.
      if (tag === 'hui-logbook-card') continue;
      const inCard = tag === 'ha-card' ? node : card;
      if (inCard && node !== inCard && node.textContent.trim()) {
        const ellipsis = getComputedStyle(node).textOverflow === 'ellipsis'
          && node.scrollWidth > node.clientWidth + 1;
        const past = ownText(node) && !(node instanceof SVGElement)
          && node.getBoundingClientRect().right > inCard.getBoundingClientRect().right + 1;
        if (ellipsis || past) cut.push(node.textContent.trim().replace(/\\s+/g, ' '));
      }
      if (node.shadowRoot) walk(node.shadowRoot, inCard);
      walk(node, inCard);
    }
  };
  walk(document, null);
  return JSON.stringify(cut);
})()
"""


# The page's text through every shadow root, as one string (for waiting on it).
_TEXT_JS = """(() => {
  const parts = [];
  const walk = (root) => {
    for (const node of root.childNodes) {
      if (node.nodeType === Node.TEXT_NODE) parts.push(node.textContent);
      else if (node.nodeType === Node.ELEMENT_NODE && node.localName !== 'style') {
        if (node.shadowRoot) walk(node.shadowRoot);
        walk(node);
      }
    }
  };
  walk(document);
  return parts.join(' ');
})()"""


def sign_in_script(url: str, access_token: str, refresh_token: str) -> str:
    """Return a script that signs the frontend at ``url`` in with these tokens.

    Home Assistant's frontend keeps its tokens in ``localStorage.hassTokens``; set before
    the page's own scripts run, it starts signed in (the refresh token renews the access).
    """
    tokens = {
        "hassUrl": url,
        "clientId": f"{url}/",
        "expires": 4102444800000,
        "expires_in": 1800,
        "refresh_token": refresh_token,
        "access_token": access_token,
        "token_type": "Bearer",
    }
    return f"localStorage.setItem('hassTokens', {json.dumps(json.dumps(tokens))});"


class ChromiumError(Exception):
    """The browser could not be started or did not answer."""


def chromium_binary() -> str | None:
    """Return the path of Debian's chromium, if installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def require_browser() -> None:
    """Skip the calling test module without chromium or the frontend; fail in CI instead.

    CI sets ``LLM_WARMTH_REQUIRE_BROWSER``: there the browser tests must run.
    """
    import pytest  # noqa: PLC0415 (only test modules call this)

    missing = [
        reason
        for reason, absent in (
            ("Debian's chromium is not installed", chromium_binary() is None),
            (
                "the frontend package (home-assistant-frontend) is not installed",
                importlib.util.find_spec("hass_frontend") is None,
            ),
        )
        if absent
    ]
    if missing and os.environ.get("LLM_WARMTH_REQUIRE_BROWSER"):
        pytest.fail(f"browser tests required: {'; '.join(missing)}", pytrace=False)
    if missing:
        pytest.skip("; ".join(missing), allow_module_level=True)


def _describe(details: dict[str, Any]) -> str:
    """Return an uncaught exception in words: its message, or the rejected object's fields."""
    thrown = details.get("exception", {})
    if preview := thrown.get("preview"):
        fields = {p["name"]: p.get("value") for p in preview.get("properties", [])}
        return f"{details.get('text', '')} {json.dumps(fields)}"
    return str(thrown.get("description") or details.get("text", ""))


class _Connection:
    """The browser's DevTools websocket: numbered commands, their answers, page errors."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.exceptions: list[str] = []
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self._ws:
            if message.type is not aiohttp.WSMsgType.TEXT:
                break
            data = json.loads(message.data)
            if (future := self._pending.pop(data.get("id", -1), None)) is not None:
                if "error" in data:
                    future.set_exception(ChromiumError(str(data["error"])))
                else:
                    future.set_result(data.get("result", {}))
            elif data.get("method") == "Runtime.exceptionThrown":
                self.exceptions.append(_describe(data["params"]["exceptionDetails"]))
        for future in self._pending.values():
            future.set_exception(ChromiumError("the browser closed the connection"))

    async def send(
        self, method: str, params: dict[str, Any] | None = None, session_id: str | None = None
    ) -> dict[str, Any]:
        """Send one protocol command (to a page when a session is given); return its result."""
        message_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[message_id] = future
        message: dict[str, Any] = {"id": message_id, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        await self._ws.send_json(message)
        return await asyncio.wait_for(future, 30)


class Page:
    """One browser tab: navigate, evaluate, wait for a condition, take a screenshot."""

    def __init__(self, connection: _Connection, session_id: str) -> None:
        self._connection = connection
        self._session_id = session_id
        # The token the page signed in with, for tests that also call the API.
        self.access_token = ""

    @property
    def exceptions(self) -> list[str]:
        """Uncaught JavaScript exceptions seen so far."""
        return self._connection.exceptions

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one protocol command to this page and return its result."""
        return await self._connection.send(method, params, self._session_id)

    async def evaluate(self, expression: str) -> Any:
        """Evaluate JavaScript in the page and return its (JSON-able) value."""
        result = await self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise ChromiumError(str(result["exceptionDetails"]))
        return result["result"].get("value")

    async def goto(self, url: str) -> None:
        """Open a URL (the page's scripts keep loading after this returns)."""
        await self.send("Page.navigate", {"url": url})

    async def wait_for(self, expression: str, timeout: float = 60) -> None:
        """Wait until a JavaScript expression is true in the page."""
        async with asyncio.timeout(timeout):
            while not await self.evaluate(expression):
                await asyncio.sleep(0.25)

    async def wait_for_text(self, expected: list[str], timeout: float = 90) -> None:
        """Wait until the page shows every one of these texts (shadow roots included)."""
        want = json.dumps(expected)
        await self.wait_for(
            f"(() => {{ const t = {_TEXT_JS}; return {want}.every((w) => t.includes(w)); }})()",
            timeout=timeout,
        )

    async def report(self) -> dict[str, list[str]]:
        """Return the page's error cards, warnings and visible text (shadow roots included)."""
        return json.loads(await self.evaluate(_PAGE_REPORT_JS))

    async def cut_labels(self) -> list[str]:
        """Return the texts the page's cards cut short with an ellipsis (each in full)."""
        return json.loads(await self.evaluate(_CUT_LABELS_JS))

    async def text(self) -> str:
        """Return the page's text, shadow roots included, one piece per line."""
        return "\n".join((await self.report())["text"])

    async def screenshot(self, path: Path, clip: dict[str, float] | None = None) -> None:
        """Save a PNG of the viewport, or of ``clip`` (x, y, width, height) of the page."""
        params: dict[str, Any] = {"format": "png"}
        if clip is not None:
            params |= {"clip": {**clip, "scale": 1}, "captureBeyondViewport": True}
        result = await self.send("Page.captureScreenshot", params)
        await asyncio.to_thread(path.write_bytes, base64.b64decode(result["data"]))

    async def set_viewport(self, width: int, height: int, *, mobile: bool = False) -> None:
        """Size the page as a screen of ``width`` x ``height`` CSS pixels (a phone: mobile)."""
        await self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile},
        )


@contextlib.asynccontextmanager
async def chromium_page(
    profile: Path, *, width: int = 1280, height: int = 900, init_script: str | None = None
) -> AsyncGenerator[Page]:
    """Start headless Chromium with a fresh profile; yield one page; stop the browser."""
    binary = chromium_binary()
    if binary is None:
        raise ChromiumError("chromium is not installed (apt-get install chromium)")
    process = await asyncio.create_subprocess_exec(
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--hide-scrollbars",
        "--lang=en-US",
        f"--user-data-dir={profile}",
        "--remote-debugging-port=0",
        f"--window-size={width},{height}",
        "about:blank",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    try:
        async with asyncio.timeout(60):
            while not (match := _LISTENING.search((await process.stderr.readline()).decode())):
                if process.returncode is not None:
                    raise ChromiumError("chromium exited before it listened")
        # Keep reading stderr so that the browser never blocks on a full pipe.
        drain = asyncio.create_task(process.stderr.read())
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(match.group(1), max_msg_size=0) as ws,
        ):
            connection = _Connection(ws)
            target = await connection.send("Target.createTarget", {"url": "about:blank"})
            attached = await connection.send(
                "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
            )
            page = Page(connection, attached["sessionId"])
            await page.send("Page.enable")
            await page.send("Runtime.enable")
            await page.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            )
            if init_script:
                await page.send("Page.addScriptToEvaluateOnNewDocument", {"source": init_script})
            yield page
            connection.reader.cancel()
        drain.cancel()
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


# The integration's own card, added to every page of the frontend.
CARD_ELEMENT = "llm-warmth-card"


async def look(page: Page, url: str, expected: list[str], screenshot: Path) -> str:
    """Open a page as a person would; fail on what a person would notice; return its text.

    Waits until every expected text shows, then fails on error cards, warnings, "not
    available" and uncaught script errors. Saves ``<screenshot>.png`` (or
    ``<screenshot>-timeout.png`` with the page's text in the failure when it never showed).

    Home Assistant gives a custom card's element 2 s to be defined, then shows an error
    card for good; on a busy 2-core machine the integration's module can come later. So
    once the card's element is defined (within 30 s), a page that shows an error card is
    opened once more, as a person would reload it (only then: closing a page while Home
    Assistant writes to its websocket logs an error of its own).
    """
    await page.goto(url)
    try:
        await page.wait_for(f"!!customElements.get('{CARD_ELEMENT}')", timeout=30)
    except TimeoutError:
        pass  # a page without the integration's module (its card is then an error card)
    else:
        await asyncio.sleep(2.5)  # past Home Assistant's wait for a custom element
        if (await page.report())["errors"]:
            await page.goto(url)
    try:
        await page.wait_for_text(expected)
    except TimeoutError:
        await page.screenshot(screenshot.with_name(f"{screenshot.name}-timeout.png"))
        shown = (await page.text())[-3000:]
        raise AssertionError(
            f"{url} did not show {expected}; it shows:\n{shown}\n{page.exceptions}"
        ) from None
    report = await page.report()
    text = "\n".join(report["text"])
    assert report["errors"] == [], f"error cards on {url}: {report['errors']}"
    assert report["warnings"] == [], f"warnings on {url}: {report['warnings']}"
    assert "not available" not in text.lower(), f"{url} shows an entity as not available"
    assert page.exceptions == [], f"script errors on {url}: {page.exceptions}"
    await asyncio.sleep(1.5)  # icons and charts finish drawing after the text is there
    await page.screenshot(screenshot.with_name(f"{screenshot.name}.png"))
    return text
