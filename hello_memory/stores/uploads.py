"""Files the server keeps for a namespace: ``<data_dir>/uploads/<kind>/<ns>/<digest>/<name>``.

Uploaded documents and media are stored by content (``digest``: the first 16 hex
digits of the file's sha256) under a folder per namespace (``ns``: the first 16 hex
digits of the sha256 of the namespace name, so any namespace makes a safe folder
name). Clearing a namespace removes its folder under every kind.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

__all__ = ["namespace_folder", "remove_namespace_uploads", "remove_upload", "upload_folder",
           "uploads_root"]


def uploads_root(data_dir: str | Path) -> Path:
    return Path(data_dir) / "uploads"


def namespace_folder(namespace: str) -> str:
    """The folder name of ``namespace`` under each kind of upload."""
    return hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:16]


def upload_folder(data_dir: str | Path, kind: str, namespace: str, data: bytes) -> Path:
    """Where an upload of ``kind`` ("documents", "media") with bytes ``data`` goes."""
    digest = hashlib.sha256(data).hexdigest()
    return uploads_root(data_dir) / kind / namespace_folder(namespace) / digest[:16]


def remove_upload(data_dir: str | Path, kind: str, namespace: str, path: str | Path) -> bool:
    """Delete one file kept for ``namespace`` (a deleted document's upload); False when
    ``path`` is not a file under that namespace's folder of ``kind`` (a file the server
    was only pointed at is never touched). Its digest folder goes when left empty."""
    base = (uploads_root(data_dir) / kind / namespace_folder(namespace)).resolve()
    try:
        target = Path(path).resolve()
    except (OSError, RuntimeError):
        return False
    if not target.is_relative_to(base) or target == base or not target.is_file():
        return False
    target.unlink()
    folder = target.parent
    if folder != base and not any(folder.iterdir()):
        folder.rmdir()
    return True


def remove_namespace_uploads(root: str | Path, namespace: str) -> int:
    """Delete every file kept for ``namespace`` under the uploads folder ``root`` (all
    kinds); returns how many files went. A missing folder is nothing to delete."""
    base = Path(root)
    if not base.is_dir():
        return 0
    removed = 0
    folder = namespace_folder(namespace)
    for kind in sorted(p for p in base.iterdir() if p.is_dir() and not p.is_symlink()):
        target = kind / folder
        if target.is_symlink() or not target.is_dir():
            continue
        removed += sum(1 for p in target.rglob("*") if p.is_file() or p.is_symlink())
        shutil.rmtree(target)
    return removed
