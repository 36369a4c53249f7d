"""Seeds the fuzz targets from the repository's test vectors.

Usage: python3 fuzz/seed.py OUT_DIR

Every file under tests/testdata/ in the testkit form (text lines such as `expect: ...`, a blank
line, then the file; `compressed: zlib` when the file is deflated, as in the C2SP CCTV age
vectors) becomes a seed: containers for `container_decrypt` (and their headers for
`container_header`), age files for `age_decrypt` (and their headers for `age_header`).
Nothing is copied into the repository: OUT_DIR is a build directory.
"""

import hashlib
import pathlib
import sys
import zlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGETS = {
    b"PARACRYPT": ("container_decrypt", "container_header"),
    b"age-encryption.org/": ("age_decrypt", "age_header"),
    b"-----BEGIN AGE ENCRYPTED FILE-----": ("age_decrypt",),
}
# A header seed needs no payload: keep the seeds small.
HEADER_SEED_LEN = 4096


def testkit_body(data):
    """The file in a testkit case, or None when `data` is not one."""
    end = data.find(b"\n\n")
    if end < 0 or not data.startswith((b"expect:", b"comment:")):
        return None
    head, body = data[:end].decode("utf-8", "replace"), data[end + 2 :]
    if "compressed: zlib" in head.splitlines():
        body = zlib.decompress(body)
    return body


def main():
    out = pathlib.Path(sys.argv[1])
    counts = {}
    for path in sorted((ROOT / "tests" / "testdata").rglob("*")):
        if not path.is_file():
            continue
        body = testkit_body(path.read_bytes())
        if body is None:
            continue
        for magic, targets in TARGETS.items():
            if not body.startswith(magic):
                continue
            for target in targets:
                seed = body[:HEADER_SEED_LEN] if target.endswith("_header") else body
                directory = out / target
                directory.mkdir(parents=True, exist_ok=True)
                name = hashlib.sha1(seed).hexdigest()
                (directory / name).write_bytes(seed)
                counts[target] = counts.get(target, 0) + 1
    for target, count in sorted(counts.items()):
        print(f"{target}: {count} seeds from tests/testdata/")


if __name__ == "__main__":
    main()
