# One static image for every role: `coxswain serve controller`,
# `coxswain serve proxy --shared|--dedicated ...`. It holds two binaries:
# coxswain, and coxswain-proxy, the data plane built alone, which
# `coxswain serve proxy` hands over to (exec) when it finds it beside itself.
FROM golang:1.26 AS builder
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=dev
ARG COMMIT=unknown
WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY api/ api/
COPY internal/ internal/
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath \
    -ldflags "-s -w -X github.com/coxswain-go/coxswain/internal/version.Version=${VERSION} -X github.com/coxswain-go/coxswain/internal/version.Commit=${COMMIT}" \
    -o coxswain ./cmd/coxswain && \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath \
    -ldflags "-s -w -X github.com/coxswain-go/coxswain/internal/version.Version=${VERSION} -X github.com/coxswain-go/coxswain/internal/version.Commit=${COMMIT}" \
    -o coxswain-proxy ./cmd/coxswain-proxy

FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/coxswain /coxswain
COPY --from=builder /workspace/coxswain-proxy /coxswain-proxy
USER 65532:65532
ENTRYPOINT ["/coxswain"]
