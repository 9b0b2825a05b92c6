# The product's images for users with Docker; hack/image/build.sh assembles the same
# images (static binaries, a CA bundle, the user nonroot, from scratch) as OCI archives
# without a container engine.
#   docker buildx build --platform linux/amd64,linux/arm64 -t ghcr.io/edge-operator/edge-operator:0.4.0 .
#   docker buildx build --platform linux/amd64,linux/arm64 --target edge-sim -t ghcr.io/edge-operator/edge-sim:0.4.0 .
# Alpine's Rust builds for musl, statically linked.
FROM rust:1.95-alpine AS build
RUN apk add --no-cache musl-dev ca-certificates
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bins \
 && strip target/release/edge-operator target/release/edge-sim target/release/edgectl \
 && mkdir -p /rootfs/etc/ssl/certs /rootfs/tmp /rootfs/home/nonroot \
 && cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >/rootfs/etc/passwd \
 && printf 'root:x:0:\nnonroot:x:65532:\n' >/rootfs/etc/group \
 && chmod 1777 /rootfs/tmp && chown 65532:65532 /rootfs/home/nonroot

# The three static binaries, a CA bundle and the user nonroot (65532): nothing else.
FROM scratch AS runtime
COPY --from=build /rootfs/ /
COPY --from=build /src/target/release/edge-operator /src/target/release/edge-sim /src/target/release/edgectl /usr/local/bin/
ENV PATH=/usr/local/bin SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 65532:65532

FROM runtime AS edge-sim
ENTRYPOINT ["/usr/local/bin/edge-sim"]

FROM runtime AS edge-operator
ENTRYPOINT ["/usr/local/bin/edge-operator"]
CMD ["run"]
