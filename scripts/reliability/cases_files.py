"""Bad files tried against the catalogue loader, the exporters and ``gcsim reproduce`` (area "files").

Most cases build a damaged bundle in the case's temporary folder (``setup``) and run
``gcsim load`` on it; a few call the export API with a name or folder that must be refused.
"""

from __future__ import annotations

from reliability import Case

# A valid Fano-plane bundle ./bibd/b.{npz,json}, and helpers that forge a bundle consistently
# (data replaced *and* the manifest's sha256/size fixed up, as a forger would do).
_PRELUDE = r"""
import hashlib, io, json, os, zipfile
import numpy as np
import gcsim
from gcsim.catalogue import export_object
export_object(gcsim.bibd(7, 3, 1), ".", name="b")
NPZ, JSON = "bibd/b.npz", "bibd/b.json"

def manifest():
    with open(JSON) as fh:
        return json.load(fh)

def write_manifest(m):
    with open(JSON, "w") as fh:
        json.dump(m, fh)

def forge(data, **arrays):
    with open(NPZ, "wb") as fh:
        fh.write(data)
    m = manifest()
    m.update(sha256=hashlib.sha256(data).hexdigest(), size_bytes=len(data))
    for name, spec in arrays.items():
        m["arrays"][name] = spec
    write_manifest(m)

def npz_bytes(**arrays):
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()
"""


def _setup(extra: str = "") -> str:
    return _PRELUDE + extra


_LOAD = ["load", "bibd/b"]

_BOMB = r"""
header = io.BytesIO()
np.lib.format.write_array_header_1_0(header, {"descr": "|i1", "fortran_order": False, "shape": (300_000_000,)})
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
    with zf.open("assignment.npy", "w", force_zip64=True) as fp:
        fp.write(header.getvalue())
        chunk = bytes(1 << 22)
        for _ in range(300_000_000 // len(chunk)):
            fp.write(chunk)
forge(buf.getvalue())
"""

_API_PRELUDE = "import gcsim\nfrom gcsim.catalogue import export_object\n"

CASES = [
    Case(
        area="files", fault="valid bundle (control): gcsim load re-verifies it", argv=_LOAD, setup=_setup(), expect="ok"
    ),
    Case(
        area="files",
        fault="npz is a FIFO with no writer",
        argv=_LOAD,
        setup=_setup("os.unlink(NPZ); os.mkfifo(NPZ)\n"),
        timeout=30,
    ),
    Case(
        area="files",
        fault="manifest json is a FIFO with no writer",
        argv=_LOAD,
        setup=_setup("os.unlink(JSON); os.mkfifo(JSON)\n"),
        timeout=30,
    ),
    Case(
        area="files",
        fault="npz is a symlink to /dev/zero",
        argv=_LOAD,
        setup=_setup("os.unlink(NPZ); os.symlink('/dev/zero', NPZ)\n"),
        timeout=30,
    ),
    Case(
        area="files",
        fault="manifest json is a symlink to /dev/zero",
        argv=_LOAD,
        setup=_setup("os.unlink(JSON); os.symlink('/dev/zero', JSON)\n"),
        timeout=30,
    ),
    Case(
        area="files",
        fault="zip bomb: ~300 KB npz expanding to 300 M elements, checksum fixed up",
        argv=_LOAD,
        setup=_setup(_BOMB),
        timeout=30,
    ),
    Case(
        area="files",
        fault="manifest declares a 10^12-element array",
        argv=_LOAD,
        setup=_setup("m = manifest(); m['arrays']['assignment']['shape'] = [10**6, 10**6]; write_manifest(m)\n"),
        timeout=30,
    ),
    Case(
        area="files",
        fault="manifest of 17 MB (over the manifest size bound)",
        argv=_LOAD,
        # padded to exactly 17 MiB: the manifest's own fields (versions, platform) vary between machines
        setup=_setup(
            "m = manifest(); m['metadata']['pad'] = ''; base = len(json.dumps(m))\n"
            "m['metadata']['pad'] = 'x' * ((17 << 20) - base); write_manifest(m)\n"
        ),
        timeout=30,
    ),
    Case(
        area="files",
        fault="BIBD stored as float64 with 1.7 in place of 1, checksum fixed up",
        argv=_LOAD,
        setup=_setup(
            "A = gcsim.bibd(7, 3, 1).assignment.astype(float); A[A == 1] = 1.7\n"
            "forge(npz_bytes(assignment=A), assignment={'shape': [7, 7], 'dtype': '<f8'})\n"
        ),
    ),
    Case(
        area="files",
        fault="BIBD with an entry 2 in the 0/1 matrix, checksum fixed up",
        argv=_LOAD,
        setup=_setup(
            "A = gcsim.bibd(7, 3, 1).assignment.astype(np.int8); A[0, np.flatnonzero(A[0])[0]] = 2\n"
            "forge(npz_bytes(assignment=A))\n"
        ),
    ),
    Case(
        area="files",
        fault="wrong dtype: data int16, manifest says int8 (checksum fixed up)",
        argv=_LOAD,
        setup=_setup("forge(npz_bytes(assignment=gcsim.bibd(7, 3, 1).assignment.astype(np.int16)))\n"),
    ),
    Case(
        area="files",
        fault=".npy header shape differs from the manifest (checksum fixed up)",
        argv=_LOAD,
        setup=_setup("forge(npz_bytes(assignment=np.zeros(49, dtype=np.int8)))\n"),
    ),
    Case(
        area="files",
        fault="extra array in the npz (checksum fixed up)",
        argv=_LOAD,
        setup=_setup("forge(npz_bytes(assignment=gcsim.bibd(7, 3, 1).assignment.astype(np.int8), x=np.ones(2)))\n"),
    ),
    Case(
        area="files",
        fault="truncated npz",
        argv=_LOAD,
        setup=_setup("data = open(NPZ, 'rb').read(); open(NPZ, 'wb').write(data[:len(data) // 2])\n"),
    ),
    Case(
        area="files",
        fault="one byte of the npz flipped",
        argv=_LOAD,
        setup=_setup(
            "data = bytearray(open(NPZ, 'rb').read()); data[len(data) // 2] ^= 0xFF\n"
            "open(NPZ, 'wb').write(bytes(data))\n"
        ),
    ),
    Case(
        area="files",
        fault="tampered checksum in the manifest",
        argv=_LOAD,
        setup=_setup("m = manifest(); m['sha256'] = '0' * 64; write_manifest(m)\n"),
    ),
    Case(
        area="files",
        fault="manifest data_file points outside the folder (../../etc/passwd)",
        argv=_LOAD,
        setup=_setup("m = manifest(); m['data_file'] = '../../etc/passwd'; write_manifest(m)\n"),
    ),
    Case(
        area="files",
        fault="seed claim forged: biregular graph of seed 3 relabelled as seed 4",
        argv=["load", "biregular/g"],
        setup=_setup(
            "export_object(gcsim.biregular_graph(12, 6, 2, 4, seed=3), '.', name='g')\n"
            "p = 'biregular/g.json'; m = json.load(open(p)); md = m['metadata']\n"
            "md['seed'] = 4; md['construction'] = md['construction'].replace('seed=3', 'seed=4')\n"
            "json.dump(m, open(p, 'w'))\n"
        ),
    ),
    Case(
        area="files",
        fault="directory where the manifest json is expected",
        argv=_LOAD,
        setup=_setup("os.unlink(JSON); os.mkdir(JSON)\n"),
    ),
    Case(
        area="files",
        fault="directory where the npz is expected",
        argv=_LOAD,
        setup=_setup("os.unlink(NPZ); os.mkdir(NPZ)\n"),
    ),
    Case(area="files", fault="missing manifest (npz alone)", argv=_LOAD, setup=_setup("os.unlink(JSON)\n")),
    Case(area="files", fault="missing npz (manifest alone)", argv=_LOAD, setup=_setup("os.unlink(NPZ)\n")),
    Case(
        area="files",
        fault="unknown format version 99",
        argv=_LOAD,
        setup=_setup("m = manifest(); m['format_version'] = 99; write_manifest(m)\n"),
    ),
    Case(
        area="files",
        fault="format version true (a bool, == 1 in Python)",
        argv=_LOAD,
        setup=_setup("m = manifest(); m['format_version'] = True; write_manifest(m)\n"),
    ),
    Case(
        area="files",
        fault="manifest json is a list, not an object",
        argv=_LOAD,
        setup=_setup("open(JSON, 'w').write('[1, 2, 3]')\n"),
    ),
    Case(
        area="files",
        fault="manifest json nested 100000 levels deep",
        argv=_LOAD,
        setup=_setup("open(JSON, 'w').write('[' * 100000)\n"),
    ),
    Case(
        area="files",
        fault="manifest metadata is a list; arrays entry is a string",
        argv=_LOAD,
        setup=_setup("m = manifest(); m['metadata'] = [1]; m['arrays'] = 'x'; write_manifest(m)\n"),
    ),
    Case(
        area="files",
        fault="construct --out with a path-traversal name ../../x",
        argv=["construct", "srg", "10", "3", "0", "1", "--out", "out/a", "--name", "../../../x"],
    ),
    Case(
        area="files",
        fault="export_object with an absolute name",
        code=_API_PRELUDE + "export_object(gcsim.bibd(7, 3, 1), 'out', name='/tmp/gcsim_reliability_abs')\n",
    ),
    Case(
        area="files",
        fault="export_object with name '../../x'",
        code=_API_PRELUDE + "export_object(gcsim.bibd(7, 3, 1), 'out/a', name='../../x')\n",
    ),
    Case(
        area="files",
        fault="export_design (CERAR) with name '../x'",
        code="from gcsim.cerar.factory import design\nfrom gcsim.cerar.export import export_design\n"
        "export_design(design(3, 5, 'perturbation', eps=0.1), 'out', name='../x')\n",
    ),
    Case(
        area="files",
        fault="export into a folder path that is a regular file",
        setup="open('f', 'w').write('x')\n",
        code=_API_PRELUDE + "export_object(gcsim.bibd(7, 3, 1), 'f')\n",
    ),
    Case(
        area="files",
        fault="export over a bundle whose json is a directory (overwrite=True)",
        setup="import os; os.makedirs('out/bibd/b.json')\n",
        code=_API_PRELUDE + "export_object(gcsim.bibd(7, 3, 1), 'out', name='b', overwrite=True)\n",
    ),
    Case(
        area="files",
        fault="reproduce --out names a regular file",
        argv=["reproduce", "--out", "f", "--stage", "catalogue"],
        setup="open('f', 'w').write('x')\n",
    ),
]
