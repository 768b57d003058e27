# Images of textslash's services, for compose.yaml.
#   service: ingress, dispatcher, media, egress (and textslash) on a slim base
#   runner:  the runner with git, Node.js, the Claude Code CLI, Chromium,
#            bubblewrap (each run's sandbox) and slirp4netns (a home's
#            network); see compose.yaml's runner
# Both run as an unprivileged user.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/root/.cache/go-build --mount=type=cache,target=/go/pkg/mod \
    CGO_ENABLED=0 go build -trimpath -o /out/ ./cmd/...

FROM debian:bookworm-slim AS service
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 textslash
COPY --from=build /out/ /usr/local/bin/
USER textslash
WORKDIR /home/textslash

FROM debian:bookworm-slim AS runner
RUN apt-get update && apt-get install -y --no-install-recommends \
      ca-certificates git nodejs npm chromium-headless-shell fonts-dejavu-core bubblewrap slirp4netns ffmpeg \
    && rm -rf /var/lib/apt/lists/* \
    && npm install -g --no-audit --no-fund @anthropic-ai/claude-code@2.1.330 \
    && useradd --create-home --uid 10001 textslash \
    && mkdir -p /data && chown textslash /data
COPY --from=build /out/runner /usr/local/bin/runner
USER textslash
WORKDIR /home/textslash
