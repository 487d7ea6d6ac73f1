"""A real pi 1.6.0 in RPC mode with pi-server's extension, for the live-session tests and benchmark."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PI_CLI = ROOT / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "cli.js"
EXTENSION = ROOT / "editors" / "pi"
GOTO = ROOT / "tests" / "live" / "goto.ts"
KEY = "sk-ant-test-live"
MODEL = "claude-sonnet-4-5"


def live_env(tmp: Path, fake_url: str) -> dict[str, str]:
    """One user's world: pi's agent dir (pointed at the fake), pi-server's state, a project.
    pi and the editor's connector share it, so they find the same daemon."""
    agent = tmp / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "models.json").write_text(json.dumps({"providers": {"anthropic": {"baseUrl": fake_url}}}))
    settings = {"defaultProvider": "anthropic", "defaultModel": MODEL, "defaultThinkingLevel": "off"}
    (agent / "settings.json").write_text(json.dumps(settings))
    (tmp / "project").mkdir(exist_ok=True)
    (tmp / "home").mkdir(exist_ok=True)
    return {
        "HOME": str(tmp / "home"),
        "PI_CODING_AGENT_DIR": str(agent),
        "XDG_STATE_HOME": str(tmp / "state"),
        "ANTHROPIC_API_KEY": KEY,
        "ANTHROPIC_BASE_URL": fake_url,
        # pi sets these itself when offline; set here too, so the editor's environment is pi's
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        "PI_SERVER_COMMAND": json.dumps([sys.executable, "-m", "pi_server", "--stdio"]),
    }


def stop_daemon(env: dict[str, str]) -> None:
    """Stop the daemon of the isolated configuration `env` names."""
    subprocess.run(
        [sys.executable, "-m", "pi_server", "daemon", "stop"],
        env={**os.environ, **env},
        capture_output=True,
        timeout=60,
    )


class Pi:
    """`pi --mode rpc -e editors/pi`: commands as JSON lines on stdin, responses and events on stdout."""

    def __init__(
        self,
        node: str,
        env: dict[str, str],
        cwd: Path,
        log: Path,
        cli: Path = PI_CLI,
        extensions: tuple[Path, ...] = (EXTENSION, GOTO),
        inherit_env: bool = True,
    ) -> None:
        """`inherit_env=False`: `env` is the whole environment (a user's, as an editor has it)."""
        self.log = open(log, "ab")  # noqa: SIM115 - closed in close()
        argv = [node, str(cli), "--mode", "rpc"]
        for ext in extensions:
            argv += ["-e", str(ext)]
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env={**os.environ, **env} if inherit_env else env,
            cwd=cwd,
        )
        self.lines: list[dict[str, Any]] = []
        self.cond = threading.Condition()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                msg = json.loads(raw)
            except ValueError:
                continue
            with self.cond:
                self.lines.append({**msg, "_at": time.monotonic()})
                self.cond.notify_all()

    def wait(self, pred: Any, timeout: float = 30.0, start: int = 0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for msg in self.lines[start:]:
                    if pred(msg):
                        return msg
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    seen = [m.get("type") for m in self.lines[-20:]]
                    raise AssertionError(f"pi: nothing matched within {timeout}s; last: {seen}")
                self.cond.wait(left)

    def mark(self) -> int:
        with self.cond:
            return len(self.lines)

    def call(self, kind: str, timeout: float = 30.0, **fields: Any) -> dict[str, Any]:
        self.next_id += 1
        rid = f"t{self.next_id}"
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"id": rid, "type": kind, **fields}).encode() + b"\n")
        self.proc.stdin.flush()
        reply = self.wait(lambda m: m.get("type") == "response" and m.get("id") == rid, timeout)
        assert reply.get("success"), reply
        return reply.get("data") or {}

    def prompt(self, text: str, timeout: float = 60.0) -> None:
        """A prompt, waited for until pi will not go on by itself (`agent_settled`: retries,
        compaction and follow-ups come after `agent_end`)."""
        at = self.mark()
        self.call("prompt", message=text)
        self.wait(lambda m: m.get("type") == "agent_settled", timeout, start=at)

    def leaf(self) -> str | None:
        return self.call("get_tree")["leafId"]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
