"""A PEP 517 build backend for the wafersim package using the standard library only.

It builds a pure-Python wheel of the `wafersim/` folder beside it (and an editable wheel that
points at that folder), so installing needs no download. The name, version, summary and
dependencies come from pyproject.toml's [project] table.
"""

import base64
import hashlib
import os
import tomllib
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "wafersim"
TAG = "py3-none-any"


def _project():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def _metadata(p):
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}",
             f"Summary: {p.get('description', '')}", f"Requires-Python: {p.get('requires-python', '>=3')}"]
    lines += [f"Requires-Dist: {d}" for d in p.get("dependencies", [])]
    return "\n".join(lines) + "\n"


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory, files):
    p = _project()
    dist_info = f"{p['name']}-{p['version']}.dist-info"
    files = dict(files)
    files[f"{dist_info}/METADATA"] = _metadata(p).encode()
    files[f"{dist_info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: wafersim_build\nRoot-Is-Purelib: true\n"
                                   f"Tag: {TAG}\n").encode()
    record = [_record_line(n, d) for n, d in sorted(files.items())] + [f"{dist_info}/RECORD,,"]
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    name = f"{p['name']}-{p['version']}-{TAG}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n in sorted(files):
            info = zipfile.ZipInfo(n, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            z.writestr(info, files[n], zipfile.ZIP_DEFLATED)
    return name


def _package_files():
    out = {}
    base = os.path.join(ROOT, PACKAGE)
    for folder, dirs, names in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for n in sorted(names):
            if n.endswith(".py"):
                path = os.path.join(folder, n)
                with open(path, "rb") as f:
                    out[os.path.relpath(path, ROOT).replace(os.sep, "/")] = f.read()
    return out


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _package_files())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, {f"_{PACKAGE}_editable.pth": (ROOT + "\n").encode()})
