#!/bin/sh
# The image's install steps: Ghost and the Azure CLI in two virtual environments, from pinned
# versions. The Dockerfile's build stage runs this; tests/deploy/test_image_steps.py runs it
# too, in a fresh directory, because no container engine runs on our CI machines.
#   build-venvs.sh SOURCE_DIR GHOST_VENV AZ_VENV
set -eu
src=$1
ghost=$2
az=$3
python=${PYTHON:-python3}
export PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1

"$python" -m venv "$ghost"
"$ghost/bin/pip" install --quiet -r "$src/deploy/container/ghost-requirements.txt"
# Ghost itself without resolving again: every dependency comes from the pinned list
"$ghost/bin/pip" install --quiet --no-deps "$src"
"$ghost/bin/pip" check

"$python" -m venv "$az"
"$az/bin/pip" install --quiet -r "$src/deploy/container/az-requirements.txt"
"$az/bin/pip" check

# the final image runs no installer
"$ghost/bin/pip" uninstall --quiet --yes pip
"$az/bin/pip" uninstall --quiet --yes pip
