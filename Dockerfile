# Builds the sluice binary into a small image. Used by docker-compose.yml.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/sluice ./cmd/sluice

FROM debian:bookworm-slim
COPY --from=build /out/sluice /usr/local/bin/sluice
WORKDIR /var/lib/sluice
ENTRYPOINT ["/usr/local/bin/sluice"]
