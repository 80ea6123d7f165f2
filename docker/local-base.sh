#!/bin/sh
# Make a base image for docker/Dockerfile from Debian packages, for machines that reach
# Debian's mirror but no image registry:
#
#   docker/local-base.sh [IMAGE]      (default IMAGE: mockbroker-base:bookworm)
#   docker build -f docker/Dockerfile --build-arg BASE=mockbroker-base:bookworm -t mockbroker:local .
#
# The image is a minimal Debian bookworm root file system (debootstrap --variant=minbase) with
# python3, python3-venv and ca-certificates, imported with `docker import`. Nothing is done when
# IMAGE already exists. The root file system's tarball is cached in $MOCKBROKER_DOCKER_CACHE
# (default /var/cache/mockbroker-docker), so a new engine imports it instead of bootstrapping
# again (~40 s and ~100 MB of downloads). debootstrap needs root.
set -eu

IMAGE=${1:-mockbroker-base:bookworm}
SUITE=bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE=${MOCKBROKER_DOCKER_CACHE:-/var/cache/mockbroker-docker}
TARBALL=$CACHE/$SUITE-minbase-python3.tar.gz

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
    echo "base image $IMAGE exists"
    exit 0
fi

if [ ! -s "$TARBALL" ]; then
    command -v debootstrap >/dev/null 2>&1 || {
        echo "debootstrap is not installed: run 'make sysdeps' (Debian package debootstrap)" >&2
        exit 1
    }
    mkdir -p "$CACHE"
    rootfs=$(mktemp -d "$CACHE/rootfs.XXXXXX")
    trap 'rm -rf "$rootfs" "$TARBALL.part"' EXIT
    echo "debootstrap $SUITE into $rootfs (log: $CACHE/debootstrap.log)"
    if ! debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
            "$SUITE" "$rootfs" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1; then
        echo "debootstrap failed; the end of its log:" >&2
        tail -n 20 "$CACHE/debootstrap.log" >&2
        exit 1
    fi
    # no package lists or downloaded .debs in the image
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" --numeric-owner -czf "$TARBALL.part" .
    mv "$TARBALL.part" "$TARBALL"
fi

echo "importing $TARBALL as $IMAGE"
docker import --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' "$TARBALL" "$IMAGE" >/dev/null
