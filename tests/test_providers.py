"""Verdict providers are found as importlib.metadata finds entry points, without importing it (kb.providers)."""

from __future__ import annotations

from importlib import metadata

from kb import providers


def plain(group: str, paths: list[str]) -> list[tuple[str, str, str]]:
    """What importlib.metadata finds: the first distribution of each name on the paths, its group's entry points."""
    seen, out = set(), []
    for dist in metadata.distributions(path=paths):
        name = dist.metadata["Name"].lower().replace("-", "_").replace(".", "_")
        if name in seen:
            continue
        seen.add(name)
        out += [(ep.name, ep.value, dist.version) for ep in dist.entry_points.select(group=group)]
    return sorted(out)


def found(group: str, paths: list[str]) -> list[tuple[str, str, str]]:
    return [(e.name, e.value, e.version) for e in providers.entry_points(group, paths)]


def dist(root, folder: str, name: str, version: str, entry_points: str, metadata_file: str = "METADATA"):
    d = root / folder
    d.mkdir(parents=True)
    (d / metadata_file).write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nA description.\n")
    (d / "entry_points.txt").write_text(entry_points)


def test_the_installed_providers_are_those_importlib_metadata_finds():
    import sys

    assert found(providers.GROUP, sys.path) == plain(providers.GROUP, sys.path)
    assert ("audit", "auditor.audit:kb_verdicts") in [(n, v) for n, v, _ in found(providers.GROUP, sys.path)]
    assert dict(providers.providers())["audit"].__name__ == "kb_verdicts"


def test_entry_points_are_read_as_importlib_metadata_reads_them(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    dist(first, "acme_audit-1.2.dist-info", "acme-audit", "1.2", """\
        # a comment
        [console_scripts]
        acme = acme.cli:main

        [report_claims.verdicts]
        acme = acme.verdicts:run
        strict = acme.verdicts:Strict.run [extra]
        """.replace("        ", ""))
    dist(first, "other.egg-info", "other", "0.3", "[report_claims.verdicts]\nother=other.mod:verdicts\n",
         metadata_file="PKG-INFO")
    dist(first, "nothing-1.0.dist-info", "nothing", "1.0", "[console_scripts]\nx = y:z\n")
    # a distribution of the same name later on the path is hidden by the first
    dist(second, "acme_audit-9.9.dist-info", "acme_audit", "9.9", "[report_claims.verdicts]\nlate = acme:late\n")
    paths = [str(first), str(second), str(tmp_path / "missing")]
    assert found(providers.GROUP, paths) == plain(providers.GROUP, paths) == [
        ("acme", "acme.verdicts:run", "1.2"), ("other", "other.mod:verdicts", "0.3"),
        ("strict", "acme.verdicts:Strict.run [extra]", "1.2")]
    assert found("console_scripts", paths) == plain("console_scripts", paths)


def test_an_entry_point_loads_its_object():
    ep = providers.EntryPoint("x", "kb.providers:EntryPoint.load", "1")
    assert ep.load() is providers.EntryPoint.load
    assert providers.EntryPoint("y", "kb.providers", "1").load() is providers


def test_a_packages_code_hash_covers_its_files_in_path_order(tmp_path, monkeypatch):
    import hashlib
    import os
    import sys

    pkg = tmp_path / "hashed_pkg"
    (pkg / "db" / "__pycache__").mkdir(parents=True)
    (pkg / "__init__.py").write_bytes(b"")
    (pkg / "db.py").write_bytes(b"one")
    (pkg / "db" / "x.py").write_bytes(b"two")
    (pkg / "data.yaml").write_bytes(b"three")
    (pkg / "db" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"compiled")
    (pkg / "db" / "__pycache__" / "notes.txt").write_bytes(b"not code")
    (pkg / "stray.pyc").write_bytes(b"compiled")
    os.symlink(tmp_path / "nowhere", pkg / "gone.py")  # a link that leads nowhere is no file
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "y.py").write_bytes(b"four")
    os.symlink(tmp_path / "elsewhere", pkg / "linked")  # a link to a folder is not followed
    os.symlink(tmp_path / "elsewhere" / "y.py", pkg / "z.py")  # a link to a file is read
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("hashed_pkg", None)
    # a path's parts in order, as sorted Paths have them: db/x.py before db.py
    expected = hashlib.sha256(b"__init__.py\0\0" + b"data.yaml\0three\0" + b"db/x.py\0two\0" + b"db.py\0one\0"
                              + b"z.py\0four\0").hexdigest()
    assert providers.code_hash("hashed_pkg") == expected
