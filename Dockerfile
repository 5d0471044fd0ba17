# streamfeat server image (docs/operations.md "Container").
#   docker build -t streamfeat .
#   docker run -p 8080:8080 -p 8081:8081 -p 9090:9090 -v streamfeat-data:/data streamfeat
# Multi-stage: the build stage compiles TypeScript with the dev dependencies; the
# runtime stage holds only dist/src, docs and the production dependencies.
# Debian-based (not Alpine): uWebSockets.js and lz4-napi ship glibc binaries.

FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` (tsc) needs the sources, which are copied next.
RUN npm ci --ignore-scripts
COPY tsconfig.json ./
COPY src ./src
# tsconfig also includes test/, bench/ and examples/: absent here, so only src/ compiles.
RUN npx tsc -p tsconfig.json && npm prune --omit=dev --ignore-scripts

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    SERVICE_HTTP_ADDR=0.0.0.0:8080 \
    SERVICE_TCP_ADDR=0.0.0.0:8081 \
    SERVICE_ADMIN_ADDR=0.0.0.0:9090 \
    SERVICE_DATA_DIR=/data
WORKDIR /app
COPY --from=build --chown=root:root /src/package.json ./
COPY --from=build --chown=root:root /src/node_modules ./node_modules
COPY --from=build --chown=root:root /src/dist/src ./dist/src
COPY docs ./docs
# The code is root-owned and read-only to the service user; only /data is writable.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080 8081 9090
# Liveness: /health answers from the moment the admin listener binds (before recovery).
# Readiness (/ready) is for the orchestrator's traffic decisions, not for restarts.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:9090/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM (docker stop) drains and snapshots within --shutdown-timeout (25 s);
# give docker stop a longer grace: docker stop -t 35.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "dist/src/cli.js"]
CMD ["serve"]
