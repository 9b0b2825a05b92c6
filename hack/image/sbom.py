#!/usr/bin/env python3
"""Writes the CycloneDX SBOM of an image archive of hack/image/oci.py, valid by the schema.

The image (its index, every platform) is the SBOM's subject. Its components are each
binary of each platform, with every crate that binary's SBOM from cargo-cyclonedx
lists and what the toolchain links into it statically (Rust's standard library, the
musl C library zig ships), and the CA bundle with the package it comes from. Nothing else may be in the
image but the user database the build writes: any other file fails the run, as the
SBOM would not say what is inside. The SBOM is validated against the CycloneDX JSON
schema (cyclonedx-python-lib's copy) before it is written.

    sbom.py --crates DIR --image ARCHIVE --ca-bundle certifi==VERSION --rustc VERSION --zig VERSION
            --timestamp RFC3339 --output FILE
    sbom.py --check FILE     validates an SBOM; exit 1 with the schema's complaint
"""

import argparse
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile
import uuid

from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator

# Files the image build writes itself (hack/image/build.sh).
WRITTEN_BY_THE_BUILD = {"etc/passwd", "etc/group"}
CA_BUNDLE = "etc/ssl/certs/ca-certificates.crt"
BINARIES = "usr/local/bin/"
TARGETS = {"amd64": "x86_64-unknown-linux-musl", "arm64": "aarch64-unknown-linux-musl"}


def schema_complaint(text: str) -> str | None:
    """What the CycloneDX 1.5 schema finds wrong with the SBOM `text`, or None."""
    error = JsonStrictValidator(SchemaVersion.V1_5).validate_str(text)
    return None if error is None else str(getattr(error, "data", error)).splitlines()[0]


def image_platforms(archive: str) -> tuple[str, str, dict[str, dict[str, bytes]]]:
    """The image's name, index digest and, per architecture, its layer's regular files."""
    with tarfile.open(archive) as outer:
        blob = lambda digest: outer.extractfile("blobs/sha256/" + digest.split(":", 1)[1]).read()  # noqa: E731
        top = json.load(outer.extractfile("index.json"))["manifests"][0]
        name = top["annotations"]["io.containerd.image.name"]
        platforms = {}
        for descriptor in json.loads(blob(top["digest"]))["manifests"]:
            manifest = json.loads(blob(descriptor["digest"]))
            layer = gzip.decompress(blob(manifest["layers"][0]["digest"]))
            with tarfile.open(fileobj=io.BytesIO(layer)) as inner:
                files = {m.name: inner.extractfile(m).read() for m in inner.getmembers() if m.isfile()}
            platforms[descriptor["platform"]["architecture"]] = files
    return name, top["digest"], platforms


def binary_sbom(crates_dir: str, binary: str, target: str) -> dict:
    path = os.path.join(crates_dir, f"{binary}_bin_{target}.cdx.json")
    if not os.path.exists(path):
        raise SystemExit(f"sbom.py: no SBOM of {binary} for {target} ({path}) from cargo-cyclonedx")
    with open(path) as source:
        return json.load(source)


def sha256(data: bytes) -> list[dict]:
    return [{"alg": "SHA-256", "content": hashlib.sha256(data).hexdigest()}]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", help="only validate this SBOM")
    parser.add_argument("--crates", help="the folder of cargo-cyclonedx's SBOMs, one per binary and target")
    parser.add_argument("--image", help="an image archive of hack/image/oci.py")
    parser.add_argument("--ca-bundle", help="the CA bundle's PyPI package, NAME==VERSION")
    parser.add_argument("--rustc", help="the version of rustc, whose standard library the binaries link")
    parser.add_argument("--zig", help="the version of zig (PyPI's ziglang), whose musl the binaries link")
    parser.add_argument("--timestamp", help="the SBOM's time (the release commit's)")
    parser.add_argument("--output")
    args = parser.parse_args()
    if args.check:
        with open(args.check) as source:
            complaint = schema_complaint(source.read())
        if complaint:
            print(f"sbom.py: {args.check} is not a valid CycloneDX 1.5 SBOM: {complaint}", file=sys.stderr)
            return 1
        return 0
    if not all([args.crates, args.image, args.ca_bundle, args.rustc, args.zig, args.timestamp, args.output]):
        parser.error("--crates, --image, --ca-bundle, --rustc, --zig, --timestamp and --output are needed to write an SBOM")

    name, index_digest, platforms = image_platforms(args.image)
    repository, tag = name.rsplit(":", 1)
    image_ref = f"pkg:oci/{repository.rsplit('/', 1)[-1]}@{index_digest}?repository_url={repository}&tag={tag}"
    ca_package, ca_version = args.ca_bundle.split("==", 1)
    ca_ref = f"pkg:pypi/{ca_package}@{ca_version}"
    rust_std = f"pkg:generic/rust-std@{args.rustc}"
    musl = f"pkg:generic/musl?download_url=https://pypi.org/project/ziglang/{args.zig}/"
    components: dict[str, dict] = {
        rust_std: {
            "type": "library",
            "bom-ref": rust_std,
            "name": "rust-std",
            "version": args.rustc,
            "description": "Rust's standard library (std, core, alloc), linked statically into each binary",
            "purl": rust_std,
            "licenses": [{"expression": "MIT OR Apache-2.0"}],
        },
        musl: {
            "type": "library",
            "bom-ref": musl,
            "name": "musl",
            "description": f"the musl C library, linked statically into each binary, as zig {args.zig} (PyPI's ziglang) ships it",
            "purl": musl,
            "licenses": [{"expression": "MIT"}],
        },
    }
    linked = {rust_std, musl}
    dependencies: dict[str, set[str]] = {image_ref: {ca_ref}}
    ca_hashes = None
    for architecture, files in sorted(platforms.items()):
        target = TARGETS.get(architecture)
        if target is None:
            print(f"sbom.py: {name} has an image for {architecture}, which has no build", file=sys.stderr)
            return 1
        for path, content in sorted(files.items()):
            if path in WRITTEN_BY_THE_BUILD:
                continue
            if path == CA_BUNDLE:
                ca_hashes = sha256(content)
                continue
            if not path.startswith(BINARIES):
                print(f"sbom.py: /{path} of {name} ({architecture}) is from no build step the SBOM describes", file=sys.stderr)
                return 1
            binary = path[len(BINARIES) :]
            crates = binary_sbom(args.crates, binary, target)
            application = dict(crates["metadata"]["component"])
            package_ref = application["bom-ref"]
            binary_ref = f"{application['purl']}&target={target}"
            application.update({"bom-ref": binary_ref, "hashes": sha256(content)})
            application["properties"] = [{"name": "cdx:rustc:sbom:target:triple", "value": target}]
            components[binary_ref] = application
            dependencies[image_ref].add(binary_ref)
            dependencies.setdefault(binary_ref, set()).update(linked)
            for crate in crates.get("components", []):
                components.setdefault(crate["bom-ref"], crate)
            for dependency in crates.get("dependencies", []):
                ref = binary_ref if dependency["ref"] == package_ref else dependency["ref"]
                dependencies.setdefault(ref, set()).update(dependency.get("dependsOn", []))
    for architecture, files in platforms.items():
        if not any(path.startswith(BINARIES) for path in files):
            print(f"sbom.py: {name} ({architecture}) holds no binary in /{BINARIES}", file=sys.stderr)
            return 1
    if ca_hashes is None:
        print(f"sbom.py: {name} has no CA bundle at /{CA_BUNDLE}", file=sys.stderr)
        return 1
    components[ca_ref] = {
        "type": "data",
        "bom-ref": ca_ref,
        "name": ca_package,
        "version": ca_version,
        "description": f"Mozilla's CA bundle, /{CA_BUNDLE} in the image, as the PyPI package {ca_package} ships it",
        "purl": ca_ref,
        "hashes": ca_hashes,
        "licenses": [{"expression": "MPL-2.0"}],
    }
    sbom = {
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "serialNumber": "urn:uuid:" + str(uuid.UUID(hashlib.sha256(index_digest.encode()).hexdigest()[:32], version=4)),
        "version": 1,
        "metadata": {
            "timestamp": args.timestamp,
            "tools": [
                {"vendor": "CycloneDX", "name": "cargo-cyclonedx"},
                {"name": "rustc", "version": args.rustc},
                {"name": "zig", "version": args.zig},
                {"name": "hack/image/sbom.py"},
            ],
            "component": {"type": "container", "bom-ref": image_ref, "name": repository, "version": tag, "purl": image_ref},
        },
        "components": [components[ref] for ref in sorted(components)],
        "dependencies": [{"ref": ref, "dependsOn": sorted(on)} for ref, on in sorted(dependencies.items())],
    }
    text = json.dumps(sbom, indent=2, sort_keys=True) + "\n"
    complaint = schema_complaint(text)
    if complaint:
        print(f"sbom.py: the SBOM of {name} is not valid CycloneDX 1.5: {complaint}", file=sys.stderr)
        return 1
    with open(args.output, "w") as sink:
        sink.write(text)
    binaries = sum(1 for c in components.values() if c.get("type") == "application")
    crates = len(components) - binaries - 3
    print(f"{args.output}: {name}, {len(platforms)} platforms, {binaries} binaries, {crates} crates, rust-std {args.rustc}, musl of zig {args.zig}, the CA bundle ({args.ca_bundle})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
