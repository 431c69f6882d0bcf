"""Check, before QApplication exists, that Qt can open a window here; Qt itself aborts the process
(“Reinstalling the application may fix this problem”, exit 134) where it cannot. One clear line instead.

On Linux Qt uses its xcb plugin unless QT_QPA_PLATFORM names another. That plugin links system
libraries a fresh desktop may lack (libxcb-cursor0 on Debian 12); loading it with ctypes names the
first missing one. The Debian package of a library is its soname's stem plus the version
(libxcb-cursor.so.0 → libxcb-cursor0, libxkbcommon-x11.so.0 → libxkbcommon-x11-0).
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
from pathlib import Path

HEADLESS_PLATFORMS = ("offscreen", "minimal", "vnc", "linuxfb", "eglfs")
MISSING_LIBRARY = re.compile(r"(lib[\w.+-]+?)\.so\.(\d+)")


def debian_package(soname: str) -> str:
    """The Debian package that ships a library: libxcb-icccm.so.4 → libxcb-icccm4."""
    match = MISSING_LIBRARY.search(soname)
    if match is None:
        return soname
    stem, version = match.groups()
    return f"{stem}-{version}" if stem[-1].isdigit() else f"{stem}{version}"


def xcb_plugin() -> Path:
    import PySide6

    return Path(PySide6.__file__).parent / "Qt" / "plugins" / "platforms" / "libqxcb.so"


def plugin_problem(plugin: Path) -> str | None:
    """Why `plugin` cannot load (naming the package to install), or None when it loads."""
    try:
        ctypes.CDLL(str(plugin))
    except OSError as error:
        missing = MISSING_LIBRARY.search(str(error))
        if missing is None:
            return f"Qt's platform plugin {plugin.name} cannot load: {error}"
        return (f"Qt's platform plugin {plugin.name} cannot load: {missing.group(0)} is missing; install it "
                f"(Debian/Ubuntu: sudo apt install {debian_package(missing.group(0))}) and the other packages "
                "the README lists")
    return None


def platform_problem(environ: dict[str, str] | os._Environ[str] = os.environ) -> str | None:
    """One line saying why Qt cannot open a window here, or None when it should."""
    if not sys.platform.startswith("linux"):
        return None
    platform = environ.get("QT_QPA_PLATFORM", "").split(":")[0]
    if platform in HEADLESS_PLATFORMS or platform == "wayland":
        return None
    if not environ.get("DISPLAY") and not environ.get("WAYLAND_DISPLAY"):
        return ("no display to open the window on (DISPLAY and WAYLAND_DISPLAY are unset): start it from a "
                "desktop session, or use the `variorum` command line")
    if not environ.get("DISPLAY"):  # Wayland only: Qt picks its wayland plugin
        return None
    return plugin_problem(xcb_plugin())
