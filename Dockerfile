# Keel as one compiled binary. Build: docker build -t keel .
# Run:   docker run --network host --cap-add NET_ADMIN -e APP_HOST=0.0.0.0 -e APP_API_SECRET=... \
#          --group-add $(stat -c %g /var/run/docker.sock) \
#          -v keel-data:/data -v /var/run/docker.sock:/var/run/docker.sock keel
# Keel runs as the unprivileged `keel` user: --group-add gives it the socket's group.
# (host network and NET_ADMIN: Keel firewalls workspace bridges in the host's iptables, docs/security.md)
# The engine socket is mounted into Keel's own container only (workspaces never get it).
FROM node:22-bookworm-slim AS build
# Go builds keeld, the workspace daemon the binary carries (daemon/, standard library only).
RUN apt-get update && apt-get install -y --no-install-recommends golang-go && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json ./
# Bun comes from npm as a dev dependency, as on a developer machine.
RUN npm ci
COPY . .
RUN npx bun run build

FROM debian:bookworm-slim
# ffprobe for the catalog, git for workspace repos (and the bun-typescript image), busybox-static to build
# the offline images, iptables for Keel's workspace firewall rules; ldd (libc-bin, always present)
# names the C library files bun needs. iptables gets CAP_NET_ADMIN as a file capability so the `keel`
# user can manage the workspace firewall (only where the container is given NET_ADMIN: elsewhere its
# exec fails and workspaces answer 503 ISOLATION_UNAVAILABLE, as without iptables). Its lock file is
# made writable for `keel` ahead (iptables-legacy takes it; iptables-nft, the default, does not).
RUN apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg git busybox-static ca-certificates tini iptables libcap2-bin \
 && setcap cap_net_admin,cap_net_raw+ep "$(readlink -f /usr/sbin/iptables)" \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --home /data --uid 10001 --user-group keel \
 && mkdir -p /data && chown keel:keel /data && chmod 0700 /data \
 && touch /run/xtables.lock && chown keel:keel /run/xtables.lock
COPY --from=build /src/dist/keel /usr/local/bin/keel
# What the offline `bun-typescript` image is made of where no registry answers: the bun binary npm
# installed in the build stage and the template's files (its code-server stand-in, its Dockerfile).
COPY --from=build /src/node_modules/bun/bin/bun.exe /usr/local/lib/keel/bun
COPY templates /usr/local/share/keel/templates
ENV NODE_ENV=production APP_DATA_DIR=/data APP_HOST=0.0.0.0 \
    APP_BUN_PATH=/usr/local/lib/keel/bun APP_TEMPLATES_DIR=/usr/local/share/keel/templates
VOLUME /data
# Never root: the API secret, the database and the keys under /data belong to `keel` alone.
USER keel
EXPOSE 3100 3101 3102 3103 3104 3106
HEALTHCHECK --interval=30s --timeout=3s CMD ["/usr/local/bin/keel", "healthcheck"]
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/keel"]
CMD ["serve"]
