"""Writes the vramshim wheel (PEP 427) into a directory, with the standard library alone.

The wheel holds the Python package (vramshim/), the native tree of stage_native.sh under
vramshim/_native/ (bin/vramshim finds ../lib/libvramshim.so by itself), the man page and the shell
completions as data files under the installation prefix (share/...), and the .dist-info with
METADATA, WHEEL, entry_points.txt (the `vramshim` command), LICENSE and RECORD (a sha256 and a size
for every file). Entries are sorted, dated 1980-01-01 and keep the tar's modes, so the same inputs
give the same bytes.

Usage: build_wheel.py OUT_DIR --version-file F --native NATIVE.tar --readme F --license F
       [--package NAME=FILE]... [--data PATH=FILE]...
"""

import argparse
import base64
import hashlib
import os
import re
import sys
import tarfile
import zipfile

DISTRIBUTION = "vramshim"
# The binaries need glibc 2.36 at most (tests/packaging checks it) and are built for x86-64.
TAG = "py3-none-manylinux_2_36_x86_64"
DATE = (1980, 1, 1, 0, 0, 0)
SUMMARY = ("Pooled, attributed GPU memory for unmodified CUDA processes: a preloaded shim, "
           "flush from outside, reports that name the code")


def pair(text):
    name, separator, path = text.partition("=")
    if not separator or not name or not path:
        raise argparse.ArgumentTypeError("expected NAME=FILE, got %r" % text)
    return name, path


def record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def metadata(version, readme):
    return ("Metadata-Version: 2.1\n"
            "Name: %s\n"
            "Version: %s\n"
            "Summary: %s\n"
            "License: Apache-2.0\n"
            "Requires-Python: >=3.8\n"
            "Classifier: Operating System :: POSIX :: Linux\n"
            "Classifier: Environment :: GPU :: NVIDIA CUDA\n"
            "Description-Content-Type: text/markdown\n"
            "\n" % (DISTRIBUTION, version, SUMMARY)) + readme


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir")
    parser.add_argument("--version-file", required=True)
    parser.add_argument("--native", required=True)
    parser.add_argument("--readme", required=True)
    parser.add_argument("--license", required=True)
    parser.add_argument("--package", type=pair, action="append", default=[])
    parser.add_argument("--data", type=pair, action="append", default=[])
    options = parser.parse_args()

    version = open(options.version_file).read().strip()
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)*([a-z0-9.+-]*)", version):
        sys.exit("build_wheel: VERSION %r is not a version" % version)
    dist_info = "%s-%s.dist-info" % (DISTRIBUTION, version)
    data_dir = "%s-%s.data/data" % (DISTRIBUTION, version)

    files = {}  # archive name -> (bytes, mode)
    for name, path in options.package:
        files["vramshim/" + name] = (open(path, "rb").read(), 0o644)
    files["vramshim/_version.py"] = (('__version__ = "%s"\n' % version).encode(), 0o644)
    with tarfile.open(options.native) as native:
        for member in native.getmembers():
            if member.isfile():
                data = native.extractfile(member).read()
                files["vramshim/_native/" + os.path.normpath(member.name)] = (data, member.mode)
    for name, path in options.data:
        files[data_dir + "/" + name] = (open(path, "rb").read(), 0o644)
    files[dist_info + "/METADATA"] = (metadata(version, open(options.readme).read()).encode(), 0o644)
    files[dist_info + "/WHEEL"] = (("Wheel-Version: 1.0\n"
                                    "Generator: vramshim packaging/build_wheel.py\n"
                                    "Root-Is-Purelib: false\n"
                                    "Tag: %s\n" % TAG).encode(), 0o644)
    files[dist_info + "/entry_points.txt"] = (
        b"[console_scripts]\nvramshim = vramshim._native:main\n", 0o644)
    files[dist_info + "/LICENSE"] = (open(options.license, "rb").read(), 0o644)

    record_name = dist_info + "/RECORD"
    record = "".join("%s,%s,%d\n" % (name, record_hash(data), len(data))
                     for name, (data, _) in sorted(files.items()))
    record += record_name + ",,\n"
    files[record_name] = (record.encode(), 0o644)

    wheel = os.path.join(options.out_dir, "%s-%s-%s.whl" % (DISTRIBUTION, version, TAG))
    os.makedirs(options.out_dir, exist_ok=True)
    # The .dist-info last, RECORD at its end, as installers expect.
    order = sorted(files, key=lambda name: (name.startswith(dist_info), name == record_name, name))
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in order:
            data, mode = files[name]
            entry = zipfile.ZipInfo(name, DATE)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = (0o100000 | (mode & 0o7777)) << 16
            archive.writestr(entry, data)


if __name__ == "__main__":
    main()
