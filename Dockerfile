# syntax=docker/dockerfile:1

# Build stage: a static binary, so the runtime image needs no libc.
FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /chatd ./cmd/chatd

# Runtime stage: nothing but the binary and CA certificates (for rediss:// URLs).
FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /chatd /chatd
# The conventional "nonroot" UID/GID; scratch has no passwd file, so numeric.
USER 65532:65532
# chatd listens on loopback by default; in a container it must listen on all
# interfaces, which it only does with authentication configured (or
# CHATD_ALLOW_ANONYMOUS=true).
ENV CHATD_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["/chatd"]
