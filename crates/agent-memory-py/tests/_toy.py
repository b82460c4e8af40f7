"""A toy embedding model for the tests: as a callable, and served over a local
OpenAI-compatible /embeddings."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer

# Toy vectors of 4 values: pets, vehicles, food, and a small constant so none is zero. A
# text in the query form (put after "query: ") reads "animal" as a pet, as a model with
# distinct query and document forms reads a query differently.
CLASSES = {
    "cat": 0, "kitten": 0, "dog": 0, "puppy": 0,
    "car": 1, "bike": 1, "tyres": 1,
    "cake": 2, "bread": 2, "baked": 2, "cook": 2,
}


def toy(texts: list[str]) -> list[list[float]]:
    out = []
    for text in texts:
        vector = [0.0, 0.0, 0.0, 0.1]
        query_form = text.startswith("query: ")
        for word in text.lower().replace(".", " ").replace("?", " ").split():
            if word in CLASSES:
                vector[CLASSES[word]] += 1.0
            elif word == "animal" and query_form:
                vector[0] += 1.0
        out.append(vector)
    return out


@contextmanager
def serve() -> Iterator[str]:
    """A local /embeddings answering with :func:`toy` vectors; yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the http.server name)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            answer = json.dumps({"data": [{"index": i, "embedding": v}
                                          for i, v in enumerate(toy(texts))]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
