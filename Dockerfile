# syntax=docker/dockerfile:1
# Static build, distroless final image, non-root, read-only-root friendly.
FROM docker.io/library/golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/toolsearch ./cmd/toolsearch

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/toolsearch /toolsearch
USER nonroot:nonroot
EXPOSE 8080 9090
ENTRYPOINT ["/toolsearch"]
CMD ["serve"]
