# The osc operator image (what config/30-operator.yaml's Deployment runs: `osc run ...`).
#
#   docker build -t registry.example.com/osc:dev .
#   npm run osc -- install --image registry.example.com/osc:dev
#
# Three stages: compile TypeScript to dist/ with the dev dependencies, leaving out the dev cluster; install
# the production dependencies alone; copy both into a slim Node 24 runtime that runs as a non-root user, with
# the SBOM of its npm packages (CycloneDX, /app/sbom.cdx.json, made from the lock file by tools/sbom.ts).
#
# Reproducible from the lock file: both installs are `npm ci`, which installs exactly the lock's versions,
# checks each package's integrity hash, and fails when package.json and the lock disagree. The one thing
# dropped first is the linter (@biomejs/biome), which the image never runs, nor needs its per-platform
# binaries. No audit during the build: it asks the registry about advisories known today, so the same
# sources would build differently tomorrow; the SBOM is what a scanner checks, at any time.
#
# For a release, pass the base by digest (NODE_IMAGE=docker.io/library/node:24-bookworm-slim@sha256:...)
# and pin the manifests' images with `osc install --dry-run --pin-images` (README, "Releases").
#
# NODE_IMAGE is the base of every stage: any image with Node 24 and npm in /usr/local. The default is the
# official one; where no registry is reachable, the tests build on a local base made from Debian packages
# (tools/build-base-image.sh, `docker import`): docker build --build-arg NODE_IMAGE=osc.local/node:24-bookworm .
# No BuildKit-only syntax: the classic builder builds it too, with no frontend image to fetch.

ARG NODE_IMAGE=docker.io/library/node:24-bookworm-slim

# --- build: dist/ from src/ -------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
COPY tools/without-linter.ts ./tools/
# No install scripts: the image already has Node 24 (the `node` dev dependency would fetch another).
RUN node tools/without-linter.ts && npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY tools/sbom.ts ./tools/
# The dev cluster (control plane, simulators: a quarter of src/) is compiled with the rest, because `osc start`
# imports it, and then dropped: the operator never loads it (test/unit/layers.test.ts), and `osc start` in
# the image says it is missing.
RUN node node_modules/typescript/bin/tsc -p tsconfig.build.json && rm -r dist/devcluster && node tools/sbom.ts package-lock.json > sbom.cdx.json

# --- deps: production dependencies only -------------------------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY tools/without-linter.ts ./tools/
RUN node tools/without-linter.ts && npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# --- runtime --------------------------------------------------------------------------------------
FROM ${NODE_IMAGE}
LABEL org.opencontainers.image.title="osc" \
      org.opencontainers.image.description="OpenShift sandboxed containers operator: Kata Containers and peer pods driven by one KataConfig" \
      org.opencontainers.image.licenses="Apache-2.0" \
      io.github.osc.sbom="/app/sbom.cdx.json"
# The operator needs node alone: drop the package managers (less to patch, less to exploit).
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
      /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /opt/yarn-* /usr/local/bin/yarn /usr/local/bin/yarnpkg
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps --chown=0:0 /app/node_modules ./node_modules
COPY --from=build --chown=0:0 /src/dist ./dist
COPY --from=build --chown=0:0 /src/sbom.cdx.json ./sbom.cdx.json
COPY --chown=0:0 package.json ./
COPY --chown=0:0 bin ./bin
# A numeric, non-root user (runAsNonRoot can verify it; OpenShift assigns its own UID anyway). Files
# stay root-owned and read-only to it: the Deployment mounts the root filesystem read-only.
USER 65532:65532
EXPOSE 8080 8081 9443
# V8's young generation capped at 2 MiB semi-spaces (the default grows them to 16 MiB): the operator's
# garbage is short-lived watch events, so scavenges stay cheap. And the old generation collected once it has
# grown by half over what the last collection kept, where V8 waits for up to four times that: at 1,000 nodes
# 21 MiB live was let grow to 75-124 MiB. Together they halve peak RSS. V8's lite mode runs JavaScript in
# the interpreter only (no JIT compilers, no WebAssembly, no writable code memory): the operator waits on
# the API server, and its peak RSS drops by about a fifth for about a third more CPU (docs/performance.md
# has the measurements). `npm run bench` runs the operator with these flags.
ENTRYPOINT ["node", "--lite-mode", "--max-semi-space-size=2", "--heap-growing-percent=50", "/app/bin/osc.js"]
CMD ["run"]
