#!/usr/bin/env python3
"""Assembles an OCI image archive from a root file system, without a container engine.

The archive holds one layer, the image config and manifest, an OCI index annotated
with the image name (for `ctr images import` and `kind load image-archive`) and a
Docker `manifest.json` (for `docker load`). File owners, modes and times are fixed,
so the same inputs give the same image digest.

    oci.py --rootfs DIR --name REF --entrypoint PATH [--cmd ARG]... [--user UID:GID]
           [--label KEY=VALUE]... --output FILE
"""

import argparse
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile


def layer_tar(rootfs: str) -> tuple[bytes, bytes]:
    """The tar of `rootfs` (sorted, owned by root, dated at the epoch) and its gzip."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for directory, subdirectories, files in os.walk(rootfs):
            subdirectories.sort()
            for name in sorted(subdirectories) + sorted(files):
                path = os.path.join(directory, name)
                info = tar.gettarinfo(path, arcname=os.path.relpath(path, rootfs))
                info.uid = info.gid = 0
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rootfs", required=True)
    parser.add_argument("--name", required=True, help="image reference, e.g. ghcr.io/org/app:1.0")
    parser.add_argument("--entrypoint", required=True)
    parser.add_argument("--cmd", action="append", default=[])
    parser.add_argument("--user", default="")
    parser.add_argument("--label", action="append", default=[])
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    if not os.path.isdir(args.rootfs):
        print(f"oci.py: {args.rootfs} is not a directory", file=sys.stderr)
        return 1

    uncompressed, layer = layer_tar(args.rootfs)
    labels = dict(label.split("=", 1) for label in args.label)
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": {
            "Entrypoint": [args.entrypoint],
            "Cmd": args.cmd or None,
            "User": args.user,
            "Env": ["PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"],
            "WorkingDir": "/",
            "Labels": labels or None,
        },
        "rootfs": {"type": "layers", "diff_ids": [digest(uncompressed)]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "hack/image/oci.py"}],
    }
    config["config"] = {k: v for k, v in config["config"].items() if v}
    config_blob = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": digest(config_blob),
            "size": len(config_blob),
        },
        "layers": [
            {
                "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                "digest": digest(layer),
                "size": len(layer),
            }
        ],
    }
    manifest_blob = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": digest(manifest_blob),
                "size": len(manifest_blob),
                "platform": {"architecture": "amd64", "os": "linux"},
                "annotations": {
                    "io.containerd.image.name": args.name,
                    "org.opencontainers.image.ref.name": args.name.rsplit(":", 1)[-1],
                },
            }
        ],
    }
    blob_path = lambda data: "blobs/sha256/" + digest(data).split(":", 1)[1]  # noqa: E731
    docker_manifest = [
        {"Config": blob_path(config_blob), "RepoTags": [args.name], "Layers": [blob_path(layer)]}
    ]
    entries = [
        ("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode()),
        ("index.json", json.dumps(index, sort_keys=True).encode()),
        ("manifest.json", json.dumps(docker_manifest).encode()),
        (blob_path(config_blob), config_blob),
        (blob_path(manifest_blob), manifest_blob),
        (blob_path(layer), layer),
    ]
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
    print(f"{args.output}: {args.name} {digest(manifest_blob)} (layer {len(layer)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
