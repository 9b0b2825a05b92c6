#!/usr/bin/env python3
"""Writes the CycloneDX SBOM of an image archive of hack/image/oci.py.

The image is the SBOM's subject; its components are the crate its binaries are built
from, with every crate that crate's SBOM (cargo-cyclonedx) lists, and the Debian
package of every other file in the image (the shared libraries, the CA bundle), as the
machine that built the image has them installed. A file no package owns, other than
the user database the build writes, fails the run: the SBOM would be incomplete.

    sbom.py --crates CRATE.cdx.json --image ARCHIVE --timestamp RFC3339 --output FILE
"""

import argparse
import gzip
import hashlib
import io
import json
import subprocess
import sys
import tarfile
import uuid

# Files the image build writes itself (hack/image/build.sh).
WRITTEN_BY_THE_BUILD = {"etc/passwd", "etc/group"}
# Made from a package by update-ca-certificates, so dpkg does not list it.
GENERATED_FROM = {"etc/ssl/certs/ca-certificates.crt": "ca-certificates"}


def image_files(archive: str) -> tuple[str, str, list[str]]:
    """The image's name, manifest digest and the regular files of its layer."""
    with tarfile.open(archive) as outer:
        index = json.load(outer.extractfile("index.json"))
        descriptor = index["manifests"][0]
        name = descriptor["annotations"]["io.containerd.image.name"]
        blob = lambda digest: outer.extractfile("blobs/sha256/" + digest.split(":", 1)[1]).read()  # noqa: E731
        manifest = json.loads(blob(descriptor["digest"]))
        layer = gzip.decompress(blob(manifest["layers"][0]["digest"]))
    with tarfile.open(fileobj=io.BytesIO(layer)) as inner:
        files = [member.name for member in inner.getmembers() if member.isfile()]
    return name, descriptor["digest"], files


def owning_package(path: str) -> str | None:
    """The installed Debian package (name:arch) that owns `path`, under either root of a
    merged /usr."""
    candidates = ["/" + path]
    if path.startswith("usr/"):
        candidates.append("/" + path[len("usr/") :])
    else:
        candidates.append("/usr/" + path)
    for candidate in candidates:
        found = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
        if found.returncode == 0:
            # "libc6:amd64: /lib/x86_64-linux-gnu/libc.so.6"; the first of several owners.
            return found.stdout.split(": ", 1)[0].split(", ")[0]
    return None


def deb_component(package: str) -> dict:
    version, arch = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version} ${Architecture}", package],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split(" ")
    name = package.split(":", 1)[0]
    purl = f"pkg:deb/debian/{name}@{version}?arch={arch}"
    return {"type": "library", "bom-ref": purl, "name": name, "version": version, "purl": purl}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crates", required=True, help="the crate's SBOM from cargo-cyclonedx")
    parser.add_argument("--image", required=True, help="an image archive of hack/image/oci.py")
    parser.add_argument("--timestamp", required=True, help="the SBOM's time (the release commit's)")
    parser.add_argument("--output", required=True)
    args = parser.parse_args()

    with open(args.crates) as source:
        crates = json.load(source)
    name, manifest_digest, files = image_files(args.image)
    packages = set()
    for path in files:
        if path.startswith("usr/local/bin/") or path in WRITTEN_BY_THE_BUILD:
            continue
        package = GENERATED_FROM.get(path) or owning_package(path)
        if package is None:
            print(f"sbom.py: no Debian package owns /{path} of {name}", file=sys.stderr)
            return 1
        packages.add(package)
    debs = [deb_component(package) for package in sorted(packages)]

    application = crates["metadata"]["component"]
    repository, tag = name.rsplit(":", 1)
    image_ref = f"pkg:oci/{repository.rsplit('/', 1)[-1]}@{manifest_digest}?repository_url={repository}&tag={tag}"
    image = {"type": "container", "bom-ref": image_ref, "name": repository, "version": tag, "purl": image_ref}
    sbom = {
        "bomFormat": "CycloneDX",
        "specVersion": crates.get("specVersion", "1.5"),
        "serialNumber": "urn:uuid:" + str(uuid.UUID(hashlib.sha256(manifest_digest.encode()).hexdigest()[:32], version=4)),
        "version": 1,
        "metadata": {
            "timestamp": args.timestamp,
            "tools": crates["metadata"].get("tools", []),
            "component": image,
        },
        "components": [application] + crates.get("components", []) + debs,
        "dependencies": crates.get("dependencies", [])
        + [{"ref": image_ref, "dependsOn": [application["bom-ref"]] + [deb["bom-ref"] for deb in debs]}],
    }
    with open(args.output, "w") as sink:
        json.dump(sbom, sink, indent=2, sort_keys=True)
        sink.write("\n")
    print(f"{args.output}: {name}, {len(crates.get('components', []))} crates, {len(debs)} Debian packages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
