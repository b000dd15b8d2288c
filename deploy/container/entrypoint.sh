#!/bin/sh
# Ghost's container entrypoint: `serve` (the default), `worker`, `doctor`, `db upgrade`, or any
# other `ghost` command. With a managed identity (AZURE_CLIENT_ID, set by the Bicep), `az` is
# signed in with it first, so the model's `az` reads run as that identity and nobody else.
set -eu

if [ -n "${AZURE_CLIENT_ID:-}" ] && [ "${GHOST_AZ_LOGIN:-true}" = "true" ]; then
    if az login --identity --client-id "$AZURE_CLIENT_ID" --allow-no-subscriptions \
            --output none 2>"${TMPDIR:-/tmp}/az-login.err"; then
        if [ -n "${GHOST_AZURE_SUBSCRIPTION_ID:-}" ]; then
            az account set --subscription "$GHOST_AZURE_SUBSCRIPTION_ID" --output none || true
        fi
    else
        # Ghost still starts: chat, the database and captures (azure-identity) do not need az.
        echo "ghost-entrypoint: az login --identity failed ($(head -n 1 "${TMPDIR:-/tmp}/az-login.err"));" \
             "the model's az reads will fail until it works; run \`ghost doctor\`." >&2
    fi
fi

if [ "$#" -eq 0 ]; then
    set -- serve
fi
exec ghost "$@"
