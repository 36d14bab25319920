# Multi-stage build of the operator: a static binary on distroless, non-root.
# The manager reads watches.yaml and charts/challenge relative to / (its
# working directory), exactly as config/manager passes --watches-file=/watches.yaml.
# test/shipping replays this file on the context .dockerignore admits:
# the build stage's RUN lines write only below its WORKDIR.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY main.go ./
COPY api/ api/
COPY internal/ internal/
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -ldflags="-s -w" -o manager .

FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=build /src/manager /manager
COPY watches.yaml /watches.yaml
COPY charts/ /charts/
USER 65532:65532
ENTRYPOINT ["/manager"]
