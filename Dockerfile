# A small image of the three binaries, running as a non-root user.
# docker build -t edge-operator .
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bins

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/edge-operator /src/target/release/edge-sim /src/target/release/edgectl /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/edge-operator"]
CMD ["run"]
