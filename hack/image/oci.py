#!/usr/bin/env python3
"""Assembles a multi-platform OCI image archive from root file systems, without a container engine.

The archive holds, per platform, one layer, the image config and manifest; an image
index listing them by platform; the layout's index.json pointing at that index,
annotated with the image name (for `ctr images import --all-platforms`, which
`kind load image-archive` runs, and `skopeo copy --all oci-archive:`); and a Docker
`manifest.json` naming the first platform's image (for `docker load`, which takes one
platform). File owners, modes and times are fixed, so the same inputs give the same
digests.

    oci.py --rootfs linux/amd64=DIR [--rootfs linux/arm64=DIR]... --name REF
           --entrypoint PATH [--cmd ARG]... [--user UID:GID] [--label KEY=VALUE]... --output FILE
    oci.py --reference ARCHIVE   prints the name and the index digest of an archive it wrote
"""

import argparse
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile


# Files owned by another user than root: the non-root user's home.
OWNERS = {"home/nonroot": 65532}


def layer_tar(rootfs: str) -> tuple[bytes, bytes]:
    """The tar of `rootfs` (sorted, owned by root but for OWNERS, dated at the epoch) and its gzip."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for directory, subdirectories, files in os.walk(rootfs):
            subdirectories.sort()
            for name in sorted(subdirectories) + sorted(files):
                path = os.path.join(directory, name)
                info = tar.gettarinfo(path, arcname=os.path.relpath(path, rootfs))
                info.uid = info.gid = OWNERS.get(info.name, 0)
                # Modes whatever the build's umask: the sticky /tmp, executables, the rest read-only.
                if info.isdir():
                    info.mode = 0o1777 if info.name == "tmp" else 0o755
                else:
                    info.mode = 0o755 if info.mode & 0o100 else 0o644
                info.uname = info.gname = ""
                info.mtime = 0
                if info.isfile():
                    with open(path, "rb") as content:
                        tar.addfile(info, content)
                else:
                    tar.addfile(info)
    compressed = io.BytesIO()
    with gzip.GzipFile(fileobj=compressed, mode="wb", mtime=0) as gz:
        gz.write(raw.getvalue())
    return raw.getvalue(), compressed.getvalue()


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


MANIFEST = "application/vnd.oci.image.manifest.v1+json"
INDEX = "application/vnd.oci.image.index.v1+json"


def compact(value: dict) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def blob_path(data: bytes) -> str:
    return "blobs/sha256/" + digest(data).split(":", 1)[1]


def platform_image(platform: str, rootfs: str, args: argparse.Namespace) -> tuple[dict, list[bytes], dict]:
    """The manifest descriptor of one platform's image, its blobs (config, manifest,
    layer) and its entry of Docker's manifest.json."""
    os_name, architecture = platform.split("/", 1)
    uncompressed, layer = layer_tar(rootfs)
    labels = dict(label.split("=", 1) for label in args.label)
    config = {
        "architecture": architecture,
        "os": os_name,
        "created": "1970-01-01T00:00:00Z",
        "config": {
            "Entrypoint": [args.entrypoint],
            "Cmd": args.cmd or None,
            "User": args.user,
            "Env": ["PATH=/usr/local/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"],
            "WorkingDir": "/",
            "Labels": labels or None,
        },
        "rootfs": {"type": "layers", "diff_ids": [digest(uncompressed)]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "hack/image/oci.py"}],
    }
    config["config"] = {k: v for k, v in config["config"].items() if v}
    config_blob = compact(config)
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest(config_blob), "size": len(config_blob)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": digest(layer), "size": len(layer)}],
    }
    manifest_blob = compact(manifest)
    descriptor = {
        "mediaType": MANIFEST,
        "digest": digest(manifest_blob),
        "size": len(manifest_blob),
        "platform": {"architecture": architecture, "os": os_name},
    }
    docker = {"Config": blob_path(config_blob), "RepoTags": [args.name], "Layers": [blob_path(layer)]}
    return descriptor, [config_blob, manifest_blob, layer], docker


def reference(archive: str) -> str:
    """`NAME DIGEST`: the image's name and the digest of its index, which names every
    platform's image (what a registry keeps under `skopeo copy --all --preserve-digests`)."""
    with tarfile.open(archive) as tar:
        top = json.load(tar.extractfile("index.json"))["manifests"][0]
    return f'{top["annotations"]["io.containerd.image.name"]} {top["digest"]}'


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", metavar="ARCHIVE", help="print NAME DIGEST of an archive and stop")
    parser.add_argument("--rootfs", action="append", help="PLATFORM=DIR, e.g. linux/arm64=rootfs-arm64")
    parser.add_argument("--name", help="image reference, e.g. ghcr.io/org/app:1.0")
    parser.add_argument("--entrypoint")
    parser.add_argument("--cmd", action="append", default=[])
    parser.add_argument("--user", default="")
    parser.add_argument("--label", action="append", default=[])
    parser.add_argument("--output")
    args = parser.parse_args()
    if args.reference:
        print(reference(args.reference))
        return 0
    if not (args.rootfs and args.name and args.entrypoint and args.output):
        parser.error("--rootfs, --name, --entrypoint and --output are needed to write an archive")

    descriptors, blobs, docker_manifest = [], [], []
    for entry in args.rootfs:
        platform, _, rootfs = entry.partition("=")
        if platform.count("/") != 1 or not os.path.isdir(rootfs):
            print(f"oci.py: --rootfs {entry} is not PLATFORM=DIR of an existing directory", file=sys.stderr)
            return 1
        descriptor, platform_blobs, docker = platform_image(platform, rootfs, args)
        descriptors.append(descriptor)
        blobs.extend(platform_blobs)
        docker_manifest = docker_manifest or [docker]
    image_index_blob = compact({"schemaVersion": 2, "mediaType": INDEX, "manifests": descriptors})
    layout_index = {
        "schemaVersion": 2,
        "mediaType": INDEX,
        "manifests": [
            {
                "mediaType": INDEX,
                "digest": digest(image_index_blob),
                "size": len(image_index_blob),
                "annotations": {
                    "io.containerd.image.name": args.name,
                    "org.opencontainers.image.ref.name": args.name.rsplit(":", 1)[-1],
                },
            }
        ],
    }
    entries = [
        ("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode()),
        ("index.json", json.dumps(layout_index, sort_keys=True).encode()),
        ("manifest.json", json.dumps(docker_manifest).encode()),
        (blob_path(image_index_blob), image_index_blob),
    ] + list({blob_path(blob): blob for blob in blobs}.items())
    temporary = args.output + ".tmp"
    with tarfile.open(temporary, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for directory in ("blobs", "blobs/sha256"):
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            archive.addfile(info)
        for name, data in entries:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            archive.addfile(info, io.BytesIO(data))
    os.replace(temporary, args.output)
    platforms = ", ".join(d["platform"]["architecture"] for d in descriptors)
    print(f"{args.output}: {args.name} {digest(image_index_blob)} ({platforms})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
