# The product's images for users with Docker; hack/image/build.sh assembles the same
# images (same files, entrypoints and user) as OCI archives without a container engine.
#   docker build -t ghcr.io/edge-operator/edge-operator:0.4.0 .
#   docker build --target edge-sim -t ghcr.io/edge-operator/edge-sim:0.4.0 .
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bins \
 && strip target/release/edge-operator target/release/edge-sim target/release/edgectl

# The three binaries, their C libraries, a CA bundle and the user nonroot (65532).
FROM gcr.io/distroless/cc-debian12:nonroot AS runtime
COPY --from=build /src/target/release/edge-operator /src/target/release/edge-sim /src/target/release/edgectl /usr/local/bin/
USER 65532:65532

FROM runtime AS edge-sim
ENTRYPOINT ["/usr/local/bin/edge-sim"]

FROM runtime AS edge-operator
ENTRYPOINT ["/usr/local/bin/edge-operator"]
CMD ["run"]
