"""Fetch a released source distribution for the tests that compare pinfix with
real upstream changes (``tests/test_vllm_seed.py``), with nothing outside this
repository: the standard library, and pip only for the address of its default
index (``PIP_INDEX_URL`` overrides it, as it does for pip).

``python -m tests.sdist NAME VERSION DEST`` prints the unpacked tree's path.
An archive or tree already in DEST is reused; a download is checked against
the sha256 the index gives, written beside the final name, then renamed.
"""

from __future__ import annotations

import hashlib
import html.parser
import os
import sys
import tarfile
import urllib.parse
import urllib.request
from pathlib import Path
from typing import List


class FetchError(Exception):
    """The index has no such archive, or the download does not match it."""


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: List[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        if tag == "a":
            self.links.extend(value for key, value in attrs if key == "href" and value)


def index_url() -> str:
    configured = os.environ.get("PIP_INDEX_URL")
    if configured:
        return configured.rstrip("/")
    from pip._internal.models.index import PyPI  # pip's default index, not written here

    return PyPI.simple_url.rstrip("/")


def _download(name: str, version: str, archive: Path) -> None:
    page_url = f"{index_url()}/{name}/"
    page = _Links()
    with urllib.request.urlopen(page_url, timeout=120) as response:
        page.feed(response.read().decode())
    wanted = f"{name}-{version}.tar.gz"
    links = [link for link in page.links if urllib.parse.urlsplit(link).path.endswith("/" + wanted)]
    if not links:
        raise FetchError(f"no source distribution {wanted} at {page_url}")
    url, _, fragment = urllib.parse.urljoin(page_url, links[0]).partition("#")
    expected = dict(part.split("=", 1) for part in fragment.split("&") if "=" in part).get("sha256")
    part = archive.with_name(archive.name + ".part")
    digest = hashlib.sha256()
    with urllib.request.urlopen(url, timeout=600) as response, open(part, "wb") as out:
        while chunk := response.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    if expected and digest.hexdigest() != expected:
        part.unlink()
        raise FetchError(f"{wanted}: sha256 {digest.hexdigest()} is not the index's {expected}")
    part.rename(archive)


def fetch(name: str, version: str, dest: Path) -> Path:
    """The unpacked tree of ``name``'s ``version`` sdist, under ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    tree = dest / f"{name}-{version}"
    if tree.is_dir():
        return tree
    archive = dest / f"{name}-{version}.tar.gz"
    if not archive.exists():
        _download(name, version, archive)
    with tarfile.open(archive) as tar:
        top = tar.getnames()[0].split("/")[0]
        tar.extractall(dest, filter="data")
    if top != tree.name:
        (dest / top).rename(tree)
    return tree


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    try:
        print(fetch(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
    except (FetchError, OSError) as exc:
        sys.exit(f"tests.sdist: error: {exc}")
