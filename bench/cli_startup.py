"""How long one `corral` CLI call takes, against 0.3 s and against a bare `python -c pass`.

Runs the real console script N times per command (`corral --help`, `corral version`, and
`corral job status` / `corral node status` against a stub HTTP server in this process that
answers every GET with an empty list), prints the median wall time of each, its ratio to a
bare interpreter measured in the same run, and the slowest imports of `import app.cli`
(`python -X importtime`). Usage: uv run python -m bench.cli_startup [runs]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CEILING_S = 0.3
CORRAL = str(Path(sys.executable).parent / "corral")


class _Stub(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"[]"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Nomad-Index", "1")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


def median_s(argv: list[str], runs: int, env: dict[str, str]) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def import_breakdown(top: int = 12) -> list[tuple[int, str]]:
    """The slowest cumulative imports (microseconds) of `import app.cli`."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import app.cli"], capture_output=True, text=True, check=True
    )
    rows = []
    for line in done.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {**os.environ, "CORRAL_ADDR": f"http://127.0.0.1:{server.server_address[1]}"}
    try:
        bare = median_s([sys.executable, "-c", "pass"], runs, env)
        print(f"runs per command: {runs}; bare `python -c pass`: {bare:.3f} s (median)")
        for args in (["--help"], ["version"], ["job", "status"], ["node", "status"]):
            took = median_s([CORRAL, *args], runs, env)
            print(
                f"corral {' '.join(args):<12} {took:.3f} s median  "
                f"{took / bare:5.1f}x bare python  {took / CEILING_S:.2f} of the {CEILING_S} s ceiling"
            )
    finally:
        server.shutdown()
    print("slowest imports of `import app.cli` (cumulative, -X importtime):")
    for micros, name in import_breakdown():
        print(f"  {micros / 1000:8.1f} ms  {name}")


if __name__ == "__main__":
    main()
