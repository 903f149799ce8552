"""Clients for local LLM servers: asyncio + aiohttp, no Home Assistant imports."""
