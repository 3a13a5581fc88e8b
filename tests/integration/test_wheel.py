"""The release files work outside the repository (issue 29, item 2).

The sdist is built from a copy of the package (what ``make dist`` does, through the same
PEP 517 hooks of setuptools), the wheel is built from that sdist, and the wheel is
installed into a fresh virtual environment in a temporary directory. Nothing from the
checkout is importable there: the new venv sees the main venv's third-party packages
(torch, qdrant, FastAPI, ...) through one path line, but not its editable install of
hello-memory, and every command runs with a working directory outside the repository.
So ``init``, ``add``, ``search``, ``serve`` with a REST call and the MCP server over
stdio run from what the wheel itself carries: the default settings, the dashboard's
templates and bundled browser libraries, the schema migrations, the entry point.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tarfile
import time
import zipfile
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
KEY = "key-wheel"


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None,
         timeout: float = 300) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{cmd}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def _hook(hook: str, source: Path, out: Path) -> Path:
    """Call one PEP 517 hook of setuptools (the backend pyproject.toml names) in
    ``source``, as ``python -m build --no-isolation`` does; returns the built file."""
    out.mkdir(parents=True, exist_ok=True)
    done = _run([sys.executable, "-c",
                 f"import sys; from setuptools import build_meta as b; "
                 f"print(b.{hook}(sys.argv[1]))", str(out)], cwd=source)
    return out / done.stdout.strip().splitlines()[-1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("release")
    src = base / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "hello_memory", src / "hello_memory",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "node_modules"))
    sdist = _hook("build_sdist", src, base / "dist")
    with tarfile.open(sdist) as tar:
        tar.extractall(base / "unpacked", filter="data")
    (root,) = (base / "unpacked").iterdir()
    return _hook("build_wheel", root, base / "dist")


def test_the_wheel_carries_its_data_files(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("hello_memory/default.yaml", "hello_memory/py.typed",
                   "hello_memory/stores/records/migrations.py",
                   "hello_memory/interfaces/ui/templates/base.html",
                   "hello_memory/interfaces/ui/static/ui.css",
                   "hello_memory/interfaces/ui/static/vendor/VERSIONS.txt",
                   "hello_memory/interfaces/ui/static/vendor/swagger-ui/swagger-ui-bundle.js",
                   "hello_memory/interfaces/ui/static/vendor/cytoscape/cytoscape.min.js"):
        assert needed in names, f"{needed} is not in {wheel.name}"
    # every file of the package that is not code is in the wheel (the npm manifests are
    # build inputs of `make ui-assets`, not run-time files)
    data = {p.relative_to(REPO).as_posix() for p in (REPO / "hello_memory").rglob("*")
            if p.is_file() and p.suffix not in {".py", ".pyc"} and "__pycache__" not in p.parts
            and "npm" not in p.parts}
    assert data - names == set()
    entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    entry_points = zipfile.ZipFile(wheel).read(entry).decode()
    assert "hello-memory = hello_memory.interfaces.cli:main" in entry_points


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv with the wheel installed. The main venv's site-packages is reached
    through a ``.pth`` path line (its own ``.pth`` files, the editable hook of
    hello-memory among them, are not processed), so no dependency is downloaded;
    ``--no-index`` makes pip prove that the wheel's requirements, the ``server`` extra's
    included, are met by what is installed."""
    env_dir = tmp_path_factory.mktemp("venv") / "v"
    _run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], cwd=env_dir.parent)
    python = env_dir / "bin" / "python"
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                   cwd=env_dir).stdout.strip()
    Path(purelib, "_main_venv_packages.pth").write_text(
        sysconfig.get_path("purelib") + "\n", encoding="utf-8")
    # without PYTHONPATH: a checkout on it (with the hello_memory.egg-info an editable
    # install leaves there) reads to pip as hello-memory installed, and the wheel was not
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index",
          "--disable-pip-version-check", f"{wheel}[server]"], cwd=env_dir,
         env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    return env_dir


def _env(venv: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("HELLO_MEMORY") and k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    return {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
            "HELLO_MEMORY__SEMANTIC__EXTRACTOR": "rules"}


def test_installed_wheel_runs_init_add_search_serve_and_mcp(venv: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = _env(venv)
    cli = str(venv / "bin" / "hello-memory")

    where = _run([str(venv / "bin" / "python"), "-c",
                  "import hello_memory; print(hello_memory.__file__)"], cwd=work, env=env)
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout

    # init writes ./hello-memory.yaml (read by every later command here) and names the
    # commented defaults that the wheel installed
    _run([cli, "init"], cwd=work, env=env)
    header = (work / "hello-memory.yaml").read_text(encoding="utf-8").splitlines()[0]
    defaults = Path(header.rsplit(": ", 1)[1])
    assert defaults.is_relative_to(venv) and defaults.is_file(), header
    assert "jobs:" in defaults.read_text(encoding="utf-8")
    assert (work / ".hello_memory").is_dir()

    added = json.loads(_run([cli, "add", "Alice prefers green tea.", "--namespace", "alice",
                             "--json"], cwd=work, env=env).stdout)
    found = json.loads(_run([cli, "search", "what does Alice drink?", "--namespace", "alice",
                             "--json"], cwd=work, env=env).stdout)
    assert found["hits"][0]["id"] == added["id"]

    port = _free_port()
    server = subprocess.Popen(
        [cli, "serve", "--port", str(port)], cwd=work,
        env={**env, "HELLO_MEMORY__API__API_KEYS": json.dumps({KEY: ["alice"]})},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            assert time.monotonic() < deadline, "serve did not answer /healthz"
            time.sleep(0.3)
        auth = {"Authorization": f"Bearer {KEY}"}
        hits = httpx.post(f"{base}/v1/search", params={"namespace": "alice"}, headers=auth,
                          json={"query": "what does Alice drink?"}, timeout=120)
        assert hits.status_code == 200, hits.text
        assert hits.json()["hits"][0]["id"] == added["id"]
        # the bundled Swagger UI and the inspector's static files come from the wheel
        assert httpx.get(f"{base}/docs", timeout=30).status_code == 200
        bundle = httpx.get(f"{base}/ui/static/vendor/swagger-ui/swagger-ui-bundle.js",
                           timeout=30)
        assert bundle.status_code == 200 and len(bundle.content) > 100_000
    finally:
        server.terminate()
        server.wait(timeout=60)

    from mcp import Client, StdioServerParameters

    tools: list[str] = []
    recalled: dict[str, Any] = {}

    async def session() -> None:
        params = StdioServerParameters(command=cli, args=["mcp", "--namespace", "alice"],
                                       env=env, cwd=str(work))
        async with Client(params, read_timeout_seconds=180) as client:  # initialize
            tools.extend(t.name for t in (await client.list_tools()).tools)
            answer = await client.call_tool("recall", {"namespace": "alice",
                                                        "query": "what does Alice drink?"})
            recalled.update(answer.structured_content or {})

    anyio.run(session)
    assert {"remember", "recall", "stats"} <= set(tools)
    assert recalled["hits"][0]["id"] == added["id"]
