"""pi 1.6.0's interactive TUI in a tmux pane: an isolated agent folder pointed at the loopback fake
Anthropic API, keys typed with send-keys, the screen read with capture-pane."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PI16_CLI = ROOT / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "bundle" / "cli.js"
KEY = "sk-ant-test-0123456789abcdef"
MODEL = "claude-sonnet-4-5"


def agent_dir(home: Path, base_url: str, model: str = MODEL) -> Path:
    """`home/agent`: a key for anthropic, its base URL moved to the fake, thinking off."""
    agent = home / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "auth.json").write_text(json.dumps({"anthropic": {"type": "api_key", "key": KEY}}))
    settings = {"defaultProvider": "anthropic", "defaultModel": model, "defaultThinkingLevel": "off"}
    (agent / "settings.json").write_text(json.dumps(settings))
    (agent / "models.json").write_text(json.dumps({"providers": {"anthropic": {"baseUrl": base_url}}}))
    return agent


class TmuxPi:
    """pi's TUI in a detached tmux session on a tmux server of its own (its own socket), so
    nothing here touches the user's tmux; `close()` ends that server and pi with it."""

    def __init__(
        self,
        node: str,
        home: Path,
        cwd: Path,
        args: list[str] | None = None,
        env: dict[str, str] | None = None,
        size: tuple[int, int] = (120, 40),
    ) -> None:
        if shutil.which("tmux") is None:
            raise RuntimeError("tmux is not installed")
        self.socket = f"pi-server-test-{uuid.uuid4().hex[:12]}"
        self.home = home
        conf = home / "tmux.conf"
        # pi asks for extended keys under tmux (docs/tmux.md); without them it prints a warning
        conf.write_text("set -s extended-keys on\nset -g history-limit 5000\n")
        full_env = {
            "HOME": str(home),
            "PI_CODING_AGENT_DIR": str(home / "agent"),
            "PI_OFFLINE": "1",  # no tool downloads, no catalog refresh: the fake is the only peer
            "PI_SKIP_VERSION_CHECK": "1",
            "TERM": "xterm-256color",
            "PATH": os.environ.get("PATH", ""),
            # the tests' own daemons (tests/conftest.py): a connector pi starts finds the editor's daemon
            **{k: os.environ[k] for k in ("XDG_RUNTIME_DIR", "PI_SERVER_IDLE_EXIT") if k in os.environ},
            **(env or {}),
        }
        assignments = [f"{k}={v}" for k, v in full_env.items()]
        # tmux runs an argv of several words without a shell, and env execs node: the pane's pid is pi's
        command = ["env", "-i", *assignments, node, str(PI16_CLI), *(args or [])]
        width, height = size
        self._tmux("-f", str(conf), "new-session", "-d", "-x", str(width), "-y", str(height), "-c", str(cwd), *command)
        self.socket_path = self._tmux("display-message", "-p", "#{socket_path}").strip()

    def _tmux(self, *argv: str) -> str:
        out = subprocess.run(["tmux", "-L", self.socket, *argv], capture_output=True, text=True, timeout=30)
        if out.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(argv[:3])}: {out.stderr.strip()}")
        return out.stdout

    @property
    def pid(self) -> int:
        return int(self._tmux("display-message", "-p", "-t", "0", "#{pane_pid}").strip())

    def screen(self) -> str:
        """What the pane shows now, lines right-trimmed."""
        text = self._tmux("capture-pane", "-p", "-t", "0")
        return "\n".join(line.rstrip() for line in text.splitlines())

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-t", "0", "-l", text)

    def keys(self, *names: str) -> None:
        self._tmux("send-keys", "-t", "0", *names)

    def submit(self, text: str) -> None:
        """Types `text` into pi's editor and sends it."""
        self.type(text)
        self.keys("Enter")

    def wait_screen(self, pred: Callable[[str], Any], timeout: float = 30.0, what: str = "the screen") -> str:
        """The first screen `pred` accepts; on a timeout the error shows the last screen."""
        deadline = time.monotonic() + timeout
        shown = ""
        while time.monotonic() < deadline:
            shown = self.screen()
            if pred(shown):
                return shown
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}; pi's screen:\n{shown}")

    def wait_text(self, text: str, timeout: float = 30.0) -> str:
        return self.wait_screen(lambda s: text in s, timeout, repr(text))

    def alive(self) -> bool:
        return (
            subprocess.run(["tmux", "-L", self.socket, "has-session"], capture_output=True, timeout=30).returncode == 0
        )

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)
        # tmux leaves its socket file behind when killed
        Path(self.socket_path).unlink(missing_ok=True)

    def __enter__(self) -> TmuxPi:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
