"""Archives and temporary folders: a .zip (or an .xlsx, itself a zip) bounded in members and expanded bytes
before and while it is unpacked, and the temporary folders that uploads and unpacked archives go to."""
from __future__ import annotations

import os
import shutil
import tempfile
import time
import zipfile
from pathlib import Path, PurePosixPath

from evalcore.core import i18n
from evalcore.core.errors import ImportRefused, Problem
from evalcore.core.i18n import _
from evalcore.core.processes import alive
from evalcore.ingest.limits import limit

TEMP_PREFIX = "evalcore-upload-"   # the temporary folders of uploads and unpacked archives (sweep_temp)


def check_archive(path: Path, name: str) -> None:
    """Refuse a zip (a .zip, or an .xlsx workbook, which is one) whose members declare more than
    MAX_EXPANDED bytes or more than MAX_MEMBERS files, before anything is unpacked or parsed. zipfile never
    yields more bytes than a member declares (a member that holds more fails its CRC check), so the declared
    sizes bound what reading it can cost."""
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        kind = _("an .xlsx workbook") if path.suffix.lower() == ".xlsx" else _("a .zip archive")
        raise ImportRefused([Problem(name, "", "", kind, _("unreadable ({error})").format(error=exc))]) from None
    most, members = limit("MAX_EXPANDED"), limit("MAX_MEMBERS")
    files = [i for i in infos if not i.is_dir()]
    if len(files) > members:
        raise ImportRefused([Problem(name, "", "", _("at most {n} files in an archive (EVALCORE_MAX_MEMBERS)").format(
            n=i18n.number(members)), _("{n} files").format(n=i18n.number(len(files))))])
    total = sum(i.file_size for i in files)
    if total > most:
        big = max(files, key=lambda i: i.file_size)
        raise ImportRefused([Problem(name, "", "", _("an archive that expands to at most {n} bytes "
                                                     "(EVALCORE_MAX_EXPANDED)").format(n=i18n.number(most)),
                                     _("{total} bytes unpacked, {biggest} of them in {member}, from {packed} packed").format(
                                         total=i18n.number(total), biggest=i18n.number(big.file_size),
                                         member=repr(big.filename), packed=i18n.number(path.stat().st_size)))])


def unpack_zip(path: Path, tmp: Path, skip=lambda rel: False) -> list[tuple[Path, str]]:
    """Members of a .zip copied out to `tmp` under names of our own (no path from the archive is trusted), as
    streams, counting the bytes unpacked: refused before unpacking when the declared sizes pass MAX_EXPANDED,
    and the moment the running count does. `skip(rel)` leaves a member out. (path, name in the archive)."""
    name = str(path)
    if not path.is_file():
        raise ImportRefused([Problem(name, "", "", _("an existing file"), _("no such file"))])
    check_archive(path, name)
    most = limit("MAX_EXPANDED")
    archive = zipfile.ZipFile(path)
    out, problems, total = [], [], 0
    with archive:
        for index, info in enumerate(archive.infolist()):
            rel = info.filename.replace("\\", "/")
            if info.is_dir() or skip(rel):
                continue
            target = tmp / str(index) / PurePosixPath(rel).name
            target.parent.mkdir(parents=True)
            try:
                with archive.open(info) as src, target.open("wb") as dst:
                    while chunk := src.read(1 << 20):
                        total += len(chunk)
                        if total > most:
                            raise ImportRefused([Problem(f"{path}/{rel}", "", "", _(
                                "an archive that expands to at most {n} bytes (EVALCORE_MAX_EXPANDED)").format(
                                    n=i18n.number(most)), _("more (passed while unpacking this member)"))])
                        dst.write(chunk)
            except (zipfile.BadZipFile, RuntimeError, OSError, EOFError, NotImplementedError) as exc:
                # corrupt, encrypted or of an unsupported compression
                problems.append(Problem(f"{path}/{rel}", "", "", _("a readable member"),
                                        _("unreadable ({error})").format(error=exc)))
                continue
            out.append((target, rel))
    if problems:
        raise ImportRefused(problems)
    return sorted(out, key=lambda f: f[1])


def temp_dir() -> Path:
    """A new temporary folder for an upload or an unpacked archive, named with this process's id, so that
    sweep_temp can tell a crashed process's leftovers from a running one's."""
    return Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-"))


def sweep_temp(max_age_s: float = 3600, root: str | Path | None = None) -> list[Path]:
    """Remove the leftovers of uploads and archives whose process was killed (SIGKILL, OOM, a power cut: no
    `finally` ran): folders `evalcore-upload-<pid>-*` whose process is gone, and folders `evalcore-upload-*`
    without a process id last changed more than `max_age_s` seconds ago. Call it when the dashboard (or any
    long-lived process) starts. Returns the folders removed; never raises."""
    root = Path(root or tempfile.gettempdir())
    removed, now = [], time.time()
    for folder in root.glob(f"{TEMP_PREFIX}*"):
        try:
            if not folder.is_dir() or folder.is_symlink():
                continue
            rest = folder.name[len(TEMP_PREFIX):]
            pid = rest.split("-", 1)[0]
            if pid.isdigit() and "-" in rest:
                stale = int(pid) != os.getpid() and not alive(int(pid))
            else:
                stale = now - folder.stat().st_mtime > max_age_s
            if stale:
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
        except OSError:
            continue
    return removed
