"""How the benchmark talks to what it measures: JSON and SSE over aiohttp, its raw
HTTP/1.1 SSE reader, the project event follower, a live daemon with a Ready Host."""
